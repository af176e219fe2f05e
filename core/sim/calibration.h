// Calibration: the efficiencies, latency floors and GEMM curve that turn hardware peaks into
// achieved rates. One set per hardware generation (Hopper, Blackwell); defaults fitted to the
// measurements of FACTS.md section 2 (docs/CALIBRATION.md), overridable by a YAML file.
#pragma once

#include "topology/gpu_spec.h"

#include <string>

namespace moex {

struct Calibration {
    std::string name;                  // e.g. "hopper-default"
    // Communication
    double nvlink_efficiency = 0.8;    // achieved / line rate of an NVLink port in all-to-all
    double network_efficiency = 0.95;  // achieved / line rate of a NIC (RDMA) in all-to-all
    double pcie_efficiency = 0.9;
    double dispatch_floor_us = 20;     // smallest dispatch a kernel achieves (launch, sync, signalling)
    double combine_floor_us = 30;
    double ll_message_us = 0.0;        // low-latency kernels: extra cost per token message sent off-GPU
    // Compute
    double gemm_efficiency = 0.7;      // fraction of the dense tensor peak large grouped GEMMs reach
    int gemm_tile_tokens = 64;         // GEMM M-tile: a slot's tokens are rounded up to it
    double gemm_launch_us = 4.0;       // per grouped-GEMM launch per layer (gate/up + down)
    double hbm_efficiency = 0.85;      // achieved / peak HBM bandwidth for weight streaming
    double attention_efficiency = 0.6; // fraction of peak for attention math
    double activation_reserve_gb = 6;  // per GPU, activations and workspace, not for KV cache
};

// Defaults for a GPU generation (the same numbers as samples/calibration/<arch>.yaml).
Calibration defaultCalibration(GpuArch arch);

// Loads a calibration YAML (every key optional, starting from `base`); throws InputError located.
Calibration loadCalibrationFile(const std::string& path, const Calibration& base);
std::string calibrationToYaml(const Calibration& c);

}  // namespace moex
