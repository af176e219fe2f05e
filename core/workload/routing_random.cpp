// The random primitives of the synthetic generator: splitmix64 seeding, xoshiro256** (Rng), binomial
// draws and Walker/Vose alias tables.
#include "workload/synthetic_routing.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

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
