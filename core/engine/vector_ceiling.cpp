#include "engine/vector_ceiling.h"

#include "engine/row_kernels.h"

#include <algorithm>
#include <chrono>
#include <immintrin.h>
#include <vector>

// GCC 12's AVX-512 headers build their reductions from _mm512_undefined_*, which -Wuninitialized
// reports at every inlined use (as in row_kernels_simd.cpp); nothing here reads an undefined lane.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace moex::engine {

// Independent FMA chains: the most the vector units do with no memory traffic at all. The inner
// loops must unroll so that the chains live in registers: at -O2 GCC keeps them in memory and
// measured half the real rate (hence the pragmas).
__attribute__((target("avx512f"))) double fmaLoop512(long iters)
{
    __m512 acc[16];
    for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_set1_ps(static_cast<float>(i));
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
    for (long k = 0; k < iters; ++k) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i)
            acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    __m512 s = acc[0];
    for (int i = 1; i < 16; ++i)
        s = _mm512_add_ps(s, acc[i]);
    return static_cast<double>(_mm512_reduce_add_ps(s));
}

__attribute__((target("avx2,fma"))) double fmaLoop256(long iters)
{
    __m256 acc[12];
    for (int i = 0; i < 12; ++i)
        acc[i] = _mm256_set1_ps(static_cast<float>(i));
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
    for (long k = 0; k < iters; ++k) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i)
            acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    __m256 s = acc[0];
    for (int i = 1; i < 12; ++i)
        s = _mm256_add_ps(s, acc[i]);
    alignas(32) float out[8];
    _mm256_store_ps(out, s);
    return static_cast<double>(out[0] + out[7]);
}

// The same for VDPBF16PS (32 products and 32 adds an instruction): what the avx512-bf16 kernel's
// bf16, fp8 and MXFP4 rows can reach at most.
__attribute__((target("avx512f,avx512bf16"))) double dpbf16Loop512(long iters)
{
    __m512 acc[16];
    for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_set1_ps(static_cast<float>(i));
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(0.998f));
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.001f), _mm512_set1_ps(0.002f));
    for (long k = 0; k < iters; ++k) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i)
            acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
    __m512 s = acc[0];
    for (int i = 1; i < 16; ++i)
        s = _mm512_add_ps(s, acc[i]);
    alignas(64) float out[16];
    _mm512_store_ps(out, s);
    return static_cast<double>(out[0] + out[15]);
}

double bf16DotSpeedup()
{
    static const double speedup = [] {
        if (!kernelSupported(Kernel::avx512bf16))
            return 0.0;
        using Clock = std::chrono::steady_clock;
        const long iters = 100'000;  // 1.6 M instructions a loop: a few milliseconds
        auto rate = [&](bool dp) {
            // Called through a volatile pointer: GCC finds the loops pure and would otherwise move
            // the call past the clock reads (the FMA loop then timed at 10^15 FLOP/s).
            double (*volatile loop)(long) = dp ? dpbf16Loop512 : fmaLoop512;
            const auto t0 = Clock::now();
            volatile double keep = loop(iters);
            (void)keep;
            const double s = std::chrono::duration<double>(Clock::now() - t0).count();
            return static_cast<double>(iters) * 16 * (dp ? 64 : 32) / s;
        };
        (void)rate(false);  // wakes the 512-bit units (their first use runs slow on some CPUs)
        std::vector<double> ratios;
        for (int k = 0; k < 3; ++k) {
            const double fma = rate(false);
            ratios.push_back(rate(true) / fma);
        }
        std::sort(ratios.begin(), ratios.end());
        return ratios[1];
    }();
    return speedup;
}

}  // namespace moex::engine
