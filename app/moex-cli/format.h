// Small text formatting helpers for the readable tables moex-cli prints.
#pragma once

#include "common/plural.h"

#include <cstdint>
#include <string>

namespace moex::cli {

std::string humanCount(double n);  // 671.0B, 37.5B, 44.0M
std::string humanBytes(double b);  // 84.1 MB, 1.35 GB
std::string fixed(double v, int decimals);

}  // namespace moex::cli
