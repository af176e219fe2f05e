// The YAML exports' parse-back (TensorRT-LLM, native), with FILE:LINE:COL locations. Internal to
// parsePlacementExport (exporters.h), which adds the final placement checks.
#pragma once

#include "model/model_spec.h"
#include "placement/placement.h"

#include <string>

namespace moex {

// Both throw InputError with every located problem found.
Placement parseTrtllmExport(const std::string& text, const ModelSpec& model, int numGpus, const std::string& file);
Placement parseNativeExport(const std::string& text, const ModelSpec& model, int numGpus, const std::string& file);

}  // namespace moex
