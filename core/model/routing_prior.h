// Synthetic-routing priors per model family: the generator parameters (workload/synthetic_routing.h)
// fitted to real routing where the repository holds some (docs/CALIBRATION.md, "Routing defaults per
// model family"). import-hf gives a model of a fitted family its prior; the sample model YAMLs carry
// the same values in their `routing:` block (tst_hf_import checks they agree).
#pragma once

#include "model/model_spec.h"

#include <optional>
#include <string_view>

namespace moex {

// DeepSeek-V3 / R1 (and the families built on its MoE: Kimi K2). Skew fitted to TensorRT-LLM's
// published hottest-rank / mean ratio of DeepSeek-R1 on 32 GPUs without EPLB (2.56, FACTS.md
// section 4): the generator gives 2.35 at 0.55 and 2.61 at 0.60. Hot experts, co-activation groups
// and drift move that ratio by under 1% and no per-token DeepSeek routing is in the data: the
// samples' earlier values, not fitted.
inline constexpr RoutingPrior kDeepSeekRouting{0.59, 0.03, 16, 0.01};

// Mixtral 8x7B. Fitted to the per-token Mixtral trace in tests/data (GSM8K, 246 tokens per layer)
// read as the routing of the Mixtral sample with contiguous placement, per-step max/mean GPU load at
// 31, 16 and 4 tokens per GPU (1.517, 1.566, 1.771): skew 0.35 with 4 co-activation groups gives
// 1.54, 1.56, 1.66. The trace's small batches are consecutive tokens of one prompt, more alike
// than a decode batch of many sequences, so the 4-token point weighs least. Drift: not fitted.
inline constexpr RoutingPrior kMixtralRouting{0.35, 0.03, 4, 0.01};

// The prior of a config.json model_type (text_config's first), or none when no routing of the
// family was fitted (the generator's defaults apply: workload.h).
std::optional<RoutingPrior> routingPriorForFamily(std::string_view modelType);

}  // namespace moex
