// Located diagnostics: every input problem is reported as FILE:LINE:COL: error: MESSAGE.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace moex {

struct Location {
    std::string file;
    int line = 0;    // 1-based; 0 = unknown
    int column = 0;  // 1-based; 0 = unknown
};

struct Diagnostic {
    Location where;
    std::string message;

    [[nodiscard]] std::string format() const;  // "file:line:col: error: message"
};

// Collects all problems of one input instead of stopping at the first.
class Diagnostics {
public:
    void error(Location where, std::string message);
    void append(const Diagnostics& other);

    [[nodiscard]] bool empty() const { return m_items.empty(); }
    [[nodiscard]] std::size_t size() const { return m_items.size(); }
    [[nodiscard]] const std::vector<Diagnostic>& items() const { return m_items; }
    [[nodiscard]] std::string format() const;  // one line per diagnostic

    // Guards against pathological inputs: past this many errors the rest are dropped.
    static constexpr std::size_t kMaxErrors = 200;

private:
    std::vector<Diagnostic> m_items;
    bool m_truncated = false;
};

// Thrown at core's API when an input is invalid; carries every diagnostic found.
class InputError : public std::runtime_error {
public:
    explicit InputError(Diagnostics diags);
    InputError(Location where, const std::string& message);

    [[nodiscard]] const Diagnostics& diagnostics() const { return m_diags; }

private:
    Diagnostics m_diags;
};

// Edit distance based suggestion: the closest candidate within a small distance, or "".
std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates);

// `text` on one line of a file or terminal: control characters (line breaks and tabs too),
// NUL and invalid UTF-8 as \xNN; valid UTF-8 as it is. For names and paths put into comments.
std::string printableLine(const std::string& text);

}  // namespace moex
