// The counts sampler of SyntheticRouting (RoutingSampler::counts, docs/MODEL.md): per source the
// sub-batches' group race, one Poisson (or clipped-binomial) draw per expert, the exact total.
#include "workload/synthetic_routing.h"

#include "workload/random_tables.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moex {

namespace {

// The `count` smallest of keys[0, n) as a bit mask (n <= 64; ties to the lower index). Ranks by
// comparing every key with every other; for n = 8 four at a time where SSE2 is there.
std::uint64_t smallestKeys(const float* keys, int n, int count)
{
    std::uint64_t mask = 0;
#if defined(__SSE2__)
    if (n == 8) {  // DeepSeek's 8 expert groups: ranks in two registers
        // rank[j] = number of keys below keys[j]; a tie leaves too few or too many chosen, then the
        // exact loop below decides.
        const __m128 lo = _mm_load_ps(keys);
        const __m128 hi = _mm_load_ps(keys + 4);
        __m128i rankLo = _mm_setzero_si128();
        __m128i rankHi = _mm_setzero_si128();
        for (int i = 0; i < 8; ++i) {
            const __m128 ki = _mm_set1_ps(keys[i]);
            rankLo = _mm_sub_epi32(rankLo, _mm_castps_si128(_mm_cmplt_ps(ki, lo)));
            rankHi = _mm_sub_epi32(rankHi, _mm_castps_si128(_mm_cmplt_ps(ki, hi)));
        }
        const __m128i limit = _mm_set1_epi32(count);
        const auto bits = static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(rankLo, limit))) |
                                                (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(rankHi, limit))) << 4));
        unsigned pop = bits - ((bits >> 1) & 0x55u);  // popcount of 8 bits without the POPCNT instruction
        pop = (pop & 0x33u) + ((pop >> 2) & 0x33u);
        pop = (pop + (pop >> 4)) & 0x0fu;
        if (static_cast<int>(pop) == count)
            return bits;
    }
#endif
    for (int j = 0; j < n; ++j) {
        int rank = 0;
        for (int i = 0; i < n; ++i)
            rank += (keys[i] < keys[j]) || (keys[i] == keys[j] && i < j);
        mask |= static_cast<std::uint64_t>(rank < count) << j;
    }
    return mask;
}

constexpr std::uint64_t kTie = ~std::uint64_t{0};

#if defined(__x86_64__)
// The race of 8 groups in one AVX2 register, for `n` sub-batches of one source in one call (their
// words two by two: a call each cost about 70 cycles a sub-batch): keys e * inverse + offset
// (multiply then add, no fused multiply-add: the roundings of the scalar keys), e the table's
// exponential of each 16 random bits (groups 0-3 from r0, 4-7 from r1, low bits first), ranks by
// 8 compares of every key against all; eight scalar loads, as AMD's vgatherdps is slower. The
// mask of the `count` smallest, or kTie where equal keys straddle the boundary.
__attribute__((target("avx2"))) void race8ManyAvx2(const float* exponential, const std::uint64_t* words, int n,
                                                   const float* inverse, const float* offset, int count,
                                                   std::uint64_t* masks)
{
    const __m256 inv = _mm256_loadu_ps(inverse);
    const __m256 off = _mm256_loadu_ps(offset);
    const __m256i limit = _mm256_set1_epi32(count);
    for (int b = 0; b < n; ++b) {
        const std::uint64_t r0 = words[2 * b];
        const std::uint64_t r1 = words[2 * b + 1];
        const auto at = [&](std::uint64_t r, int q) { return exponential[(r >> (16 * q)) & 0xffffu]; };
        const __m256 e = _mm256_set_ps(at(r1, 3), at(r1, 2), at(r1, 1), at(r1, 0), at(r0, 3), at(r0, 2), at(r0, 1), at(r0, 0));
        const __m256 keys = _mm256_add_ps(_mm256_mul_ps(e, inv), off);
        __m256i rank = _mm256_setzero_si256();
        for (int i = 0; i < 8; ++i) {
            const __m256 ki = _mm256_permutevar8x32_ps(keys, _mm256_set1_epi32(i));
            rank = _mm256_sub_epi32(rank, _mm256_castps_si256(_mm256_cmp_ps(ki, keys, _CMP_LT_OQ)));
        }
        const auto bits = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(limit, rank))));
        masks[b] = std::popcount(bits) == count ? bits : kTie;
    }
}
bool raceHasAvx2() { return __builtin_cpu_supports("avx2") != 0; }
#else
void race8ManyAvx2(const float*, const std::uint64_t*, int n, const float*, const float*, int, std::uint64_t* masks)
{
    std::fill_n(masks, n, kTie);
}
bool raceHasAvx2() { return false; }
#endif

}  // namespace

