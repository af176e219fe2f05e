// Reading YAML against a schema while collecting located diagnostics.
// Every getter reports what is wrong and where (FILE:LINE:COL), then lets the caller continue so
// that one pass finds every problem of a file.
#pragma once

#include "common/diagnostics.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moex {

// What a scenario, model, topology, calibration or placement YAML file may be, checked before
// yaml-cpp sees it: yaml-cpp's time and memory grow with the text (about 0.1-0.7 s and up to
// 240 MB per MB here, 16 s for a 4 MB flow list elsewhere), so that `validate` answers within about
// a second for any file. The largest real inputs are far below both: a custom topology of 4,000
// GPUs is 0.6 MB and some 20,000 lines; an explicit placement of DeepSeek-R1 on 72 GPUs 17,000 items.
inline constexpr std::size_t kMaxYamlBytes = std::size_t{2} << 20;  // 2 MiB
inline constexpr std::size_t kMaxYamlItems = 100000;                // lines + flow-collection commas

// False, with a located error in `diags`, for text beyond kMaxYamlBytes or kMaxYamlItems (what
// moex-cli topology checks before writing a file out).
bool withinYamlBounds(const std::string& text, const std::string& file, Diagnostics& diags);

// Parses text into a node; syntax errors (and too-deep nesting) become diagnostics.
// Refuses (with a located error) text beyond kMaxYamlBytes or kMaxYamlItems before parsing, and a
// second YAML document (after '---' or '...') at its line.
std::optional<YAML::Node> parseYaml(const std::string& text, const std::string& file, Diagnostics& diags);

// A node that did not come from the file (a --set override) and where it came from instead: errors
// about it name `where` ("--set workload.tokens_per_gpu=abc"), not a line of the file.
struct NodeOrigin {
    YAML::Node node;
    std::string where;
};

class YamlReader {
public:
    YamlReader(std::string file, Diagnostics& diags, std::vector<NodeOrigin> origins = {})
        : m_file(std::move(file)), m_diags(diags), m_origins(std::move(origins))
    {
    }

    [[nodiscard]] const std::string& file() const { return m_file; }
    [[nodiscard]] Diagnostics& diagnostics() { return m_diags; }
    [[nodiscard]] Location at(const YAML::Node& node) const;
    // The --set that brought `node` ("--set workload.routing.kind=trace"); "" for a node of the file.
    [[nodiscard]] std::string flagOf(const YAML::Node& node) const;
    void error(const YAML::Node& node, std::string message);
    [[nodiscard]] std::size_t errorCount() const { return m_diags.size(); }

    // True when `node` is a mapping; reports every key not in `allowed` (with a did-you-mean).
    bool expectMap(const YAML::Node& node, std::string_view what, const std::vector<std::string>& allowed);

    [[nodiscard]] static bool has(const YAML::Node& map, const std::string& key);

    // Scalar getters. A missing required key is an error at the mapping; a present key of the
    // wrong type or outside [min, max] is an error at the value. Return nullopt on any error.
    std::optional<std::int64_t> getInt(const YAML::Node& map, const std::string& key, bool required,
                                       std::int64_t min, std::int64_t max);
    std::optional<double> getDouble(const YAML::Node& map, const std::string& key, bool required, double min,
                                    double max);
    std::optional<std::string> getString(const YAML::Node& map, const std::string& key, bool required);
    // A name (of a model, scenario, topology, node): a string without control characters.
    std::optional<std::string> getName(const YAML::Node& map, const std::string& key, bool required);
    std::optional<bool> getBool(const YAML::Node& map, const std::string& key, bool required);
    // One of `choices`; returns its index.
    std::optional<int> getChoice(const YAML::Node& map, const std::string& key, bool required,
                                 const std::vector<std::string>& choices);
    std::optional<std::vector<std::int64_t>> getIntList(const YAML::Node& map, const std::string& key,
                                                        bool required, std::int64_t min, std::int64_t max);

    // Conversions of a node that is already in hand.
    std::optional<std::int64_t> asInt(const YAML::Node& node, const std::string& what, std::int64_t min,
                                      std::int64_t max);
    std::optional<double> asDouble(const YAML::Node& node, const std::string& what, double min, double max);

private:
    std::string m_file;
    Diagnostics& m_diags;
    std::vector<NodeOrigin> m_origins;
};

}  // namespace moex
