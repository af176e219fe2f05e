#include "sim/compute_model.h"

#include "sim/route_kernel.h"

#include <algorithm>
#include <cmath>

namespace moex {

double gemmPeakTflops(const GpuSpec& gpu, DType weights)
{
    switch (weights) {
    case DType::fp8:
        return gpu.fp8_tflops > 0 ? gpu.fp8_tflops : gpu.bf16_tflops;
    case DType::nvfp4:
    case DType::mxfp4:
        return gpu.arch == GpuArch::blackwell && gpu.fp4_tflops > 0 ? gpu.fp4_tflops : gpu.bf16_tflops;
    case DType::int4:
    case DType::bf16:
    case DType::fp16:
    case DType::fp32:
        return gpu.bf16_tflops;
    }
    return gpu.bf16_tflops;
}

ComputeModel::ComputeModel(const ModelSpec& m, const GpuSpec& gpu, const Calibration& cal, DType expertWeights,
                           DType kvCache, int ranks)
    : m_model(m), m_gpu(gpu), m_cal(cal)
{
    m_ranks = std::max(1, ranks);
    if (gpu.arch == GpuArch::cpu) {
        m_cpu = true;
        if (cal.cpu.valid()) {
            m_cal.cpu = cal.cpu;
        } else {
            m_cal.cpu = defaultCalibration(GpuArch::cpu).cpu;  // a GPU calibration has no CPU rates
        }
        if (auto curve = m_cal.cpu.curveFor(expertWeights, m.hidden_size, m.moe_intermediate_size))
            m_cpuCurve = std::move(*curve);
        else  // a file without this format's curve: the unmeasured default's, rather than no cost at all
            m_cpuCurve = *defaultCalibration(GpuArch::cpu).cpu.curveFor(expertWeights, m.hidden_size, m.moe_intermediate_size);
        m_cpuShare = std::max(1.0, static_cast<double>(m_ranks) / std::max(1, m_cal.cpu.cores));
    }
    m_expertPeak = gemmPeakTflops(gpu, expertWeights);
    m_expertBytes = static_cast<double>(m.expertParams()) * bytesPerElement(expertWeights);
    m_kvBytesPerElement = bytesPerElement(kvCache);
    m_stateBytesPerElement = bytesPerElement(m.state_dtype);
    m_nonExpertBpe = bytesPerElement(m.non_expert_dtype);
    // One routed expert slot: 2 m h I flops per (padded) token for its m matrices (SwiGLU: gate, up
    // and down, 6 h I); the weights
    // read once; activations in and out (bf16) and the intermediate (fp32) per token.
    const double h = m.hidden_size;
    const double inter = m.moe_intermediate_size;
    m_tile = std::max(1, cal.gemm_tile_tokens);
    const double flopsPerUs = m_expertPeak * 1e12 * cal.gemm_efficiency / 1e6;
    const double bytesPerUs = gpu.hbm_bw_gbs * 1e9 * cal.hbm_efficiency / 1e6;
    m_slotComputeUsPerToken = flopsPerUs > 0 ? 2.0 * ffnMatrices(m.activation) * h * inter / flopsPerUs : 0.0;
    m_slotMemoryUs = bytesPerUs > 0 ? m_expertBytes / bytesPerUs : 0.0;
    m_slotMemoryUsPerToken = bytesPerUs > 0 ? (h * 2.0 + inter * 4.0 + h * 2.0) / bytesPerUs : 0.0;
}

namespace {

struct SlotRoofline {
    double tile, invTile, perPadded, mem0, memPerToken;
};

// expertSlotsUs's loop, branch-free so that it vectorises. For 0 <= q < 2^51, (q + 2^52) - 2^52 is
// q rounded to an integer, so ceil(q) = r + (r < q), the same value as std::ceil in expertSlotUs; a
// slot without tokens costs 0. With a power-of-two tile, t / tile is t x (1 / tile) exactly: a
// multiply instead of a divide. Inlined into a baseline and an AVX2 version (no FMA: the same
// roundings).
template <bool kPow2Tile>
__attribute__((always_inline)) inline void slotsLoop(const SlotRoofline& k, const double* tokens, std::size_t n, double* full,
                                                     double* half)
{
    const auto slotUs = [&k](double t) {
        constexpr double kRound = 4503599627370496.0;  // 2^52
        const double q = kPow2Tile ? t * k.invTile : t / k.tile;
        const double r = (q + kRound) - kRound;
        const double tiles = r + (r < q ? 1.0 : 0.0);
        const double computeUs = tiles * k.tile * k.perPadded;
        const double memoryUs = k.mem0 + t * k.memPerToken;
        const double us = computeUs > memoryUs ? computeUs : memoryUs;
        return t > 0 ? us : 0.0;
    };
    for (std::size_t i = 0; i < n; ++i)
        full[i] = slotUs(tokens[i]);
    if (half)
        for (std::size_t i = 0; i < n; ++i)
            half[i] = slotUs(tokens[i] * 0.5);
}

template <bool kPow2Tile>
void slotsBaseline(const SlotRoofline& k, const double* tokens, std::size_t n, double* full, double* half)
{
    slotsLoop<kPow2Tile>(k, tokens, n, full, half);
}

#if defined(__x86_64__) || defined(__i386__)
template <bool kPow2Tile>
__attribute__((target("avx2"))) void slotsAvx2(const SlotRoofline& k, const double* tokens, std::size_t n, double* full, double* half)
{
    slotsLoop<kPow2Tile>(k, tokens, n, full, half);
}
#endif

}  // namespace

void ComputeModel::expertSlotsUs(const double* tokens, std::size_t n, double* full, double* half) const
{
    if (m_cpu) {
        for (std::size_t i = 0; i < n; ++i) {
            full[i] = cpuSlotUs(tokens[i]);
            if (half)
                half[i] = cpuSlotUs(tokens[i] * 0.5);
        }
        return;
    }
    const SlotRoofline k{m_tile, 1.0 / m_tile, m_slotComputeUsPerToken, m_slotMemoryUs, m_slotMemoryUsPerToken};
    const auto tile = static_cast<long long>(m_tile);  // a whole number >= 1
    const bool pow2 = (tile & (tile - 1)) == 0;
#if defined(__x86_64__) || defined(__i386__)
    if (detail::routeKernelHasAvx2()) {
        pow2 ? slotsAvx2<true>(k, tokens, n, full, half) : slotsAvx2<false>(k, tokens, n, full, half);
        return;
    }
#endif
    pow2 ? slotsBaseline<true>(k, tokens, n, full, half) : slotsBaseline<false>(k, tokens, n, full, half);
}

double ComputeModel::cpuSlotUs(double tokens) const
{
    if (tokens <= 0)
        return 0.0;
    const double h = m_model.hidden_size, inter = m_model.moe_intermediate_size;
    // The engine runs a slot's FFN over its block of the receive buffer in place: no copies.
    return 3.0 * h * inter / 1e6 * cpuCurveUs(m_cpuCurve, tokens);
}

double ComputeModel::cpuRouterUs(double tokens) const
{
    if (tokens <= 0)
        return 0.0;
    // The engine reads the fp32 gate once per block of 8 tokens (engine routerLogits) and the
    // calibration times a whole block with the matrix from memory: a part block costs a block.
    const double blocks = std::ceil(tokens / 8.0);
    const double flops = 2.0 * 8.0 * blocks * m_model.hidden_size * static_cast<double>(m_model.routed_experts);
    return flops / (m_cal.cpu.router_gflops * 1e3) * m_cpuShare;
}

double ComputeModel::cpuCopyUs(double bytes) const
{
    return bytes > 0 ? bytes / (m_cal.cpu.copy_gbs * 1e3) * m_cpuShare : 0.0;
}

int ComputeModel::cpuWorkers(int slots) const
{
    return std::max(1, std::min(slots, std::max(1, m_cal.cpu.cores) / m_ranks));
}

double ComputeModel::roofline(double flops, double bytes, double peakTflops, double eff) const
{
    const double computeUs = peakTflops > 0 ? flops / (peakTflops * 1e12 * eff) * 1e6 : 0.0;
    const double memoryUs = m_gpu.hbm_bw_gbs > 0 ? bytes / (m_gpu.hbm_bw_gbs * 1e9 * m_cal.hbm_efficiency) * 1e6 : 0.0;
    return std::max(computeUs, memoryUs);
}

double ComputeModel::smallKernelUs(double bytes) const
{
    return m_cal.small_kernel_us + (m_gpu.hbm_bw_gbs > 0 ? bytes / (m_gpu.hbm_bw_gbs * 1e9 * m_cal.hbm_efficiency) * 1e6 : 0.0);
}

OverheadTimes ComputeModel::overheadTimes(double tokens, double quantBytesPerElement) const
{
    OverheadTimes o;
    if (tokens <= 0 || m_cpu)
        return o;
    const double h = m_model.hidden_size;
    // Fused residual add + RMSNorm: reads the residual and the sublayer's output, writes both (bf16).
    const double norm = smallKernelUs(tokens * h * 2.0 * 4.0);
    o.per_layer = 2.0 * norm;
    // Top-k over the router's fp32 scores; quantisation reads bf16 and writes the low-precision
    // activations with their scales.
    o.per_moe_layer = smallKernelUs(tokens * m_model.routed_experts * 4.0);
    if (quantBytesPerElement > 0)
        o.per_moe_layer += smallKernelUs(tokens * h * (2.0 + quantBytesPerElement));
    // The final norm, then sampling: softmax (or top-p) and the draw, each a pass over fp32 logits.
    o.per_step = norm;
    if (m_model.vocab_size > 0)
        o.per_step += 2.0 * smallKernelUs(tokens * m_model.vocab_size * 4.0);
    return o;
}

double ComputeModel::activationUs(double pairs) const
{
    if (pairs <= 0 || m_cpu)
        return 0.0;
    const bool gated = isGated(m_model.activation);
    return smallKernelUs(pairs * m_model.moe_intermediate_size * 2.0 * (gated ? 3.0 : 2.0));
}

double ComputeModel::sharedAndRouterUs(double tokens) const
{
    if (tokens <= 0)
        return 0.0;
    if (m_cpu) {  // the shared experts only: the CPU engine times its router with the dispatch
        if (m_model.shared_experts <= 0)
            return 0.0;
        const double inter = static_cast<double>(m_model.shared_intermediate_size > 0 ? m_model.shared_intermediate_size
                                                                                       : m_model.moe_intermediate_size)
            * m_model.shared_experts;
        return ffnMatrices(m_model.activation) * m_model.hidden_size * inter / 1e6 * cpuCurveUs(m_cpuCurve, tokens);
    }
    const double h = m_model.hidden_size;
    double us = 2.0 * m_cal.gemm_launch_us;  // grouped gate/up and down GEMMs of the routed experts
    if (m_model.shared_experts > 0) {
        const double inter = static_cast<double>(m_model.shared_intermediate_size) * m_model.shared_experts;
        const double tile = std::max(1, m_cal.gemm_tile_tokens);
        const double padded = std::ceil(tokens / tile) * tile;
        const double mats = ffnMatrices(m_model.activation);
        us += roofline(2.0 * mats * padded * h * inter, mats * h * inter * m_nonExpertBpe + tokens * h * 4.0,
                       gemmPeakTflops(m_gpu, m_model.non_expert_dtype), m_cal.gemm_efficiency);
    }
    const double e = m_model.routed_experts;
    us += roofline(2.0 * tokens * h * e, h * e * 2.0 + tokens * h * 2.0, m_gpu.bf16_tflops, m_cal.gemm_efficiency);
    return us;
}

double ComputeModel::kvBytesPerSequence(int context) const
{
    return m_model.cacheBytesPerSequence(context, m_kvBytesPerElement);
}

double ComputeModel::attentionUs(const AttentionShape& a, int window, double tokens, int context, Phase phase) const
{
    const double h = m_model.hidden_size;
    const double params = static_cast<double>(a.params(m_model.hidden_size));
    const double ctx = window > 0 ? std::min(context, window) : context;
    // Decode: every token is its own sequence reading its whole cache. Prefill: a chunk of
    // `tokens` tokens attends on average to half the context and reads its KV once.
    const double attended = phase == Phase::decode ? ctx : std::max(1.0, ctx / 2.0);
    // Sparse attention (DSA): the indexer scores every attended token, the attention proper reads
    // at most index_topk of them. In prefill the mean over the chunk's positions p in [0, ctx] of
    // min(p, topk) is ctx / 2 up to topk, and topk - topk^2 / (2 ctx) beyond.
    double read = attended, indexed = 0;
    if (a.sparse()) {
        const double k = a.index_topk;
        read = phase == Phase::decode ? std::min(ctx, k) : std::max(1.0, ctx <= k ? ctx / 2.0 : k - k * k / (2.0 * ctx));
        indexed = attended;
    }
    double coreFlops = 0;
    if (a.kind == AttentionKind::mla) {
        // Weight-absorbed MLA: scores against the latent (kv_lora + rope) and values in the latent.
        coreFlops = 2.0 * tokens * read * a.num_heads * (2.0 * a.kv_lora_rank + a.qk_rope_head_dim);
    } else {
        coreFlops = 2.0 * tokens * read * a.num_heads * (a.head_dim + a.valueHeadDim());
    }
    // The indexer's scores: index_heads dot products of index_head_dim per (query, cached token).
    coreFlops += 2.0 * tokens * indexed * a.index_heads * a.index_head_dim;
    const double kvElems = static_cast<double>(a.kvElementsPerTokenPerLayer());
    const double kvRead = phase == Phase::decode ? tokens * read : (a.sparse() ? std::min(ctx, tokens * read) : ctx);
    const double indexRead = phase == Phase::decode ? tokens * ctx : ctx;
    const double kvBytes = kvRead * kvElems * m_kvBytesPerElement + (a.sparse() ? indexRead * a.indexerCacheBytesPerToken() : 0.0);
    const double flops = 2.0 * tokens * params + coreFlops;
    const double bytes = params * m_nonExpertBpe + kvBytes + tokens * h * 4.0;
    return roofline(flops, bytes, m_gpu.bf16_tflops, m_cal.attention_efficiency);
}

double ComputeModel::recurrentUs(double params, double stateElems, double convElems, double tokens, Phase phase) const
{
    // A recurrent mixer (Gated DeltaNet, Mamba-2) touches a fixed-size state per sequence whatever
    // the context: per token about 6 flops per state element (decay, rank-1 update, read-out) plus
    // the projections. Decode reads and writes every sequence's state once per step; a prefill
    // chunk (one sequence, chunked scan) does so once per chunk.
    const double h = m_model.hidden_size;
    const double stateBytes = stateElems * m_stateBytesPerElement + convElems * m_kvBytesPerElement;
    const double sequences = phase == Phase::decode ? tokens : 1.0;
    const double flops = 2.0 * tokens * params + 6.0 * tokens * stateElems;
    const double bytes = params * m_nonExpertBpe + 2.0 * sequences * stateBytes + tokens * h * 4.0;
    return roofline(flops, bytes, m_gpu.bf16_tflops, m_cal.attention_efficiency);
}

double ComputeModel::mixerUs(MixerKind kind, double tokens, int context, Phase phase) const
{
    if (tokens <= 0)
        return 0.0;
    switch (kind) {
    case MixerKind::attention:
        return attentionUs(m_model.attention, 0, tokens, context, phase);
    case MixerKind::sliding:
        return attentionUs(m_model.attentionFor(MixerKind::sliding), std::max(1, m_model.attention.sliding_window), tokens,
                           context, phase);
    case MixerKind::linear: {
        const LinearAttentionShape& l = m_model.linear_attention;
        return recurrentUs(static_cast<double>(l.params(m_model.hidden_size)), static_cast<double>(l.stateElements()),
                           static_cast<double>(l.convStateElements()), tokens, phase);
    }
    case MixerKind::mamba: {
        const MambaShape& b = m_model.mamba;
        return recurrentUs(static_cast<double>(b.params(m_model.hidden_size)), static_cast<double>(b.stateElements()),
                           static_cast<double>(b.convStateElements()), tokens, phase);
    }
    case MixerKind::none:
        return 0.0;
    }
    return 0.0;
}

MixerTimes ComputeModel::mixerTimes(double tokens, int context, Phase phase) const
{
    MixerTimes t;
    for (int k = 0; k < kMixerKinds; ++k) {
        t.full[k] = mixerUs(static_cast<MixerKind>(k), tokens, context, phase);
        t.half[k] = mixerUs(static_cast<MixerKind>(k), tokens / 2.0, context, phase);
    }
    return t;
}

double ComputeModel::denseFfnUs(double tokens) const
{
    if (tokens <= 0 || m_model.dense_intermediate_size <= 0)
        return 0.0;
    const double h = m_model.hidden_size;
    const double inter = m_model.dense_intermediate_size;
    const double mats = ffnMatrices(m_model.activation);
    return roofline(2.0 * mats * tokens * h * inter, mats * h * inter * m_nonExpertBpe + tokens * h * 4.0,
                    gemmPeakTflops(m_gpu, m_model.non_expert_dtype), m_cal.gemm_efficiency);
}

double ComputeModel::headUs(double tokens) const
{
    if (tokens <= 0 || m_model.vocab_size <= 0)
        return 0.0;
    const double h = m_model.hidden_size;
    const double v = m_model.vocab_size;
    return roofline(2.0 * tokens * h * v, h * v * m_nonExpertBpe, m_gpu.bf16_tflops, m_cal.gemm_efficiency);
}

}  // namespace moex
