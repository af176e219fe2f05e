// A count with its noun in the right number ("1 GPU", "8 GPUs", "1 NVLink domain"), for messages
// and summaries that used to print "(s)".
#pragma once

#include <string>
#include <string_view>

namespace moex {

// `plural` defaults to singular + "s".
inline std::string countOf(long long n, std::string_view singular, std::string_view plural = {})
{
    std::string out = std::to_string(n);
    out += ' ';
    if (n == 1)
        out += singular;
    else if (plural.empty())
        (out += singular) += 's';
    else
        out += plural;
    return out;
}

}  // namespace moex
