// Counts the process's heap allocations between start and stop, so that a test can assert that a
// warmed-up hot path (a routing source's next(), the simulator's step) allocates nothing. Linked
// only into the tests that use it: alloc_hook.cpp replaces global operator new for that binary.
#pragma once

namespace moex::test {

void startCountingAllocations();
long stopCountingAllocations();  // allocations since start

}  // namespace moex::test
