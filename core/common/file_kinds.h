// Which of moex's files (or a Hugging Face config.json) a parsed YAML/JSON root is, judged from its
// top-level keys: lets a loader say "this is a topology file, not a model" in one located error
// instead of one "unknown key" per line of the wrong file.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace moex {

enum class InputKind {
    unknown,
    scenario,
    model,
    topology,
    hf_config,
    calibration,
    tour,
    placement,        // moex's placement export (a scenario's 'placement:' part)
    serving_export,   // a placement for a serving system (SGLang, TensorRT-LLM, vllm-ascend, DeepSeek EPLB)
    moex_output,      // what moex-cli simulate / run / compare write with --json
    routing_trace,    // per-token routing, JSON lines
    expert_counts,    // per-layer expert counts (JSON)
};

InputKind classifyInput(const YAML::Node& root);
const char* toString(InputKind k);  // "scenario", "model file", "topology file", ...

// One error message for a file of kind `found` given where a `wanted` belongs (what it is and where
// it goes), or "" when `found` is `wanted` or unknown (the loader's own errors then say more).
std::string wrongKindMessage(InputKind found, InputKind wanted);

}  // namespace moex
