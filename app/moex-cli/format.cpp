#include "format.h"

#include <cmath>
#include <cstdio>

namespace moex::cli {

std::string fixed(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string humanCount(double n)
{
    const char* units[] = {"", "K", "M", "B", "T"};
    int u = 0;
    while (std::abs(n) >= 1000.0 && u < 4) {
        n /= 1000.0;
        ++u;
    }
    return fixed(n, u == 0 ? 0 : (n < 10 ? 2 : 1)) + units[u];
}

std::string humanBytes(double b)
{
    const char* units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (std::abs(b) >= 1000.0 && u < 4) {
        b /= 1000.0;
        ++u;
    }
    return fixed(b, u == 0 ? 0 : 2) + " " + units[u];
}

}  // namespace moex::cli
