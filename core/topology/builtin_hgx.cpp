// HGX nodes (FACTS.md 1, "HGX H100 / H200" table): per node one NVLink domain of up to 8 GPUs on a
// baseboard with NVSwitch chips that every GPU links to (a non-blocking crossbar), one ConnectX-7
// 400 Gb/s NIC per GPU on PCIe Gen5 x16, nodes joined by a rail-optimised leaf/spine fabric.
#include "topology/topology_detail.h"

namespace moex::detail {

namespace {

struct HgxBoard {
    const char* gpuKey;
    int chips;
};

HgxBoard board(const std::string& key)
{
    // Hopper boards carry 4 third-generation NVSwitch chips; each GPU's 18 NVLink 4 links are
    // spread over all 4 (5+4+4+5 on the real board; modelled as an even split). The HGX B200
    // board carries 2 NVLink 5 switch chips, each GPU's 18 links split 9 + 9 between them.
    if (key == "hgx-h100")
        return {"h100", 4};
    if (key == "hgx-h800")
        return {"h800", 4};
    if (key == "hgx-h200")
        return {"h200", 4};
    return {"b200-hgx", 2};
}

constexpr double kConnectX7Gbs = 50;  // 400 Gb/s NDR, per direction
constexpr double kPcieGen5x16Gbs = 64;

}  // namespace

Topology buildHgx(const TopologyParams& p)
{
    const HgxBoard b = board(p.builtin);
    Topology t;
    t.name = p.nodes > 1 ? p.builtin + " x" + std::to_string(p.nodes) : p.builtin;
    t.gpu = *builtinGpu(b.gpuKey);
    if (p.nvlink_gbs > 0)
        t.gpu.nvlink_gbs_per_dir = p.nvlink_gbs;
    t.pxn = true;
    const double nicGbs = p.nic_gbs > 0 ? p.nic_gbs : kConnectX7Gbs;
    const double perChipGbs = t.gpu.nvlink_gbs_per_dir / b.chips;  // H100/H200 450/4, H800 200/4, B200 900/2
    const int npg = p.nics_per_gpu;

    std::vector<std::vector<NodeId>> rails(static_cast<std::size_t>(p.gpus_per_node * npg));
    int nicCount = 0;
    int chipCount = 0;
    for (int node = 0; node < p.nodes; ++node) {
        std::vector<NodeId> gpus;
        for (int i = 0; i < p.gpus_per_node; ++i) {
            TopoNode gpu;
            gpu.kind = NodeKind::gpu;
            gpu.name = "gpu" + std::to_string(node * p.gpus_per_node + i);
            gpu.pos = {0, node, 0, i};
            gpu.domain = node;
            gpus.push_back(t.addNode(gpu));
        }
        std::vector<NodeId> chips;
        for (int c = 0; c < b.chips; ++c) {
            TopoNode chip;
            chip.kind = NodeKind::nvswitch;
            chip.name = "nvsw" + std::to_string(chipCount++);
            chip.pos = {0, node, 0, c};
            chip.domain = node;
            chips.push_back(t.addNode(chip));
        }
        std::vector<std::pair<NodeId, NodeId>> gpuNic;
        for (int i = 0; i < p.gpus_per_node; ++i)
            for (int k = 0; k < npg; ++k) {
                TopoNode nic;
                nic.kind = NodeKind::nic;
                nic.name = "nic" + std::to_string(nicCount++);
                nic.pos = {0, node, 1, i * npg + k};
                nic.gpu = t.node(gpus[static_cast<std::size_t>(i)]).gpu;
                const NodeId nicId = t.addNode(nic);
                gpuNic.emplace_back(gpus[static_cast<std::size_t>(i)], nicId);
                rails[static_cast<std::size_t>(i * npg + k)].push_back(nicId);
            }
        for (NodeId g : gpus)
            for (NodeId chip : chips)
                t.addBidirectional(g, chip, LinkKind::nvlink, perChipGbs, kNvlinkLinkUs);
        for (const auto& [gpu, nic] : gpuNic)
            t.addBidirectional(gpu, nic, LinkKind::pcie, kPcieGen5x16Gbs, kPcieNicLinkUs);
    }
    // The fabric exists for one node too, so every NIC attaches to something the GUI can draw.
    const double ports = addRailFabric(t, rails, nicGbs, p.gpus_per_leaf);
    const double chipW = t.gpu.arch == GpuArch::hopper ? kHopperNvswitchW : kNvlink5SwitchChipW;
    t.switch_power_w = chipCount * chipW + nicCount * kConnectX7W + ports * kIbPortW;
    return t;
}

}  // namespace moex::detail
