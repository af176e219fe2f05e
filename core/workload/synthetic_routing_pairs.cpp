// The pairs sampler of SyntheticRouting (RoutingSampler::pairs, the reference): every token-expert
// pair of a sub-batch drawn from alias tables, heavy experts first.
#include "workload/synthetic_routing.h"

#include <algorithm>

namespace moex {

namespace {

// Rejected pairs (their expert was full) are redrawn in at most this many rounds before the first
// experts with room take the rest: keeps a pathological skew from looping.
constexpr int kMaxRounds = 64;

}  // namespace

std::uint64_t SyntheticRouting::chooseRoutingGroups(const Layer& layer, const int* active, double perSlot,
                                                    detail::Rng& rng)
{
    m_chosen.clear();
    if (m_routingGroups == 1) {
        m_chosen.push_back(0);
        return 1;
    }
    const auto ng = static_cast<std::size_t>(m_routingGroups);
    sourceGroupMass(layer, active, perSlot, m_groupWeight.data());
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
    const int numSub = subBatchCount();
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

}  // namespace moex
