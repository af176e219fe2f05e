// The random primitives of the synthetic generator: splitmix64 seeding, xoshiro256** (Rng), binomial
// draws and Walker/Vose alias tables.
#include "workload/synthetic_routing.h"
#include "workload/random_tables.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moex {

namespace detail {

namespace {
constexpr double kTwo32 = 4294967296.0;
}  // namespace

std::uint64_t splitmix64(std::uint64_t& x)
{
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

namespace {

constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

#if defined(__x86_64__)
// GCC 12's AVX-512 headers build their shifts from _mm512_undefined_*, which -Wmaybe-uninitialized
// reports at every inlined use; nothing here reads an undefined lane.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// counterWords eight at a time: splitmix64's output function on eight states in one register.
__attribute__((target("avx512f,avx512dq"))) void counterWordsAvx512(std::uint64_t seed, std::uint64_t first, int n,
                                                                    std::uint64_t* out)
{
    const __m512i step = _mm512_set1_epi64(static_cast<long long>(8 * kGamma));
    const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(0xbf58476d1ce4e5b9ULL));
    const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(0x94d049bb133111ebULL));
    __m512i x = _mm512_set1_epi64(static_cast<long long>(seed + first * kGamma));
    x = _mm512_add_epi64(x, _mm512_mullo_epi64(_mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1), _mm512_set1_epi64(static_cast<long long>(kGamma))));
    int i = 0;
    for (; i + 8 <= n; i += 8, x = _mm512_add_epi64(x, step)) {
        __m512i z = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)), m1);
        z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
        _mm512_storeu_si512(out + i, _mm512_xor_si512(z, _mm512_srli_epi64(z, 31)));
    }
    std::uint64_t state = seed + (first + static_cast<std::uint64_t>(i)) * kGamma;
    for (; i < n; ++i)
        out[i] = splitmix64(state);
}
#pragma GCC diagnostic pop
bool wordsHaveAvx512() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"); }
#else
void counterWordsAvx512(std::uint64_t, std::uint64_t, int, std::uint64_t*) {}
bool wordsHaveAvx512() { return false; }
#endif

}  // namespace

void counterWords(std::uint64_t seed, std::uint64_t first, int n, std::uint64_t* out, bool vector)
{
    if (vector) {
        counterWordsAvx512(seed, first, n, out);
        return;
    }
    std::uint64_t state = seed + first * kGamma;
    for (int i = 0; i < n; ++i)
        out[i] = splitmix64(state);
}

bool counterWordsHasAvx512() { return wordsHaveAvx512(); }

Rng::Rng(std::uint64_t seed)
{
    for (auto& s : m_s)
        s = splitmix64(seed);
}

int binomial(Rng& rng, int n, double p)
{
    if (n <= 0 || !(p > 0.0))
        return 0;
    if (p >= 1.0)
        return n;
    if (p > 0.5)
        return n - binomial(rng, n, 1.0 - p);
    const double mean = n * p;
    const double q = 1.0 - p;
    if (mean < 16.0) {
        // BINV (Kachitvichyanukul & Schmeiser 1988): walk the pmf up from 0; about mean + 1 steps.
        const double s = p / q;
        const double a = (n + 1) * s;
        // P(0) = q^n by repeated squaring (exact to a few ulp; an exp/log1p pair costs more and
        // this runs for every heavy expert and mixture component of every sub-batch).
        double r = 1.0;
        double base = q;
        for (int e = n; e > 0; e >>= 1) {
            if (e & 1)
                r *= base;
            base *= base;
        }
        double u = rng.uniform();
        int x = 0;
        while (u > r) {
            u -= r;
            if (++x >= n)
                return n;  // only reachable through rounding in the far tail
            r *= a / x - s;
        }
        return x;
    }
    // Mean >= 16 (and p <= 1/2): the normal approximation with continuity correction is within a
    // few percent in the body, which is all a synthetic generator needs.
    const double x = std::floor(mean + std::sqrt(mean * q) * rng.normal() + 0.5);
    return static_cast<int>(std::clamp(x, 0.0, static_cast<double>(n)));
}

double Rng::normal()
{
    if (m_hasSpare) {
        m_hasSpare = false;
        return m_spare;
    }
    // Box-Muller; 1 - uniform() is in (0, 1], so the log is finite.
    const double r = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    m_spare = r * std::sin(angle);
    m_hasSpare = true;
    return r * std::cos(angle);
}

namespace {

// Acklam's rational approximation of the standard normal quantile (relative error < 1.2e-9).
double normalQuantileExact(double p)
{
    constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                            1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                            6.680131188771972e+01,  -1.328068155288572e+01};
    constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                            -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                            3.754408661907416e+00};
    constexpr double low = 0.02425;
    const auto tail = [&](double q) {
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
    };
    if (p < low)
        return tail(std::sqrt(-2.0 * std::log(p)));
    if (p > 1.0 - low)
        return -tail(std::sqrt(-2.0 * std::log(1.0 - p)));
    const double q = p - 0.5;
    const double r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

constexpr int kQuantileCells = RandomTables::kQuantileCells;
constexpr int kPoissonGrid = RandomTables::kPoissonGrid;
constexpr int kPoissonBins = RandomTables::kPoissonBins;
constexpr int kPoissonTail = RandomTables::kPoissonTail;
constexpr int kPoissonGuide = RandomTables::kPoissonGuide;

}  // namespace

