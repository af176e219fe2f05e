#include "common/huge_pages.h"

#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace moex {

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kHuge = std::size_t{2} << 20;

std::size_t roundUp(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

#if defined(__linux__)

void* allocateHugePageAware(std::size_t bytes)
{
    if (bytes < kHugePageMinBytes)
        return ::operator new(bytes);
    // Map 2 MiB more than needed, keep the 2 MiB-aligned part: huge pages need aligned extents.
    const std::size_t len = roundUp(bytes, kPage);
    void* map = mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        throw std::bad_alloc();
    const auto base = reinterpret_cast<std::uintptr_t>(map);
    const std::uintptr_t aligned = roundUp(base, kHuge);
    if (aligned > base)
        munmap(map, aligned - base);
    const std::uintptr_t tail = aligned + len;
    const std::uintptr_t end = base + len + kHuge;
    if (end > tail)
        munmap(reinterpret_cast<void*>(tail), end - tail);
    void* p = reinterpret_cast<void*>(aligned);
    madvise(p, len, MADV_HUGEPAGE);  // advice only: without it the block is ordinary memory
    return p;
}

void deallocateHugePageAware(void* p, std::size_t bytes) noexcept
{
    if (!p)
        return;
    if (bytes < kHugePageMinBytes) {
        ::operator delete(p, bytes);
        return;
    }
    munmap(p, roundUp(bytes, kPage));
}

#else

void* allocateHugePageAware(std::size_t bytes) { return ::operator new(bytes); }
void deallocateHugePageAware(void* p, std::size_t bytes) noexcept { ::operator delete(p, bytes); }

#endif

}  // namespace moex
