#pragma once

#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"

#include <yaml-cpp/yaml.h>

namespace moex {

// Sets each dotted KEY to VALUE (a scalar) in `root`, creating intermediate mappings as needed.
void applyOverrides(YAML::Node& root, const Overrides& overrides, Diagnostics& diags);

}  // namespace moex
