#include "workload/synthetic_routing.h"

#include "workload/random_tables.h"

#include "common/diagnostics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moex {

namespace {

// Rejected pairs (their expert was full) are redrawn in at most this many rounds before the first
// experts with room take the rest: keeps a pathological skew from looping.
constexpr int kMaxRounds = 64;
// An expert is heavy (drawn first, by a clipped binomial) when its steady share is at least this
// fraction of the cap's share 1/top_k, even when the lightest routing groups are chosen.
constexpr double kHeavyShare = 0.5;

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

// The race of 8 groups in one AVX2 register: keys e * inverse + offset (multiply then add, no fused
// multiply-add: the roundings of the scalar keys), e the table's exponential of each 16 random bits
// (groups 0-3 from r0, 4-7 from r1, low bits first), ranks by 8 compares of every key against all.
// The mask of the `count` smallest, or kTie when equal keys straddle the boundary.
#if defined(__x86_64__)
__attribute__((target("avx2"))) std::uint64_t race8Avx2(const float* exponential, std::uint64_t r0,
                                                        std::uint64_t r1, const float* inverse, const float* offset,
                                                        int count)
{
    // Eight scalar loads: AMD's vgatherdps is slower than them.
    const auto at = [&](std::uint64_t r, int q) { return exponential[(r >> (16 * q)) & 0xffffu]; };
    const __m256 e = _mm256_set_ps(at(r1, 3), at(r1, 2), at(r1, 1), at(r1, 0), at(r0, 3), at(r0, 2), at(r0, 1), at(r0, 0));
    const __m256 keys = _mm256_add_ps(_mm256_mul_ps(e, _mm256_loadu_ps(inverse)), _mm256_loadu_ps(offset));
    __m256i rank = _mm256_setzero_si256();
    for (int i = 0; i < 8; ++i) {
        const __m256 ki = _mm256_permutevar8x32_ps(keys, _mm256_set1_epi32(i));
        rank = _mm256_sub_epi32(rank, _mm256_castps_si256(_mm256_cmp_ps(ki, keys, _CMP_LT_OQ)));
    }
    const auto bits = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(count), rank))));
    unsigned pop = bits - ((bits >> 1) & 0x55u);
    pop = (pop & 0x33u) + ((pop >> 2) & 0x33u);
    pop = (pop + (pop >> 4)) & 0x0fu;
    return static_cast<int>(pop) == count ? bits : kTie;
}
bool raceHasAvx2() { return __builtin_cpu_supports("avx2") != 0; }
#else
std::uint64_t race8Avx2(const float*, std::uint64_t, std::uint64_t, const float*, const float*, int) { return kTie; }
bool raceHasAvx2() { return false; }
#endif

}  // namespace

