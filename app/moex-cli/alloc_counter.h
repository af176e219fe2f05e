// Counts heap allocations of the whole process (moex-cli replaces global operator new), so
// benchmarks can report allocations per step.
#pragma once

namespace moex::cli {

long long allocationCount();

}  // namespace moex::cli
