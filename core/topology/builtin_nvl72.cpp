// GB200 / GB300 NVL72 (FACTS.md 1, "GB200 NVL72" table): per rack 18 compute trays, each 2
// superchips (1 Grace + 2 GPUs) and one ConnectX NIC per GPU; 9 NVLink switch trays of 2 NVLink
// Switch chips; every GPU has one NVLink 5 link to every one of the 18 chips (72 x 18 = 1296 =
// 18 chips x 72 ports), so any two GPUs of a rack are one switch hop apart. Each rack is one NVLink
// domain; racks are joined by the rail-optimised network.
#include "topology/topology_detail.h"

namespace moex::detail {

namespace {

constexpr int kComputeTrays = 18;
constexpr int kSuperchipsPerTray = 2;
constexpr int kGpusPerSuperchip = 2;
constexpr int kGpusPerTray = kSuperchipsPerTray * kGpusPerSuperchip;
constexpr int kSwitchTrays = 9;
constexpr int kChipsPerSwitchTray = 2;
constexpr int kChipsPerRack = kSwitchTrays * kChipsPerSwitchTray;  // 18
// NVLink-C2C between Grace and each GPU of its superchip: 900 GB/s bidirectional, 450 each way.
constexpr double kC2cGbs = 450;

}  // namespace

Topology buildNvl72(const TopologyParams& p)
{
    const bool gb300 = p.builtin == "gb300-nvl72";
    Topology t;
    t.name = p.racks > 1 ? p.builtin + " x" + std::to_string(p.racks) : p.builtin;
    t.gpu = *builtinGpu(gb300 ? "b300" : "b200");
    if (p.nvlink_gbs > 0)
        t.gpu.nvlink_gbs_per_dir = p.nvlink_gbs;
    t.pxn = true;
    // ConnectX-7 400 Gb/s (GB200) or ConnectX-8 800 Gb/s (GB300) per GPU; PCIe Gen5 x16 (64 GB/s each
    // way) to the CX7, Gen6 x16 (128 GB/s) to the CX8.
    const double nicGbs = p.nic_gbs > 0 ? p.nic_gbs : (gb300 ? 100.0 : 50.0);
    const double pcieGbs = gb300 ? 128.0 : 64.0;
    const double perChipGbs = t.gpu.nvlink_gbs_per_dir / kChipsPerRack;  // 900 / 18 = 50
    const int npg = p.nics_per_gpu;

    // Rail = the NIC's place in its compute tray, so the trays' 4 x npg NICs make 4 x npg rails.
    std::vector<std::vector<NodeId>> rails(static_cast<std::size_t>(kGpusPerTray * npg));
    int gpuCount = 0;
    int cpuCount = 0;
    int nicCount = 0;
    int chipCount = 0;
    for (int rack = 0; rack < p.racks; ++rack) {
        std::vector<NodeId> gpus;
        std::vector<std::pair<NodeId, NodeId>> c2c;  // (cpu, gpu)
        for (int tray = 0; tray < kComputeTrays; ++tray) {
            for (int sc = 0; sc < kSuperchipsPerTray; ++sc) {
                TopoNode cpu;
                cpu.kind = NodeKind::cpu;
                cpu.name = "cpu" + std::to_string(cpuCount++);
                cpu.pos = {rack, tray, sc, 0};
                cpu.domain = rack;
                const NodeId cpuId = t.addNode(cpu);
                for (int j = 0; j < kGpusPerSuperchip; ++j) {
                    TopoNode gpu;
                    gpu.kind = NodeKind::gpu;
                    gpu.name = "gpu" + std::to_string(gpuCount++);
                    gpu.pos = {rack, tray, sc, j};
                    gpu.domain = rack;
                    gpus.push_back(t.addNode(gpu));
                    c2c.emplace_back(cpuId, gpus.back());
                }
            }
        }
        std::vector<std::pair<NodeId, NodeId>> gpuNic;
        for (NodeId g : gpus) {
            const TopoNode& gn = t.node(g);
            const int inTray = gn.pos.board * kGpusPerSuperchip + gn.pos.slot;
            for (int k = 0; k < npg; ++k) {
                TopoNode nic;
                nic.kind = NodeKind::nic;
                nic.name = "nic" + std::to_string(nicCount++);
                nic.pos = {rack, gn.pos.tray, gn.pos.board, gn.pos.slot * npg + k};
                nic.gpu = gn.gpu;
                const NodeId nicId = t.addNode(nic);
                gpuNic.emplace_back(g, nicId);
                rails[static_cast<std::size_t>(inTray * npg + k)].push_back(nicId);
            }
        }
        std::vector<NodeId> chips;
        for (int tray = 0; tray < kSwitchTrays; ++tray)
            for (int c = 0; c < kChipsPerSwitchTray; ++c) {
                TopoNode chip;
                chip.kind = NodeKind::nvswitch;
                chip.name = "nvsw" + std::to_string(chipCount++);
                chip.pos = {rack, tray, 0, c};
                chip.domain = rack;
                chips.push_back(t.addNode(chip));
            }
        for (NodeId g : gpus)
            for (NodeId chip : chips)
                t.addBidirectional(g, chip, LinkKind::nvlink, perChipGbs, kNvlinkLinkUs);
        for (const auto& [cpu, gpu] : c2c)
            t.addBidirectional(cpu, gpu, LinkKind::c2c, kC2cGbs, kC2cLinkUs);
        for (const auto& [gpu, nic] : gpuNic)
            t.addBidirectional(gpu, nic, LinkKind::pcie, pcieGbs, kPcieNicLinkUs);
    }
    const double ports = addRailFabric(t, rails, nicGbs, p.gpus_per_leaf);
    t.switch_power_w =
        chipCount * kNvlink5SwitchChipW + nicCount * (gb300 ? kConnectX8W : kConnectX7W) + ports * kIbPortW;
    return t;
}

}  // namespace moex::detail