namespace detail {

std::uint64_t race8(const float* exponential, std::uint64_t r0, std::uint64_t r1, const float* inverse,
                    const float* offset, int count, bool vector)
{
    if (vector) {
        const std::uint64_t mask = race8Avx2(exponential, r0, r1, inverse, offset, count);
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

SyntheticRouting::SyntheticRouting(const ModelSpec& model, const Workload& workload, int numGpus,
                                   SyntheticRoutingOptions options)
    : m_options(options), m_spec(workload.routing)
{
    const auto fail = [](const std::string& message) { throw InputError(Location{}, "synthetic routing: " + message); };
    m_numLayers = model.numMoeLayers();
    m_numExperts = model.routed_experts;
    m_topK = model.experts_per_token;
    m_tokensPerGpu = workload.tokens_per_gpu;
    m_numGpus = numGpus;
    if (m_numLayers < 1)
        fail("the model has no MoE layers");
    if (m_numExperts < 1 || m_numExperts > 65536)
        fail("routed_experts must be in [1, 65536], got " + std::to_string(m_numExperts));
    if (m_topK < 1 || m_topK > m_numExperts)
        fail("experts_per_token must be in [1, routed_experts], got " + std::to_string(m_topK));
    if (m_tokensPerGpu < 0 || m_tokensPerGpu > kMaxTokensPerGpu)
        fail("tokens_per_gpu must be in [0, " + std::to_string(kMaxTokensPerGpu) + "]");
    if (m_numGpus < 1)
        fail("the number of GPUs must be positive");
    if (static_cast<double>(m_numLayers) * m_numGpus * m_numExperts > 1e9)
        fail("layers x GPUs x experts is too large");
    if (!std::isfinite(m_spec.skew) || m_spec.skew < 0.0 || m_spec.skew > 50.0)
        fail("skew must be in [0, 50]");
    if (!(m_spec.hot_experts >= 0.0 && m_spec.hot_experts <= 1.0))
        fail("hot_experts must be a fraction in [0, 1]");
    if (m_spec.coactivation_groups < 0)
        fail("coactivation_groups must not be negative");
    if (!std::isfinite(m_spec.drift) || m_spec.drift < 0.0)
        fail("drift must not be negative");
    if (m_options.active_groups < 1 || m_options.active_groups > 64 ||
        !(m_options.group_share >= 0.0 && m_options.group_share <= 1.0) ||
        !(m_options.group_switch >= 0.0 && m_options.group_switch <= 1.0) || m_options.group_subbatches < 1)
        fail("invalid generator options");

    const auto e = static_cast<long>(m_numExperts);
    m_numConsistent =
        m_spec.hot_experts > 0.0
            ? static_cast<int>(std::clamp(std::lround(m_spec.hot_experts * static_cast<double>(e)), 1L, e))
            : 0;
    m_numCoGroups = std::min(m_spec.coactivation_groups, m_numExperts - m_numConsistent);
    m_activeGroups = m_numCoGroups > 0 ? m_options.active_groups : 0;

    // Group-limited routing applies when the groups split the experts evenly and fit a 64-bit mask.
    const int groups = model.expert_groups;
    const int perToken = model.groups_per_token;
    if (groups > 1 && groups <= 64 && perToken >= 1 && perToken < groups && m_numExperts % groups == 0) {
        m_routingGroups = groups;
        m_groupSize = m_numExperts / groups;
        // A token needs top_k distinct experts inside its groups.
        const int needed = (m_topK + m_groupSize - 1) / m_groupSize;
        m_groupsPerToken = std::min(groups, std::max(perToken, needed));
    } else {
        m_routingGroups = 1;
        m_groupSize = m_numExperts;
        m_groupsPerToken = 1;
    }

    const auto ne = static_cast<std::size_t>(m_numExperts);
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    m_identity.resize(ne);
    std::iota(m_identity.begin(), m_identity.end(), 0);
    m_subCounts.assign(ne, 0);
    m_groupWeight.assign(ng, 0.0);
    m_chosen.reserve(ng);
    m_flag.assign(ne, 0);
    m_maxHeavy = std::min(m_numExperts, 2 * m_topK);
    m_heavyIds.assign(static_cast<std::size_t>(m_maxHeavy), 0);
    m_heavyMass.assign(static_cast<std::size_t>(m_maxHeavy), 0.0);
    const std::size_t maxComponents = ng * (1 + static_cast<std::size_t>(m_activeGroups));
    m_components.reserve(maxComponents);
    m_weightScratch.assign(std::max(ne, maxComponents), 0.0);
    m_componentTable.build(std::span<const double>(m_weightScratch.data(), maxComponents));  // sizes it
    m_raceAvx2 = detail::race8HasAvx2();
    reset();
}

void SyntheticRouting::reset()
{
    m_step = 0;
    m_layers.resize(static_cast<std::size_t>(m_numLayers));
    for (int l = 0; l < m_numLayers; ++l) {
        Layer& layer = m_layers[static_cast<std::size_t>(l)];
        initLayer(l, layer);
        if (m_options.sampler == RoutingSampler::pairs)
            rebuildTables(layer);
        else
            rebuildModel(layer);
        for (int s = 0; s < m_numGpus; ++s)
            for (int a = 0; a < m_activeGroups; ++a)
                drawActive(layer, s, a);
    }
}

void SyntheticRouting::initLayer(int index, Layer& layer) const
{
    std::uint64_t mix = m_spec.seed ^ (0x51ed270b27f5a3c1ULL * static_cast<std::uint64_t>(index + 1));
    layer.rng = detail::Rng(detail::splitmix64(mix));
    const auto ne = static_cast<std::size_t>(m_numExperts);
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    const auto gs = static_cast<std::size_t>(m_groupSize);

    // Random rank order per layer: expert perm[r] has rank r.
    std::vector<int> perm(ne);
    std::iota(perm.begin(), perm.end(), 0);
    for (std::size_t i = ne - 1; i > 0; --i)
        std::swap(perm[i], perm[layer.rng.below(static_cast<std::uint32_t>(i + 1))]);

    layer.logPop.assign(ne, 0.0);
    layer.consistent.assign(ne, 0);
    layer.coGroup.assign(ne, -1);
    for (std::size_t r = 0; r < ne; ++r) {
        const auto x = static_cast<std::size_t>(perm[r]);
        layer.logPop[x] = -m_spec.skew * std::log(static_cast<double>(r + 1));
        layer.consistent[x] = r < static_cast<std::size_t>(m_numConsistent) ? 1 : 0;
    }

    // Co-activation groups: a random split of the temporal experts into near-equal groups, so each
    // group mixes popular and rare experts.
    const auto nc = static_cast<std::size_t>(m_numCoGroups);
    if (nc > 0) {
        std::vector<int> temporal(perm.begin() + m_numConsistent, perm.end());
        for (std::size_t i = temporal.size() - 1; i > 0; --i)
            std::swap(temporal[i], temporal[layer.rng.below(static_cast<std::uint32_t>(i + 1))]);
        for (std::size_t i = 0; i < temporal.size(); ++i)
            layer.coGroup[static_cast<std::size_t>(temporal[i])] = static_cast<int>(i * nc / temporal.size());
    }
    if (m_options.stream != 0) {  // what follows the model's set-up draws from another stream
        std::uint64_t salt = mix ^ (0x9e3779b97f4a7c15ULL * m_options.stream);
        layer.rng = detail::Rng(detail::splitmix64(salt));
    }
    layer.coMembers.clear();
    layer.coSubOffset.assign(nc * ng + 1, 0);
    for (std::size_t g = 0; g < nc; ++g)
        for (std::size_t j = 0; j < ng; ++j) {
            layer.coSubOffset[g * ng + j] = static_cast<int>(layer.coMembers.size());
            for (std::size_t x = j * gs; x < (j + 1) * gs; ++x)
                if (layer.coGroup[x] == static_cast<int>(g))
                    layer.coMembers.push_back(static_cast<int>(x));
        }
    layer.coSubOffset[nc * ng] = static_cast<int>(layer.coMembers.size());
    layer.coSubMass.assign(nc * ng, 0.0);
    layer.coSubMassAll.assign(nc * ng, 0.0);
    layer.coMass.assign(nc, 0.0);
    layer.coSubTables.resize(nc * ng);
    layer.rgTables.resize(ng);
    layer.rgMass.assign(ng, 0.0);
    layer.rgMassAll.assign(ng, 0.0);
    layer.steady.assign(ne, 0.0);
    layer.heavy.clear();
    layer.heavy.reserve(static_cast<std::size_t>(m_maxHeavy) + 1);
    layer.pop.assign(ne, 0.0);
    layer.active.assign(static_cast<std::size_t>(m_numGpus) * static_cast<std::size_t>(m_activeGroups), 0);
    layer.tablesValid = false;
}

void SyntheticRouting::rebuildModel(Layer& layer) const
{
    // Popularity b, steady weights b' and the masses both samplers read; touches `layer` only.
    const auto ne = static_cast<std::size_t>(m_numExperts);
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    const auto gs = static_cast<std::size_t>(m_groupSize);
    const double maxLog = *std::max_element(layer.logPop.begin(), layer.logPop.end());
    double sum = 0.0;
    for (std::size_t x = 0; x < ne; ++x)
        sum += layer.pop[x] = std::exp(layer.logPop[x] - maxLog);
    layer.temporalMass = 0.0;
    for (std::size_t x = 0; x < ne; ++x) {
        layer.pop[x] /= sum;
        if (!layer.consistent[x])
            layer.temporalMass += layer.pop[x];
    }
    // Steady weights b': consistent experts whole, temporal ones less the share that follows the
    // active groups.
    const double beta = m_numCoGroups > 0 ? m_options.group_share : 0.0;
    for (std::size_t x = 0; x < ne; ++x)
        layer.steady[x] = layer.consistent[x] ? layer.pop[x] : (1.0 - beta) * layer.pop[x];
    for (std::size_t j = 0; j < ng; ++j)
        layer.rgMassAll[j] = std::accumulate(layer.steady.begin() + static_cast<std::ptrdiff_t>(j * gs),
                                             layer.steady.begin() + static_cast<std::ptrdiff_t>((j + 1) * gs), 0.0);
    std::fill(layer.coMass.begin(), layer.coMass.end(), 0.0);
    for (std::size_t sub = 0; sub + 1 < layer.coSubOffset.size(); ++sub) {
        double all = 0.0;
        for (int i = layer.coSubOffset[sub]; i < layer.coSubOffset[sub + 1]; ++i)
            all += layer.pop[static_cast<std::size_t>(layer.coMembers[static_cast<std::size_t>(i)])];
        layer.coSubMassAll[sub] = all;
        layer.coMass[sub / ng] += all;
    }
}

void SyntheticRouting::rebuildTables(Layer& layer)
{
    rebuildModel(layer);
    const auto ne = static_cast<std::size_t>(m_numExperts);
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    const auto gs = static_cast<std::size_t>(m_groupSize);
    // Heavy experts leave the tables; they are drawn first, per batch.
    const double heavyAt = kHeavyShare / m_topK * m_groupsPerToken / m_routingGroups;
    const auto heavier = [&](int a, int b) {
        return layer.steady[static_cast<std::size_t>(a)] > layer.steady[static_cast<std::size_t>(b)];
    };
    layer.heavy.clear();
    for (std::size_t x = 0; x < ne; ++x)
        if (layer.steady[x] >= heavyAt) {
            layer.heavy.push_back(static_cast<int>(x));
            std::sort(layer.heavy.begin(), layer.heavy.end(), heavier);
            if (layer.heavy.size() > static_cast<std::size_t>(m_maxHeavy))
                layer.heavy.pop_back();
        }
    std::fill(m_flag.begin(), m_flag.end(), 0);
    for (int x : layer.heavy)
        m_flag[static_cast<std::size_t>(x)] = 1;
    std::vector<double>& w = m_weightScratch;
    for (std::size_t x = 0; x < ne; ++x)
        w[x] = m_flag[x] ? 0.0 : layer.steady[x];
    for (std::size_t j = 0; j < ng; ++j) {
        const std::span<const double> part(w.data() + j * gs, gs);
        layer.rgMass[j] = std::accumulate(part.begin(), part.end(), 0.0);
        layer.rgTables[j].build(part);
    }
    for (std::size_t sub = 0; sub < layer.coSubTables.size(); ++sub) {
        const auto begin = static_cast<std::size_t>(layer.coSubOffset[sub]);
        const auto end = static_cast<std::size_t>(layer.coSubOffset[sub + 1]);
        double mass = 0.0;
        for (std::size_t i = begin; i < end; ++i) {
            const auto x = static_cast<std::size_t>(layer.coMembers[i]);
            mass += w[i - begin] = m_flag[x] ? 0.0 : layer.pop[x];
        }
        layer.coSubMass[sub] = mass;
        layer.coSubTables[sub].build(std::span<const double>(w.data(), end - begin));
    }
    layer.tablesValid = true;
}

void SyntheticRouting::drawActive(Layer& layer, int src, int slot) const
{
    // In proportion to group popularity (with replacement), so the mean over batches is b.
    double u = layer.rng.uniform() * layer.temporalMass;
    int pick = m_numCoGroups - 1;
    for (int g = 0; g < m_numCoGroups; ++g) {
        u -= layer.coMass[static_cast<std::size_t>(g)];
        if (u < 0.0) {
            pick = g;
            break;
        }
    }
    layer.active[static_cast<std::size_t>(src) * static_cast<std::size_t>(m_activeGroups) +
                 static_cast<std::size_t>(slot)] = pick;
}

void SyntheticRouting::advance(Layer& layer)
{
    if (m_spec.drift > 0.0) {
        for (std::size_t x = 0; x < layer.logPop.size(); ++x)
            if (!layer.consistent[x])
                layer.logPop[x] += m_spec.drift * layer.rng.normal();
        layer.tablesValid = false;
    }
    // The counts sampler needs the model only and runs layers in parallel: nothing shared here.
    if (!layer.tablesValid) {
        if (m_options.sampler == RoutingSampler::pairs) {
            rebuildTables(layer);
        } else {
            rebuildModel(layer);
            layer.tablesValid = true;
        }
    }
    if (m_activeGroups > 0 && m_options.group_switch > 0.0)
        for (int s = 0; s < m_numGpus; ++s)
            if (layer.rng.uniform() < m_options.group_switch)
                drawActive(layer, s, static_cast<int>(layer.rng.below(static_cast<std::uint32_t>(m_activeGroups))));
}

void SyntheticRouting::next(RoutingSample& out)
{
    if (!out.hasShape(m_numLayers, m_numGpus, m_numExperts))
        out.resize(m_numLayers, m_numGpus, m_numExperts, m_tokensPerGpu, m_topK);
    out.tokens_per_gpu = m_tokensPerGpu;
    out.top_k = m_topK;
    if (m_options.sampler == RoutingSampler::counts) {
        nextCounts(out);
        ++m_step;
        return;
    }
    for (int l = 0; l < m_numLayers; ++l) {
        Layer& layer = m_layers[static_cast<std::size_t>(l)];
        if (m_step > 0)
            advance(layer);
        for (int s = 0; s < m_numGpus; ++s)
            sampleSource(layer, s, out.row(l, s).data());
    }
    ++m_step;
}

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
            c.masks.reserve(std::size_t{1} << kMaskedGroups);
            c.groupW.assign(ng, 0.0);
            c.expected.assign(ng, 0.0);
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

void SyntheticRouting::chooseGroupsCounts(detail::Rng& rng, CountScratch& c) const
{
    // Per routing group: the tokens of the sub-batches that chose it (the cap of each of its
    // experts: a token picks an expert once) and the pairs they send it in expectation (a
    // sub-batch's pairs split over its chosen groups in proportion to the source's mass there).
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    std::fill(c.cap.begin(), c.cap.end(), 0);
    std::fill(c.subs.begin(), c.subs.end(), 0);
    std::fill(c.expected.begin(), c.expected.end(), 0.0);
    const int numSub = std::min(m_options.group_subbatches, std::max(m_tokensPerGpu, 1));
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
    for (int b = 0; b < numSub; ++b) {
        const int tokens = perSub + (b < extra ? 1 : 0);
        if (tokens == 0)
            continue;
        std::uint64_t mask = 0;
        if (numGroups == 8) {
            const std::uint64_t r0 = rng.next();
            const std::uint64_t r1 = rng.next();
            mask = detail::race8(tables.exponential, r0, r1, inverse, offset, perToken, m_raceAvx2);
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
            const auto m = static_cast<std::size_t>(mask);
            if (c.maskSubs[m]++ == 0)
                c.masks.push_back(static_cast<int>(m));
            c.maskTokens[m] += tokens;
        } else {
            addSubBatch(mask, tokens, c);
        }
    }
    // The sub-batches of each subset chosen: its mass is computed once.
    for (const int m : c.masks) {
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
    c.masks.clear();
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

    // The source's mass per routing group: steady part plus its active co-activation groups.
    for (std::size_t j = 0; j < ng; ++j) {
        double w = layer.rgMassAll[j];
        for (int a = 0; a < m_activeGroups; ++a) {
            const auto g = static_cast<std::size_t>(active[a]);
            if (layer.coMass[g] > 0.0)
                w += perSlot * layer.coSubMassAll[g * ng + j] / layer.coMass[g];
        }
        c.groupW[j] = w;
    }
    chooseGroupsCounts(rng, c);

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
                    if (c.clipMean[x] < 0.0)  // not heavy yet
                        heavy[count++] = static_cast<int>(x);
                }
            }
        }
        for (int i = before; i < count; ++i)
            c.clipMean[static_cast<std::size_t>(heavy[i])] = 0.0;  // marked; capScale sets it
        c.numHeavy = count;
        if (count == before)
            break;
        scale = capScale(c, n);
        if (scale == 1.0)
            break;
    }

