#include "common/diagnostics.h"

#include <algorithm>
#include <cctype>

namespace moex {

namespace {

// A message may quote the input (a YAML scalar, a key, a file name): bytes that are not text
// (control characters, a NUL, invalid UTF-8 from a binary file) are written as \xNN so that the
// terminal shows them and nothing else; valid UTF-8 (µ, →) stays as it is.
std::string printable(const std::string& text, bool keepLineBreaks = true)
{
    std::string out;
    out.reserve(text.size());
    const auto hex = [&](unsigned char c) {
        static const char digits[] = "0123456789abcdef";
        out += "\\x";
        out += digits[c >> 4];
        out += digits[c & 15];
    };
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c >= 0x20 && c != 0x7f)
                out += static_cast<char>(c);
            else if (keepLineBreaks && (c == '\n' || c == '\t'))
                out += static_cast<char>(c);
            else
                hex(c);
            ++i;
            continue;
        }
        const std::size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        bool valid = len > 0 && i + len <= text.size();
        for (std::size_t k = 1; valid && k < len; ++k)
            valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
        if (valid) {
            out.append(text, i, len);
            i += len;
        } else {
            hex(c);
            ++i;
        }
    }
    return out;
}

}  // namespace

std::string Diagnostic::format() const
{
    std::string out = where.file.empty() ? std::string("<input>") : printable(where.file);
    if (where.line > 0) {
        out += ':' + std::to_string(where.line);
        if (where.column > 0)
            out += ':' + std::to_string(where.column);
    }
    out += ": error: ";
    out += printable(message);
    return out;
}

void Diagnostics::error(Location where, std::string message)
{
    if (m_items.size() >= kMaxErrors) {
        m_truncated = true;
        return;
    }
    m_items.push_back({std::move(where), std::move(message)});
}

void Diagnostics::append(const Diagnostics& other)
{
    for (const auto& d : other.m_items)
        error(d.where, d.message);
    m_truncated = m_truncated || other.m_truncated;
}

std::string Diagnostics::format() const
{
    std::string out;
    for (const auto& d : m_items) {
        out += d.format();
        out += '\n';
    }
    if (m_truncated)
        out += "(further errors omitted after " + std::to_string(kMaxErrors) + ")\n";
    return out;
}

static Diagnostics single(Location where, const std::string& message)
{
    Diagnostics d;
    d.error(std::move(where), message);
    return d;
}

InputError::InputError(Diagnostics diags)
    : std::runtime_error(diags.format()), m_diags(std::move(diags))
{
}

InputError::InputError(Location where, const std::string& message)
    : InputError(single(std::move(where), message))
{
}

static std::size_t editDistance(const std::string& a, const std::string& b)
{
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1]))
                == std::tolower(static_cast<unsigned char>(b[j - 1]));
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates)
{
    // A word that is the start of exactly one candidate ("redundant" -> "redundant_slots").
    if (word.size() >= 4) {
        std::string prefixed;
        int matches = 0;
        for (const auto& c : candidates)
            if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
                prefixed = c;
                ++matches;
            }
        if (matches == 1)
            return prefixed;
    }
    std::string best;
    std::size_t bestDist = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (const auto& c : candidates) {
        const std::size_t d = editDistance(word, c);
        if (d < bestDist) {
            bestDist = d;
            best = c;
        }
    }
    return best;
}

std::string printableLine(const std::string& text)
{
    return printable(text, false);
}

}  // namespace moex
