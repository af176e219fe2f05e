// Reading JSON that comes from outside (config.json, statistics, traces, safetensors headers,
// run files) so that bad input is always a located InputError, never a crash or an internal error:
//  - nesting deeper than kMaxJsonDepth is refused while parsing (a 100,000-deep array used to
//    parse fine and then overflow the stack when a recursive dump put it into a message);
//  - every nlohmann failure (syntax, a number that overflows a double, a wrong type met later) is
//    reported at the file and, for JSON Lines, the line;
//  - values quoted in messages are short and bounded (jsonSnippet), whatever their size.
#pragma once

#include "common/diagnostics.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace moex {

// Deeper than any format moex reads needs (config.json nests 3-4 levels, traces 3); a limit well
// below what a recursive walk can take on a default 8 MiB stack.
inline constexpr int kMaxJsonDepth = 64;

// A syntax error in a JSON text, located and worded once for every reader: "FILE:LINE:COL: error:
// config.json is not valid JSON: syntax error while parsing object - unexpected '}'; expected
// string literal". A reader that locates it its own way (a safetensors header by its byte in the
// file) reads offset() and detail().
class JsonSyntaxError : public InputError {
public:
    JsonSyntaxError(Location where, const std::string& what, std::size_t offset, std::string detail);

    // 0-based byte offset, in the parsed text, of the character that broke the syntax.
    [[nodiscard]] std::size_t offset() const { return m_offset; }
    // nlohmann's description without its "[json.exception.parse_error.101] parse error at line 1,
    // column 5: " prefix.
    [[nodiscard]] const std::string& detail() const { return m_detail; }

private:
    std::size_t m_offset;
    std::string m_detail;
};

// FILE:LINE:COL (1-based) of the character at a 0-based byte offset of `text`.
Location locationOfOffset(std::string_view text, std::size_t offset, const std::string& file);

// Parses `text` as nlohmann::json::parse does, every failure an InputError: a syntax error is a
// JsonSyntaxError at its line and column in `text` (for a JSON Lines record, `line` > 0, at that
// line and the byte's column in it); nesting beyond kMaxJsonDepth, a key given twice in one object,
// and any other nlohmann failure (a number that overflows a double: 1e309, a 400-digit integer) at
// `file` (line `line` when > 0). `what` names the content in messages ("config.json").
nlohmann::json parseJsonInput(std::string_view text, const std::string& file, int line = 0,
                              const std::string& what = "JSON");

// Where the object keys of a parsed JSON text are written, for messages about their values: by JSON
// Pointer ("/text_config/num_experts", "/quantization_config/config_groups/group_0/weights/num_bits"),
// the 0-based byte offset of the key's opening quote. Keys more than kKeyOffsetDepth objects and
// arrays deep are not recorded (the formats that ask for offsets nest 3-5 levels).
struct JsonKeyOffsets {
    static constexpr int kKeyOffsetDepth = 8;
    // Bounds that keep the record linear in the text whatever the input: a pointer longer than
    // kMaxPointer characters, and keys after the first kMaxKeys, are not recorded.
    static constexpr std::size_t kMaxPointer = 256;
    static constexpr std::size_t kMaxKeys = 1u << 16;
    std::unordered_map<std::string, std::size_t> offsets;
    // FILE:LINE:COL of `pointer`'s key in `text`; nullopt when it is not recorded.
    [[nodiscard]] std::optional<Location> locate(const std::string& pointer, std::string_view text, const std::string& file) const;
};
// parseJsonInput, recording where each key is written into `keys`.
nlohmann::json parseJsonInput(std::string_view text, const std::string& file, int line, const std::string& what,
                              JsonKeyOffsets& keys);
// One reference token of a JSON Pointer: "~" written "~0", "/" written "~1" (RFC 6901).
std::string jsonPointerToken(std::string_view key);

// At most `maxChars` characters of `value` as JSON, depth-limited (never recursing past
// kMaxJsonDepth), for messages.
std::string jsonSnippet(const nlohmann::json& value, std::size_t maxChars = 40);

// nlohmann's message without its "[json.exception.type_error.302] " prefix.
std::string jsonErrorText(const nlohmann::json::exception& e);

// Runs `read` and turns an nlohmann exception it lets out (a type error on a field, a missing
// key met by at()) into an InputError at `file` / `line`. For readers whose checks cover the
// expected cases but not every shape a hostile file can take.
template <class F>
decltype(auto) withJsonErrors(const std::string& file, int line, F&& read)
{
    try {
        return std::forward<F>(read)();
    } catch (const nlohmann::json::exception& e) {
        throw InputError(Location{file, line, 0}, "a value of the wrong kind: " + jsonErrorText(e));
    }
}

}  // namespace moex