    // One Poisson draw per expert (capped by its group's tokens); a normal for the clipped ones.
    int drawn = 0;
    for (std::size_t j = 0; j < ng; ++j) {
        const int cap = c.cap[j];
        const std::size_t begin = j * gs;
        std::fill_n(c.capX.begin() + static_cast<std::ptrdiff_t>(begin), gs, cap);
        if (cap == 0) {
            std::fill_n(row + begin, gs, 0);
            continue;
        }
        // A sub-batch of t tokens gives an expert at most t pairs. Where that binds (capScale),
        // the count is the sum over the group's sub-batches of binomial draws (t * top_k pairs)
        // clipped at t, drawn as a normal with that sum's mean and variance. The clipped experts
        // then count as full for the pairs added to reach the exact total: the pairs sampler
        // redraws a full expert's pairs over the experts with room, in proportion to weight.
        // Two experts per random word.
        std::uint64_t r = 0;
        for (std::size_t x = begin; x < begin + gs; ++x) {
            if (((x - begin) & 1u) == 0)
                r = rng.next();
            else
                r >>= 32;
            int k = 0;
            if (c.clipMean[x] < 0.0) {
                k = std::min(tables.poisson(scale * c.mu[x], static_cast<std::uint32_t>(r)), cap);
            } else {
                const double z = tables.quantile[static_cast<std::uint32_t>(r) >> 20];
                const double clipped = c.clipMean[x] + c.clipSd[x] * z + 0.5;
                k = std::clamp(clipped > 0.0 ? static_cast<int>(clipped) : 0, 0, cap);
                c.capX[x] = k;  // full
                c.clipMean[x] = -1.0;  // back to "not clipped" for the next row
            }
            row[x] = static_cast<RoutingSample::Count>(k);
            drawn += k;
        }
    }
    const int* capX = c.capX.data();
    if (drawn > n)
        removePairs(row, drawn - n, drawn, rng, c);
    else if (drawn < n)
        addPairs(row, n - drawn, capX, rng, c);
    layer.rng = rng;
}

