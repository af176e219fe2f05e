#pragma once

#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#include "scenario/scenario_yaml.h"

#include <yaml-cpp/yaml.h>

namespace moex {

// Sets each dotted KEY to VALUE (a scalar) in `root`, creating intermediate mappings as needed.
// Returns the nodes it set or created (values and new keys), each with its "--set KEY=VALUE", so
// that a YamlReader blames the flag, not the file's line, for what is wrong with them.
// `shownPrefix` (e.g. "model.") is put before each KEY in messages: the keys of a scenario's model
// file are set as model.KEY, and applied to that file's YAML without the prefix.
std::vector<NodeOrigin> applyOverrides(YAML::Node& root, const Overrides& overrides, Diagnostics& diags,
                                       const std::string& shownPrefix = {});

}  // namespace moex
