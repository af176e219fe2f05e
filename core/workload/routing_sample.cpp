#include "workload/routing_sample.h"

#include <stdexcept>
#include <string>

namespace moex {

void RoutingSample::resize(int layers, int gpus, int experts, int tokensPerGpu, int topK)
{
    if (tokensPerGpu < 0 || tokensPerGpu > kMaxTokensPerGpu)
        throw std::invalid_argument("routing sample: " + std::to_string(tokensPerGpu) + " tokens per GPU, outside [0, "
                                    + std::to_string(kMaxTokensPerGpu) + "]");
    num_gpus = gpus;
    num_experts = experts;
    tokens_per_gpu = tokensPerGpu;
    top_k = topK;
    num_layers = layers;
    all_counts.assign(static_cast<std::size_t>(layers) * layerSize(), 0);
}

std::vector<std::int64_t> RoutingSample::expertLoad(int layer) const
{
    std::vector<std::int64_t> load(static_cast<std::size_t>(num_experts), 0);
    const auto c = this->layer(layer);
    for (int s = 0; s < num_gpus; ++s)
        for (int e = 0; e < num_experts; ++e)
            load[static_cast<std::size_t>(e)] += c[static_cast<std::size_t>(s) * num_experts + e];
    return load;
}

}  // namespace moex