namespace detail {

std::uint64_t race8(const float* exponential, std::uint64_t r0, std::uint64_t r1, const float* inverse,
                    const float* offset, int count, bool vector)
{
    if (vector) {
        const std::uint64_t words[2] = {r0, r1};
        std::uint64_t mask = kTie;
        race8ManyAvx2(exponential, words, 1, inverse, offset, count, &mask);
        if (mask != kTie)
            return mask;
    }
    alignas(16) float key[8];  // the same keys, one at a time; a tie goes to the lower index
    for (int q = 0; q < 8; ++q) {
        const std::uint64_t r = q < 4 ? r0 : r1;
        key[q] = exponential[(r >> (16 * (q & 3))) & 0xffffu] * inverse[q] + offset[q];
    }
    return smallestKeys(key, 8, count);
}

void race8Many(const float* exponential, const std::uint64_t* words, int n, const float* inverse, const float* offset,
               int count, bool vector, std::uint64_t* masks)
{
    if (vector)
        race8ManyAvx2(exponential, words, n, inverse, offset, count, masks);
    for (int b = 0; b < n; ++b)
        if (!vector || masks[b] == kTie)
            masks[b] = race8(exponential, words[2 * b], words[2 * b + 1], inverse, offset, count, false);
}

bool race8HasAvx2() { return raceHasAvx2(); }

}  // namespace detail

namespace {

// Bit i set where v[i] >= threshold (n <= 64); two at a time where SSE2 is there.
std::uint64_t atLeast(const double* v, std::size_t n, double threshold)
{
    std::uint64_t mask = 0;
    std::size_t i = 0;
#if defined(__SSE2__)
    const __m128d t = _mm_set1_pd(threshold);
    for (; i + 2 <= n; i += 2)
        mask |= static_cast<std::uint64_t>(_mm_movemask_pd(_mm_cmpge_pd(_mm_loadu_pd(v + i), t))) << i;
#endif
    for (; i < n; ++i)
        mask |= static_cast<std::uint64_t>(v[i] >= threshold) << i;
    return mask;
}

}  // namespace


