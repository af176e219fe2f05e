// moex-cli bench engine's read ceiling (read_ceiling.h).
#include "read_ceiling.h"

#include "engine/row_kernels.h"
#include "run/run_loop.h"

#include <chrono>
#include <immintrin.h>
#include <thread>

// GCC 12's AVX-512 headers build reductions from _mm512_undefined_*, which -Wuninitialized reports
// at every inlined use; nothing here reads an undefined lane.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace moex::cli {

namespace {

using Clock = std::chrono::steady_clock;
using Sum = std::uint64_t (*)(const std::uint64_t*, std::size_t);

// One stream a thread, 128 bytes a step; Ahead: each cache line prefetched into L2 kAheadWords
// further, as the float32 decode kernels read (core/engine/row_kernels_simd.cpp). One stream at a
// time is far from what 256-bit loads can take, so the AVX-512 machines run this pattern too.
constexpr std::size_t kAheadWords = 2048 / sizeof(std::uint64_t);

template <bool Ahead>
__attribute__((target("avx2"))) std::uint64_t sumAvx2(const std::uint64_t* p, std::size_t n)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (std::size_t i = 0; i + 16 <= n; i += 16) {
        if constexpr (Ahead) {
            _mm_prefetch(reinterpret_cast<const char*>(p + i + kAheadWords), _MM_HINT_T1);
            _mm_prefetch(reinterpret_cast<const char*>(p + i + 8 + kAheadWords), _MM_HINT_T1);
        }
        a = _mm256_add_epi64(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
        b = _mm256_add_epi64(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
        c = _mm256_add_epi64(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
        d = _mm256_add_epi64(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
    }
    alignas(32) std::uint64_t out[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
    return out[0] + out[1] + out[2] + out[3];
}

// Eight streams at once, each an eighth of the range, as the kernels read their tiles' rows: one
// sequential stream per thread reads less than the memory gives on these VMs (the bf16 kernel,
// reading 8 rows at a time, streamed 1.3 times a one-stream "ceiling").
constexpr int kCeilingStreams = 8;

__attribute__((target("avx512f"))) std::uint64_t sumAvx512(const std::uint64_t* p, std::size_t n)
{
    const std::size_t per = n / kCeilingStreams / 8 * 8;
    __m512i acc[kCeilingStreams];
    for (auto& a : acc)
        a = _mm512_setzero_si512();
    for (std::size_t i = 0; i < per; i += 8) {
#pragma GCC unroll 8
        for (int k = 0; k < kCeilingStreams; ++k)
            acc[k] = _mm512_add_epi64(acc[k], _mm512_load_si512(p + static_cast<std::size_t>(k) * per + i));
    }
    alignas(64) std::uint64_t out[8];
    __m512i sum = acc[0];
    for (int k = 1; k < kCeilingStreams; ++k)
        sum = _mm512_add_epi64(sum, acc[k]);
    _mm512_store_si512(out, sum);
    std::uint64_t total = 0;
    for (auto v : out)
        total += v;
    return total;
}

std::uint64_t sumPortable(const std::uint64_t* p, std::size_t n)
{
    std::uint64_t a = 0, b = 0, c = 0, d = 0;
    for (std::size_t i = 0; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    return a + b + c + d;
}

}  // namespace

ReadCeiling::ReadCeiling(int threads) : m_threads(threads)
{
    m_data.resize((std::size_t{1} << 30) / sizeof(std::uint64_t));
    for (std::size_t i = 0; i < m_data.size(); ++i)
        m_data[i] = i;
}

double ReadCeiling::measure(int runs)
{
    using engine::Kernel;
    std::vector<Sum> patterns;
    if (engine::kernelSupported(Kernel::avx512))
        patterns = {sumAvx512, sumAvx2<true>};
    else if (engine::kernelSupported(Kernel::avx2))
        patterns = {sumAvx2<false>, sumAvx2<true>};
    else
        patterns = {sumPortable};
    // Every thread's part starts 64-byte aligned (the buffer is, in 2 MiB pages).
    const std::size_t per = m_data.size() / static_cast<std::size_t>(m_threads) / 32 * 32;
    std::vector<std::vector<double>> gbs(patterns.size());
    for (int k = 0; k < runs; ++k)
        for (std::size_t q = 0; q < patterns.size(); ++q) {  // the patterns alternate, run by run
            std::vector<std::thread> pool;
            std::vector<std::uint64_t> part(static_cast<std::size_t>(m_threads));
            const auto t0 = Clock::now();
            for (int t = 0; t < m_threads; ++t)
                pool.emplace_back([&, t] {
                    part[static_cast<std::size_t>(t)] = patterns[q](m_data.data() + static_cast<std::size_t>(t) * per, per);
                });
            for (auto& th : pool)
                th.join();
            const double s = std::chrono::duration<double>(Clock::now() - t0).count();
            for (auto v : part)
                sink += v;
            gbs[q].push_back(static_cast<double>(per * static_cast<std::size_t>(m_threads) * sizeof(std::uint64_t)) / s / 1e9);
        }
    double best = 0;
    for (auto& g : gbs)
        best = std::max(best, median(g));
    return best;
}

}  // namespace moex::cli
