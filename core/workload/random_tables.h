// RandomTables: the precomputed tables behind detail::poisson and detail::normalQuantile, with the
// Poisson draw inline for the counts sampler's inner loop (one draw per expert per source).
#pragma once

#include <cmath>
#include <cstdint>

namespace moex::detail {

struct RandomTables {
    static constexpr int kQuantileCells = 4096;
    // Grid points per unit of mean. The mixture of two neighbours raises the variance by at most
    // 1/(4 * 16^2) = 0.001 pairs^2, and the tables (66 KB) stay in the fast caches.
    static constexpr int kPoissonGrid = 16;
    static constexpr int kPoissonTableMean = 16;
    static constexpr int kPoissonBins = kPoissonTableMean * kPoissonGrid + 2;  // rounding may step past 16
    static constexpr int kPoissonTail = 48;   // P(X >= 48 | mean 16) < 1e-10
    static constexpr int kPoissonGuide = 256;  // search start points per bin (Chen-Asau guide table)

    static constexpr int kExponentialCells = 65536;

    double quantile[kQuantileCells];  // the normal quantile at the middle of each cell
    float exponential[kExponentialCells];  // -ln(1 - (i + 0.5) / 65536): Exp(1) at the middle of each cell
    // cdf[b][k] = P(X <= k | mean b / kPoissonGrid) as a 32-bit threshold: X is the first k with u < cdf[b][k].
    std::uint32_t cdf[kPoissonBins][kPoissonTail];
    std::uint8_t guide[kPoissonBins][kPoissonGuide];
    double clipFree[kPoissonTail - 1];

    static const RandomTables& get();

    // Sub-batch caps: below this mean, clipping a Poisson draw at t removes at most 2% of its
    // mean (t >= 0; infinite from t = kPoissonTail - 1 on, where the table ends).
    [[nodiscard]] double clipFreeMean(int t) const
    {
        return t >= 0 && t < kPoissonTail - 1 ? clipFree[t] : 1e300;
    }
    // The first two moments of min(Poisson(mean), t), and P(Poisson(mean) < t).
    void clippedPoisson(double mean, int t, double& m1, double& m2, double& below) const;
    // The same from the CDF table, interpolated between grid means (mean < 16, t < 47): no exp.
    void clippedPoissonFromTable(double mean, int t, double& m1, double& m2, double& below) const
    {
        const double pos = mean * kPoissonGrid;
        const auto bin = static_cast<int>(pos);
        const double f = pos - bin;
        m1 = 0.0;
        m2 = 0.0;
        double cdfK = 0.0;
        for (int k = 0; k < t; ++k) {
            cdfK = ((1.0 - f) * cdf[bin][k] + f * cdf[bin + 1][k]) * 0x1.0p-32;
            const double survive = 1.0 - cdfK;
            m1 += survive;
            m2 += (2.0 * k + 1.0) * survive;
        }
        below = cdfK;  // P(X <= t - 1)
    }

    // Exp(1) of 16 random bits, read from the table (256 KB: one load, no arithmetic).
    [[nodiscard]] float exponential16(std::uint32_t v) const { return exponential[v & 0xffffu]; }

    // Poisson(mean) from 32 random bits: detail::poisson (synthetic_routing.h). The top 24 bits are
    // the uniform of the inversion, the low 8 the rounding to a grid point (its mean is exact to
    // 1/4096 of a pair; the sampler's total is exact anyway).
    [[nodiscard]] int poisson(double mean, std::uint32_t random) const
    {
        if (!(mean > 0.0))
            return 0;
        if (mean < kPoissonTableMean) {
            // The mean in 24.8 fixed point of grid steps: rounded up with probability frac, the
            // mixture of the two neighbours has the mean.
            const auto pos = static_cast<std::uint32_t>(mean * (kPoissonGrid * 256.0));
            const int bin = static_cast<int>(pos >> 8) + ((random & 0xffu) < (pos & 0xffu));
            const std::uint32_t u = random | 0xffu;  // the top 24 bits, the middle of their cell
            const std::uint32_t* c = cdf[bin];
            int k = guide[bin][u >> 24];
            while (u >= c[k])  // c[kPoissonTail - 1] = 2^32 - 1 stops it unless u is 2^32 - 1
                if (++k == kPoissonTail - 1)
                    break;
            return k;
        }
        // Cornish-Fisher: mean + sqrt(mean) z + (z^2 - 1) / 6 (skewness 1 / sqrt(mean)), rounded.
        const double z = quantile[random >> 20];
        const double x = mean + std::sqrt(mean) * z + (z * z - 1.0) / 6.0 + 0.5;
        // Rounded by truncation (x > 0), not std::floor: without SSE4.1 that is a library call.
        return x > 0.0 ? (x < 2147483647.0 ? static_cast<int>(x) : 2147483647) : 0;
    }

    RandomTables();
};

}  // namespace moex::detail