void SyntheticRouting::clippedRate(double rate, int tokens, double& m1, double& m2, double& below) const
{
    // One sub-batch of `tokens` tokens: tokens * top_k pairs, each on the expert with probability
    // rate / pairs, at most `tokens` of them kept.
    const int pairs = tokens * m_topK;
    const double p = rate / pairs;
    // Below p = 0.05 the binomial is the Poisson to within 5% in variance: read from the tables.
    if (p < 0.05 && rate < detail::RandomTables::kPoissonTableMean && tokens < detail::RandomTables::kPoissonTail - 1)
        detail::RandomTables::get().clippedPoissonFromTable(rate, tokens, m1, m2, below);
    else
        detail::clippedBinomial(pairs, std::min(1.0, p), tokens, m1, m2, below);
}

double SyntheticRouting::capScale(CountScratch& c, int n) const
{
    // The factor on every expert's rate that keeps the row's expected pairs at n when sub-batch
    // caps clip the heavy experts: f(s) = sum over experts of E[pairs at rate s mu] - n = 0 by
    // Newton steps (f is increasing and concave in s; f(1) <= 0); the other experts' expected
    // pairs are s mu. 1 when the clipping loses less than 0.2% of the pairs (the exact total's
    // correction adds them back). Leaves the heavy experts' mean and standard deviation at that
    // scale in c.clipMean and c.clipSd.
    const auto gs = static_cast<std::size_t>(m_groupSize);
    const std::span<const int> heavy(c.heavy.data(), static_cast<std::size_t>(c.numHeavy));
    double heavyMu = 0.0;
    for (int x : heavy)
        heavyMu += c.mu[static_cast<std::size_t>(x)];
    const double lightMu = std::max(0.0, static_cast<double>(n) - heavyMu);
    double s = 1.0;
    for (int iteration = 0; iteration < 30; ++iteration) {
        double f = s * lightMu - static_cast<double>(n);
        double slope = lightMu;
        for (int xi : heavy) {
            const auto x = static_cast<std::size_t>(xi);
            const std::size_t j = x / gs;
            const int subs = c.subs[j];
            double m1 = 0.0;
            double m2 = 0.0;
            double below = 0.0;  // P(X < t): about d E[min(X, t)] / d rate
            clippedRate(s * c.mu[x] / subs, c.cap[j] / subs, m1, m2, below);
            c.clipMean[x] = subs * m1;
            c.clipSd[x] = std::sqrt(std::max(0.0, subs * (m2 - m1 * m1)));
            f += subs * m1;
            slope += c.mu[x] * below;
        }
        if (f >= -2e-3 * n || !(slope > 0.0))
            return s;
        s -= f / slope;
    }
    return s;
}

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

