// Fixtures of the checkpoint tests (tst_checkpoint, tst_checkpoint_errors): the small models of
// engine_fixtures.h, the seed of their weights, the checkpoint layout
// by its test name, and the Mixtral sample scenario run by the CPU engine on such a model.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "checkpoint_writer.h"
#include "engine_fixtures.h"

#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"

#include <functional>
#include <map>
#include <string>
#endif

#include <QString>

namespace ckpt_test {

using moex::test::smallModel;

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
