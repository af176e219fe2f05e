// RoutingSample: for one step, per MoE layer, token-expert pairs from each source GPU to each expert.
#pragma once

#include "common/huge_pages.h"
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
    int num_layers = 0;
    // Every layer's counts, layer after layer: [layer][src * num_experts + expert] -> token-expert
    // pairs; every src row sums to tokens_per_gpu * top_k. One block (in huge pages where the
    // system gives them, common/huge_pages.h): the simulator streams through all of it every step.
    std::vector<Count, HugePageAllocator<Count>> all_counts;

    [[nodiscard]] int numLayers() const { return num_layers; }
    [[nodiscard]] std::size_t layerSize() const
    {
        return static_cast<std::size_t>(num_gpus) * static_cast<std::size_t>(num_experts);
    }
    // Throws std::invalid_argument when tokensPerGpu is outside [0, kMaxTokensPerGpu].
    void resize(int layers, int gpus, int experts, int tokensPerGpu, int topK);
    [[nodiscard]] std::span<const Count> layer(int l) const
    {
        return {all_counts.data() + static_cast<std::size_t>(l) * layerSize(), layerSize()};
    }
    [[nodiscard]] std::span<Count> layer(int l)
    {
        return {all_counts.data() + static_cast<std::size_t>(l) * layerSize(), layerSize()};
    }
    [[nodiscard]] std::span<const Count> row(int l, int src) const
    {
        return layer(l).subspan(static_cast<std::size_t>(src) * static_cast<std::size_t>(num_experts),
                                static_cast<std::size_t>(num_experts));
    }
    [[nodiscard]] std::span<Count> row(int l, int src)
    {
        return layer(l).subspan(static_cast<std::size_t>(src) * static_cast<std::size_t>(num_experts),
                                static_cast<std::size_t>(num_experts));
    }
    // True when the shape matches, so that resize would change nothing.
    [[nodiscard]] bool hasShape(int layers, int gpus, int experts) const
    {
        return num_layers == layers && num_gpus == gpus && num_experts == experts
               && all_counts.size() == static_cast<std::size_t>(layers) * layerSize();
    }
    // Total token-expert pairs per expert of one layer (summed over sources).
    [[nodiscard]] std::vector<std::int64_t> expertLoad(int layer) const;
};

}  // namespace moex