std::uint64_t SyntheticRouting::chooseRoutingGroups(const Layer& layer, const int* active, double perSlot,
                                                    detail::Rng& rng)
{
    m_chosen.clear();
    if (m_routingGroups == 1) {
        m_chosen.push_back(0);
        return 1;
    }
    // The source's mass in each routing group: steady part plus its active co-activation groups.
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    for (std::size_t j = 0; j < ng; ++j) {
        double w = layer.rgMassAll[j];
        for (int a = 0; a < m_activeGroups; ++a) {
            const auto g = static_cast<std::size_t>(active[a]);
            if (layer.coMass[g] > 0.0)
                w += perSlot * layer.coSubMassAll[g * ng + j] / layer.coMass[g];
        }
        m_groupWeight[j] = w;
    }
    std::uint64_t mask = 0;
    for (int c = 0; c < m_groupsPerToken; ++c) {
        double total = 0.0;
        for (std::size_t j = 0; j < ng; ++j)
            if (!((mask >> j) & 1u))
                total += m_groupWeight[j];
        double u = rng.uniform() * total;
        int pick = -1;
        for (std::size_t j = 0; j < ng; ++j) {
            if ((mask >> j) & 1u)
                continue;
            pick = static_cast<int>(j);  // the last free group if rounding runs past the end
            u -= m_groupWeight[j];
            if (u < 0.0)
                break;
        }
        mask |= std::uint64_t{1} << pick;
        m_chosen.push_back(pick);
    }
    return mask;
}

