// Fixtures of the engine tests (tst_engine, tst_engine_reference, tst_engine_kernels, tst_weight_formats,
// tst_checkpoint): a small model of each family, a placement of its experts over ranks, an engine
// configuration.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "engine/ep_engine.h"
#include "model/model_spec.h"
#include "placement/strategies.h"

#include <string>
#include <vector>
#endif

namespace moex::test {

// A small model of each family, at shapes a test runs in milliseconds (the checkpoint tests vary
// the hidden size, the expert size and the expert count).
inline ModelSpec smallModel(const std::string& family, int hidden = 64, int inter = 32, int experts = 16)
{
    ModelSpec m;
    m.name = "small-" + family;
    m.hidden_size = hidden;
    m.num_layers = 3;
    m.moe_layers = {1, 2};
    m.routed_experts = experts;
    m.experts_per_token = 4;
    m.moe_intermediate_size = inter;
    if (family == "deepseek") {
        m.scoring = Scoring::sigmoid;
        m.expert_groups = 4;
        m.groups_per_token = 2;
        m.routed_scaling_factor = 2.5;
        m.shared_experts = 1;
        m.shared_intermediate_size = inter;
    } else if (family == "qwen-no-renorm") {
        m.norm_topk_prob = false;
    } else if (family == "qwen-next") {  // Qwen3-Next / Qwen3.5: a shared expert gated per token
        m.shared_experts = 1;
        m.shared_intermediate_size = 3 * inter / 2;
        m.shared_expert_gate = true;
    } else if (family == "qwen2") {  // Qwen2-MoE: no renormalisation, a gated shared expert
        m.norm_topk_prob = false;
        m.shared_experts = 1;
        m.shared_intermediate_size = 2 * inter;
        m.shared_expert_gate = true;
    } else if (family == "gpt-oss") {
        m.swiglu_limit = 7.0;
    } else if (family == "nemotron") {  // Nemotron-H: ReLU^2 experts (no gate matrix), sigmoid router
        m.activation = Activation::relu2;
        m.scoring = Scoring::sigmoid;
        m.routed_scaling_factor = 2.5;
        m.shared_experts = 1;
        m.shared_intermediate_size = 2 * inter;
    } else if (family == "gemma") {  // Gemma 4: GEGLU experts, its dense MLP as a shared expert
        m.activation = Activation::geglu;
        m.shared_experts = 1;
        m.shared_intermediate_size = 3 * inter;
    }
    return m;
}

// The model's experts over `ranks`: contiguous, or by `strategy` on a load that makes every fifth
// expert four times as hot, with `redundant` extra slots.
inline Placement placementFor(const ModelSpec& m, int ranks, const std::string& strategy = "contiguous", int redundant = 0)
{
    PlacementRequest rq;
    rq.strategy = strategy;
    rq.num_experts = m.routed_experts;
    rq.num_gpus = ranks;
    rq.num_layers = m.numMoeLayers();
    rq.num_slots = m.routed_experts + redundant;
    std::vector<std::vector<double>> skew(static_cast<std::size_t>(m.numMoeLayers()));
    for (auto& row : skew)
        for (int e = 0; e < m.routed_experts; ++e)
            row.push_back(1.0 + 3.0 * (e % 5 == 0));
    if (strategy != "contiguous")
        rq.load = skew;
    return makePlacement(rq);
}

// Every MoE layer of the model, `tokens` tokens a step, seed 7.
inline engine::EngineConfig smallConfig(const ModelSpec& m, int tokens = 21)
{
    engine::EngineConfig c;
    c.tokens = tokens;
    c.layers = m.moe_layers;
    c.seed = 7;
    return c;
}

}  // namespace moex::test
