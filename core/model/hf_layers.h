// The layer stack of a Hugging Face config.json (internal to hf_import): which mixer each decoder
// layer has (layer_types, hybrid_override_pattern, full_attention_interval, hybrid_layer_pattern),
// the linear-attention and Mamba-2 shapes, and the FFN activation.
#pragma once

#include "model/hf_json.h"
#include "model/model_spec.h"

#include <string>

namespace moex::hf {

// Reads the stack into m.layer_kinds (left empty when it is the default ModelSpec::layerKind
// derives), m.linear_attention, m.mamba and m.moe_layers (Nemotron-H's pattern says which layers
// are MoE). m.moe_layers and m.attention must be read before.
void readLayerStack(ConfigReader& c, const std::string& modelType, ModelSpec& m);
// The expert activation from hidden_act / mlp_hidden_act / hidden_activation.
void readActivation(ConfigReader& c, ModelSpec& m);

}  // namespace moex::hf
