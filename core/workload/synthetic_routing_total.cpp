// The counts sampler's exact total (RoutingSampler::counts, docs/MODEL.md): a row's Poisson draws
// brought to exactly tokens x top_k pairs by removing uniformly random pairs or adding pairs in
// proportion to the expected ones.
#include "workload/synthetic_routing.h"

#include <cstdint>

namespace moex {

void SyntheticRouting::removePairs(RoutingSample::Count* row, int excess, int drawn, detail::Rng& rng,
                                   CountScratch& c) const
{
    // Removes `excess` of the `drawn` pairs, every subset of that size equally likely (so what is
    // left of a Poisson draw is a multinomial sample): distinct positions in the row's pairs as
    // drawn, each found by binary search in the prefix sums of the counts as drawn.
    const auto ne = static_cast<std::size_t>(m_numExperts);
    int* prefix = c.prefixPairs.data();  // prefix[x] = pairs of experts < x + 1
    int sum = 0;
    for (std::size_t x = 0; x < ne; ++x)
        prefix[x] = sum += row[x];
    const std::size_t words = (static_cast<std::size_t>(drawn) + 63) / 64;
    if (c.takenBits.size() < words)
        c.takenBits.resize(words);
    std::uint64_t* taken = c.takenBits.data();
    std::fill_n(taken, words, 0);
    for (int removed = 0; removed < excess;) {
        const std::uint32_t pos = rng.below(static_cast<std::uint32_t>(drawn));
        std::uint64_t& word = taken[pos >> 6];
        const std::uint64_t bit = std::uint64_t{1} << (pos & 63);
        if (word & bit)
            continue;
        word |= bit;
        // The first expert whose prefix exceeds pos.
        std::size_t lo = 0;
        std::size_t len = ne;
        while (len > 1) {
            const std::size_t half = len / 2;
            lo = prefix[lo + half - 1] <= static_cast<int>(pos) ? lo + half : lo;
            len -= half;
        }
        --row[lo];
        ++removed;
    }
}

void SyntheticRouting::addPairs(RoutingSample::Count* row, int missing, const int* cap, detail::Rng& rng,
                                CountScratch& c) const
{
    // Adds `missing` pairs, each to an expert in proportion to its expected pairs among the
    // experts with room (independent draws: with the Poisson draw, a multinomial sample), found by
    // binary search in the prefix sums of the expected pairs; a full expert's draw is repeated.
    const auto ne = static_cast<std::size_t>(m_numExperts);
    double* prefix = c.prefixMu.data();
    double sum = 0.0;
    for (std::size_t x = 0; x < ne; ++x)
        prefix[x] = sum += row[x] < cap[x] ? c.mu[x] : 0.0;
    for (; missing > 0; --missing) {
        std::size_t x = ne;
        for (int tries = 0; tries < 64 && x == ne && sum > 0.0; ++tries) {
            const double u = rng.uniform() * sum;
            std::size_t lo = 0;
            std::size_t len = ne;
            while (len > 1) {
                const std::size_t half = len / 2;
                lo = prefix[lo + half - 1] <= u ? lo + half : lo;
                len -= half;
            }
            if (row[lo] < cap[lo] && c.mu[lo] > 0.0)
                x = lo;
        }
        if (x == ne)  // the experts with room hold little of the mean: a scan over them
            x = withRoomByMean(row, cap, c.mu.data(), rng);
        if (x == ne) {  // every expert clipped or full: those below their group's token cap
            for (std::size_t y = 0; y < ne; ++y)
                c.capX[y] = c.cap[y / static_cast<std::size_t>(m_groupSize)];
            x = withRoomByMean(row, c.capX.data(), c.mu.data(), rng);
        }
        ++row[x];
    }
}

std::size_t SyntheticRouting::withRoomByMean(const RoutingSample::Count* row, const int* cap, const double* mu,
                                             detail::Rng& rng) const
{
    // In proportion to mu over the experts with room; uniformly over them when none has a mean;
    // m_numExperts when none has room.
    const auto ne = static_cast<std::size_t>(m_numExperts);
    double room = 0.0;
    std::size_t free = 0;
    for (std::size_t x = 0; x < ne; ++x)
        if (row[x] < cap[x]) {
            room += mu[x];
            ++free;
        }
    if (room > 0.0) {
        double u = rng.uniform() * room;
        std::size_t last = ne;
        for (std::size_t x = 0; x < ne; ++x) {
            if (row[x] >= cap[x] || !(mu[x] > 0.0))
                continue;
            last = x;
            u -= mu[x];
            if (u < 0.0)
                return x;
        }
        return last;
    }
    if (free == 0)
        return ne;
    auto k = rng.below(static_cast<std::uint32_t>(free));
    for (std::size_t x = 0; x < ne; ++x)
        if (row[x] < cap[x] && k-- == 0)
            return x;
    return ne;
}

}  // namespace moex
