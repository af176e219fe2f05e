#include "common/file_kinds.h"

#include <algorithm>
#include <initializer_list>
#include <string>

namespace moex {

InputKind classifyInput(const YAML::Node& root)
{
    if (!root.IsMap())
        return InputKind::unknown;
    const auto any = [&](std::initializer_list<const char*> keys) {
        return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return static_cast<bool>(root[k]); });
    };
    if (any({"model", "topology", "workload"}))
        return InputKind::scenario;
    if (root["placement"])  // without a model or topology: moex's placement export
        return InputKind::placement;
    if (any({"physical_to_logical_map", "logical_count", "initial_global_assignments", "layer_list", "phy2log"}))
        return InputKind::serving_export;
    if ((root["summary"] && root["steps"]) || (root["a"] && root["b"] && root["ratio"]) || (root["rows"] && root["measured_statistic"]))
        return InputKind::moex_output;
    if (root["experts"] && any({"layer", "token_idx"}))
        return InputKind::routing_trace;
    if (any({"expert_usage_by_layer", "layer_statistics"}))
        return InputKind::expert_counts;
    if (any({"model_type", "architectures", "num_hidden_layers", "text_config"}))
        return InputKind::hf_config;
    if (any({"routed_experts", "experts_per_token", "moe_intermediate_size", "hidden_size"}))
        return InputKind::model;
    if (any({"links", "nodes", "builtin"}))
        return InputKind::topology;
    if (any({"nvlink_efficiency", "gemm_efficiency", "hbm_efficiency", "dispatch_floor_us"}))
        return InputKind::calibration;
    if (root["title"] && root["steps"])
        return InputKind::tour;
    return InputKind::unknown;
}

const char* toString(InputKind k)
{
    switch (k) {
    case InputKind::scenario: return "scenario";
    case InputKind::model: return "model file";
    case InputKind::topology: return "topology file";
    case InputKind::hf_config: return "Hugging Face config.json";
    case InputKind::calibration: return "calibration file";
    case InputKind::tour: return "tour";
    case InputKind::placement: return "moex placement file";
    case InputKind::serving_export: return "serving system's placement file";
    case InputKind::moex_output: return "moex-cli --json output";
    case InputKind::routing_trace: return "per-token routing trace";
    case InputKind::expert_counts: return "expert counts file";
    case InputKind::unknown: break;
    }
    return "file of unknown kind";
}

std::string wrongKindMessage(InputKind found, InputKind wanted)
{
    if (found == wanted || found == InputKind::unknown)
        return {};
    std::string where;
    switch (found) {
    case InputKind::scenario:
        where = "`moex-cli show` and `validate` read it, `moex-cli simulate` runs it";
        break;
    case InputKind::hf_config:
        where = wanted == InputKind::model
            ? "a scenario takes it as 'model: {hf_config: path/to/config.json}', or `moex-cli import-hf` turns it into a model file"
            : "`moex-cli import-hf` turns it into a model file, which a scenario names under 'model' beside a 'topology'";
        break;
    case InputKind::model:
        where = "a scenario names it under 'model' (model: path/to/it.yaml) beside a 'topology'; `moex-cli show` and `validate` read it alone";
        break;
    case InputKind::topology:
        where = "a scenario names it under 'topology' (topology: path/to/it.yaml) beside a 'model'; `moex-cli show` and `validate` read it alone";
        break;
    case InputKind::calibration:
        where = "give it to a scenario with --calibration FILE or under 'calibration'";
        break;
    case InputKind::tour:
        where = "the window plays it (moex --tour FILE)";
        break;
    case InputKind::placement:
        where = "it goes into a scenario as its 'placement:' part";
        break;
    case InputKind::serving_export:
        where = "moex-cli place writes it for the serving system, which loads it; `moex-cli place --load` reads load statistics, not placements";
        break;
    case InputKind::moex_output:
        where = "scripts read it; `moex-cli compare --measured FILE` reads a `run --json` output";
        break;
    case InputKind::routing_trace:
    case InputKind::expert_counts:
        where = std::string("a scenario replays it as workload.routing: {kind: ") + (found == InputKind::routing_trace ? "trace" : "counts")
                + ", file: path/to/it}; `moex-cli load-stats` summarises it";
        break;
    case InputKind::unknown: break;
    }
    const std::string wantedName = wanted == InputKind::scenario ? "scenario"
        : wanted == InputKind::model                             ? "model"
        : wanted == InputKind::topology                          ? "topology"
                                                                 : toString(wanted);
    const std::string foundName = toString(found);
    const bool vowel = std::string("aeiou").find(foundName.front()) != std::string::npos;
    return std::string("this is ") + (vowel ? "an " : "a ") + foundName + ", not a " + wantedName + ": " + where;
}

}  // namespace moex
