// Import of a Hugging Face config.json into a ModelSpec (deepseek_v3, kimi_k2, glm4_moe, mixtral,
// qwen2_moe/qwen3_moe/qwen3_5_moe/qwen3_next, gpt_oss, llama4 and configs using the common keys).
#pragma once

#include "model/model_spec.h"

#include <string>

namespace moex {

// Throws InputError (located at `file`) naming the missing keys when the config is not an MoE
// model or lacks what is needed.
ModelSpec importHfConfig(const std::string& jsonText, const std::string& file);
ModelSpec importHfConfigFile(const std::string& path);

}  // namespace moex