void SyntheticRouting::sampleSource(Layer& layer, int src, RoutingSample::Count* row)
{
    const int numSub = std::min(m_options.group_subbatches, std::max(m_tokensPerGpu, 1));
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    const int* active = layer.active.data() + static_cast<std::size_t>(src) * static_cast<std::size_t>(m_activeGroups);
    // Mass that follows the active groups, split evenly over the active slots.
    const double perSlot = m_activeGroups > 0 ? m_options.group_share * layer.temporalMass / m_activeGroups : 0.0;
    detail::Rng rng = layer.rng;  // a local copy stays in registers in the hot loops
    if (numSub > 1)
        std::fill_n(row, m_numExperts, 0);

    for (int b = 0; b < numSub; ++b) {
        const int tokens = m_tokensPerGpu / numSub + (b < m_tokensPerGpu % numSub ? 1 : 0);
        if (tokens == 0) {
            if (numSub == 1)
                std::fill_n(row, m_numExperts, 0);
            continue;
        }
        const std::uint64_t mask = chooseRoutingGroups(layer, active, perSlot, rng);

        // Mixture components restricted to the chosen routing groups.
        m_components.clear();
        const auto steady = [&](int j, double mass) {
            const auto ju = static_cast<std::size_t>(j);
            const std::size_t base = ju * static_cast<std::size_t>(m_groupSize);
            m_components.push_back({&layer.rgTables[ju], m_identity.data() + base, static_cast<int>(base), mass, 0});
        };
        for (int j : m_chosen)
            if (layer.rgMass[static_cast<std::size_t>(j)] > 0.0)
                steady(j, layer.rgMass[static_cast<std::size_t>(j)]);
        for (int a = 0; a < m_activeGroups; ++a) {
            const auto g = static_cast<std::size_t>(active[a]);
            if (!(layer.coMass[g] > 0.0))
                continue;
            for (int j : m_chosen) {
                const std::size_t sub = g * ng + static_cast<std::size_t>(j);
                const double mass = perSlot * layer.coSubMass[sub] / layer.coMass[g];
                if (mass > 0.0)
                    m_components.push_back(
                        {&layer.coSubTables[sub], layer.coMembers.data() + layer.coSubOffset[sub], -1, mass, 0});
            }
        }
        collectHeavy(layer, active, perSlot, mask);
        if (m_components.empty())  // all mass in heavy experts: what they cannot take goes uniformly
            steady(m_chosen.front(), 0.0);

        if (numSub == 1) {
            std::fill_n(row, m_numExperts, 0);
            fillBatch(row, tokens, tokens * m_topK, mask, rng);
            continue;
        }
        // m_subCounts is all zero between sub-batches: only the chosen routing groups' experts
        // can be drawn, so only they are added to the row and cleared (all of them after the rare
        // fallback that places a pair outside the chosen groups).
        RoutingSample::Count* counts = m_subCounts.data();
        m_outsideMask = false;
        fillBatch(counts, tokens, tokens * m_topK, mask, rng);
        if (m_outsideMask) {
            for (int x = 0; x < m_numExperts; ++x) {
                row[x] += counts[x];
                counts[x] = 0;
            }
            continue;
        }
        for (int j : m_chosen) {
            const int end = std::min(m_numExperts, (j + 1) * m_groupSize);
            for (int x = j * m_groupSize; x < end; ++x) {
                row[x] += counts[x];
                counts[x] = 0;
            }
        }
    }
    layer.rng = rng;
}

