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

#include <string>
#include <string_view>
#include <utility>

namespace moex {

// Deeper than any format moex reads needs (config.json nests 3-4 levels, traces 3); a limit well
// below what a recursive walk can take on a default 8 MiB stack.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as nlohmann::json::parse does, with two more refusals, each an InputError at
// `file` (line `line` when > 0, e.g. a JSON Lines record): nesting beyond kMaxJsonDepth, and any
// nlohmann failure other than a syntax error (a number that overflows a double: 1e309, a
// 400-digit integer). Syntax errors stay nlohmann::json::parse_error, whose byte offset the
// caller turns into its own location. `what` names the content in messages ("config.json").
nlohmann::json parseJsonInput(std::string_view text, const std::string& file, int line = 0,
                              const std::string& what = "JSON");

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
