#include "sim/fabric.h"

#include <algorithm>
#include <map>

namespace moex {

int Fabric::addPort(PortKind kind, int owner)
{
    Port port;
    port.kind = kind;
    port.owner = owner;
    m_ports.push_back(std::move(port));
    return static_cast<int>(m_ports.size()) - 1;
}

int Fabric::gpuOnRail(int d, int r) const
{
    const auto& gpus = m_domainGpus[static_cast<std::size_t>(d)];
    return r >= 0 && r < static_cast<int>(gpus.size()) ? gpus[static_cast<std::size_t>(r)] : -1;
}

Fabric::Fabric(const Topology& t)
{
    m_numGpus = t.numGpus();
    const auto G = static_cast<std::size_t>(m_numGpus);
    m_domain.assign(G, 0);
    m_rail.assign(G, 0);
    m_nvOut.assign(G, -1);
    m_nvIn.assign(G, -1);
    m_nicOut.assign(G, -1);
    m_nicIn.assign(G, -1);
    m_leafUp.assign(G, -1);
    m_leafDown.assign(G, -1);
    m_leaf.assign(G, -1);
    numberDomains(t);
    collectPorts(t);
    splitPortsOverLinks(t);
    measureLatencies(t);
}

// Domains renumbered densely in order of first appearance; rail = index within the domain.
void Fabric::numberDomains(const Topology& t)
{
    std::map<int, int> domainIndex;
    for (int g = 0; g < m_numGpus; ++g) {
        const int raw = t.domainOf(GpuId(g));
        auto [it, inserted] = domainIndex.emplace(raw, static_cast<int>(domainIndex.size()));
        if (inserted)
            m_domainGpus.emplace_back();
        m_domain[static_cast<std::size_t>(g)] = it->second;
        auto& members = m_domainGpus[static_cast<std::size_t>(it->second)];
        m_rail[static_cast<std::size_t>(g)] = static_cast<int>(members.size());
        members.push_back(g);
    }
    m_numDomains = static_cast<int>(m_domainGpus.size());
}

void Fabric::collectPorts(const Topology& t)
{
    const auto G = static_cast<std::size_t>(m_numGpus);
    const auto& nodes = t.nodes();
    auto gpuOfNode = [&](NodeId n) -> int {
        const TopoNode& node = nodes[n.index()];
        return (node.kind == NodeKind::gpu || node.kind == NodeKind::nic) ? node.gpu.value : -1;
    };
    auto portFor = [&](std::vector<int>& table, int g, PortKind kind) -> int {
        int& p = table[static_cast<std::size_t>(g)];
        if (p < 0)
            p = addPort(kind, g);
        return p;
    };
    std::map<int, int> leafUpPort, leafDownPort;  // leaf node index -> port
    // NIC ports: the narrower of the PCIe hop and the NIC's network link bounds the path, so each
    // is collected separately and the port keeps the smaller sum.
    std::vector<double> pcieOut(G, 0), pcieIn(G, 0), netOut(G, 0), netIn(G, 0);

    for (std::size_t i = 0; i < t.links().size(); ++i) {
        const TopoLink& l = t.links()[i];
        const TopoNode& from = nodes[l.from.index()];
        const TopoNode& to = nodes[l.to.index()];
        const int li = static_cast<int>(i);
        if (l.kind == LinkKind::nvlink) {
            if (from.kind == NodeKind::gpu) {
                const int p = portFor(m_nvOut, from.gpu.value, PortKind::nvOut);
                m_ports[static_cast<std::size_t>(p)].links.push_back(li);
                m_ports[static_cast<std::size_t>(p)].capacity_gbs += l.capacity_gbs;
            }
            if (to.kind == NodeKind::gpu) {
                const int p = portFor(m_nvIn, to.gpu.value, PortKind::nvIn);
                m_ports[static_cast<std::size_t>(p)].links.push_back(li);
                m_ports[static_cast<std::size_t>(p)].capacity_gbs += l.capacity_gbs;
            }
            continue;
        }
        if (l.kind == LinkKind::c2c)
            continue;  // Grace <-> GPU carries no all-to-all traffic
        if (from.kind == NodeKind::gpu && to.kind == NodeKind::nic) {
            const int g = from.gpu.value;
            m_ports[static_cast<std::size_t>(portFor(m_nicOut, g, PortKind::nicOut))].links.push_back(li);
            pcieOut[static_cast<std::size_t>(g)] += l.capacity_gbs;
        } else if (from.kind == NodeKind::nic && to.kind == NodeKind::gpu) {
            const int g = to.gpu.value;
            m_ports[static_cast<std::size_t>(portFor(m_nicIn, g, PortKind::nicIn))].links.push_back(li);
            pcieIn[static_cast<std::size_t>(g)] += l.capacity_gbs;
        } else if (from.kind == NodeKind::nic) {
            const int g = gpuOfNode(l.from);
            m_ports[static_cast<std::size_t>(portFor(m_nicOut, g, PortKind::nicOut))].links.push_back(li);
            netOut[static_cast<std::size_t>(g)] += l.capacity_gbs;
            if (to.kind == NodeKind::leaf)
                m_leaf[static_cast<std::size_t>(g)] = static_cast<int>(l.to.index());
        } else if (to.kind == NodeKind::nic) {
            const int g = gpuOfNode(l.to);
            m_ports[static_cast<std::size_t>(portFor(m_nicIn, g, PortKind::nicIn))].links.push_back(li);
            netIn[static_cast<std::size_t>(g)] += l.capacity_gbs;
        } else if (from.kind == NodeKind::leaf && to.kind == NodeKind::spine) {
            const int leaf = static_cast<int>(l.from.index());
            auto [it, inserted] = leafUpPort.emplace(leaf, 0);
            if (inserted)
                it->second = addPort(PortKind::leafUp, leaf);
            m_ports[static_cast<std::size_t>(it->second)].links.push_back(li);
            m_ports[static_cast<std::size_t>(it->second)].capacity_gbs += l.capacity_gbs;
        } else if (from.kind == NodeKind::spine && to.kind == NodeKind::leaf) {
            const int leaf = static_cast<int>(l.to.index());
            auto [it, inserted] = leafDownPort.emplace(leaf, 0);
            if (inserted)
                it->second = addPort(PortKind::leafDown, leaf);
            m_ports[static_cast<std::size_t>(it->second)].links.push_back(li);
            m_ports[static_cast<std::size_t>(it->second)].capacity_gbs += l.capacity_gbs;
        }
    }
    for (std::size_t g = 0; g < G; ++g) {
        auto bound = [](double a, double b) { return a > 0 && b > 0 ? std::min(a, b) : std::max(a, b); };
        auto setNic = [&](int port, double pcie, double net) {
            if (port < 0)
                return;
            Port& p = m_ports[static_cast<std::size_t>(port)];
            p.capacity_gbs = bound(pcie, net);
            p.pcie_gbs = pcie;
            p.network_gbs = net;
        };
        setNic(m_nicOut[g], pcieOut[g], netOut[g]);
        setNic(m_nicIn[g], pcieIn[g], netIn[g]);
        const int leaf = m_leaf[g];
        if (leaf >= 0) {
            if (auto it = leafUpPort.find(leaf); it != leafUpPort.end())
                m_leafUp[g] = it->second;
            if (auto it = leafDownPort.find(leaf); it != leafDownPort.end())
                m_leafDown[g] = it->second;
        }
        m_hasNetwork = m_hasNetwork || m_nicOut[g] >= 0;
    }
}

// Each link's fraction of its port's capacity of its kind.
void Fabric::splitPortsOverLinks(const Topology& t)
{
    for (Port& port : m_ports) {
        std::map<int, double> kindCapacity;
        for (int li : port.links)
            kindCapacity[static_cast<int>(t.links()[static_cast<std::size_t>(li)].kind)] +=
                t.links()[static_cast<std::size_t>(li)].capacity_gbs;
        for (int li : port.links) {
            const TopoLink& l = t.links()[static_cast<std::size_t>(li)];
            const double total = kindCapacity[static_cast<int>(l.kind)];
            port.link_fraction.push_back(total > 0 ? l.capacity_gbs / total : 0.0);
        }
    }
}

void Fabric::measureLatencies(const Topology& t)
{
    for (int s = 0; s < m_numGpus; ++s)
        for (int d = 0; d < m_numGpus; ++d) {
            if (s == d)
                continue;
            const Route& r = t.route(GpuId(s), GpuId(d));
            double& slot = m_domain[static_cast<std::size_t>(s)] == m_domain[static_cast<std::size_t>(d)]
                ? m_intraLatency
                : m_crossLatency;
            slot = std::max(slot, r.latency_us);
        }
}

}  // namespace moex