void SyntheticRouting::collectHeavy(const Layer& layer, const int* active, double perSlot, std::uint64_t mask)
{
    // The heavy experts in the chosen groups and their mass for this source: steady weight plus
    // what the source's active co-activation groups add.
    int n = 0;
    for (int x : layer.heavy) {
        if (((mask >> (x / m_groupSize)) & 1u) == 0)
            continue;
        const auto xu = static_cast<std::size_t>(x);
        double mass = layer.steady[xu];
        const int g = layer.coGroup[xu];
        if (g >= 0 && layer.coMass[static_cast<std::size_t>(g)] > 0.0) {
            const auto slots = std::count(active, active + m_activeGroups, g);
            mass += perSlot * static_cast<double>(slots) * layer.pop[xu] / layer.coMass[static_cast<std::size_t>(g)];
        }
        m_heavyIds[static_cast<std::size_t>(n)] = x;
        m_heavyMass[static_cast<std::size_t>(n)] = mass;
        ++n;
    }
    m_numHeavy = n;
}

void SyntheticRouting::splitPairs(int pairs, detail::Rng& rng)
{
    // Conditional binomials: component c gets Bin(pairs left, its share of the mass left).
    double massLeft = 0.0;
    for (const Component& c : m_components)
        massLeft += c.mass;
    for (std::size_t c = 0; c + 1 < m_components.size(); ++c) {
        Component& comp = m_components[c];
        comp.pairs = massLeft > 0.0 ? detail::binomial(rng, pairs, std::min(1.0, comp.mass / massLeft)) : 0;
        pairs -= comp.pairs;
        massLeft -= comp.mass;
    }
    m_components.back().pairs = pairs;
}

int SyntheticRouting::drawSplit(RoutingSample::Count* counts, int cap, detail::Rng& rng)
{
    // Two draws per 64-bit random word. A pair whose expert is full is rejected branch-free (the
    // test is a coin flip for the hot experts) and counted for a redraw.
    detail::Rng local = rng;  // in registers for the loop
    int rejected = 0;
    const auto put = [&](int x) {
        const int room = counts[x] < cap ? 1 : 0;
        counts[x] += room;
        rejected += 1 - room;
    };
    for (const Component& comp : m_components) {
        const detail::AliasTable& table = *comp.table;
        const int* ids = comp.ids;
        const int base = comp.base;
        int i = 0;
        if (base >= 0) {  // a contiguous range of experts: no id lookup
            for (; i + 1 < comp.pairs; i += 2) {
                const std::uint64_t r = local.next();
                put(base + table.sample(static_cast<std::uint32_t>(r >> 32)));
                put(base + table.sample(static_cast<std::uint32_t>(r)));
            }
        } else {
            for (; i + 1 < comp.pairs; i += 2) {
                const std::uint64_t r = local.next();
                put(ids[table.sample(static_cast<std::uint32_t>(r >> 32))]);
                put(ids[table.sample(static_cast<std::uint32_t>(r))]);
            }
        }
        if (i < comp.pairs)
            put(ids[table.sample(static_cast<std::uint32_t>(local.next() >> 32))]);
    }
    rng = local;
    return rejected;
}

