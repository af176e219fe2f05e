#include "common/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace moex {

bool withinYamlBounds(const std::string& text, const std::string& file, Diagnostics& diags)
{
    if (text.size() > kMaxYamlBytes) {
        diags.error(Location{file, 0, 0}, "the file is " + std::to_string(text.size()) + " bytes; scenario, model and "
                                              "topology files may be at most " + std::to_string(kMaxYamlBytes >> 20)
                                              + " MiB (the largest real ones are well under 1 MiB)");
        return false;
    }
    std::size_t items = 0;
    int line = 1;
    for (const char ch : text) {
        if (ch == '\n' || ch == ',')
            ++items;
        if (ch == '\n')
            ++line;
        if (items > kMaxYamlItems) {
            diags.error(Location{file, line, 0}, "more than " + std::to_string(kMaxYamlItems)
                                                     + " lines and list items; scenario, model and topology files may "
                                                       "hold at most that many (the largest real ones hold about 20,000)");
            return false;
        }
    }
    return true;
}

namespace {

// The 1-based line where a second YAML document's content starts, 0 when there is none. A
// document marker is '---' or '...' at column 0, alone or followed by a blank. A '---' after
// content, or any content after '...', starts a second document; a trailing marker with only
// blank lines and comments after it does not.
int secondDocumentLine(const std::string& text)
{
    const auto isMarker = [](std::string_view l, std::string_view m) {
        return l.substr(0, 3) == m && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    };
    const auto hasContent = [](std::string_view l) {
        const auto first = l.find_first_not_of(" \t");
        return first != std::string_view::npos && l[first] != '#';
    };
    bool content = false;  // the current document has content
    bool ended = false;    // a '...' closed it
    bool pendingStart = false;  // a '---' after content: the next content is a second document
    int line = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        ++line;
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos)
            end = text.size();
        std::string_view l(text.data() + pos, end - pos);
        pos = end + 1;
        if (!l.empty() && l.back() == '\r')
            l.remove_suffix(1);
        if (isMarker(l, "---")) {
            if (content || ended)
                pendingStart = true;
            if (hasContent(l.substr(3))) {
                if (pendingStart)
                    return line;
                content = true;
            }
            continue;
        }
        if (isMarker(l, "...")) {
            ended = true;
            if (hasContent(l.substr(3)))
                return line;
            continue;
        }
        if (!hasContent(l) || (!content && !ended && l.front() == '%'))
            continue;  // blank, a comment, or a directive before the first document
        if (pendingStart || ended)
            return line;
        content = true;
    }
    return 0;
}

}  // namespace

