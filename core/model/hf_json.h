// Typed, located access to a Hugging Face config.json (internal to hf_import).
// Keys are looked up in text_config first (multimodal wrappers nest the language model there), then at
// the top level; a JSON null counts as absent, as transformers treats it.
#pragma once

#include "common/diagnostics.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moex::hf {

using Json = nlohmann::json;

class ConfigReader {
public:
    ConfigReader(const Json& root, const std::string& text, std::string file, Diagnostics& diags);

    [[nodiscard]] const std::string& file() const { return m_file; }
    [[nodiscard]] bool has(const std::string& key) const { return find(key) != nullptr; }
    // The value of `key`, text_config first; nullptr when absent or null.
    [[nodiscard]] const Json* find(const std::string& key) const;
    // Where `key` is written: its line when the key occurs once in the text, else the file.
    [[nodiscard]] Location at(const std::string& key) const;
    void error(const std::string& key, const std::string& message);
    void errorAtFile(const std::string& message);

    // Values of the wrong type or out of range are errors naming the key; they then read as absent.
    std::optional<std::int64_t> integer(const std::string& key, std::int64_t min, std::int64_t max);
    std::optional<double> number(const std::string& key, double min, double max);
    std::optional<std::string> string(const std::string& key);
    std::optional<bool> boolean(const std::string& key);
    std::optional<std::vector<std::int64_t>> integerList(const std::string& key, std::int64_t min, std::int64_t max);
    // An object (e.g. quantization_config): the top level first, then text_config.
    [[nodiscard]] const Json* object(const std::string& key) const;

private:
    const Json& m_root;
    const Json* m_text = nullptr;
    const std::string& m_source;
    std::string m_file;
    Diagnostics& m_diags;
};

// "string \"7168\"", "array", ... for messages about a value of the wrong type.
std::string describe(const Json& value);

}  // namespace moex::hf
