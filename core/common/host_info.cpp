#include "common/host_info.h"

#include <fstream>

namespace moex {

std::string cpuModelName()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            const auto begin = colon == std::string::npos ? colon : line.find_first_not_of(' ', colon + 1);
            if (begin != std::string::npos)
                return line.substr(begin);
        }
    return "unknown CPU";
}

std::size_t meminfoBytes(const std::string& field)
{
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    std::size_t kb = 0;
    while (in >> key >> kb >> unit)
        if (key == field + ":")
            return kb * 1024;
    return 0;
}

}  // namespace moex