int SyntheticRouting::drawMixed(RoutingSample::Count* counts, int cap, int pairs, detail::Rng& rng)
{
    // As drawSplit, with the component of each pair from the component table: cheaper than a
    // binomial split for the few pairs of a redraw.
    if (m_components.size() == 1) {  // one table: drawSplit's two draws per random word
        m_components.front().pairs = pairs;
        return drawSplit(counts, cap, rng);
    }
    detail::Rng local = rng;
    int rejected = 0;
    for (int i = 0; i < pairs; ++i) {
        const std::uint64_t r = local.next();
        const Component& comp =
            m_components[static_cast<std::size_t>(m_componentTable.sample(static_cast<std::uint32_t>(r >> 32)))];
        const int x = comp.ids[comp.table->sample(static_cast<std::uint32_t>(r))];
        const int room = counts[x] < cap ? 1 : 0;
        counts[x] += room;
        rejected += 1 - room;
    }
    rng = local;
    return rejected;
}

void SyntheticRouting::fillBatch(RoutingSample::Count* counts, int cap, int pairs, std::uint64_t mask, detail::Rng& rng)
{
    // Heavy experts first: Bin(pairs left, share of the mass left), clipped at the cap; what the
    // clip removes stays with the pairs left for the others. The components share the rest. A pair
    // whose expert is at the cap is redrawn from the same mixture until it lands on an expert with
    // room: the excess goes to the experts with room in proportion to their weight. Rejected pairs
    // are redrawn in rounds; a pathological skew ends with the first experts with room.
    // `counts` arrives all zero.
    double massLeft = 0.0;
    for (const Component& comp : m_components)
        massLeft += comp.mass;
    for (int h = 0; h < m_numHeavy; ++h)
        massLeft += m_heavyMass[static_cast<std::size_t>(h)];
    for (int h = 0; h < m_numHeavy && pairs > 0; ++h) {
        const double mass = m_heavyMass[static_cast<std::size_t>(h)];
        const int n = massLeft > 0.0 ? detail::binomial(rng, pairs, std::min(1.0, mass / massLeft)) : 0;
        const int c = std::min(n, cap);
        counts[m_heavyIds[static_cast<std::size_t>(h)]] = static_cast<RoutingSample::Count>(c);  // c <= cap
        pairs -= c;
        massLeft -= mass;
    }
    splitPairs(pairs, rng);
    int missing = drawSplit(counts, cap, rng);
    if (missing == 0)
        return;
    const std::size_t numComponents = m_components.size();
    for (std::size_t c = 0; c < numComponents; ++c)
        m_weightScratch[c] = m_components[c].mass;
    m_componentTable.build(std::span<const double>(m_weightScratch.data(), numComponents));
    for (int round = 0; missing > 0 && round < kMaxRounds; ++round)
        missing = drawMixed(counts, cap, missing, rng);
    for (; missing > 0; --missing) {
        const int x = firstWithRoom(counts, cap, mask, rng.next());
        m_outsideMask = m_outsideMask || ((mask >> (x / m_groupSize)) & 1u) == 0;
        ++counts[x];
    }
}

int SyntheticRouting::firstWithRoom(const RoutingSample::Count* counts, int cap, std::uint64_t mask, std::uint64_t r) const
{
    const auto start = static_cast<int>(((r >> 32) * static_cast<std::uint64_t>(m_numExperts)) >> 32);
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < m_numExperts; ++i) {
            const int x = (start + i) % m_numExperts;
            const bool allowed = pass == 1 || ((mask >> (x / m_groupSize)) & 1u) != 0;
            if (allowed && counts[x] < cap)
                return x;
        }
    }
    return start;  // unreachable: the caps of the chosen groups exceed the pairs of a batch
}

std::span<const double> SyntheticRouting::popularity(int layer) const
{
    return m_layers.at(static_cast<std::size_t>(layer)).pop;
}

std::span<const int> SyntheticRouting::coactivationGroup(int layer) const
{
    return m_layers.at(static_cast<std::size_t>(layer)).coGroup;
}

bool SyntheticRouting::isConsistent(int layer, int expert) const
{
    return m_layers.at(static_cast<std::size_t>(layer)).consistent.at(static_cast<std::size_t>(expert)) != 0;
}

}  // namespace moex
