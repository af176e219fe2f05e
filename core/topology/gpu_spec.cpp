#include "topology/gpu_spec.h"

#include "topology/topology_detail.h"

#include <array>
#include <utility>

namespace moex {

std::string_view toString(GpuArch a)
{
    switch (a) {
    case GpuArch::hopper: return "hopper";
    case GpuArch::blackwell: return "blackwell";
    case GpuArch::cpu: return "cpu";
    }
    return "unknown";
}

namespace {

// Idle power is an estimate, not a published figure: about 100 W for an idle Hopper SXM board and
// 150 W for Blackwell (nvidia-smi readings people report at idle). The power model only needs it
// as the floor under (TDP - idle) x utilisation; calibration can override it in YAML.
constexpr double kHopperIdleW = 100;
constexpr double kBlackwellIdleW = 150;

// hbm_usable_gb: what a process can allocate (device total as the driver reports it, less the
// CUDA context), an estimate where FACTS.md gives none.
GpuSpec h100()
{
    // FACTS.md 1, HGX H100/H200 table: 80 GB HBM3 at 3.35 TB/s, dense BF16 989 / FP8 1979 TFLOP/s,
    // NVLink 4: 18 links, 450 GB/s each way, 700 W.
    GpuSpec s;
    s.name = "H100 SXM";
    s.arch = GpuArch::hopper;
    s.hbm_gb = 80;
    s.hbm_usable_gb = 79;
    s.hbm_bw_gbs = 3350;
    s.bf16_tflops = 989;
    s.fp8_tflops = 1979;
    s.fp4_tflops = 0;
    s.nvlink_gbs_per_dir = 450;
    s.nvlink_links = 18;
    s.tdp_w = 700;
    s.idle_w = kHopperIdleW;
    return s;
}

GpuSpec h800()
{
    // The export variant DeepSeek ran on (FACTS.md 1, H800 row): H100 silicon with NVLink cut to
    // about 400 GB/s bidirectional = 200 GB/s each way, i.e. 8 NVLink 4 links of 25 GB/s each way.
    GpuSpec s = h100();
    s.name = "H800 SXM";
    s.nvlink_gbs_per_dir = 200;
    s.nvlink_links = 8;
    return s;
}

GpuSpec h200()
{
    // FACTS.md 1: 141 GB HBM3e at 4.8 TB/s, otherwise the H100 board. Usable: the driver reports
    // about 140 GiB-class capacity; 140 is an estimate.
    GpuSpec s = h100();
    s.name = "H200 SXM";
    s.hbm_gb = 141;
    s.hbm_usable_gb = 140;
    s.hbm_bw_gbs = 4800;
    return s;
}

GpuSpec b200Gb200()
{
    // FACTS.md 1, GB200 NVL72 table: 192 GB marketed / 186 usable at 8 TB/s; dense BF16 2.5 PF,
    // FP8 5 PF, FP4 10 PF; NVLink 5: 18 x 100 GB/s bidirectional = 900 GB/s each way; ~1.2 kW.
    GpuSpec s;
    s.name = "B200 (GB200)";
    s.arch = GpuArch::blackwell;
    s.hbm_gb = 192;
    s.hbm_usable_gb = 186;
    s.hbm_bw_gbs = 8000;
    s.bf16_tflops = 2500;
    s.fp8_tflops = 5000;
    s.fp4_tflops = 10000;
    s.nvlink_gbs_per_dir = 900;
    s.nvlink_links = 18;
    s.tdp_w = 1200;
    s.idle_w = kBlackwellIdleW;
    return s;
}

GpuSpec b200Hgx()
{
    // HGX B200 is not in FACTS.md; these are NVIDIA's HGX B200 datasheet figures per GPU (8-GPU
    // board: 1.44 TB HBM3e, 64 TB/s; sparse FP4/FP8/BF16 144/72/36 PF, halved for dense):
    // 180 GB at 8 TB/s, dense BF16 2.25 PF, FP8 4.5 PF, FP4 9 PF, 1000 W. Same NVLink 5 as GB200.
    // Usable capacity is an estimate.
    GpuSpec s = b200Gb200();
    s.name = "B200 (HGX)";
    s.hbm_gb = 180;
    s.hbm_usable_gb = 178;
    s.bf16_tflops = 2250;
    s.fp8_tflops = 4500;
    s.fp4_tflops = 9000;
    s.tdp_w = 1000;
    return s;
}

GpuSpec b300Gb300()
{
    // FACTS.md 1, "GB300 NVL72 differs": 288 GB HBM3e (~279 usable), FP4 dense 15 PF, up to 1.4 kW,
    // same NVLink 5. HBM bandwidth, BF16 and FP8 rates are kept at the B200 figures (FACTS.md gives
    // no others).
    GpuSpec s = b200Gb200();
    s.name = "B300 (GB300)";
    s.hbm_gb = 288;
    s.hbm_usable_gb = 279;
    s.fp4_tflops = 15000;
    s.tdp_w = 1400;
    return s;
}

const std::array<std::pair<const char*, GpuSpec>, 6>& table()
{
    static const std::array<std::pair<const char*, GpuSpec>, 6> specs{{
        {"h100", h100()},
        {"h800", h800()},
        {"h200", h200()},
        {"b200", b200Gb200()},
        {"b200-hgx", b200Hgx()},
        {"b300", b300Gb300()},
    }};
    return specs;
}

}  // namespace

const GpuSpec* builtinGpu(const std::string& key)
{
    for (const auto& [name, spec] : table())
        if (key == name)
            return &spec;
    return nullptr;
}

std::vector<std::string> detail::builtinGpuNames()
{
    std::vector<std::string> out;
    for (const auto& entry : table())
        out.emplace_back(entry.first);
    return out;
}

bool detail::sameSpec(const GpuSpec& a, const GpuSpec& b)
{
    return a.name == b.name && a.arch == b.arch && a.hbm_gb == b.hbm_gb && a.hbm_usable_gb == b.hbm_usable_gb &&
           a.hbm_bw_gbs == b.hbm_bw_gbs && a.bf16_tflops == b.bf16_tflops && a.fp8_tflops == b.fp8_tflops &&
           a.fp4_tflops == b.fp4_tflops && a.nvlink_gbs_per_dir == b.nvlink_gbs_per_dir &&
           a.nvlink_links == b.nvlink_links && a.tdp_w == b.tdp_w && a.idle_w == b.idle_w;
}

}  // namespace moex
