// Helpers shared by the JSON trace and counts readers (workload/token_trace_reader.cpp,
// workload/layer_counts_reader.cpp). Internal to core/workload.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moex::trace_detail {

using nlohmann::json;

inline constexpr int kMaxLayerId = 1 << 20;
inline constexpr int kMaxExpertId = 1 << 20;
inline constexpr std::size_t kMaxTopK = 4096;

// An integer JSON value in [0, max] (unsigned values above INT64_MAX included).
inline bool inRange(const json& v, std::int64_t max)
{
    if (v.is_number_unsigned())
        return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max);
    const auto x = v.get<std::int64_t>();
    return x >= 0 && x <= max;
}

// 1-based column of `needle` in `line`, or 1.
inline int columnOf(std::string_view line, std::string_view needle)
{
    const auto pos = line.find(needle);
    return pos == std::string_view::npos ? 1 : static_cast<int>(pos) + 1;
}

inline std::string sizeMessage(std::size_t size, std::size_t limit)
{
    return "file is " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(limit);
}

}  // namespace moex::trace_detail
