// Fabric: the topology's directed links grouped into ports the all-to-all loads evenly —
// a GPU's NVLink ports out and in (spread over all NVSwitch chips), its NIC path out and in, and
// each leaf's uplinks to the spines. Built once per topology; the simulator accumulates bytes per
// port per phase in O(G^2) and spreads them back over the real links for the link view.
#pragma once

#include "topology/topology.h"

#include <vector>

namespace moex {

enum class PortKind { nvOut, nvIn, nicOut, nicIn, leafUp, leafDown };

struct Port {
    PortKind kind = PortKind::nvOut;
    int owner = 0;              // GPU index, or leaf node index for leaf ports
    double capacity_gbs = 0;    // sum over its links, GB/s in this direction
    // NIC ports are two links in series: GPU -> NIC over PCIe, then the network link; each has its
    // own efficiency in the calibration. capacity_gbs is the smaller of the two (0 = absent).
    double pcie_gbs = 0;
    double network_gbs = 0;
    std::vector<int> links;     // topology link indices
    // Fraction of the port's bytes each link carries: parallel links of one kind share by
    // capacity; links in series (GPU -> NIC -> leaf) each carry all of it.
    std::vector<double> link_fraction;
};

class Fabric {
public:
    explicit Fabric(const Topology& t);

    [[nodiscard]] int numGpus() const { return m_numGpus; }
    [[nodiscard]] int numDomains() const { return m_numDomains; }
    [[nodiscard]] const std::vector<Port>& ports() const { return m_ports; }
    [[nodiscard]] int domainOf(int g) const { return m_domain[static_cast<std::size_t>(g)]; }
    [[nodiscard]] int railOf(int g) const { return m_rail[static_cast<std::size_t>(g)]; }
    [[nodiscard]] const std::vector<int>& domainGpus(int d) const { return m_domainGpus[static_cast<std::size_t>(d)]; }
    // GPU in domain d on rail r (-1 if the domain has no GPU on that rail).
    [[nodiscard]] int gpuOnRail(int d, int r) const;
    // Port indices per GPU (-1 when absent, e.g. no NIC).
    [[nodiscard]] int nvOut(int g) const { return m_nvOut[static_cast<std::size_t>(g)]; }
    [[nodiscard]] int nvIn(int g) const { return m_nvIn[static_cast<std::size_t>(g)]; }
    [[nodiscard]] int nicOut(int g) const { return m_nicOut[static_cast<std::size_t>(g)]; }
    [[nodiscard]] int nicIn(int g) const { return m_nicIn[static_cast<std::size_t>(g)]; }
    [[nodiscard]] int leafUp(int g) const { return m_leafUp[static_cast<std::size_t>(g)]; }      // of the GPU's leaf
    [[nodiscard]] int leafDown(int g) const { return m_leafDown[static_cast<std::size_t>(g)]; }
    [[nodiscard]] int leafOf(int g) const { return m_leaf[static_cast<std::size_t>(g)]; }        // node index, -1 none
    // Latency of one path (from the topology's routes): the slowest pair inside a domain and across.
    [[nodiscard]] double intraLatencyUs() const { return m_intraLatency; }
    [[nodiscard]] double crossLatencyUs() const { return m_crossLatency; }
    [[nodiscard]] bool hasNetwork() const { return m_hasNetwork; }

private:
    int addPort(PortKind kind, int owner);
    // The phases of the constructor.
    void numberDomains(const Topology& t);  // domains renumbered densely; rails
    void collectPorts(const Topology& t);   // every link onto its port; NIC ports bounded by PCIe and network
    void splitPortsOverLinks(const Topology& t);
    void measureLatencies(const Topology& t);  // the slowest route inside a domain and across domains

    int m_numGpus = 0;
    int m_numDomains = 0;
    std::vector<Port> m_ports;
    std::vector<int> m_domain, m_rail, m_nvOut, m_nvIn, m_nicOut, m_nicIn, m_leafUp, m_leafDown, m_leaf;
    std::vector<std::vector<int>> m_domainGpus;
    double m_intraLatency = 0;
    double m_crossLatency = 0;
    bool m_hasNetwork = false;
};

}  // namespace moex
