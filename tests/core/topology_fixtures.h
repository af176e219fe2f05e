// Fixtures of the topology tests (tst_topology, tst_topology_yaml): a built-in by key, a near-equal.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "topology/builtin_topologies.h"
#include "topology/topology.h"

#include <algorithm>
#include <cmath>
#include <string>
#endif

namespace moex::test {

inline bool near(double a, double b, double eps = 1e-12)
{
    return std::fabs(a - b) <= eps * std::max(1.0, std::fabs(b));
}

inline Topology build(const std::string& key, int count = 1)
{
    TopologyParams p;
    p.builtin = key;
    if (key.find("nvl72") != std::string::npos)
        p.racks = count;
    else
        p.nodes = count;
    return buildTopology(p);
}

}  // namespace moex::test
