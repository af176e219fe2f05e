#include "common/number_text.h"

#include <charconv>

namespace moex {

std::string shortestNumber(double v)
{
    // std::to_chars without a precision: the shortest text that reads back exactly, fixed or
    // scientific, whichever is shorter.
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    std::string text(buf, res.ptr);
    const auto e = text.find('e');
    if (e != std::string::npos && text.find('.') == std::string::npos)
        text.insert(e, ".0");
    return text;
}

}  // namespace moex