RandomTables::RandomTables()
{
    for (int i = 0; i < kQuantileCells; ++i)
        quantile[i] = normalQuantileExact((i + 0.5) / kQuantileCells);
    for (int i = 0; i < kExponentialCells; ++i)
        exponential[i] = static_cast<float>(-std::log1p(-(i + 0.5) / kExponentialCells));
    // clipFree[t]: the largest mean that clipping at t shrinks by at most 2%, by bisection.
    for (int t = 0; t < kPoissonTail - 1; ++t) {
        // The share of the mean that clipping at t removes: 1 - E[min(X, t)] / mean, increasing.
        const auto lost = [this, t](double mean) {
            double m1 = 0.0, m2 = 0.0, below = 0.0;
            clippedPoisson(mean, t, m1, m2, below);
            return 1.0 - m1 / mean;
        };
        double lo = 1e-9;
        double hi = 2.0 * t + 10.0;
        for (int i = 0; i < 60; ++i) {
            const double mid = 0.5 * (lo + hi);
            (lost(mid) <= 0.02 ? lo : hi) = mid;
        }
        clipFree[t] = lo;
    }
    for (int bin = 0; bin < kPoissonBins; ++bin) {
        const double mean = static_cast<double>(bin) / kPoissonGrid;
        double p = std::exp(-mean);
        double cum = 0.0;
        for (int k = 0; k < kPoissonTail; ++k) {
            cum += p;
            p *= mean / (k + 1);
            cdf[bin][k] = static_cast<std::uint32_t>(std::min(cum * kTwo32, 4294967295.0));
        }
        cdf[bin][kPoissonTail - 1] = 0xffffffffu;  // the far tail folds into the last value
        // guide[l]: X at the lowest u of level l (u = l * 2^24), where the search starts.
        int k = 0;
        for (int level = 0; level < kPoissonGuide; ++level) {
            const auto u = static_cast<std::uint32_t>(static_cast<std::uint64_t>(level) << 24);
            while (k < kPoissonTail - 1 && u >= cdf[bin][k])
                ++k;
            guide[bin][level] = static_cast<std::uint8_t>(k);
        }
    }
}

void RandomTables::clippedPoisson(double mean, int t, double& m1, double& m2, double& below) const
{
    // E[min(X, t)] = sum_{k < t} P(X > k), E[min(X, t)^2] = sum_{k < t} (2k + 1) P(X > k).
    m1 = 0.0;
    m2 = 0.0;
    double p = std::exp(-mean);  // P(X = k)
    double total = 0.0;  // P(X <= k)
    for (int k = 0; k < t; ++k) {
        total += p;
        p *= mean / (k + 1);
        const double survive = std::max(0.0, 1.0 - total);
        m1 += survive;
        m2 += (2.0 * k + 1.0) * survive;
    }
    below = std::min(1.0, total);
}

void clippedBinomial(int n, double p, int t, double& m1, double& m2, double& below)
{
    // As clippedPoisson, for X ~ Binomial(n, p).
    m1 = 0.0;
    m2 = 0.0;
    below = 0.0;
    if (!(p > 0.0))
        return;
    if (p >= 1.0) {
        m1 = std::min(n, t);
        m2 = m1 * m1;
        return;
    }
    // P(X = 0) = (1 - p)^n: by repeated squaring for the sub-batches' few pairs (no exp or log).
    double pk = n <= 1024 ? powerBySquaring(1.0 - p, n) : std::exp(n * std::log1p(-p));
    const double odds = p / (1.0 - p);
    double cdf = 0.0;
    for (int k = 0; k < t && k <= n; ++k) {
        cdf += pk;
        pk *= static_cast<double>(n - k) / (k + 1) * odds;
        const double survive = std::max(0.0, 1.0 - cdf);
        m1 += survive;
        m2 += (2.0 * k + 1.0) * survive;
    }
    below = std::min(1.0, cdf);
}

const RandomTables& RandomTables::get()
{
    static const auto* t = new RandomTables();  // ~370 KB, built on first use (~1 ms), never freed
    return *t;
}

double normalQuantile(std::uint32_t random12)
{
    return RandomTables::get().quantile[random12 & (RandomTables::kQuantileCells - 1)];
}

int poisson(double mean, std::uint32_t random)
{
    return RandomTables::get().poisson(mean, random);
}

void AliasTable::build(std::span<const double> weights)
{
    const std::size_t n = weights.size();
    m_n = n;
    m_entries.resize(n);
    m_scaled.resize(n);
    m_small.resize(n);
    m_large.resize(n);
    for (std::size_t i = 0; i < n; ++i)
        m_entries[i] = {0xffffffffu, static_cast<std::int32_t>(i)};  // always keep
    double sum = 0.0;
    for (double w : weights)
        sum += w > 0.0 ? w : 0.0;
    if (!(sum > 0.0) || !std::isfinite(sum))
        return;  // uniform
    std::size_t ns = 0;
    std::size_t nl = 0;
    const double scale = static_cast<double>(n) / sum;
    for (std::size_t i = 0; i < n; ++i) {
        m_scaled[i] = (weights[i] > 0.0 ? weights[i] : 0.0) * scale;
        if (m_scaled[i] < 1.0)
            m_small[ns++] = static_cast<std::int32_t>(i);
        else
            m_large[nl++] = static_cast<std::int32_t>(i);
    }
    while (ns > 0 && nl > 0) {
        const auto s = static_cast<std::size_t>(m_small[--ns]);
        const std::int32_t l = m_large[--nl];
        // Below 2^32 here; a zero weight gives 0, which never keeps the bucket.
        m_entries[s] = {static_cast<std::uint32_t>(std::min(m_scaled[s] * kTwo32, 4294967295.0)), l};
        auto& sl = m_scaled[static_cast<std::size_t>(l)];
        sl = (sl + m_scaled[s]) - 1.0;
        if (sl < 1.0)
            m_small[ns++] = l;
        else
            m_large[nl++] = l;
    }
    // Left-overs (1 up to rounding) keep the initial "always keep".
}

}  // namespace detail

}  // namespace moex