void SyntheticRouting::nextCounts(RoutingSample& out)
{
    if (!m_pool) {
        const int wanted = m_options.threads > 0 ? m_options.threads : std::min(8, WorkerPool::hardwareThreads());
        m_pool = std::make_unique<WorkerPool>(std::max(1, std::min(wanted, m_numLayers)));
        m_countScratch.resize(static_cast<std::size_t>(m_pool->size()));
        const auto ne = static_cast<std::size_t>(m_numExperts);
        const auto ng = static_cast<std::size_t>(m_routingGroups);
        for (CountScratch& c : m_countScratch) {
            c.mu.assign(ne, 0.0);
            c.capX.assign(ne, 0);
            c.clipMean.assign(ne, -1.0);
            c.clipSd.assign(ne, 0.0);
            c.heavy.assign(ne + 1, 0);
            c.heavyGroup.assign(ne + 1, 0);
            c.subTokens.assign(ng, 0);
            c.heavyRate.assign(ne + 1, 0.0);
            c.bits.assign(ne + 1, 0);
            c.light.assign(ne, 0);
            c.heavySubs.assign(ne + 1, 0.0);
            c.heavyMu.assign(ne + 1, 0.0);
            c.heavyNone.assign(ne + 1, 0.0);
            for (auto* v : {&c.heavyM1, &c.heavyM2, &c.heavyBelow, &c.binomialP, &c.binomialM1, &c.binomialM2, &c.binomialBelow})
                v->assign(ne + 1, 0.0);
            for (auto* v : {&c.binomialN, &c.binomialT, &c.binomialAt})
                v->assign(ne + 1, 0);
            c.prefixPairs.assign(ne, 0);
            c.prefixMu.assign(ne, 0.0);
            // Bits for the pairs of a Poisson draw: it stays below twice the row's pairs plus 256
            // but in the far tail (removePairs grows it then).
            c.takenBits.assign((static_cast<std::size_t>(m_tokensPerGpu) * static_cast<std::size_t>(m_topK) * 2 + 256) / 64 + 1, 0);
            c.cap.assign(ng, 0);
            c.subs.assign(ng, 0);
            c.perMass.assign(ng, 0.0);
            c.maskSubs.assign(std::size_t{1} << kMaskedGroups, 0);
            c.maskTokens.assign(std::size_t{1} << kMaskedGroups, 0);
            c.masks.assign(std::size_t{1} << kMaskedGroups, 0);
            c.groupW.assign(ng, 0.0);
            c.expected.assign(ng, 0.0);
            const auto subBatches = static_cast<std::size_t>(subBatchCount());
            c.words.assign(2 * subBatches + ng * ((static_cast<std::size_t>(m_groupSize) + 1) / 2), 0);
            c.raceMasks.assign(subBatches, 0);
        }
    }
    // Each layer has its own random stream and state, so the result does not depend on the
    // number of threads or on which thread draws which layer.
    const bool first = m_step == 0;
    m_pool->run(m_numLayers, [&](int l, int worker) {
        Layer& layer = m_layers[static_cast<std::size_t>(l)];
        if (!first)
            advance(layer);
        CountScratch& scratch = m_countScratch[static_cast<std::size_t>(worker)];
        for (int s = 0; s < m_numGpus; ++s)
            sampleSourceCounts(layer, s, out.row(l, s).data(), scratch);
    });
}

