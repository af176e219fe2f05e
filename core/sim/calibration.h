// Calibration: the efficiencies, latency floors and GEMM curve that turn hardware peaks into
// achieved rates. One set per hardware generation (Hopper, Blackwell); defaults fitted to the
// measurements of FACTS.md section 2 (docs/CALIBRATION.md), overridable by a YAML file.
#pragma once

#include "topology/gpu_spec.h"

#include "model/dtype.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace moex {

// What `moex-cli calibrate --backend cpu` measures on this machine, for the host-cpu topology (the
// CPU engine's ranks). Expert time is a curve of tokens per expert pass: the engine's expert FFN
// kernel (gate, up, down; run/host_calibration.cpp) timed on every core at once, per thread, in
// microseconds per million weights (elements, not bytes: the engine's storage of a format is what
// the curve is measured on). Formats are the engine's: f32, bf16, fp8 (e4m3 with block scales),
// mxfp4.
//
// A kernel's time per weight also depends on the rows' length (per-row costs: tile set-up, the
// prefetches' run-in; docs/PERFORMANCE.md, "Expert shape in the CPU calibration"), so the curves
// can be measured at several expert shapes: the model's curve is then interpolated between them by the
// mean inverse row length of its three matrices, rho = (2 / hidden + 1 / inter) / 3 (gate and up
// have rows of `hidden` weights, down of `inter`).
using CpuCurve = std::vector<std::pair<double, double>>;  // (tokens, us per million weights), tokens ascending
using CpuCurves = std::vector<std::pair<std::string, CpuCurve>>;  // per format

struct CpuExpertShape {
    int hidden = 2048;
    int inter = 1024;
    [[nodiscard]] double rho() const { return (2.0 / hidden + 1.0 / inter) / 3.0; }
    bool operator==(const CpuExpertShape&) const = default;
};

// The curves measured at one more expert shape.
struct CpuShapeCurves {
    CpuExpertShape shape;
    CpuCurves curves;
    bool operator==(const CpuShapeCurves&) const = default;
};

struct CpuCalibration {
    std::string cpu;     // model name of the CPU measured
    std::string kernel;  // the engine kernel that ran (avx512, avx2, portable)
    int cores = 0;       // threads that ran at once (0: no CPU calibration)
    CpuCurves expert;    // measured at expert_shape (files without the key: 2048 x 1024, as measured then)
    CpuExpertShape expert_shape;
    // The same at shapes of longer rows, where measured: rho falls along the list, each below
    // expert_shape's (files before 2026-12-06 had one: keys expert_long_*).
    std::vector<CpuShapeCurves> longer;
    double router_gflops = 0;  // the router's fp32 gate GEMV on a block of 8 tokens, matrix from memory, per thread with every core busy
    double copy_gbs = 0;       // bytes copied per second per thread with every core busy
    double sync_us = 0;        // one barrier across the ranks (a phase's floor)

    [[nodiscard]] bool valid() const { return cores > 0 && !expert.empty() && router_gflops > 0 && copy_gbs > 0; }
    // The curve of the engine's storage of `weights` (fp32 -> f32; bf16, fp16 -> bf16; fp8 -> fp8;
    // 4-bit -> mxfp4, or bf16 when a dimension is not a multiple of 32, as the engine does) for an
    // expert of hidden x inter: with long-row curves, at expert's token counts, linear in rho
    // between the two measured shapes around it, beyond the longest along the last two on to
    // rho = 0 at most, and at the first shape's value for rows shorter than it; nullopt when the
    // file has no curve for the format.
    [[nodiscard]] std::optional<CpuCurve> curveFor(DType weights, int hidden, int inter) const;
};

// Microseconds per million weights at `tokens` on `curve`: linear between the measured points,
// the last segment's slope beyond the last (compute-bound: time grows with tokens), the first
// point's value below it.
double cpuCurveUs(const CpuCurve& curve, double tokens);

struct Calibration {
    std::string name;                  // e.g. "hopper-default"
    // Communication
    double nvlink_efficiency = 0.8;    // achieved / line rate of an NVLink port in all-to-all
    double network_efficiency = 0.95;  // achieved / line rate of a NIC (RDMA) in all-to-all
    double pcie_efficiency = 0.9;
    double dispatch_floor_us = 20;     // smallest dispatch a kernel achieves (launch, sync, signalling)
    double combine_floor_us = 30;
    double ll_message_us = 0.0;        // DeepEP low-latency kernels: cost per (token, expert) message sent off-GPU
    double overlap_sm_share = 1.0;     // two-batch overlap with normal (high-throughput) kernels: the share of
                                       // SMs compute keeps while the communication kernels hold theirs
    double ll_overlap_efficiency = 1.0;  // two-batch overlap with low-latency kernels: the share of the shorter
                                         // side of each stage that is hidden (1: all; docs/MODEL.md section 5)
    // Compute
    double gemm_efficiency = 0.7;      // fraction of the dense tensor peak large grouped GEMMs reach
    int gemm_tile_tokens = 64;         // GEMM M-tile: a slot's tokens are rounded up to it
    double gemm_launch_us = 4.0;       // per grouped-GEMM launch per layer (gate/up + down)
    double small_kernel_us = 2.0;      // fixed cost of one small kernel (norm, top-k, activation, sampling)
                                       // in a CUDA graph, before its bytes at HBM rate (docs/MODEL.md section 9)
    double hbm_efficiency = 0.85;      // achieved / peak HBM bandwidth for weight streaming
    double attention_efficiency = 0.6; // fraction of peak for attention math
    double activation_reserve_gb = 6;  // per GPU, activations and workspace, not for KV cache
    // Power: the weight of a GPU's dispatch/combine time in its utilisation (compute counts 1).
    // An assumption, not a measurement: communication kernels keep few SMs and the copy engines
    // busy while GEMMs run every SM (docs/MODEL.md section 8).
    double power_comm_weight = 0.3;
    CpuCalibration cpu;                // host-cpu only (GpuArch::cpu)
};

// Defaults for a GPU generation (the same numbers as samples/calibration/<arch>.yaml).
Calibration defaultCalibration(GpuArch arch);

// Loads a calibration YAML (every key optional, starting from `base`); throws InputError located.
Calibration loadCalibrationFile(const std::string& path, const Calibration& base);
std::string calibrationToYaml(const Calibration& c);

}  // namespace moex
