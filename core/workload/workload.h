// Workload: what the GPUs are asked to do in one step, and where routing decisions come from.
#pragma once

#include "model/routing_prior.h"

#include <cstdint>
#include <string>

namespace moex {

enum class Phase { decode, prefill };
enum class RoutingKind { synthetic, trace, counts };

struct RoutingSpec {
    RoutingKind kind = RoutingKind::synthetic;
    // Defaults for a model without a routing prior (ModelSpec::routing): DeepSeek-R1's fitted skew
    // and hot-expert share (model/routing_prior.h); no co-activation or drift unless told.
    double skew = kDeepSeekRouting.skew;              // Zipf exponent of expert popularity; 0 = uniform
    double hot_experts = kDeepSeekRouting.hot_experts;  // fraction of experts that are "consistent" (hot in almost every batch)
    int coactivation_groups = 0;     // temporal co-activation groups; 0 = none
    double drift = 0.0;              // per-step drift of popularity (0 = stationary)
    std::uint64_t seed = 1;
    std::string file;                // trace/counts file, resolved against the scenario's folder
    // A trace or counts file of another depth than the model: true = model MoE layer l reads the
    // file's layer l % (its layers); false = an error that says so.
    bool layer_cycling = false;
    friend bool operator==(const RoutingSpec&, const RoutingSpec&) = default;
};

// The most tokens one attention-DP rank routes in one step. Serving systems chunk prefill well
// below it (SGLang's chunked_prefill_size is 8192 or 16384); it lets a source's token-expert pairs
// per expert be counted in 16 bits (RoutingSample::Count), which halves the bytes a step reads.
inline constexpr int kMaxTokensPerGpu = 65535;

// The largest count of tokens (or token-expert pairs) per expert and layer a statistics or counts
// file may hold: 2^40 (1.1e12) is beyond any serving system's recording interval, and sums of such
// counts stay exact in a double far above it. Larger values are refused, never read.
inline constexpr std::int64_t kMaxRecordedCount = std::int64_t{1} << 40;

struct Workload {
    Phase phase = Phase::decode;
    int tokens_per_gpu = 128;        // per step per attention-DP rank
    int context_tokens = 4096;       // KV-cache length per sequence (the mean)
    // Coefficient of variation of the sequences' context lengths (standard deviation / mean, 0: all
    // equal). Decode batches of different total context make the data-parallel attention ranks
    // finish at different times; the synchronous MoE layer waits for the last (docs/MODEL.md section 9).
    double context_cv = 0;
    RoutingSpec routing;
};

std::string_view toString(Phase p);
std::string_view toString(RoutingKind k);

}  // namespace moex
