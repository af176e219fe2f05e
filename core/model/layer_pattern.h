// The compact text form of a decoder-layer stack (ModelSpec::layer_kinds), as model YAML writes it:
//
//   layers: "LE*3 AE"      # Qwen3.5: three linear-attention + MoE layers, then full attention + MoE,
//                          # repeated to num_layers
//
// One token per layer: a mixer letter then an FFN letter, optionally "*N" for N such layers.
//   mixer  A full attention, S sliding-window attention, L linear attention (Gated DeltaNet),
//          M Mamba-2, - none
//   FFN    E MoE, D dense, - none
// Tokens are separated by spaces or commas. A pattern shorter than num_layers repeats when its
// length divides num_layers.
#pragma once

#include "model/model_spec.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moex {

// The expanded stack, or nullopt with `error` saying which token is wrong and why.
std::optional<std::vector<LayerKind>> parseLayerPattern(std::string_view text, int numLayers, std::string& error);
// The shortest period of the stack, run-length coded: parseLayerPattern reads it back exactly.
std::string formatLayerPattern(const std::vector<LayerKind>& layers);

}  // namespace moex
