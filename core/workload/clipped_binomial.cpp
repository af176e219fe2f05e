// The clipped moments of many heavy experts at once (detail::clippedBinomialMany): one by one with
// detail::clippedBinomial, or 8 at a time in AVX-512 with the same bits. capScale evaluates them
// for every heavy expert at every Newton step; at prefill's 128-token sub-batches each is a
// 128-term loop with a division, and they were 41% of a step (docs/PERFORMANCE.md).
#include "workload/synthetic_routing.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moex {

namespace detail {

namespace {

#if defined(__x86_64__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// clippedBinomial of up to 8 experts, lane by lane in the scalar code's operations and order (no
// fused multiply-add: core/workload builds with -ffp-contract=off). The set-up of each lane (its
// P(X = 0), the odds, the special cases p <= 0 and p >= 1) is the scalar code's; the loop runs to
// the longest lane's end with the finished lanes masked.
__attribute__((target("avx512f"))) void clipped8(const int* n, const double* p, const int* t, int count, double* m1,
                                                 double* m2, double* below)
{
    alignas(64) double start[8] = {};
    alignas(64) double odds[8] = {};
    alignas(64) double pairs[8] = {};
    alignas(64) double length[8] = {};  // terms of the lane's loop: min(t, n + 1), as a double
    __mmask8 looped = 0;
    int longest = 0;
    for (int i = 0; i < count; ++i) {
        m1[i] = 0.0;
        m2[i] = 0.0;
        below[i] = 0.0;
        if (!(p[i] > 0.0))
            continue;
        if (p[i] >= 1.0) {
            m1[i] = std::min(n[i], t[i]);
            m2[i] = m1[i] * m1[i];
            continue;
        }
        start[i] = n[i] <= 1024 ? powerBySquaring(1.0 - p[i], n[i]) : std::exp(n[i] * std::log1p(-p[i]));
        odds[i] = p[i] / (1.0 - p[i]);
        pairs[i] = n[i];
        const int terms = std::max(0, std::min(t[i], n[i] + 1));
        length[i] = terms;
        longest = std::max(longest, terms);
        looped = static_cast<__mmask8>(looped | (1u << i));
    }
    if (looped == 0)
        return;
    const __m512d zero = _mm512_setzero_pd();
    const __m512d one = _mm512_set1_pd(1.0);
    const __m512d nv = _mm512_load_pd(pairs);
    const __m512d ov = _mm512_load_pd(odds);
    const __m512d lv = _mm512_load_pd(length);
    __m512d pk = _mm512_load_pd(start);
    __m512d cdf = zero;
    __m512d s1 = zero;
    __m512d s2 = zero;
    for (int k = 0; k < longest; ++k) {
        const __m512d kv = _mm512_set1_pd(k);
        const __mmask8 on = _mm512_mask_cmp_pd_mask(looped, kv, lv, _CMP_LT_OQ);
        cdf = _mm512_mask_add_pd(cdf, on, cdf, pk);
        // pk *= double(n - k) / (k + 1) * odds
        const __m512d ratio = _mm512_div_pd(_mm512_sub_pd(nv, kv), _mm512_set1_pd(k + 1));
        pk = _mm512_mask_mul_pd(pk, on, pk, _mm512_mul_pd(ratio, ov));
        // std::max(0.0, 1 - cdf): VMAXPD returns its second operand unless the first is larger
        const __m512d survive = _mm512_max_pd(_mm512_sub_pd(one, cdf), zero);
        s1 = _mm512_mask_add_pd(s1, on, s1, survive);
        s2 = _mm512_mask_add_pd(s2, on, s2, _mm512_mul_pd(_mm512_set1_pd(2.0 * k + 1.0), survive));
    }
    alignas(64) double r1[8], r2[8], rb[8];
    _mm512_store_pd(r1, s1);
    _mm512_store_pd(r2, s2);
    _mm512_store_pd(rb, _mm512_min_pd(cdf, one));  // std::min(1.0, cdf): VMINPD's order, cdf first
    for (int i = 0; i < count; ++i)
        if (looped & (1u << i)) {
            m1[i] = r1[i];
            m2[i] = r2[i];
            below[i] = rb[i];
        }
}
#pragma GCC diagnostic pop

bool clippedHasAvx512() { return __builtin_cpu_supports("avx512f") != 0; }
#else
void clipped8(const int*, const double*, const int*, int, double*, double*, double*) {}
bool clippedHasAvx512() { return false; }
#endif

}  // namespace

void clippedBinomialMany(const int* n, const double* p, const int* t, int count, double* m1, double* m2, double* below,
                         bool vector)
{
    if (vector && clippedHasAvx512()) {
        for (int i = 0; i < count; i += 8)
            clipped8(n + i, p + i, t + i, std::min(8, count - i), m1 + i, m2 + i, below + i);
        return;
    }
    for (int i = 0; i < count; ++i)
        clippedBinomial(n[i], p[i], t[i], m1[i], m2[i], below[i]);
}

bool clippedBinomialHasAvx512() { return clippedHasAvx512(); }

}  // namespace detail

}  // namespace moex
