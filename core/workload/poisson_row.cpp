// The counts sampler's Poisson draws of a routing group's experts (detail::poissonRow): one by one
// from RandomTables, or 16 at a time in AVX-512 with the same counts.
#include "workload/synthetic_routing.h"

#include "workload/random_tables.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moex {

namespace {

#if defined(__x86_64__)
// GCC 12's AVX-512 headers build their reductions and conversions from _mm512_undefined_*, which
// -Wuninitialized reports at every inlined use; nothing here reads an undefined lane.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// RandomTables::poisson of 16 cells at once, each lane the scalar draw's count: the mean in fixed
// point, its grid bin and the guide-table start gathered, the CDF walk for the few lanes whose
// uniform lies past the guide's start. Lanes outside `lanes`, or with skip >= 0, or a mean <= 0
// give 0; lanes with a mean >= kPoissonTableMean take the scalar draw's normal approximation, in the
// same operations and order.
__attribute__((target("avx512f,avx512bw,avx512vl"))) int poisson16(const detail::RandomTables& t, const double* mu,
                                                                    double scale, const std::uint32_t* bits,
                                                                    const double* skip, __mmask16 lanes, int cap,
                                                                    std::uint16_t* out)
{
    using T = detail::RandomTables;
    const auto lo = static_cast<__mmask8>(lanes);
    const auto hi = static_cast<__mmask8>(lanes >> 8);
    const __m512d zero = _mm512_setzero_pd();
    const __m512d s = _mm512_set1_pd(scale);
    const __m512d m0 = _mm512_mul_pd(s, _mm512_maskz_loadu_pd(lo, mu));
    const __m512d m1 = _mm512_mul_pd(s, _mm512_maskz_loadu_pd(hi, mu + 8));
    // Light lanes: skip < 0 (a lane outside `lanes` reads 0 and so is not light).
    const auto light = static_cast<__mmask16>(
        _mm512_mask_cmp_pd_mask(lo, _mm512_maskz_loadu_pd(lo, skip), zero, _CMP_LT_OQ) |
        (_mm512_mask_cmp_pd_mask(hi, _mm512_maskz_loadu_pd(hi, skip + 8), zero, _CMP_LT_OQ) << 8));
    const auto positive = static_cast<__mmask16>(_mm512_cmp_pd_mask(m0, zero, _CMP_GT_OQ) |
                                                 (_mm512_cmp_pd_mask(m1, zero, _CMP_GT_OQ) << 8)) & light;
    const __m512d top = _mm512_set1_pd(T::kPoissonTableMean);
    const auto small = static_cast<__mmask16>(_mm512_cmp_pd_mask(m0, top, _CMP_LT_OQ) |
                                              (_mm512_cmp_pd_mask(m1, top, _CMP_LT_OQ) << 8));
    const __mmask16 table = positive & small;
    const __mmask16 large = positive & static_cast<__mmask16>(~small);
    // The mean in 24.8 fixed point of grid steps, rounded up when the low 8 random bits fall
    // below its fraction; the top 24 bits (| 0xff) the uniform.
    const __m512d grid = _mm512_set1_pd(T::kPoissonGrid * 256.0);
    const __m256i p0 = _mm512_maskz_cvttpd_epu32(static_cast<__mmask8>(table), _mm512_mul_pd(m0, grid));
    const __m256i p1 = _mm512_maskz_cvttpd_epu32(static_cast<__mmask8>(table >> 8), _mm512_mul_pd(m1, grid));
    const __m512i pos = _mm512_inserti64x4(_mm512_castsi256_si512(p0), p1, 1);
    const __m512i r = _mm512_maskz_loadu_epi32(lanes, bits);
    const __m512i low = _mm512_set1_epi32(0xff);
    const __m512i one = _mm512_set1_epi32(1);
    const __mmask16 up = _mm512_cmplt_epu32_mask(_mm512_and_si512(r, low), _mm512_and_si512(pos, low));
    const __m512i bin = _mm512_mask_add_epi32(_mm512_srli_epi32(pos, 8), up, _mm512_srli_epi32(pos, 8), one);
    const __m512i u = _mm512_or_si512(r, low);
    // The guide's byte at [bin][u >> 24], read as 4 bytes, its low byte kept (bin <= 256 of the
    // table's 258 rows, so the read stays inside it).
    const __m512i guideAt = _mm512_add_epi32(_mm512_slli_epi32(bin, 8), _mm512_srli_epi32(u, 24));
    __m512i k = _mm512_and_si512(
        _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), table, guideAt, &t.guide[0][0], 1), low);
    const __m512i cdfRow = _mm512_mullo_epi32(bin, _mm512_set1_epi32(T::kPoissonTail));
    __m512i c = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), table, _mm512_add_epi32(cdfRow, k), &t.cdf[0][0], 4);
    __mmask16 walk = table & _mm512_cmpge_epu32_mask(u, c);
    const __m512i last = _mm512_set1_epi32(T::kPoissonTail - 1);
    while (walk != 0) {  // about one block in four
        k = _mm512_mask_add_epi32(k, walk, k, one);
        walk &= _mm512_cmpneq_epi32_mask(k, last);
        c = _mm512_mask_i32gather_epi32(c, walk, _mm512_add_epi32(cdfRow, k), &t.cdf[0][0], 4);
        walk &= _mm512_cmpge_epu32_mask(u, c);
    }
    k = _mm512_maskz_min_epi32(table, k, _mm512_set1_epi32(cap));
    if (large != 0) {
        // From the table's end on (prefill's means), the scalar draw's Cornish-Fisher rounding, 8
        // lanes at a time: mean + sqrt(mean) z + (z^2 - 1) / 6 + 0.5, truncated, clamped.
        const __m512i cell = _mm512_srli_epi32(r, 20);
        __m256i part[2];
        for (int h = 0; h < 2; ++h) {
            const auto these = static_cast<__mmask8>(large >> (8 * h));
            part[h] = _mm256_setzero_si256();
            if (these == 0)
                continue;
            const __m512d m = h == 0 ? m0 : m1;
            const __m256i at = h == 0 ? _mm512_castsi512_si256(cell) : _mm512_extracti64x4_epi64(cell, 1);
            const __m512d z = _mm512_mask_i32gather_pd(zero, these, at, t.quantile, 8);
            const __m512d skew = _mm512_div_pd(_mm512_sub_pd(_mm512_mul_pd(z, z), _mm512_set1_pd(1.0)), _mm512_set1_pd(6.0));
            const __m512d x = _mm512_add_pd(
                _mm512_add_pd(_mm512_add_pd(m, _mm512_mul_pd(_mm512_sqrt_pd(m), z)), skew), _mm512_set1_pd(0.5));
            const __mmask8 above = _mm512_mask_cmp_pd_mask(these, x, zero, _CMP_GT_OQ);
            const __mmask8 huge = _mm512_mask_cmp_pd_mask(above, x, _mm512_set1_pd(2147483647.0), _CMP_GE_OQ);
            __m256i whole = _mm512_maskz_cvttpd_epi32(above, x);
            whole = _mm256_mask_mov_epi32(whole, huge, _mm256_set1_epi32(2147483647));
            part[h] = _mm256_min_epi32(whole, _mm256_set1_epi32(cap));
        }
        const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(part[0]), part[1], 1);
        k = _mm512_mask_mov_epi32(k, large, both);
    }
    _mm256_mask_storeu_epi16(out, lanes, _mm512_cvtepi32_epi16(k));
    return _mm512_reduce_add_epi32(k);
}

