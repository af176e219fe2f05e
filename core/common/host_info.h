// What this machine is, from /proc (Linux): the CPU's model name and memory figures. The engine,
// its calibration, the host-cpu topology and the benchmarks name the machine they measured.
#pragma once

#include <cstddef>
#include <string>

namespace moex {

// The first "model name" of /proc/cpuinfo; "unknown CPU" where there is none.
std::string cpuModelName();
// A /proc/meminfo field in bytes ("MemTotal", "MemAvailable"); 0 when unknown.
std::size_t meminfoBytes(const std::string& field);

}  // namespace moex
