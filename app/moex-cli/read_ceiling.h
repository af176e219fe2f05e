// The read ceiling of `moex-cli bench engine`: how many GB/s `threads` threads can read from
// memory right now, against which the decode rows' weight bandwidth is judged. These VMs' memory
// bandwidth moves within seconds and the read pattern that does best moves with it, so a
// measurement times several patterns over the same 1 GiB (in 2 MiB pages, as the engine's
// weights) and keeps the best:
//   streams  eight concurrent sequential streams a thread, wide integer adds (how the kernels'
//            tiles read several rows at once)
//   ahead    one sequential stream a thread, each cache line prefetched into L2 2 KiB ahead (how
//            the float32 decode kernels read; on some days 10% above eight streams)
// AVX-512 takes both; AVX2 one stream with and one without the prefetch; otherwise a portable sum.
#pragma once

#include "common/huge_pages.h"

#include <cstdint>
#include <vector>

namespace moex::cli {

class ReadCeiling {
public:
    explicit ReadCeiling(int threads);
    // GB/s: for each pattern the median of `runs` passes over the buffer, the best pattern's.
    double measure(int runs);
    // A value that depends on every word read (keep it, so the sums are not removed).
    std::uint64_t sink = 0;

private:
    std::vector<std::uint64_t, HugePageAllocator<std::uint64_t>> m_data;
    int m_threads = 2;
};

}  // namespace moex::cli
