#include "workload/synthetic_routing.h"

#include "common/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

// The model (set-up, drift, active groups) and the stepping; the two samplers are in
// synthetic_routing_counts.cpp and synthetic_routing_pairs.cpp.

namespace moex {

namespace {

// An expert is heavy (drawn first, by a clipped binomial) when its steady share is at least this
// fraction of the cap's share 1/top_k, even when the lightest routing groups are chosen.
constexpr double kHeavyShare = 0.5;

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
    m_raceAvx2 = options.vector_kernels && detail::race8HasAvx2();
    m_drawAvx512 = options.vector_kernels && detail::poissonRowHasAvx512();
    m_wordsAvx512 = options.vector_kernels && detail::counterWordsHasAvx512();
    m_clipAvx512 = options.vector_kernels && detail::clippedBinomialHasAvx512();
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

void SyntheticRouting::sourceGroupMass(const Layer& layer, const int* active, double perSlot, double* mass) const
{
    // The source's mass per routing group: steady part plus its active co-activation groups.
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    for (std::size_t j = 0; j < ng; ++j) {
        double w = layer.rgMassAll[j];
        for (int a = 0; a < m_activeGroups; ++a) {
            const auto g = static_cast<std::size_t>(active[a]);
            if (layer.coMass[g] > 0.0)
                w += perSlot * layer.coSubMassAll[g * ng + j] / layer.coMass[g];
        }
        mass[j] = w;
    }
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
