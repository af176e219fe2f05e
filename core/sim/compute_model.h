// Roofline times of the work each GPU does: expert GEMMs (with GEMM tile quantisation), shared
// experts and router, attention (MLA or GQA, KV cache read at the context length), dense FFN
// layers and the LM head. Times are for speed factor 1; the simulator divides by a GPU's speed.
#pragma once

#include "model/model_spec.h"
#include "scenario/scenario.h"
#include "sim/calibration.h"
#include "topology/gpu_spec.h"

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace moex {

inline constexpr int kMixerKinds = 5;  // MixerKind's values
// One decoder layer's mixer time per MixerKind, for a step's tokens (full) and for one of two
// micro-batches (half).
struct MixerTimes {
    double full[kMixerKinds] = {};
    double half[kMixerKinds] = {};
    [[nodiscard]] double of(MixerKind k) const { return full[static_cast<int>(k)]; }
    [[nodiscard]] double halfOf(MixerKind k) const { return half[static_cast<int>(k)]; }
};

// The small kernels around the GEMMs and attention (docs/MODEL.md section 9), each costing the
// calibration's small_kernel_us plus its bytes at the HBM rate. The activation between the expert
// GEMMs is not here: it is part of each GPU's expert compute (ComputeModel::activationUs).
struct OverheadTimes {
    double per_layer = 0;      // every decoder layer: two fused residual-add + RMSNorm kernels
    double per_moe_layer = 0;  // every MoE layer, before the dispatch: top-k selection and, where
                               // the dispatch kernel does not quantise, the activations' quantisation
    double per_step = 0;       // once a step: the final norm and sampling (two passes over the logits)
};

class ComputeModel {
public:
    // `ranks`: GPUs of the topology; a CPU rank (GpuArch::cpu) shares the machine's cores with
    // the others.
    ComputeModel(const ModelSpec& m, const GpuSpec& gpu, const Calibration& cal, DType expertWeights,
                 DType kvCache = DType::bf16, int ranks = 1);

    // One routed expert slot processing `tokens` tokens in one MoE layer (0 tokens: 0, the kernel skips it).
    // Inline: the simulator calls it for every slot of every layer.
    [[nodiscard]] double expertSlotUs(double tokens) const
    {
        if (tokens <= 0)
            return 0.0;
        if (m_cpu)
            return cpuSlotUs(tokens);
        // Tokens are padded to the GEMM M-tile: 3 tokens cost as much math as a full tile.
        // (std::ceil of a positive quotient, without the libm call x86-64's baseline makes.)
        const double q = tokens / m_tile;
        double tiles = static_cast<double>(static_cast<long long>(q));
        tiles += tiles < q ? 1.0 : 0.0;
        const double padded = tiles * m_tile;
        const double computeUs = padded * m_slotComputeUsPerToken;
        const double memoryUs = m_slotMemoryUs + tokens * m_slotMemoryUsPerToken;
        return computeUs > memoryUs ? computeUs : memoryUs;
    }
    // expertSlotUs over a layer's slots: full[i] = expertSlotUs(tokens[i]) and, when half is not
    // null, half[i] = expertSlotUs(tokens[i] / 2) (a two-batch-overlap micro-batch). The same
    // values as the scalar calls, computed without branches so that the loop vectorises.
    void expertSlotsUs(const double* tokens, std::size_t n, double* full, double* half) const;
    // Shared experts + router gate of one MoE layer for this GPU's own tokens, plus GEMM launches.
    [[nodiscard]] double sharedAndRouterUs(double tokens) const;
    // The mixer of one decoder layer of `kind` for `tokens` tokens. Attention (decode: one token per
    // sequence, each reading its cached tokens, at most the window on sliding layers; prefill: a
    // chunk attending on average to half the context); linear attention and Mamba-2: projections
    // plus their fixed-size state, whatever the context.
    [[nodiscard]] double mixerUs(MixerKind kind, double tokens, int context, Phase phase) const;
    [[nodiscard]] MixerTimes mixerTimes(double tokens, int context, Phase phase) const;
    [[nodiscard]] double denseFfnUs(double tokens) const;
    [[nodiscard]] double headUs(double tokens) const;
    // The step's small kernels for `tokens` tokens per GPU; `quantBytesPerElement` > 0: a
    // low-precision dispatch whose activations a kernel of their own quantises to that many bytes
    // per element, scales included (not DeepEP's low-latency dispatch, which quantises as it
    // sends). Zero on CPU ranks (the engine's measured curves hold its own).
    [[nodiscard]] OverheadTimes overheadTimes(double tokens, double quantBytesPerElement) const;
    // The activation kernel between one GPU's gate/up and down expert GEMMs over its `pairs`
    // token-expert pairs (gated: reads gate and up, writes one; bf16). 0 without pairs or on CPU ranks.
    [[nodiscard]] double activationUs(double pairs) const;

    // KV-cache and recurrent-state bytes of one sequence at `context` tokens, all layers
    // (ModelSpec::cacheBytesPerSequence at the KV-cache format).
    [[nodiscard]] double kvBytesPerSequence(int context) const;
    // The tensor rate expert GEMMs run at (TFLOP/s), by weight format and GPU generation.
    [[nodiscard]] double expertPeakTflops() const { return m_expertPeak; }
    // Bytes of one expert's weights as stored.
    [[nodiscard]] double expertBytes() const { return m_expertBytes; }

    // The CPU engine's ranks (GpuArch::cpu, calibration.cpu): an expert pass from the measured
    // curve, over its rows where the exchange left them (on a core of its own: where ranks
    // outnumber the cores the simulator shares them out, work-conserving); the router's gate GEMV
    // and the copies of the exchange, scaled by cpuShare(); a barrier.
    [[nodiscard]] bool cpu() const { return m_cpu; }
    [[nodiscard]] double cpuSlotUs(double tokens) const;
    [[nodiscard]] double cpuRouterUs(double tokens) const;
    [[nodiscard]] double cpuCopyUs(double bytes) const;
    [[nodiscard]] double cpuSyncUs() const { return m_cal.cpu.sync_us; }
    // Worker threads a rank runs its experts on (the engine's rule: the rank's share of the cores).
    [[nodiscard]] int cpuWorkers(int slots) const;
    [[nodiscard]] int cpuCores() const { return m_cal.cpu.cores; }
    [[nodiscard]] double cpuShare() const { return m_cpuShare; }  // >= 1: ranks per core

private:
    [[nodiscard]] double roofline(double flops, double bytes, double peakTflops, double eff) const;
    [[nodiscard]] double smallKernelUs(double bytes) const;
    [[nodiscard]] double attentionUs(const AttentionShape& a, int window, double tokens, int context, Phase phase) const;
    [[nodiscard]] double recurrentUs(double params, double stateElems, double convElems, double tokens, Phase phase) const;

    ModelSpec m_model;
    GpuSpec m_gpu;
    Calibration m_cal;
    double m_expertPeak = 0;
    double m_expertBytes = 0;
    double m_kvBytesPerElement = 2;
    double m_stateBytesPerElement = 4;
    double m_nonExpertBpe = 2;
    // expertSlotUs's roofline, folded: math per padded token, weights once, activations per token.
    double m_tile = 1;
    double m_slotComputeUsPerToken = 0;
    double m_slotMemoryUs = 0;
    double m_slotMemoryUsPerToken = 0;
    // CPU ranks.
    bool m_cpu = false;
    CpuCurve m_cpuCurve;  // us per million weights against tokens
    int m_ranks = 1;
    double m_cpuShare = 1;  // >= 1: ranks per core when they outnumber the cores
};

// Dense tensor rate for GEMMs whose weights are stored in `weights` on this GPU. FP4 formats run
// at the FP4 rate only on Blackwell; Hopper has no FP4 tensor cores, so 4-bit weights (and INT4
// everywhere) are dequantised in the kernel and the math runs at the BF16 rate (W4A16).
double gemmPeakTflops(const GpuSpec& gpu, DType weights);

}  // namespace moex
