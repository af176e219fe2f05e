// Topology: the link graph of a GPU system (GPUs, NVSwitch chips, NICs, leaf/spine switches,
// CPUs) with directed links, NVLink domains, and a drawing position for every element.
#pragma once

#include "common/ids.h"
#include "topology/gpu_spec.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace moex {

enum class NodeKind { gpu, nvswitch, nic, leaf, spine, cpu };
enum class LinkKind { nvlink, network, c2c, pcie };

// Where an element is drawn: rack / tray (or node) / board / slot within it. Trays are numbered
// per kind (compute trays and switch trays each from 0); the GUI lays kinds out itself (NVL72:
// 10 compute trays above the 9 switch trays, 8 below, as in NVIDIA's rack).
//   kind      NVL72 (rack = rack index)                HGX (rack = 0, tray = node index)
//   gpu       tray = compute tray 0..17,               board = 0 (the HGX baseboard),
//             board = superchip 0..1, slot = 0..1      slot = local GPU index
//   cpu       tray = compute tray, board = superchip,  (not modelled: host CPUs carry no
//             slot = 0 (the Grace of that superchip)    modelled traffic)
//   nvswitch  tray = switch tray 0..8, board = 0,      board = 0, slot = chip index
//             slot = chip in the tray 0..1
//   nic       tray/board as its GPU,                   board = 1 (the NIC/PCIe board),
//             slot = GPU slot * nics_per_gpu + k       slot = local GPU * nics_per_gpu + k
//   leaf      rack = 0, tray = 0, board = rail, slot = leaf index within the rail
//   spine     rack = 0, tray = 0, board = 0, slot = spine index
// Custom topologies set these freely; they only steer drawing, never routing.
struct Position {
    int rack = 0;
    int tray = 0;   // compute tray (NVL72), switch tray, or node index (HGX)
    int board = 0;  // board or sub-group within the tray
    int slot = 0;   // index within the board

    bool operator==(const Position&) const = default;
};

struct TopoNode {
    NodeKind kind = NodeKind::gpu;
    std::string name;  // unique, e.g. "gpu17", "nvsw3", "nic5", "leaf0"
    Position pos;
    int domain = -1;  // NVLink domain (GPUs, NVSwitch chips), -1 for network gear
    GpuId gpu;        // for GPU nodes: its GPU index; for NICs: the GPU it serves

    bool operator==(const TopoNode&) const = default;
};

struct TopoLink {
    NodeId from;
    NodeId to;
    LinkKind kind = LinkKind::nvlink;
    double capacity_gbs = 0;  // GB/s in this direction
    double latency_us = 0;    // per traversal

    bool operator==(const TopoLink&) const = default;
};

// One link used by a route, with the fraction of the pair's bytes that crosses it
// (traffic spread evenly over parallel links, e.g. the 18 NVLink Switch chips of NVL72).
struct LinkShare {
    LinkId link;
    double share = 1.0;

    bool operator==(const LinkShare&) const = default;
};

struct Route {
    std::vector<LinkShare> links;
    int hops = 0;                  // links on one path from source to destination
    double latency_us = 0;         // sum of per-hop latencies along one path
    bool crosses_network = false;  // leaves the NVLink domain through a NIC

    bool operator==(const Route&) const = default;
};

class Topology {
public:
    std::string name;
    std::string builtin;  // builder key when built-in ("gb200-nvl72", ...), else empty
    GpuSpec gpu;
    bool pxn = true;            // cross-domain traffic first goes over NVLink to the GPU on the destination's rail
    double switch_power_w = 0;  // all switches and NICs together

    // A GPU node gets the next GpuId (GPU ids follow the order GPU nodes are added). Throws
    // std::invalid_argument on a duplicate or empty name.
    NodeId addNode(TopoNode n);
    // Adds both directions with the same capacity and latency; returns the forward link.
    LinkId addBidirectional(NodeId a, NodeId b, LinkKind kind, double capacity_gbs, double latency_us);
    // Throws std::invalid_argument for an unknown endpoint, a self-loop, a capacity that is not
    // positive and finite, or a negative latency.
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
    // Inside a domain: nvlink links through nvswitch nodes only (never a CPU or a third GPU).
    // Across domains: [NVLink to the proxy GPU] -> GPU->NIC -> leaf/spine -> NIC -> GPU, where the
    // proxy (pxn) is the GPU of the source's domain whose NICs are fewest network hops from the
    // destination's (the source itself when it is among them, else the one with the destination's
    // local index: its rail). A GPU with several NICs splits its bytes evenly over them.
    // src == dst gives an empty route. Throws std::logic_error before finalize().
    [[nodiscard]] const Route& route(GpuId src, GpuId dst) const;
    [[nodiscard]] bool finalized() const { return m_finalized; }

    // Builds adjacency and the all-pairs route table; call after the last addNode/addLink (and
    // again after changing pxn). Throws std::invalid_argument when a GPU cannot reach another or a
    // NIC lacks its links (bad input: the topology file's error).
    void finalize();

private:
    void buildAdjacency();
    void computeRoutes();

    std::vector<TopoNode> m_nodes;
    std::vector<TopoLink> m_links;
    std::vector<NodeId> m_gpuNodes;
    std::vector<std::vector<LinkId>> m_out;
    std::unordered_map<std::string, NodeId> m_byName;
    // [src * G + dst]; immutable once built, so copies of the topology (every Scenario copy: the
    // simulator's, a run's, the window's) share it instead of copying 5,184 routes for NVL72.
    std::shared_ptr<const std::vector<Route>> m_routes;
    bool m_finalized = false;
};

// First difference between two topologies ("" when equal): name, GPU spec, pxn, switch power,
// nodes, links and (when both are finalized) every route. The builder key is not compared, so a
// built-in equals its written-out custom file.
std::string firstDifference(const Topology& a, const Topology& b);

std::string_view toString(NodeKind k);
std::string_view toString(LinkKind k);

}  // namespace moex
