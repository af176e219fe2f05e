// RoutingSample: for one step, per MoE layer, token-expert pairs from each source GPU to each expert.
#pragma once

#include "workload/workload.h"

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace moex {

struct RoutingSample {
    // Token-expert pairs of one source GPU for one expert. A token picks an expert at most once,
    // so a count never exceeds tokens_per_gpu <= kMaxTokensPerGpu: 16 bits hold it.
    using Count = std::uint16_t;
    static_assert(std::numeric_limits<Count>::max() >= kMaxTokensPerGpu);

    int num_gpus = 0;        // source GPUs (attention-DP ranks)
    int num_experts = 0;
    int tokens_per_gpu = 0;  // tokens each source GPU routes this step
    int top_k = 0;           // experts per token
    // [layer][src * num_experts + expert] -> token-expert pairs; every src row sums to tokens_per_gpu * top_k.
    std::vector<std::vector<Count>> counts;

    [[nodiscard]] int numLayers() const { return static_cast<int>(counts.size()); }
    // Throws std::invalid_argument when tokensPerGpu is outside [0, kMaxTokensPerGpu].
    void resize(int layers, int gpus, int experts, int tokensPerGpu, int topK);
    [[nodiscard]] std::span<const Count> row(int layer, int src) const
    {
        return {counts[static_cast<std::size_t>(layer)].data() + static_cast<std::size_t>(src) * num_experts,
                static_cast<std::size_t>(num_experts)};
    }
    [[nodiscard]] std::span<Count> row(int layer, int src)
    {
        return {counts[static_cast<std::size_t>(layer)].data() + static_cast<std::size_t>(src) * num_experts,
                static_cast<std::size_t>(num_experts)};
    }
    // Total token-expert pairs per expert of one layer (summed over sources).
    [[nodiscard]] std::vector<std::int64_t> expertLoad(int layer) const;
};

}  // namespace moex
