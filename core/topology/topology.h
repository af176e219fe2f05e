// Topology: the link graph of a GPU system (GPUs, NVSwitch chips, NICs, leaf/spine switches,
// CPUs) with directed links, NVLink domains, and a drawing position for every element.
#pragma once

#include "common/ids.h"
#include "topology/gpu_spec.h"

#include <string>
#include <vector>

namespace moex {

enum class NodeKind { gpu, nvswitch, nic, leaf, spine, cpu };
enum class LinkKind { nvlink, network, c2c, pcie };

// Where an element is drawn: rack / tray (or node) / board / slot within it.
struct Position {
    int rack = 0;
    int tray = 0;   // compute tray (NVL72), switch tray, or node index (HGX)
    int board = 0;  // board or sub-group within the tray
    int slot = 0;   // index within the board
};

struct TopoNode {
    NodeKind kind = NodeKind::gpu;
    std::string name;  // unique, e.g. "gpu17", "nvsw3", "nic5", "leaf0"
    Position pos;
    int domain = -1;   // NVLink domain (GPUs, NVSwitch chips), -1 for network gear
    GpuId gpu;         // for GPU nodes: its GPU index; for NICs: the GPU it serves
};

struct TopoLink {
    NodeId from;
    NodeId to;
    LinkKind kind = LinkKind::nvlink;
    double capacity_gbs = 0;  // GB/s in this direction
    double latency_us = 0;    // per traversal
};

// One link used by a route, with the fraction of the pair's bytes that crosses it
// (traffic spread evenly over parallel links, e.g. the 18 NVLink Switch chips of NVL72).
struct LinkShare {
    LinkId link;
    double share = 1.0;
};

struct Route {
    std::vector<LinkShare> links;
    int hops = 0;            // links on one path from source to destination
    double latency_us = 0;   // sum of per-hop latencies along one path
    bool crosses_network = false;  // leaves the NVLink domain through a NIC
};

class Topology {
public:
    std::string name;
    std::string builtin;  // builder key when built-in ("gb200-nvl72", ...), else empty
    GpuSpec gpu;
    bool pxn = true;  // cross-domain traffic first goes over NVLink to the GPU on the destination's rail
    double switch_power_w = 0;  // all switches and NICs together

    NodeId addNode(TopoNode n);
    // Adds both directions with the same capacity and latency; returns the forward link.
    LinkId addBidirectional(NodeId a, NodeId b, LinkKind kind, double capacity_gbs, double latency_us);
    LinkId addLink(TopoLink l);

    [[nodiscard]] const std::vector<TopoNode>& nodes() const { return m_nodes; }
    [[nodiscard]] const std::vector<TopoLink>& links() const { return m_links; }
    [[nodiscard]] const TopoNode& node(NodeId id) const { return m_nodes[id.index()]; }
    [[nodiscard]] const TopoLink& link(LinkId id) const { return m_links[id.index()]; }
    [[nodiscard]] int numGpus() const { return static_cast<int>(m_gpuNodes.size()); }
    [[nodiscard]] NodeId gpuNode(GpuId g) const { return m_gpuNodes[g.index()]; }
    [[nodiscard]] int numDomains() const;
    [[nodiscard]] int domainOf(GpuId g) const { return node(gpuNode(g)).domain; }
    [[nodiscard]] std::vector<LinkId> outLinks(NodeId n) const;
    [[nodiscard]] int count(NodeKind kind) const;
    [[nodiscard]] NodeId findNode(const std::string& name) const;  // invalid id when absent

    // Route between two GPUs over the link graph (shortest paths, traffic spread evenly over
    // equal-cost parallel paths; across NVLink domains PXN-style when `pxn`). Cached after finalize().
    [[nodiscard]] const Route& route(GpuId src, GpuId dst) const;

    // Builds adjacency and the all-pairs route table; call after the last addNode/addLink.
    // Throws std::logic_error when a GPU cannot reach another.
    void finalize();

private:
    Route computeRoute(GpuId src, GpuId dst) const;

    std::vector<TopoNode> m_nodes;
    std::vector<TopoLink> m_links;
    std::vector<NodeId> m_gpuNodes;
    std::vector<std::vector<LinkId>> m_out;
    std::vector<Route> m_routes;  // [src * G + dst]
};

std::string_view toString(NodeKind k);
std::string_view toString(LinkKind k);

}  // namespace moex
