// Small text formatting helpers for the readable tables moex-cli prints.
#pragma once

#include <cstdint>
#include <string>

namespace moex::cli {

std::string humanCount(double n);  // 671.0B, 37.5B, 44.0M
std::string humanBytes(double b);  // 84.1 MB, 1.35 GB
std::string fixed(double v, int decimals);
// "1 GPU", "8 GPUs"; `plural` defaults to singular + "s".
std::string countOf(long long n, const std::string& singular, const std::string& plural = {});

}  // namespace moex::cli
