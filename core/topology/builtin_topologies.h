// Built-in topologies with numbers from FACTS.md: gb200-nvl72, gb300-nvl72 (parameter racks),
// hgx-h100, hgx-h800, hgx-h200, hgx-b200 (parameters nodes, gpus_per_node, nics_per_gpu, spine),
// and host-cpu: this machine's CPU engine ranks (parameter ranks), for predicting the engine.
#pragma once

#include "topology/topology.h"

#include <optional>
#include <string>
#include <vector>

namespace moex {

struct TopologyParams {
    std::string builtin;      // key
    int racks = 1;            // NVL72 racks (each its own NVLink domain, joined by the network)
    int nodes = 1;            // HGX nodes
    int gpus_per_node = 8;
    int nics_per_gpu = 1;
    // Optional overrides of the GPU spec and link figures (0 = keep the built-in default).
    double nic_gbs = 0;       // per NIC per direction, GB/s
    double nvlink_gbs = 0;    // per GPU per direction, GB/s (aggregate over its links)
    int gpus_per_leaf = 0;    // 0 = one leaf per rail (rail-optimised)
    int ranks = 1;            // host-cpu: expert-parallel ranks of the CPU engine
};

std::vector<std::string> builtinTopologyNames();
// Throws std::invalid_argument with a message naming the problem (unknown key, parameter out of range).
Topology buildTopology(const TopologyParams& p);

}  // namespace moex
