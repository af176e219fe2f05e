// Fixtures of the checkpoint tests (tst_checkpoint, tst_checkpoint_errors): a small model of each
// family at the shapes a checkpoint test writes, the seed of their weights, the checkpoint layout
// by its test name, and the Mixtral sample scenario run by the CPU engine on such a model.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "checkpoint_writer.h"

#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"

#include <functional>
#include <map>
#include <string>
#endif

#include <QString>

namespace ckpt_test {

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
    } else if (family == "qwen2") {  // Qwen2-MoE / Qwen3-Next: one shared expert, gated per token
        m.norm_topk_prob = false;
        m.shared_experts = 1;
        m.shared_intermediate_size = 2 * inter;
        m.shared_expert_gate = true;
    } else if (family == "gpt-oss") {
        m.swiglu_limit = 7.0;
    } else if (family == "nemotron") {  // Nemotron-H: ReLU^2 experts, sigmoid router, one shared expert
        m.activation = Activation::relu2;
        m.scoring = Scoring::sigmoid;
        m.routed_scaling_factor = 2.5;
        m.shared_experts = 1;
        m.shared_intermediate_size = 2 * inter;
    }
    return m;
}

constexpr std::uint64_t kSeed = 7;

inline Layout layoutOf(const QString& name)
{
    static const std::map<QString, Layout> kLayouts = {
        {QStringLiteral("mixtral"), Layout::mixtral},          {QStringLiteral("mlp"), Layout::mlp},
        {QStringLiteral("qwen2"), Layout::qwen2_shared},       {QStringLiteral("gpt-oss-mxfp4"), Layout::gpt_oss_mxfp4},
        {QStringLiteral("gpt-oss-bf16"), Layout::gpt_oss_bf16},      {QStringLiteral("nemotron"), Layout::nemotron},
    };
    return kLayouts.at(name);
}

inline std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "(accepted)";
}

// The Mixtral sample scenario with `m` as its model, run by the CPU engine on 16 tokens.
inline Scenario engineScenario(const ModelSpec& m, DType weights)
{
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    s.model = m;
    s.precision.weights = weights;
    s.engine.backend = Backend::cpu;
    s.engine.tokens = 16;
    s.engine.seed = kSeed;
    s.engine.layers = m.moe_layers;
    return s;
}

}  // namespace ckpt_test
