// Typed, located access to a Hugging Face config.json (internal to hf_import).
// Keys are looked up in text_config first (multimodal wrappers nest the language model there), then at
// the top level; a JSON null counts as absent, as transformers treats it.
#pragma once

#include "common/diagnostics.h"
#include "common/json_input.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moex::hf {

using Json = nlohmann::json;

class ConfigReader {
public:
    // `keys`: where parseJsonInput found each key of `text` (messages then point at the key the
    // value came from, also where text_config and the top level or vision_config both have it).
    ConfigReader(const Json& root, const std::string& text, std::string file, Diagnostics& diags,
                 const JsonKeyOffsets* keys = nullptr);

    [[nodiscard]] const std::string& file() const { return m_file; }
    [[nodiscard]] bool has(const std::string& key) const { return find(key) != nullptr; }
    // The value of `key`, text_config first; nullptr when absent or null.
    [[nodiscard]] const Json* find(const std::string& key) const;
    // Where `key` is written: the key find() reads (text_config's, else the top level's); without
    // key offsets, its line when the key occurs once in the text; else the file.
    [[nodiscard]] Location at(const std::string& key) const;
    void error(const std::string& key, const std::string& message);
    // The JSON Pointer of the object object(key) returns ("/quantization_config" or
    // "/text_config/quantization_config"); "" when there is none.
    [[nodiscard]] std::string objectPointer(const std::string& key) const;
    // An error at the key `pointer` names (e.g. objectPointer("quantization_config") + "/bits"),
    // else at `key` as error() locates it.
    void errorAt(const std::string& pointer, const std::string& key, const std::string& message);
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
    [[nodiscard]] Location atPointer(const std::string& pointer, const std::string& key) const;

    const Json& m_root;
    const Json* m_text = nullptr;
    const JsonKeyOffsets* m_keys = nullptr;
    const std::string& m_source;
    std::string m_file;
    Diagnostics& m_diags;
};

// "string \"7168\"", "array", ... for messages about a value of the wrong type.
std::string describe(const Json& value);

}  // namespace moex::hf
