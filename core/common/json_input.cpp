#include "common/json_input.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <iterator>
#include <vector>

namespace moex {

namespace {

struct TooDeep {};
struct DuplicateKey {
    std::string key;
    std::size_t offset;  // of the parser when it read the repeated key: just past it
};

// A char iterator that tells `*read` how far the parser has read: nlohmann's callbacks carry no
// position, and a repeated key is found only in a callback.
class ReadingIterator {
public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    ReadingIterator() = default;
    ReadingIterator(const char* p, const char* base, std::size_t* read) : m_p(p), m_base(base), m_read(read) {}
    reference operator*() const { return *m_p; }
    ReadingIterator& operator++()
    {
        ++m_p;
        *m_read = static_cast<std::size_t>(m_p - m_base);
        return *this;
    }
    ReadingIterator operator++(int)
    {
        ReadingIterator before = *this;
        ++*this;
        return before;
    }
    bool operator==(const ReadingIterator& o) const { return m_p == o.m_p; }
    bool operator!=(const ReadingIterator& o) const { return m_p != o.m_p; }

private:
    const char* m_p = nullptr;
    const char* m_base = nullptr;
    std::size_t* m_read = nullptr;
};

// nlohmann::json::parse's DOM builder, with the checks a reader of outside JSON needs: nesting past
// kMaxJsonDepth (TooDeep) and a key given twice in one object (DuplicateKey: JSON allows it and
// nlohmann keeps one of the two values without a word, so a count or a setting the user wrote
// would be lost). A SAX handler, not parse()'s callback: with a callback, nlohmann 3.11 scans the
// parent for discarded values after every object it closes, so an array of n small objects took
// time in n^2 (16 MB of them: 26.5 s against 0.18 s; tests/bench/bench_json).
class GuardedDomBuilder {
public:
    using json = nlohmann::json;
    // `keys`, when given, receives where each key is written (JsonKeyOffsets).
    GuardedDomBuilder(json& root, std::string_view text, const std::size_t* read, JsonKeyOffsets* keys)
        : m_root(root), m_text(text), m_read(read), m_keys(keys)
    {
    }

    bool null() { return put(nullptr); }
    bool boolean(bool v) { return put(v); }
    bool number_integer(json::number_integer_t v) { return put(v); }
    bool number_unsigned(json::number_unsigned_t v) { return put(v); }
    bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(v); }
    bool string(json::string_t& v) { return put(std::move(v)); }
    bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
    bool start_object(std::size_t /*size*/) { return open(json::value_t::object); }
    bool start_array(std::size_t /*size*/) { return open(json::value_t::array); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(json::string_t& k)
    {
        json& object = *m_stack.back();
        if (object.contains(k))
            throw DuplicateKey{k, *m_read};
        if (m_keys)
            record(k);
        m_member = &object[k];
        return true;
    }
    // What parse() would throw, of its own type (parse_error, or out_of_range for 1e309).
    template <class Exception>
    bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& e)
    {
        throw e;
    }

private:
    // Records where key `k` of the innermost object is written. Its closing quote is the last
    // character the parser read; the opening one is found by walking back over the key as written
    // (escapes included), so the cost is the key's length. Pointers are kept short and shallow: a
    // hostile file's long keys or deep nesting are simply not recorded (their errors fall back to
    // the file), and memory stays linear in the text.
    void record(const json::string_t& k)
    {
        m_memberPointer.clear();
        const std::string& parent = m_pointers.back();
        if (m_stack.size() > static_cast<std::size_t>(JsonKeyOffsets::kKeyOffsetDepth) || parent == kNotRecorded
            || m_keys->offsets.size() >= JsonKeyOffsets::kMaxKeys)
            return;
        const std::string token = jsonPointerToken(k);
        if (parent.size() + 1 + token.size() > JsonKeyOffsets::kMaxPointer) {
            m_memberPointer = kNotRecorded;
            return;
        }
        m_memberPointer = parent + '/' + token;
        const std::size_t close = std::min(*m_read, m_text.size());
        if (close == 0 || m_text[close - 1] != '"')
            return;
        for (std::size_t p = close - 1; p-- > 0;) {
            if (m_text[p] != '"')
                continue;
            std::size_t slashes = 0;
            while (slashes < p && m_text[p - 1 - slashes] == '\\')
                ++slashes;
            if (slashes % 2 == 0) {
                m_keys->offsets.emplace(m_memberPointer, p);
                return;
            }
        }
    }

    // The value's place: the root, the array being read, or the member whose key came last.
    template <class Value>
    json* place(Value&& v)
    {
        if (m_stack.empty()) {
            m_root = json(std::forward<Value>(v));
            return &m_root;
        }
        json& parent = *m_stack.back();
        if (parent.is_array()) {
            parent.emplace_back(std::forward<Value>(v));
            return &parent.back();
        }
        *m_member = json(std::forward<Value>(v));
        return m_member;
    }
    template <class Value>
    bool put(Value&& v)
    {
        place(std::forward<Value>(v));
        return true;
    }
    bool open(json::value_t kind)
    {
        // The depth parse()'s callback saw at a start event: the containers open around it.
        if (static_cast<int>(m_stack.size()) > kMaxJsonDepth)
            throw TooDeep{};
        if (m_keys) {
            // A container's pointer: the root's "", an array element's index, or its member's key;
            // past the bounds, not recorded (nor anything inside it).
            std::string pointer;
            if (!m_stack.empty()) {
                const std::string& parent = m_pointers.back();
                if (m_stack.back()->is_array())
                    pointer = parent == kNotRecorded || parent.size() > JsonKeyOffsets::kMaxPointer
                                  ? std::string(kNotRecorded)
                                  : parent + '/' + std::to_string(m_stack.back()->size());
                else
                    pointer = m_memberPointer.empty() ? std::string(kNotRecorded) : m_memberPointer;
            }
            m_pointers.push_back(std::move(pointer));
        }
        m_stack.push_back(place(kind));
        return true;
    }
    bool close()
    {
        m_stack.pop_back();
        if (m_keys)
            m_pointers.pop_back();
        return true;
    }