std::optional<YAML::Node> parseYaml(const std::string& text, const std::string& file, Diagnostics& diags)
{
    if (!withinYamlBounds(text, file, diags))
        return std::nullopt;
    // YAML text holds no NUL byte: a PNG or another binary file given as a scenario said
    // "unknown escape character: \x00" somewhere in its bytes.
    if (const auto nul = text.find('\0'); nul != std::string::npos) {
        const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
        diags.error(Location{file, line, 0}, "holds a NUL byte (at byte " + std::to_string(nul)
                                                 + "): a binary file, not YAML text");
        return std::nullopt;
    }
    // A second document (after '---' or '...') is an error: moex reads one, and what follows was
    // silently ignored, even a syntax error. Found by its marker lines (document markers stand at
    // column 0 and may not occur inside any scalar), not by YAML::LoadAll: yaml-cpp 0.7's LoadAll
    // never returns on some inputs (a lone ',').
    if (const int line = secondDocumentLine(text); line > 0) {
        diags.error(Location{file, line, 1}, "a second YAML document (after '---' or '...'): moex reads one document "
                                             "per file; remove what follows the first or put it in a file of its own");
        return std::nullopt;
    }
    try {
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        // yaml-cpp marks are 0-based; DeepRecursion (nesting past its guard) derives from this too.
        Location where{file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
        std::string msg = e.msg.empty() ? std::string("invalid YAML") : e.msg;
        diags.error(where, "YAML syntax: " + msg);
    }
    return std::nullopt;
}

Location YamlReader::at(const YAML::Node& node) const
{
    for (const NodeOrigin& o : m_origins)
        if (o.node.is(node))
            return {o.where, 0, 0};
    const YAML::Mark m = node.Mark();
    if (m.is_null())
        return {m_file, 0, 0};
    return {m_file, m.line + 1, m.column + 1};
}

std::string YamlReader::flagOf(const YAML::Node& node) const
{
    for (const NodeOrigin& o : m_origins)
        if (o.node.is(node))
            return o.where;
    return {};
}

void YamlReader::error(const YAML::Node& node, std::string message)
{
    m_diags.error(at(node), std::move(message));
}

bool YamlReader::expectMap(const YAML::Node& node, std::string_view what, const std::vector<std::string>& allowed)
{
    if (!node.IsMap()) {
        error(node, std::string(what) + " must be a mapping");
        return false;
    }
    std::vector<YAML::Node> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
        const YAML::Node key = it->first;
        if (!key.IsScalar()) {
            error(key, std::string("keys of ") + std::string(what) + " must be plain names");
            continue;
        }
        const std::string& name = key.Scalar();
        // YAML forbids a key twice in one mapping; yaml-cpp keeps the first and drops the second
        // without a word, so a value the user wrote last would be ignored.
        const auto first = std::find_if(seen.begin(), seen.end(), [&](const YAML::Node& k) { return k.Scalar() == name; });
        if (first != seen.end()) {
            const Location was = at(*first);
            error(key, "duplicate key '" + name + "' in " + std::string(what)
                           + (was.line > 0 ? " (first at line " + std::to_string(was.line) + ")" : std::string()) + "; give it once");
            continue;
        }
        seen.push_back(key);
        bool known = false;
        for (const auto& a : allowed)
            known = known || a == name;
        if (known)
            continue;
        std::string msg = "unknown key '" + name + "' in " + std::string(what);
        const std::string hint = didYouMean(name, allowed);
        if (!hint.empty())
            msg += "; did you mean '" + hint + "'?";
        error(key, msg);
    }
    return true;
}

bool YamlReader::has(const YAML::Node& map, const std::string& key)
{
    if (!map.IsMap())
        return false;
    const YAML::Node& cmap = map;
    return static_cast<bool>(cmap[key]);
}

static std::optional<YAML::Node> lookup(YamlReader& r, const YAML::Node& map, const std::string& key, bool required)
{
    if (!map.IsMap())
        return std::nullopt;
    const YAML::Node& cmap = map;
    YAML::Node v = cmap[key];
    if (!v) {
        if (required)
            r.error(map, "missing required key '" + key + "'");
        return std::nullopt;
    }
    if (v.IsNull()) {
        r.error(v, "'" + key + "' has no value");
        return std::nullopt;
    }
    return v;
}

std::optional<std::int64_t> YamlReader::asInt(const YAML::Node& node, const std::string& what, std::int64_t min,
                                              std::int64_t max)
{
    if (!node.IsScalar()) {
        error(node, "'" + what + "' must be an integer");
        return std::nullopt;
    }
    const std::string& s = node.Scalar();
    std::int64_t value = 0;
    const char* begin = s.data();
    const char* end = s.data() + s.size();
    if (begin != end && *begin == '+')
        ++begin;
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc::result_out_of_range) {
        error(node, "'" + what + "' = " + s + " is out of range");
        return std::nullopt;
    }
    if (ec != std::errc() || ptr != end || begin == end) {
        error(node, "'" + what + "' must be an integer, got '" + s + "'");
        return std::nullopt;
    }
    if (value < min || value > max) {
        error(node, "'" + what + "' = " + s + " is out of range [" + std::to_string(min) + ", " + std::to_string(max)
                        + "]");
        return std::nullopt;
    }
    return value;
}

static std::string formatDouble(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::optional<double> YamlReader::asDouble(const YAML::Node& node, const std::string& what, double min, double max)
{
    if (!node.IsScalar()) {
        error(node, "'" + what + "' must be a number");
        return std::nullopt;
    }
    const std::string& s = node.Scalar();
    double value = 0;
    if (s == ".nan" || s == ".NaN" || s == ".NAN" || s == "nan" || s == "NaN") {
        error(node, "'" + what + "' must be a finite number, got NaN");
        return std::nullopt;
    }
    if (s == ".inf" || s == "-.inf" || s == "+.inf" || s == ".Inf" || s == "-.Inf" || s == "inf" || s == "-inf") {
        error(node, "'" + what + "' must be a finite number, got infinity");
        return std::nullopt;
    }
    const char* begin = s.data();
    const char* end = s.data() + s.size();
    if (begin != end && *begin == '+')
        ++begin;
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr != end || begin == end) {
        error(node, "'" + what + "' must be a number, got '" + s + "'");
        return std::nullopt;
    }
    if (!std::isfinite(value)) {
        error(node, "'" + what + "' must be a finite number");
        return std::nullopt;
    }
    if (value < min || value > max) {
        error(node, "'" + what + "' = " + s + " is out of range [" + formatDouble(min) + ", " + formatDouble(max)
                        + "]");
        return std::nullopt;
    }
    return value;
}

