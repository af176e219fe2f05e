// Loading and saving scenario files with every problem located (FILE:LINE:COL: error: MESSAGE).
#pragma once

#include "scenario/scenario.h"

#include <string>
#include <utility>
#include <vector>

namespace moex {

// KEY=VALUE overrides of scalars by dotted path (e.g. workload.tokens_per_gpu=256,
// gpus.speed.gpu17=0.85). Applied to the YAML before validation, so errors stay located.
using Overrides = std::vector<std::pair<std::string, std::string>>;

// Loads and validates; throws InputError carrying every diagnostic. Never returns a half-loaded scenario.
Scenario loadScenarioFile(const std::string& path, const Overrides& overrides = {});
Scenario loadScenarioText(const std::string& text, const std::string& file, const Overrides& overrides = {});

// YAML text that loads back into an equal scenario (paths relative to the file kept as written).
std::string scenarioToYaml(const Scenario& s);
// Same, with relative paths computed against `dir` (where the text will be written).
std::string scenarioToYaml(const Scenario& s, const std::string& dir);
void saveScenarioFile(const Scenario& s, const std::string& path);  // atomic

// Parses "KEY=VALUE"; throws InputError when malformed.
std::pair<std::string, std::string> parseOverride(const std::string& arg);

}  // namespace moex
