// The scale-out fabric of the built-ins: rail-optimised leaf/spine, as in NVIDIA's reference
// architectures (FACTS.md 1, "scale-out" rows). NIC r of every node/tray is on rail r, all of a
// rail's NICs share a leaf, so same-rail traffic (what PXN produces) crosses one switch; spines
// join the leaves for the rest. The fabric is non-blocking: each leaf's uplink capacity equals its
// downlink total, spread evenly over the spines.
#include "topology/topology_detail.h"

#include <algorithm>

namespace moex::detail {

double addRailFabric(Topology& t, const std::vector<std::vector<NodeId>>& nicsByRail, double nicGbs, int nicsPerLeaf)
{
    struct Leaf {
        NodeId id;
        std::vector<NodeId> nics;
    };
    std::vector<Leaf> leaves;
    for (std::size_t rail = 0; rail < nicsByRail.size(); ++rail) {
        const auto& nics = nicsByRail[rail];
        // A rail larger than one leaf's ports (nicsPerLeaf > 0) spans several leaves, joined by spines.
        const std::size_t perLeaf =
            nicsPerLeaf > 0 ? static_cast<std::size_t>(nicsPerLeaf) : std::max<std::size_t>(1, nics.size());
        for (std::size_t first = 0, k = 0; first < std::max<std::size_t>(1, nics.size()); first += perLeaf, ++k) {
            Leaf leaf;
            TopoNode n;
            n.kind = NodeKind::leaf;
            n.name = "leaf" + std::to_string(leaves.size());
            n.pos = {0, 0, static_cast<int>(rail), static_cast<int>(k)};
            leaf.id = t.addNode(n);
            for (std::size_t i = first; i < std::min(nics.size(), first + perLeaf); ++i)
                leaf.nics.push_back(nics[i]);
            leaves.push_back(std::move(leaf));
        }
    }
    const int numSpines = std::max(1, static_cast<int>(leaves.size()) / 2);
    std::vector<NodeId> spines;
    for (int s = 0; s < numSpines; ++s) {
        TopoNode n;
        n.kind = NodeKind::spine;
        n.name = "spine" + std::to_string(s);
        n.pos = {0, 0, 0, s};
        spines.push_back(t.addNode(n));
    }
    double ports = 0;  // in units of one NIC's capacity, counted at both ends of each cable
    for (const Leaf& leaf : leaves) {
        for (NodeId nic : leaf.nics)
            t.addBidirectional(nic, leaf.id, LinkKind::network, nicGbs, kNetworkLinkUs);
        ports += static_cast<double>(leaf.nics.size());
    }
    for (const Leaf& leaf : leaves) {
        if (leaf.nics.empty())
            continue;
        const double up = nicGbs * static_cast<double>(leaf.nics.size()) / numSpines;
        for (NodeId spine : spines)
            t.addBidirectional(leaf.id, spine, LinkKind::network, up, kNetworkLinkUs);
        ports += 2.0 * static_cast<double>(leaf.nics.size());  // leaf uplinks + spine downlinks
    }
    // Ports are priced per 400 Gb/s (50 GB/s) so faster NICs cost proportionally more switch power.
    return ports * nicGbs / 50.0;
}

}  // namespace moex::detail
