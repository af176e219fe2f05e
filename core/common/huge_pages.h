// HugePageAllocator: for large arrays that a hot loop streams through every step (the routing
// counts). Blocks of 1 MiB and more are mapped on their own, aligned to 2 MiB and advised
// MADV_HUGEPAGE, so that a pass over them needs a handful of TLB entries instead of one per 4 KiB
// page: when the routing source runs between steps, the page walks themselves miss every cache
// (bench sim, docs/PERFORMANCE.md). Smaller blocks, and systems other than Linux, use operator new.
// Where the kernel gives no huge pages (transparent_hugepage "never"), the advice is ignored and
// the block is an ordinary mapping.
#pragma once

#include <cstddef>

namespace moex {

inline constexpr std::size_t kHugePageMinBytes = std::size_t{1} << 20;

void* allocateHugePageAware(std::size_t bytes);             // throws std::bad_alloc
void deallocateHugePageAware(void* p, std::size_t bytes) noexcept;  // the same `bytes` as allocated

template <typename T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
    [[nodiscard]] T* allocate(std::size_t n) { return static_cast<T*>(allocateHugePageAware(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { deallocateHugePageAware(p, n * sizeof(T)); }
    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

}  // namespace moex