void SyntheticRouting::chooseGroupsCounts(detail::Rng& rng, const std::uint64_t* words, CountScratch& c) const
{
    // Per routing group: the tokens of the sub-batches that chose it (the cap of each of its
    // experts: a token picks an expert once) and the pairs they send it in expectation (a
    // sub-batch's pairs split over its chosen groups in proportion to the source's mass there).
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    std::fill(c.cap.begin(), c.cap.end(), 0);
    std::fill(c.subs.begin(), c.subs.end(), 0);
    std::fill(c.expected.begin(), c.expected.end(), 0.0);
    const int numSub = subBatchCount();
    if (m_routingGroups == 1) {
        c.cap[0] = m_tokensPerGpu;
        c.subs[0] = numSub;
        c.expected[0] = static_cast<double>(m_tokensPerGpu) * m_topK;
        return;
    }
    const int perToken = m_groupsPerToken;
    // Sequential choice in proportion to mass, without replacement, is an exponential race: each
    // group draws Exp(1) / mass and the smallest perToken win (Plackett-Luce). The race needs no
    // serial chain of draws and repeats: 16 random bits per group, the exponential read from a
    // table (detail::exponential16), ranks by comparison.
    const int numGroups = m_routingGroups;
    float inverse[64];
    float offset[64];
    for (int j = 0; j < numGroups; ++j) {
        const double w = c.groupW[static_cast<std::size_t>(j)];
        inverse[j] = w > 0.0 ? static_cast<float>(1.0 / w) : 0.0f;
        offset[j] = w > 0.0 ? 0.0f : 3.0e38f;
    }
    const detail::RandomTables& tables = detail::RandomTables::get();
    double* perMass = c.perMass.data();  // per group: sum over its sub-batches of tokens / chosen mass
    std::fill_n(perMass, ng, 0.0);
    alignas(16) float key[64];
    const int perSub = m_tokensPerGpu / numSub;
    const int extra = m_tokensPerGpu % numSub;  // the first `extra` sub-batches have one token more
    int* masks = c.masks.data();  // the subsets chosen, in the order first chosen
    std::size_t numMasks = 0;
    if (numGroups == 8) {  // every sub-batch's race in one call, on the source's first 2 numSub words
        detail::race8Many(tables.exponential, words, numSub, inverse, offset, perToken, m_raceAvx2,
                          c.raceMasks.data());
    }
    for (int b = 0; b < numSub; ++b) {
        const int tokens = perSub + (b < extra ? 1 : 0);  // >= 1: numSub <= tokens per GPU
        std::uint64_t mask = 0;
        if (numGroups == 8) {
            mask = c.raceMasks[static_cast<std::size_t>(b)];
        } else {
            for (int j = 0; j < numGroups; j += 4) {
                std::uint64_t r = rng.next();
                for (int q = 0; q < 4 && j + q < numGroups; ++q, r >>= 16) {
                    const float e = tables.exponential16(static_cast<std::uint32_t>(r & 0xffffu));
                    // A weightless group (inverse 0, offset 3e38) loses to every weighted one.
                    key[j + q] = e * inverse[j + q] + offset[j + q];
                }
            }
            mask = smallestKeys(key, numGroups, perToken);
        }
        if (numGroups <= kMaskedGroups) {  // tallied per subset, spread over its groups below
            // Without a branch: whether a subset is new is a coin flip the predictor keeps missing.
            const auto m = static_cast<std::size_t>(mask);
            masks[numMasks] = static_cast<int>(m);
            numMasks += c.maskSubs[m]++ == 0 ? 1u : 0u;
            c.maskTokens[m] += tokens;
        } else {
            addSubBatch(mask, tokens, c);
        }
    }
    // The sub-batches of each subset chosen: its mass is computed once.
    for (const int m : std::span<const int>(masks, numMasks)) {
        const auto mu = static_cast<std::size_t>(m);
        const int subs = c.maskSubs[mu];
        const int tokens = c.maskTokens[mu];
        double chosenMass = 0.0;
        for (std::uint64_t b = mu; b != 0; b &= b - 1)
            chosenMass += c.groupW[static_cast<std::size_t>(std::countr_zero(b))];
        const double share = chosenMass > 0.0 ? tokens / chosenMass : 0.0;
        for (std::uint64_t b = mu; b != 0; b &= b - 1) {
            const auto g = static_cast<std::size_t>(std::countr_zero(b));
            c.cap[g] += tokens;
            c.subs[g] += subs;
            if (chosenMass > 0.0)
                perMass[g] += share;
            else  // weightless groups only: an even split
                c.expected[g] += static_cast<double>(tokens) * m_topK / perToken;
        }
        c.maskSubs[mu] = 0;
        c.maskTokens[mu] = 0;
    }
    for (std::size_t j = 0; j < ng; ++j)
        c.expected[j] += m_topK * c.groupW[j] * perMass[j];
}

void SyntheticRouting::addSubBatch(std::uint64_t mask, int tokens, CountScratch& c) const
{
    double chosenMass = 0.0;
    for (std::uint64_t m = mask; m != 0; m &= m - 1)
        chosenMass += c.groupW[static_cast<std::size_t>(std::countr_zero(m))];
    for (std::uint64_t m = mask; m != 0; m &= m - 1) {
        const auto g = static_cast<std::size_t>(std::countr_zero(m));
        c.cap[g] += tokens;
        ++c.subs[g];
        if (chosenMass > 0.0)
            c.perMass[g] += tokens / chosenMass;
        else  // weightless groups only: an even split
            c.expected[g] += static_cast<double>(tokens) * m_topK / m_groupsPerToken;
    }
}

