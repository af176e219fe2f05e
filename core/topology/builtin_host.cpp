// host-cpu: the CPU engine's expert-parallel ranks on this machine, as a topology the simulator can
// predict the engine on (DESIGN.md section 6). Each rank is a "GPU" node of architecture cpu; the
// ranks exchange rows through shared memory, drawn as one memory node every rank links to. The
// rates that matter (weight streaming against tokens per expert, router rate, copy bandwidth) come
// from a CPU calibration (moex-cli calibrate), not from this spec: its capacity is the machine's
// memory, so that the memory view means something; its bandwidth and FLOP rates are order-of-
// magnitude figures for one core that only the attention and dense layers use, which the engine
// does not run and which predictions of it leave out (MoE-layer times only).
#include "common/host_info.h"
#include "topology/topology_detail.h"

#include <string>

namespace moex::detail {

namespace {

constexpr double kNominalCopyGbs = 10;  // per rank and direction, until a calibration says otherwise
constexpr double kSharedMemoryUs = 0.1;

}  // namespace

Topology buildHostCpu(const TopologyParams& p)
{
    Topology t;
    t.name = "host-cpu x" + std::to_string(p.ranks);
    GpuSpec& g = t.gpu;
    g.name = cpuModelName() + " (CPU engine rank)";
    g.arch = GpuArch::cpu;
    // Every rank may use the machine's memory; the engine itself checks what its weights need.
    const std::size_t total = meminfoBytes("MemTotal");
    g.hbm_gb = total > 0 ? static_cast<double>(total) / 1e9 : 16.0;  // unknown: a small machine
    g.hbm_usable_gb = 0.8 * g.hbm_gb;
    g.hbm_bw_gbs = 20;
    g.bf16_tflops = 0.1;
    g.fp8_tflops = 0.1;
    g.nvlink_gbs_per_dir = kNominalCopyGbs;
    g.nvlink_links = 1;
    g.tdp_w = 0;  // no power model for a CPU rank
    g.idle_w = 0;
    TopoNode mem;
    mem.kind = NodeKind::nvswitch;
    mem.name = "memory";
    mem.pos = {0, 0, 0, 0};
    mem.domain = 0;
    const NodeId memId = t.addNode(mem);
    for (int r = 0; r < p.ranks; ++r) {
        TopoNode rank;
        rank.kind = NodeKind::gpu;
        rank.name = "rank" + std::to_string(r);
        rank.pos = {0, 0, 0, r};
        rank.domain = 0;
        const NodeId id = t.addNode(rank);
        t.addBidirectional(id, memId, LinkKind::nvlink, kNominalCopyGbs, kSharedMemoryUs);
    }
    return t;
}

}  // namespace moex::detail