std::optional<std::int64_t> YamlReader::getInt(const YAML::Node& map, const std::string& key, bool required,
                                               std::int64_t min, std::int64_t max)
{
    auto v = lookup(*this, map, key, required);
    return v ? asInt(*v, key, min, max) : std::nullopt;
}

std::optional<double> YamlReader::getDouble(const YAML::Node& map, const std::string& key, bool required, double min,
                                            double max)
{
    auto v = lookup(*this, map, key, required);
    return v ? asDouble(*v, key, min, max) : std::nullopt;
}

std::optional<std::string> YamlReader::getString(const YAML::Node& map, const std::string& key, bool required)
{
    auto v = lookup(*this, map, key, required);
    if (!v)
        return std::nullopt;
    if (!v->IsScalar()) {
        error(*v, "'" + key + "' must be a string");
        return std::nullopt;
    }
    return v->Scalar();
}

std::optional<std::string> YamlReader::getName(const YAML::Node& map, const std::string& key, bool required)
{
    auto v = getString(map, key, required);
    if (v && std::any_of(v->begin(), v->end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
        error(map[key], "'" + key + "' holds a control character (a line break, tab or terminal escape): names go "
                        "into the files moex writes and onto the terminal; use plain text");
        return std::nullopt;
    }
    if (v && v->find_first_not_of(' ') == std::string::npos) {
        error(map[key], "'" + key + "' is empty: give a name");
        return std::nullopt;
    }
    return v;
}

std::optional<bool> YamlReader::getBool(const YAML::Node& map, const std::string& key, bool required)
{
    auto v = lookup(*this, map, key, required);
    if (!v)
        return std::nullopt;
    const std::string s = v->IsScalar() ? v->Scalar() : std::string();
    if (s == "true" || s == "True" || s == "yes" || s == "on")
        return true;
    if (s == "false" || s == "False" || s == "no" || s == "off")
        return false;
    error(*v, "'" + key + "' must be true or false");
    return std::nullopt;
}

std::optional<int> YamlReader::getChoice(const YAML::Node& map, const std::string& key, bool required,
                                         const std::vector<std::string>& choices)
{
    auto v = lookup(*this, map, key, required);
    if (!v)
        return std::nullopt;
    if (v->IsScalar()) {
        for (std::size_t i = 0; i < choices.size(); ++i)
            if (choices[i] == v->Scalar())
                return static_cast<int>(i);
    }
    std::string list;
    for (const auto& c : choices)
        list += (list.empty() ? "" : ", ") + c;
    std::string msg = "'" + key + "' must be one of: " + list;
    if (v->IsScalar()) {
        msg += " (got '" + v->Scalar() + "')";
        const std::string hint = didYouMean(v->Scalar(), choices);
        if (!hint.empty())
            msg += "; did you mean '" + hint + "'?";
    }
    error(*v, msg);
    return std::nullopt;
}

std::optional<std::vector<std::int64_t>> YamlReader::getIntList(const YAML::Node& map, const std::string& key,
                                                                bool required, std::int64_t min, std::int64_t max)
{
    auto v = lookup(*this, map, key, required);
    if (!v)
        return std::nullopt;
    if (!v->IsSequence()) {
        error(*v, "'" + key + "' must be a list of integers");
        return std::nullopt;
    }
    std::vector<std::int64_t> out;
    out.reserve(v->size());
    bool ok = true;
    for (const auto& item : *v) {
        auto x = asInt(item, key + " item", min, max);
        ok = ok && x.has_value();
        if (x)
            out.push_back(*x);
    }
    if (!ok)
        return std::nullopt;
    return out;
}

}  // namespace moex
