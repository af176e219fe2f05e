// Model YAML: the contract keys (name, hidden_size, num_layers, moe_layers, routed_experts,
// experts_per_token, shared_experts, moe_intermediate_size, shared_intermediate_size, expert_groups,
// groups_per_token, scoring, weight_dtype) plus attention shape and non-expert parameters.
#pragma once

#include "common/yaml_reader.h"
#include "model/model_spec.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace moex {

// Reads a model mapping, reporting every problem through the reader. nullopt when any error was found.
std::optional<ModelSpec> readModel(const YAML::Node& node, YamlReader& reader);
// Semantic checks (top-k <= experts, groups divide experts, MoE layer indices in range...).
// Errors are located at `where` (the model mapping) since the spec has no marks of its own.
void checkModel(const ModelSpec& m, const YAML::Node& where, YamlReader& reader);

// A change made to the parsed YAML before it is read (a scenario's --set model.KEY=VALUE on its
// model file): returns the nodes it set, each blamed on its origin rather than on the file.
using ModelYamlEdit = std::function<std::vector<NodeOrigin>(YAML::Node& root, Diagnostics& diags)>;

// Loads a model file; throws InputError with every diagnostic.
ModelSpec loadModelFile(const std::string& path, const ModelYamlEdit& edit = {});
// The same for model YAML in memory, its errors located in `file`.
ModelSpec loadModelText(const std::string& text, const std::string& file, const ModelYamlEdit& edit = {});

// Model YAML text, the same keys readModel accepts (round-trips).
std::string modelToYaml(const ModelSpec& m);

}  // namespace moex
