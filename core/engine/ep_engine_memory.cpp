// What the engine's ranks will hold, without building it: the weights (seeded or a checkpoint's)
// and an upper bound of a step's buffers (EpEngine::weightBytesNeeded, activationBytesNeeded).
#include "engine/checkpoint.h"
#include "engine/ep_engine.h"
#include "engine/quant_matrix.h"

#include <algorithm>
#include <limits>
#include <thread>

namespace moex::engine {

namespace {

// Bytes of seeded weights (what makeExpertWeights, makeSharedWeights, makeRouterWeights build).
std::size_t seededFfnBytes(const LayerShape& s, int inter)
{
    const auto I = static_cast<std::size_t>(inter), H = static_cast<std::size_t>(s.hidden);
    const std::size_t biases = s.swiglu_limit > 0 ? (2 * I + H) * sizeof(float) : 0;
    const std::size_t inMatrices = isGated(s.activation) ? 2 : 1;  // gate (gated only) and up
    return inMatrices * QuantMatrix::storageBytes(s.format, inter, s.hidden)
        + QuantMatrix::storageBytes(s.format, s.hidden, inter) + biases;
}

std::size_t seededRouterBytes(const LayerShape& s)
{
    const auto E = static_cast<std::size_t>(s.experts);
    return (E * static_cast<std::size_t>(s.hidden) + (s.router == RouterKind::softmax ? 0 : E)) * sizeof(float);
}

}  // namespace

std::size_t EpEngine::activationBytesNeeded(const ModelSpec& model, DType weights, const EngineConfig& config, int ranks,
                                            int threads)
{
    const LayerShape s = layerShape(model, weights);
    const double T = static_cast<double>(std::max<std::int64_t>(config.tokens, 0));
    const double H = s.hidden, K = s.topk, E = s.experts, I = s.inter, Is = s.shared_inter;
    const double workers = std::max(ranks, threads);
    const double floats = 2 * T * H            // hidden states and outputs
                          + 2 * T * K * H      // rows received and their results
                          + 4 * T * K + T * E  // choices, gates, result pointers (two floats' room), router scores
                          + workers * T * (3 * I + H + 128)                     // a worker's FFN buffers (ffnForward)
                          + (Is > 0 ? T * (3 * Is + H + 128) : 0.0);  // shared experts, each rank on its own tokens
    const double bytes = floats * sizeof(float);
    return bytes >= 1.8e19 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(bytes);
}

int EpEngine::expertWorkers(int ranks, std::size_t slots)
{
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int share = cores / std::max(ranks, 1);
    return std::max(1, static_cast<int>(std::min<std::size_t>(slots, static_cast<std::size_t>(std::max(share, 1)))));
}

int EpEngine::expertWorkersNeeded(const Placement& placement, int ranks)
{
    int workers = 0;
    for (int r = 0; r < ranks; ++r) {
        std::size_t slots = 1;
        for (const auto& layer : placement.layers)
            if (r < layer.numGpus())
                slots = std::max(slots, layer.gpu_slots[static_cast<std::size_t>(r)].size());
        workers += expertWorkers(ranks, slots);
    }
    return workers;
}

std::size_t EpEngine::weightBytesNeeded(const ModelSpec& model, DType weights, const Placement& placement,
                                        const EngineConfig& config)
{
    const LayerShape s = layerShape(model, weights);
    const Checkpoint* ckpt = config.checkpoint.get();
    const std::size_t layers = config.shared_weights ? 1 : config.layers.size();
    std::size_t total = 0;
    for (std::size_t li = 0; li < layers && li < config.layers.size(); ++li) {
        const int decoder = config.layers[li];
        const auto it = std::find(model.moe_layers.begin(), model.moe_layers.end(), decoder);
        if (it == model.moe_layers.end())
            continue;
        const auto& layer = placement.layers[static_cast<std::size_t>(it - model.moe_layers.begin())];
        // Every rank holds the router and the shared experts; each slot one expert.
        std::size_t perRank = ckpt ? ckpt->routerBytes(s, decoder) : seededRouterBytes(s);
        if (s.shared_inter > 0)
            perRank += ckpt ? ckpt->sharedBytes(s, decoder)
                            : seededFfnBytes(s, s.shared_inter) + (s.shared_gate ? s.hidden * sizeof(float) : 0);
        total += perRank * static_cast<std::size_t>(layer.numGpus());
        for (const auto& slots : layer.gpu_slots)
            for (ExpertId e : slots)
                total += ckpt ? ckpt->expertBytes(s, decoder, e.value) : seededFfnBytes(s, s.inter);
    }
    return total;
}

}  // namespace moex::engine