int poissonRowAvx512(const double* mu, double scale, const std::uint32_t* bits, const double* skip, int n, int cap,
                     std::uint16_t* out)
{
    const detail::RandomTables& t = detail::RandomTables::get();
    int sum = 0;
    for (int x0 = 0; x0 < n; x0 += 16) {
        const int count = std::min(16, n - x0);
        const auto lanes = static_cast<__mmask16>(count == 16 ? 0xffffu : (1u << count) - 1u);
        sum += poisson16(t, mu + x0, scale, bits + x0, skip + x0, lanes, cap, out + x0);
    }
    return sum;
}
#pragma GCC diagnostic pop
bool poissonHasAvx512()
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
#else
int poissonRowAvx512(const double*, double, const std::uint32_t*, const double*, int, int, std::uint16_t*) { return 0; }
bool poissonHasAvx512() { return false; }
#endif

}  // namespace

namespace detail {

int poissonRow(const double* mu, double scale, const std::uint32_t* bits, const double* skip, int n, int cap,
               std::uint16_t* out, bool vector)
{
    if (vector)
        return poissonRowAvx512(mu, scale, bits, skip, n, cap, out);
    const RandomTables& t = RandomTables::get();
    int sum = 0;
    for (int x = 0; x < n; ++x) {
        const int k = skip[x] < 0.0 ? std::min(t.poisson(scale * mu[x], bits[x]), cap) : 0;
        out[x] = static_cast<std::uint16_t>(k);
        sum += k;
    }
    return sum;
}

bool poissonRowHasAvx512() { return poissonHasAvx512(); }

}  // namespace detail

}  // namespace moex
