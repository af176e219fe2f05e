// RoutingSample: for one step, per MoE layer, token-expert pairs from each source GPU to each expert.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace moex {

struct RoutingSample {
    int num_gpus = 0;        // source GPUs (attention-DP ranks)
    int num_experts = 0;
    int tokens_per_gpu = 0;  // tokens each source GPU routes this step
    int top_k = 0;           // experts per token
    // [layer][src * num_experts + expert] -> token-expert pairs; every src row sums to tokens_per_gpu * top_k.
    std::vector<std::vector<std::int32_t>> counts;

    [[nodiscard]] int numLayers() const { return static_cast<int>(counts.size()); }
    void resize(int layers, int gpus, int experts, int tokensPerGpu, int topK);
    [[nodiscard]] std::span<const std::int32_t> row(int layer, int src) const
    {
        return {counts[static_cast<std::size_t>(layer)].data() + static_cast<std::size_t>(src) * num_experts,
                static_cast<std::size_t>(num_experts)};
    }
    [[nodiscard]] std::span<std::int32_t> row(int layer, int src)
    {
        return {counts[static_cast<std::size_t>(layer)].data() + static_cast<std::size_t>(src) * num_experts,
                static_cast<std::size_t>(num_experts)};
    }
    // Total token-expert pairs per expert of one layer (summed over sources).
    [[nodiscard]] std::vector<std::int64_t> expertLoad(int layer) const;
};

}  // namespace moex
