// The hot loop of Simulator::routeLayer (DESIGN.md 5.1), on its own so that it can be compiled for
// two instruction sets and tested against a plain reference: for one MoE layer, per-expert totals,
// and for every (source GPU, destination GPU) pair the chance that a token of the source has none
// of its experts on the destination (a token is sent once per destination GPU), or in per-pair
// mode one minus the pairs the source sends there over its tokens.
//
// Sources are taken eight at a time ("blocks"); the not-sent matrix is stored block-major,
// not_sent[((src / 8) * G + dst) * 8 + src % 8], which is the order the kernel produces it in and
// the order Simulator::accumulatePorts consumes it in. Lanes past the last source hold 1 (nothing
// sent).
#pragma once

#include "workload/routing_sample.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace moex::detail {

constexpr int kRouteBlock = 8;
constexpr int kFractionTable = 8;  // distinct shares of the compact form: one AVX2 register

using FractionTable = std::array<float, kFractionTable>;

// The compact form of dense shares (layout of RouteKernelIn::rep_fraction): true, with `table`
// (unused entries 0) and `index` (one byte per share) filled, when they take at most
// kFractionTable distinct values (compared bit for bit); false, with both untouched, otherwise.
bool compactFractions(std::span<const float> dense, FractionTable& table, std::vector<std::uint8_t>& index);

[[nodiscard]] inline std::size_t notSentIndex(int src, int dst, int G)
{
    return (static_cast<std::size_t>(src / kRouteBlock) * static_cast<std::size_t>(G) + static_cast<std::size_t>(dst))
               * kRouteBlock
           + static_cast<std::size_t>(src % kRouteBlock);
}

struct RouteKernelIn {
    using Count = RoutingSample::Count;
    const Count* counts = nullptr;    // [G][E] token-expert pairs of each source this layer
    const Count* zero_row = nullptr;  // [E] zeros (stands in for the absent sources of the last block)
    int G = 0;
    int E = 0;
    float inv_tokens = 0;  // 1 / tokens per source in the sample
    // The layer's plan: keep row of each slot (expert e, or E + r for replica r of a replicated
    // expert), slots of GPU g in [gpu_slot_begin[g], gpu_slot_begin[g + 1]).
    const int* slot_keep = nullptr;
    const int* gpu_slot_begin = nullptr;
    int R = 0;                           // replicas of replicated experts
    const int* rep_expert = nullptr;     // [R]
    // The share of src's tokens for the expert that replica r takes, in one of two forms:
    //  - dense: rep_fraction[(src / 8) * R + r][src % 8];
    //  - compact (set when fraction_index is): fraction_table[fraction_index[(src / 8) * R + r][src % 8]].
    //    Under the nearest-replica rule every share is 0, 1 or 1 / k, so a layer has a handful of
    //    distinct values and one byte per share replaces four (compactFractions).
    const float* rep_fraction = nullptr;
    const float* fraction_table = nullptr;        // [kFractionTable]
    const std::uint8_t* fraction_index = nullptr;
    // Per-pair mode (DeepEP's low-latency kernels send one message per (token, expert) pair):
    // not_sent becomes 1 - sum over the GPU's slots of (1 - keep), so that T (1 - not_sent) is the
    // pairs src sends dst rather than the tokens (it can be negative: more pairs than tokens).
    bool per_pair = false;
    // Optional: the counts read next (the next layer's), 8 E of them fetched into cache during the
    // last block.
    const Count* prefetch_next = nullptr;
};

struct RouteKernelOut {
    std::int32_t* totals = nullptr;  // [E] pairs per expert over all sources (overwritten)
    float* not_sent = nullptr;       // [blocks][G][8] (overwritten)
    float* rep_taken = nullptr;      // [R] sum over sources of share x c / T (overwritten)
    // Scratch, 32-byte aligned: keep rows (E + R) x 8 floats and replica sums R x 8 floats.
    float* keep = nullptr;
    float* rep_acc = nullptr;
};

// Picks the AVX2 version where the CPU has it, else the portable one. Both do the same float
// operations in the same order (no fused multiply-add), so their results are bit-identical.
void routeKernel(const RouteKernelIn& in, const RouteKernelOut& out);
// The two versions, for tests and benchmarks: portable (4-wide GCC vectors: SSE2 on x86-64) and
// AVX2 (8-wide), which must only be called where routeKernelHasAvx2() is true.
void routeKernelPortable(const RouteKernelIn& in, const RouteKernelOut& out);
void routeKernelAvx2(const RouteKernelIn& in, const RouteKernelOut& out);
[[nodiscard]] bool routeKernelHasAvx2();

// Tokens sent between GPUs of one NVLink domain, from the not-sent matrix (block layout):
// u = T (1 - not_sent) per pair; adds u to sent_sum (same layout), out[src] = sum over dst
// (overwritten, blocks x 8 floats), in[dst] += sum over src.
struct SendTotals {
    const float* not_sent = nullptr;
    float* sent_sum = nullptr;
    float* out = nullptr;
    float* in = nullptr;
    int G = 0;
    float tokens = 0;
};
void sendTotals(const SendTotals& a);
void sendTotalsPortable(const SendTotals& a);
void sendTotalsAvx2(const SendTotals& a);

}  // namespace moex::detail