    json& m_root;
    std::string_view m_text;
    const std::size_t* m_read;
    JsonKeyOffsets* m_keys;
    std::vector<json*> m_stack;  // the containers open, outermost first
    json* m_member = nullptr;
    std::vector<std::string> m_pointers;  // with m_keys: the JSON Pointer of each open container
    std::string m_memberPointer;          // and of the member whose key came last ("" or kNotRecorded: none)
    // Not a JSON Pointer (those start with '/'): a container whose keys are not recorded.
    static constexpr const char* kNotRecorded = "#";
};

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

JsonSyntaxError::JsonSyntaxError(Location where, const std::string& what, std::size_t offset, std::string detail)
    : InputError(std::move(where), what + " is not valid JSON: " + detail), m_offset(offset), m_detail(std::move(detail))
{
}

Location locationOfOffset(std::string_view text, std::size_t offset, const std::string& file)
{
    int line = 1;
    std::size_t lineStart = 0;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            lineStart = i + 1;
        }
    }
    return {file, line, static_cast<int>(std::min(offset, text.size()) - lineStart) + 1};
}

namespace {

nlohmann::json parseChecked(std::string_view text, const std::string& file, int line, const std::string& what,
                            JsonKeyOffsets* keys)
{
    // nlohmann stops at a NUL byte and reads what came before as the whole text.
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
        const int at = line > 0 ? line : 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
        throw InputError(Location{file, at, 0}, what + " holds a NUL byte (at byte " + std::to_string(nul)
                                                     + "): not a JSON text; a binary file, or one cut and joined");
    }
    std::size_t read = 0;
    try {
        const ReadingIterator first(text.data(), text.data(), &read), last(text.data() + text.size(), text.data(), &read);
        nlohmann::json root;
        GuardedDomBuilder builder(root, text, &read, keys);
        nlohmann::json::sax_parse(first, last, &builder);
        return root;
    } catch (const TooDeep&) {
        throw InputError(Location{file, line, 0}, what + " nests deeper than " + std::to_string(kMaxJsonDepth)
                                                      + " levels (no format moex reads needs that)");
    } catch (const DuplicateKey& d) {
        // The repeated key is the last occurrence of it, as written, before where the parser was.
        const std::string quoted = nlohmann::json(d.key).dump();
        const std::size_t end = std::min(d.offset, text.size());
        const std::size_t at = text.substr(0, end).rfind(quoted);
        const Location where = at == std::string_view::npos ? Location{file, line, 0}
                               : line > 0                   ? Location{file, line, static_cast<int>(at) + 1}
                                                            : locationOfOffset(text, at, file);
        throw InputError(where, what + " gives the key \"" + d.key.substr(0, 60)
                                                      + "\" twice in one object; give it once (JSON readers keep one of "
                                                        "the two values, silently)");
    } catch (const nlohmann::json::parse_error& e) {
        // e.byte is the 1-based index of the last character read: the one that broke the syntax.
        const std::size_t offset = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
        const Location at = line > 0 ? Location{file, line, static_cast<int>(offset) + 1}
                                     : locationOfOffset(text, offset, file);
        std::string detail = e.what();
        if (const auto p = detail.find("parse error"); p != std::string::npos)
            if (const auto colon = detail.find(": ", p); colon != std::string::npos)
                detail = detail.substr(colon + 2);
        throw JsonSyntaxError(at, what, offset, detail);
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number that overflows a double (1e309, a 400-digit integer). nlohmann
        // gives no position, only the number as written: located at its first occurrence as a
        // whole token.
        const std::string message = jsonErrorText(e);
        Location at{file, line, 0};
        if (const auto open = message.find("parsing '"); open != std::string::npos) {
            const auto close = message.find('\'', open + 9);
            const std::string token = close == std::string::npos ? std::string() : message.substr(open + 9, close - open - 9);
            const auto numberChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-'; };
            for (std::size_t pos = token.empty() ? std::string_view::npos : text.find(token); pos != std::string_view::npos;
                 pos = text.find(token, pos + 1)) {
                const bool whole = (pos == 0 || !numberChar(text[pos - 1]))
                                   && (pos + token.size() == text.size() || !numberChar(text[pos + token.size()]));
                if (whole) {
                    at = line > 0 ? Location{file, line, static_cast<int>(pos) + 1} : locationOfOffset(text, pos, file);
                    break;
                }
            }
        }
        throw InputError(at, what + ": " + message);
    }
}

}  // namespace

nlohmann::json parseJsonInput(std::string_view text, const std::string& file, int line, const std::string& what)
{
    return parseChecked(text, file, line, what, nullptr);
}

nlohmann::json parseJsonInput(std::string_view text, const std::string& file, int line, const std::string& what,
                              JsonKeyOffsets& keys)
{
    return parseChecked(text, file, line, what, &keys);
}

std::optional<Location> JsonKeyOffsets::locate(const std::string& pointer, std::string_view text, const std::string& file) const
{
    const auto it = offsets.find(pointer);
    if (it == offsets.end())
        return std::nullopt;
    return locationOfOffset(text, it->second, file);
}

std::string jsonPointerToken(std::string_view key)
{
    std::string out;
    out.reserve(key.size());
    for (const char ch : key) {
        if (ch == '~')
            out += "~0";
        else if (ch == '/')
            out += "~1";
        else
            out += ch;
    }
    return out;
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