void SyntheticRouting::sampleSourceCounts(Layer& layer, int src, RoutingSample::Count* row, CountScratch& c) const
{
    const int n = m_tokensPerGpu * m_topK;
    if (n == 0) {
        std::fill_n(row, m_numExperts, 0);
        return;
    }
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    const auto gs = static_cast<std::size_t>(m_groupSize);
    const int* active = layer.active.data() + static_cast<std::size_t>(src) * static_cast<std::size_t>(m_activeGroups);
    const double perSlot = m_activeGroups > 0 ? m_options.group_share * layer.temporalMass / m_activeGroups : 0.0;
    detail::Rng rng = layer.rng;
    // The source's random words, counter-based from one word of the layer's stream: two a
    // sub-batch for the 8-group races, then one for every two experts of a routing group.
    const int numSub = subBatchCount();
    const std::size_t raceWords = m_routingGroups == 8 ? 2 * static_cast<std::size_t>(numSub) : 0;
    const std::size_t half = (gs + 1) / 2;
    const std::uint64_t* words = c.words.data();
    detail::counterWords(rng.next(), 0, static_cast<int>(raceWords + ng * half), c.words.data(), m_wordsAvx512);

    sourceGroupMass(layer, active, perSlot, c.groupW.data());
    chooseGroupsCounts(rng, words, c);

    // Expected pairs per expert: the group's expected pairs in proportion to the expert's mass.
    for (std::size_t j = 0; j < ng; ++j) {
        const double* steady = layer.steady.data() + j * gs;
        double* mu = c.mu.data() + j * gs;
        if (c.groupW[j] > 0.0) {
            const double scale = c.expected[j] / c.groupW[j];
            for (std::size_t i = 0; i < gs; ++i)
                mu[i] = scale * steady[i];
        } else {  // a weightless group chosen as a last resort: uniform
            std::fill_n(mu, gs, c.expected[j] / static_cast<double>(gs));
        }
    }
    for (int a = 0; a < m_activeGroups; ++a) {
        const auto g = static_cast<std::size_t>(active[a]);
        if (!(layer.coMass[g] > 0.0))
            continue;
        const double slot = perSlot / layer.coMass[g];
        for (int i = layer.coSubOffset[g * ng]; i < layer.coSubOffset[(g + 1) * ng]; ++i) {
            const auto x = static_cast<std::size_t>(layer.coMembers[static_cast<std::size_t>(i)]);
            const std::size_t j = x / gs;
            if (c.groupW[j] > 0.0)
                c.mu[x] += c.expected[j] / c.groupW[j] * slot * layer.pop[x];
        }
    }

    // The heavy experts: those a sub-batch cap can clip (more than 2% of their pairs) at the rates
    // raised by capScale, or with a large share of a sub-batch; raising the rates can make more
    // experts heavy: again until the set holds.
    const detail::RandomTables& tables = detail::RandomTables::get();
    double scale = 1.0;
    c.numHeavy = 0;
    for (int round = 0; round < 4; ++round) {
        const int before = c.numHeavy;
        int* heavy = c.heavy.data();
        int count = before;
        for (std::size_t j = 0; j < ng; ++j) {
            if (c.cap[j] == 0)
                continue;
            // Heavy: clipped, or so large a share of a sub-batch's pairs (over 5%) that a Poisson
            // draw's variance would exceed the binomial's by more than 5%.
            const int perSub = c.cap[j] / c.subs[j];
            const double clipFrom =
                c.subs[j] * std::min(tables.clipFreeMean(perSub), 0.05 * perSub * m_topK) / scale;
            for (std::size_t x0 = j * gs; x0 < (j + 1) * gs; x0 += 64) {
                const std::size_t len = std::min<std::size_t>(64, (j + 1) * gs - x0);
                for (std::uint64_t m = atLeast(c.mu.data() + x0, len, clipFrom); m != 0; m &= m - 1) {
                    const std::size_t x = x0 + static_cast<std::size_t>(std::countr_zero(m));
                    if (c.clipMean[x] < 0.0) {  // not heavy yet
                        c.heavyGroup[static_cast<std::size_t>(count)] = static_cast<int>(j);
                        heavy[count++] = static_cast<int>(x);
                    }
                }
            }
        }
        for (int i = before; i < count; ++i)
            c.clipMean[static_cast<std::size_t>(heavy[i])] = 0.0;  // marked; capScale sets it
        c.numHeavy = count;
        if (count == before)
            break;
        scale = capScale(c, n, scale);
        if (scale == 1.0)
            break;
    }

    // One Poisson draw per expert (capped by its group's tokens); a normal for the clipped ones.
    // A sub-batch of t tokens gives an expert at most t pairs. Where that binds (capScale), the
    // count is the sum over the group's sub-batches of binomial draws (t * top_k pairs) clipped at
    // t, drawn as a normal with that sum's mean and variance. The clipped experts then count as
    // full for the pairs added to reach the exact total: the pairs sampler redraws a full expert's
    // pairs over the experts with room, in proportion to weight. Two experts per random word.
    int drawn = 0;
    const auto drawClipped = [&](std::size_t x, std::uint32_t random, int cap) {
        const double z = tables.quantile[random >> 20];
        const double clipped = c.clipMean[x] + c.clipSd[x] * z + 0.5;
        const int k = std::clamp(clipped > 0.0 ? static_cast<int>(clipped) : 0, 0, cap);
        row[x] = static_cast<RoutingSample::Count>(k);
        drawn += k;
        c.capX[x] = k;         // full
        c.clipMean[x] = -1.0;  // back to "not clipped" for the next row
    };
    // Two experts a random word (the low half first), the same counts on every path. With AVX-512
    // the bits of every expert first, then per group the Poisson draws of the experts not clipped
    // (the clipped read 0) 16 at a time, and the clipped experts' normal draws on their bits at
    // the end. Where many experts are clipped (one-token sub-batches), which one is is a coin
    // flip the branch predictor keeps missing: the scalar draws then also take the bits first and
    // run over a list of the experts not clipped. Otherwise one expert after the other.
    const bool bitsFirst = m_drawAvx512 || c.numHeavy * 8 >= m_numExperts;
    std::uint32_t* bits = c.bits.data();
    if (bitsFirst && gs % 2 == 0)
        std::memcpy(bits, words + raceWords, static_cast<std::size_t>(m_numExperts) * sizeof(std::uint32_t));
    else if (bitsFirst)  // an odd group's last word has a spare half
        for (std::size_t j = 0; j < ng; ++j)
            std::memcpy(bits + j * gs, words + raceWords + j * half, gs * sizeof(std::uint32_t));
    int* light = c.light.data();
    for (std::size_t j = 0; j < ng; ++j) {
        const int cap = c.cap[j];
        const std::size_t begin = j * gs;
        std::fill_n(c.capX.begin() + static_cast<std::ptrdiff_t>(begin), gs, cap);
        if (cap == 0) {
            std::fill_n(row + begin, gs, 0);
            continue;
        }
        if (m_drawAvx512) {
            drawn += detail::poissonRow(c.mu.data() + begin, scale, bits + begin, c.clipMean.data() + begin,
                                        static_cast<int>(gs), cap, row + begin, true);
        } else if (bitsFirst) {
            std::size_t numLight = 0;
            for (std::size_t x = begin; x < begin + gs; ++x) {
                light[numLight] = static_cast<int>(x);
                numLight += c.clipMean[x] < 0.0 ? 1u : 0u;
            }
            for (std::size_t i = 0; i < numLight; ++i) {
                const auto x = static_cast<std::size_t>(light[i]);
                const int k = std::min(tables.poisson(scale * c.mu[x], bits[x]), cap);
                row[x] = static_cast<RoutingSample::Count>(k);
                drawn += k;
            }
        } else {
            const std::uint64_t* word = words + raceWords + j * half;
            std::uint64_t r = 0;
            for (std::size_t x = begin; x < begin + gs; ++x) {
                r = ((x - begin) & 1u) == 0 ? *word++ : r >> 32;
                if (c.clipMean[x] < 0.0) {
                    const int k = std::min(tables.poisson(scale * c.mu[x], static_cast<std::uint32_t>(r)), cap);
                    row[x] = static_cast<RoutingSample::Count>(k);
                    drawn += k;
                } else {
                    drawClipped(x, static_cast<std::uint32_t>(r), cap);
                }
            }
        }
    }
    if (bitsFirst)
        for (std::size_t i = 0; i < static_cast<std::size_t>(c.numHeavy); ++i) {
            const auto x = static_cast<std::size_t>(c.heavy[i]);
            drawClipped(x, bits[x], c.cap[static_cast<std::size_t>(c.heavyGroup[i])]);
        }
    const int* capX = c.capX.data();
    if (drawn > n)
        removePairs(row, drawn - n, drawn, rng, c);
    else if (drawn < n)
        addPairs(row, n - drawn, capX, rng, c);
    layer.rng = rng;
}

}  // namespace moex
