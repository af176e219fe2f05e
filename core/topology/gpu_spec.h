// GpuSpec: what one accelerator can do. Values default from FACTS.md and are overridable in YAML.
#pragma once

#include <string>

namespace moex {

// cpu: one expert-parallel rank of the CPU engine on this machine (the host-cpu topology); its
// rates come from a CPU calibration (moex-cli calibrate), not from the spec's peaks.
enum class GpuArch { hopper, blackwell, cpu };

struct GpuSpec {
    std::string name;                 // e.g. "H200 SXM"
    GpuArch arch = GpuArch::hopper;
    double hbm_gb = 0;                // marketed capacity
    double hbm_usable_gb = 0;         // what a process can allocate
    double hbm_bw_gbs = 0;            // GB/s
    double bf16_tflops = 0;           // dense
    double fp8_tflops = 0;            // dense
    double fp4_tflops = 0;            // dense; 0 where the chip has no FP4 tensor rate (Hopper)
    double nvlink_gbs_per_dir = 0;    // aggregate NVLink bandwidth per direction, GB/s
    int nvlink_links = 0;             // NVLink ports per GPU
    double tdp_w = 0;
    double idle_w = 0;
};

std::string_view toString(GpuArch a);

// Built-in GPU specs by key: h100, h800, h200, b200 (GB200), b300 (GB300). nullptr when unknown.
const GpuSpec* builtinGpu(const std::string& key);

}  // namespace moex
