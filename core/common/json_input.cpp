#include "common/json_input.h"

#include <vector>

namespace moex {

namespace {

struct TooDeep {};

// Dumps at most `budget` characters, iteratively deep only to kMaxJsonDepth.
void snippet(const nlohmann::json& v, std::string& out, std::size_t budget, int depth)
{
    if (out.size() >= budget)
        return;
    if (depth >= kMaxJsonDepth) {
        out += "...";
        return;
    }
    if (v.is_array()) {
        out += '[';
        bool first = true;
        for (const auto& e : v) {
            if (out.size() >= budget)
                break;
            if (!first)
                out += ',';
            first = false;
            snippet(e, out, budget, depth + 1);
        }
        out += ']';
    } else if (v.is_object()) {
        out += '{';
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (out.size() >= budget)
                break;
            if (!first)
                out += ',';
            first = false;
            out += nlohmann::json(it.key()).dump();
            out += ':';
            snippet(it.value(), out, budget, depth + 1);
        }
        out += '}';
    } else {
        std::string s = v.dump();
        if (s.size() > budget)
            s.resize(budget);
        out += s;
    }
}

}  // namespace

nlohmann::json parseJsonInput(std::string_view text, const std::string& file, int line, const std::string& what)
{
    const nlohmann::json::parser_callback_t guard = [](int depth, nlohmann::json::parse_event_t event,
                                                       nlohmann::json&) {
        if (depth > kMaxJsonDepth && (event == nlohmann::json::parse_event_t::object_start
                                      || event == nlohmann::json::parse_event_t::array_start))
            throw TooDeep{};
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), guard);
    } catch (const TooDeep&) {
        throw InputError(Location{file, line, 0}, what + " nests deeper than " + std::to_string(kMaxJsonDepth)
                                                      + " levels (no format moex reads needs that)");
    } catch (const nlohmann::json::parse_error&) {
        throw;  // the caller locates it by its byte offset
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number that overflows a double (1e309, a 400-digit integer).
        throw InputError(Location{file, line, 0}, what + ": " + jsonErrorText(e));
    }
}

std::string jsonErrorText(const nlohmann::json::exception& e)
{
    std::string s = e.what();
    if (!s.empty() && s.front() == '[')
        if (const auto close = s.find("] "); close != std::string::npos)
            s = s.substr(close + 2);
    return s;
}

std::string jsonSnippet(const nlohmann::json& value, std::size_t maxChars)
{
    std::string out;
    snippet(value, out, maxChars, 0);
    if (out.size() > maxChars) {
        out.resize(maxChars > 3 ? maxChars - 3 : 0);
        out += "...";
    }
    return out;
}

}  // namespace moex
