#include "topology/topology.h"

#include "common/number_text.h"
#include "topology/topology_detail.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace moex {

std::string_view toString(NodeKind k)
{
    switch (k) {
    case NodeKind::gpu: return "gpu";
    case NodeKind::nvswitch: return "nvswitch";
    case NodeKind::nic: return "nic";
    case NodeKind::leaf: return "leaf";
    case NodeKind::spine: return "spine";
    case NodeKind::cpu: return "cpu";
    }
    return "unknown";
}

std::string_view toString(LinkKind k)
{
    switch (k) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::network: return "network";
    case LinkKind::c2c: return "c2c";
    case LinkKind::pcie: return "pcie";
    }
    return "unknown";
}

NodeId Topology::addNode(TopoNode n)
{
    if (n.name.empty())
        throw std::invalid_argument("topology node without a name");
    const NodeId id(static_cast<std::int32_t>(m_nodes.size()));
    if (!m_byName.emplace(n.name, id).second)
        throw std::invalid_argument("duplicate topology node name '" + n.name + "'");
    if (n.kind == NodeKind::gpu) {
        n.gpu = GpuId(static_cast<std::int32_t>(m_gpuNodes.size()));
        m_gpuNodes.push_back(id);
    }
    m_nodes.push_back(std::move(n));
    m_finalized = false;
    return id;
}

LinkId Topology::addLink(TopoLink l)
{
    const auto n = static_cast<std::int32_t>(m_nodes.size());
    if (!l.from.valid() || !l.to.valid() || l.from.value >= n || l.to.value >= n)
        throw std::invalid_argument("topology link with an unknown endpoint");
    if (l.from == l.to)
        throw std::invalid_argument("topology link from '" + node(l.from).name + "' to itself");
    if (!(l.capacity_gbs > 0) || !std::isfinite(l.capacity_gbs))
        throw std::invalid_argument("link " + node(l.from).name + " -> " + node(l.to).name +
                                    ": capacity must be positive and finite");
    if (!(l.latency_us >= 0) || !std::isfinite(l.latency_us))
        throw std::invalid_argument("link " + node(l.from).name + " -> " + node(l.to).name +
                                    ": latency must be zero or positive and finite");
    const LinkId id(static_cast<std::int32_t>(m_links.size()));
    m_links.push_back(l);
    m_finalized = false;
    return id;
}

LinkId Topology::addBidirectional(NodeId a, NodeId b, LinkKind kind, double capacity_gbs, double latency_us)
{
    const LinkId forward = addLink({a, b, kind, capacity_gbs, latency_us});
    addLink({b, a, kind, capacity_gbs, latency_us});
    return forward;
}

int Topology::numDomains() const
{
    std::set<int> domains;
    for (NodeId g : m_gpuNodes)
        domains.insert(node(g).domain);
    return static_cast<int>(domains.size());
}

std::vector<LinkId> Topology::outLinks(NodeId n) const
{
    if (m_out.size() == m_nodes.size())
        return m_out[n.index()];
    // Before finalize() there is no adjacency yet; scan (only tools and tests do this).
    std::vector<LinkId> out;
    for (std::size_t i = 0; i < m_links.size(); ++i)
        if (m_links[i].from == n)
            out.emplace_back(static_cast<std::int32_t>(i));
    return out;
}

int Topology::count(NodeKind kind) const
{
    return static_cast<int>(
        std::count_if(m_nodes.begin(), m_nodes.end(), [kind](const TopoNode& n) { return n.kind == kind; }));
}

NodeId Topology::findNode(const std::string& nodeName) const
{
    const auto it = m_byName.find(nodeName);
    return it == m_byName.end() ? NodeId() : it->second;
}

const Route& Topology::route(GpuId src, GpuId dst) const
{
    if (!m_finalized)
        throw std::logic_error("Topology::route() called before finalize()");
    const std::size_t g = m_gpuNodes.size();
    if (!src.valid() || !dst.valid() || src.index() >= g || dst.index() >= g)
        throw std::out_of_range("Topology::route(): GPU id out of range");
    return (*m_routes)[src.index() * g + dst.index()];
}

void Topology::buildAdjacency()
{
    m_out.assign(m_nodes.size(), {});
    for (std::size_t i = 0; i < m_links.size(); ++i) {
        const LinkId id(static_cast<std::int32_t>(i));
        m_out[m_links[i].from.index()].push_back(id);
    }
}

void Topology::finalize()
{
    m_finalized = false;
    buildAdjacency();
    computeRoutes();  // topology_routes.cpp
    m_finalized = true;
}

static std::string describe(const TopoNode& n)
{
    return std::string(toString(n.kind)) + " '" + n.name + "' (domain " + std::to_string(n.domain) + ", pos " +
           std::to_string(n.pos.rack) + "/" + std::to_string(n.pos.tray) + "/" + std::to_string(n.pos.board) + "/" +
           std::to_string(n.pos.slot) + ", gpu " + std::to_string(n.gpu.value) + ")";
}

static std::string describe(const Topology& t, const TopoLink& l)
{
    return t.node(l.from).name + " -> " + t.node(l.to).name + " " + std::string(toString(l.kind)) + " " +
           shortestNumber(l.capacity_gbs) + " GB/s " + shortestNumber(l.latency_us) + " us";
}

std::string firstDifference(const Topology& a, const Topology& b)
{
    if (a.name != b.name)
        return "name: '" + a.name + "' vs '" + b.name + "'";
    if (!detail::sameSpec(a.gpu, b.gpu))
        return "gpu spec: '" + a.gpu.name + "' vs '" + b.gpu.name + "' (or one of its figures)";
    if (a.pxn != b.pxn)
        return "pxn differs";
    if (a.switch_power_w != b.switch_power_w)
        return "switch_power_w: " + shortestNumber(a.switch_power_w) + " vs " +
               shortestNumber(b.switch_power_w);
    if (a.nodes().size() != b.nodes().size())
        return "node count: " + std::to_string(a.nodes().size()) + " vs " + std::to_string(b.nodes().size());
    for (std::size_t i = 0; i < a.nodes().size(); ++i)
        if (!(a.nodes()[i] == b.nodes()[i]))
            return "node " + std::to_string(i) + ": " + describe(a.nodes()[i]) + " vs " + describe(b.nodes()[i]);
    if (a.links().size() != b.links().size())
        return "link count: " + std::to_string(a.links().size()) + " vs " + std::to_string(b.links().size());
    for (std::size_t i = 0; i < a.links().size(); ++i)
        if (!(a.links()[i] == b.links()[i]))
            return "link " + std::to_string(i) + ": " + describe(a, a.links()[i]) + " vs " + describe(b, b.links()[i]);
    if (a.finalized() != b.finalized())
        return "one topology is finalized, the other is not";
    if (!a.finalized())
        return {};
    for (int s = 0; s < a.numGpus(); ++s)
        for (int d = 0; d < a.numGpus(); ++d)
            if (!(a.route(GpuId(s), GpuId(d)) == b.route(GpuId(s), GpuId(d))))
                return "route " + a.node(a.gpuNode(GpuId(s))).name + " -> " + a.node(a.gpuNode(GpuId(d))).name +
                       " differs";
    return {};
}

}  // namespace moex
