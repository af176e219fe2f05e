#include "workload/synthetic_routing.h"

#include "common/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <string>

namespace moex {

namespace {

// Rejected pairs (their expert was full) are redrawn in at most this many rounds before the first
// experts with room take the rest: keeps a pathological skew from looping.
constexpr int kMaxRounds = 64;
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
    reset();
}

void SyntheticRouting::reset()
{
    m_step = 0;
    m_layers.resize(static_cast<std::size_t>(m_numLayers));
    for (int l = 0; l < m_numLayers; ++l) {
        Layer& layer = m_layers[static_cast<std::size_t>(l)];
        initLayer(l, layer);
        rebuildTables(layer);
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

void SyntheticRouting::rebuildTables(Layer& layer)
{
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
        layer.rgMassAll[j] = std::accumulate(layer.steady.begin() + static_cast<std::ptrdiff_t>(j * gs),
                                             layer.steady.begin() + static_cast<std::ptrdiff_t>((j + 1) * gs), 0.0);
        layer.rgTables[j].build(part);
    }
    std::fill(layer.coMass.begin(), layer.coMass.end(), 0.0);
    for (std::size_t sub = 0; sub < layer.coSubTables.size(); ++sub) {
        const auto begin = static_cast<std::size_t>(layer.coSubOffset[sub]);
        const auto end = static_cast<std::size_t>(layer.coSubOffset[sub + 1]);
        double mass = 0.0;
        double all = 0.0;
        for (std::size_t i = begin; i < end; ++i) {
            const auto x = static_cast<std::size_t>(layer.coMembers[i]);
            all += layer.pop[x];
            mass += w[i - begin] = m_flag[x] ? 0.0 : layer.pop[x];
        }
        layer.coSubMass[sub] = mass;
        layer.coSubMassAll[sub] = all;
        layer.coMass[sub / ng] += all;
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
    if (!layer.tablesValid)
        rebuildTables(layer);
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
    for (int l = 0; l < m_numLayers; ++l) {
        Layer& layer = m_layers[static_cast<std::size_t>(l)];
        if (m_step > 0)
            advance(layer);
        for (int s = 0; s < m_numGpus; ++s)
            sampleSource(layer, s, out.row(l, s).data());
    }
    ++m_step;
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
