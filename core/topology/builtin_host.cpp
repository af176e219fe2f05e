// host-cpu: the CPU engine's expert-parallel ranks on this machine, as a topology the simulator can
// predict the engine on (DESIGN.md section 6). Each rank is a "GPU" node of architecture cpu; the
// ranks exchange rows through shared memory, drawn as one memory node every rank links to. The
// rates that matter (weight streaming against tokens per expert, router rate, copy bandwidth) come
// from a CPU calibration (moex-cli calibrate), not from these figures: the spec's capacity is the
// machine's memory so that the memory view means something, its peaks are placeholders the CPU
// compute model does not read.
#include "topology/topology_detail.h"

#include <fstream>
#include <string>

namespace moex::detail {

namespace {

std::string cpuModelName()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                const auto begin = line.find_first_not_of(' ', colon + 1);
                return begin == std::string::npos ? std::string("CPU") : line.substr(begin);
            }
        }
    return "CPU";
}

double memTotalGb()
{
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    double kb = 0;
    while (in >> key >> kb >> unit)
        if (key == "MemTotal:")
            return kb * 1024.0 / 1e9;
    return 16;  // unknown: a small machine
}

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
    g.hbm_gb = memTotalGb();
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
