#include "placement/search_layer.h"

#include <cmath>
#include <stdexcept>

namespace moex::search_internal {

Layout toLayout(const LayerPlacement& lp)
{
    Layout l;
    l.gpus = lp.numGpus();
    l.perGpu = l.gpus > 0 ? static_cast<int>(lp.gpu_slots.front().size()) : 0;
    for (int g = 0; g < l.gpus; ++g) {
        const auto& slots = lp.gpu_slots[static_cast<std::size_t>(g)];
        if (static_cast<int>(slots.size()) != l.perGpu)
            throw std::invalid_argument("search: every GPU must hold the same number of slots");
        for (std::size_t k = 0; k < slots.size(); ++k) {
            l.expert.push_back(slots[k].value);
            if (!lp.shares.empty())
                l.share.push_back(lp.shares[static_cast<std::size_t>(g)][k]);
        }
    }
    return l;
}

void toLayer(const Layout& l, LayerPlacement& out)
{
    out.gpu_slots.resize(static_cast<std::size_t>(l.gpus));
    if (l.share.empty())
        out.shares.clear();
    else
        out.shares.resize(static_cast<std::size_t>(l.gpus));
    for (int g = 0; g < l.gpus; ++g) {
        auto& slots = out.gpu_slots[static_cast<std::size_t>(g)];
        slots.resize(static_cast<std::size_t>(l.perGpu));
        for (int k = 0; k < l.perGpu; ++k)
            slots[static_cast<std::size_t>(k)] = ExpertId(l.expert[static_cast<std::size_t>(g * l.perGpu + k)]);
        if (!l.share.empty())
            out.shares[static_cast<std::size_t>(g)].assign(l.share.begin() + g * l.perGpu,
                                                           l.share.begin() + (g + 1) * l.perGpu);
    }
}

bool hasColocation(const Layout& l)
{
    for (std::size_t s = 0; s < l.expert.size(); ++s) {
        const auto g = static_cast<std::size_t>(l.gpuOf(static_cast<int>(s)));
        for (std::size_t t = g * static_cast<std::size_t>(l.perGpu); t < s; ++t)
            if (l.expert[t] == l.expert[s])
                return true;
    }
    return false;
}

bool LayerSearch::swapSlots(Layout& l, int i, int j)
{
    const int gi = l.gpuOf(i), gj = l.gpuOf(j);
    const int ei = l.expert[static_cast<std::size_t>(i)], ej = l.expert[static_cast<std::size_t>(j)];
    if (gi == gj || ei == ej || l.holds(gj, ei) || l.holds(gi, ej))
        return false;
    std::swap(l.expert[static_cast<std::size_t>(i)], l.expert[static_cast<std::size_t>(j)]);
    if (!l.share.empty())
        std::swap(l.share[static_cast<std::size_t>(i)], l.share[static_cast<std::size_t>(j)]);
    return true;
}

int LayerSearch::closestTrade(const Layout& l, int i, int h, int avoidExpert) const
{
    int best = -1;
    double bestGap = 0;
    const double li = slotLoad(l, i);
    const int gi = l.gpuOf(i), ei = l.expert[static_cast<std::size_t>(i)];
    if (h == gi || l.holds(h, ei))
        return -1;
    for (int j = h * l.perGpu; j < (h + 1) * l.perGpu; ++j) {
        const int ej = l.expert[static_cast<std::size_t>(j)];
        if (ej == avoidExpert || ej == ei || l.holds(gi, ej))
            continue;
        const double gap = std::abs(slotLoad(l, j) - li);
        if (best < 0 || gap < bestGap) {
            best = j;
            bestGap = gap;
        }
    }
    return best;
}

template <class Better> int LayerSearch::replicatedSlot(const Layout& l, int tries, Better better)
{
    int pick = -1;
    for (int drawn = 0, found = 0; drawn < 4 * tries && found < tries; ++drawn) {
        const int s = below(static_cast<int>(l.expert.size()));
        if (m_count[static_cast<std::size_t>(l.expert[static_cast<std::size_t>(s)])] < 2)
            continue;
        ++found;
        if (pick < 0 || better(s, pick))
            pick = s;
    }
    return pick;
}

void LayerSearch::descendBalance(Layout& l, double target)
{
    const int R = static_cast<int>(l.expert.size()), S = l.perGpu, G = l.gpus;
    for (int iter = 0; iter < 4 * R; ++iter) {
        if (balance(l) <= target * (1 + kBalanceSlack))
            return;
        int top = 0, second = -1;
        for (int g = 1; g < G; ++g)
            if (m_gpuLoad[static_cast<std::size_t>(g)] > m_gpuLoad[static_cast<std::size_t>(top)])
                top = g;
        for (int g = 0; g < G; ++g)
            if (g != top &&
                (second < 0 || m_gpuLoad[static_cast<std::size_t>(g)] > m_gpuLoad[static_cast<std::size_t>(second)]))
                second = g;
        const double peak = m_gpuLoad[static_cast<std::size_t>(top)];
        double bestPeak = peak;
        int bestI = -1, bestJ = -1, bestExpert = -1;
        for (int i = top * S; i < (top + 1) * S; ++i) {
            const double li = slotLoad(l, i);
            for (int j = 0; j < R; ++j) {
                const int h = l.gpuOf(j);
                if (h == top)
                    continue;
                const int ei = l.expert[static_cast<std::size_t>(i)], ej = l.expert[static_cast<std::size_t>(j)];
                if (ei == ej || l.holds(h, ei) || l.holds(top, ej))
                    continue;
                const double lj = slotLoad(l, j);
                const double rest =
                    h == second ? 0.0 : (second >= 0 ? m_gpuLoad[static_cast<std::size_t>(second)] : 0.0);
                const double after = std::max({peak - li + lj, m_gpuLoad[static_cast<std::size_t>(h)] - lj + li, rest});
                if (after < bestPeak * (1 - 1e-12)) {
                    bestPeak = after;
                    bestI = i;
                    bestJ = j;
                }
            }
        }
        m_order.resize(m_load.size());
        std::iota(m_order.begin(), m_order.end(), 0);
        const auto few = std::min<std::size_t>(8, m_order.size());
        std::partial_sort(
            m_order.begin(), m_order.begin() + static_cast<std::ptrdiff_t>(few), m_order.end(), [&](int x, int y) {
                const double lx = m_load[static_cast<std::size_t>(x)] / m_count[static_cast<std::size_t>(x)];
                const double ly = m_load[static_cast<std::size_t>(y)] / m_count[static_cast<std::size_t>(y)];
                return lx != ly ? lx > ly : x < y;
            });
        m_order.resize(few);
        m_trial = l;
        for (int i = top * S; i < (top + 1) * S; ++i) {
            const int a = l.expert[static_cast<std::size_t>(i)];
            if (m_count[static_cast<std::size_t>(a)] < 2)
                continue;
            for (const int b : m_order) {
                if (b == a || m_count[static_cast<std::size_t>(b)] >= G || l.holds(top, b))
                    continue;
                m_trial.expert[static_cast<std::size_t>(i)] = b;
                const double after = balance(m_trial) * sumLoad() / G;
                m_trial.expert[static_cast<std::size_t>(i)] = a;
                if (after < bestPeak * (1 - 1e-12)) {
                    bestPeak = after;
                    bestI = i;
                    bestJ = -1;
                    bestExpert = b;
                }
            }
            counts(l);  // balance(m_trial) recounted; restore l's counts
        }
        if (bestI < 0)
            return;
        if (bestJ >= 0) {
            std::swap(l.expert[static_cast<std::size_t>(bestI)], l.expert[static_cast<std::size_t>(bestJ)]);
        } else {
            l.expert[static_cast<std::size_t>(bestI)] = bestExpert;
        }
        l.share.clear();
    }
}

bool LayerSearch::propose(const Layout& cur, Layout& c)
{
    c.gpus = cur.gpus;
    c.perGpu = cur.perGpu;
    c.expert = cur.expert;
    c.share = cur.share;
    proxy(c);
    int weights[kMoves] = {30,
                           15,
                           15,
                           m_partners ? 10 : 0,
                           m_partners ? 10 : 0,
                           m_multiDomain ? 10 : 0,
                           m_multiDomain && m_partners ? 10 : 0,
                           c.share.empty() ? 0 : 15};
    int total = 0;
    for (int w : weights)
        total += w;
    int r = below(total), move = 0;
    while (r >= weights[move])
        r -= weights[move++];
    switch (static_cast<Move>(move)) {
    case heavyLight: return heavyToLight(c);
    case randomSwap: return swapAtRandom(c);
    case reReplicate: return reReplicateSlot(c);
    case colocate: return colocatePartners(c);
    case separate: return separatePartners(c);
    case spreadDomains: return spreadOverDomains(c);
    case joinDomain: return joinPartnerDomain(c);
    case shiftShare: return shiftReplicaShare(c);
    case kMoves: break;
    }
    return false;
}

bool LayerSearch::heavyToLight(Layout& c)
{
    const int G = c.gpus, S = c.perGpu;
    m_order.resize(static_cast<std::size_t>(G));
    std::iota(m_order.begin(), m_order.end(), 0);
    std::stable_sort(m_order.begin(), m_order.end(), [&](int a, int b) {
        return m_gpuLoad[static_cast<std::size_t>(a)] > m_gpuLoad[static_cast<std::size_t>(b)];
    });
    const int g = m_order[static_cast<std::size_t>(below(std::min(3, G)))];
    const int h = m_order[static_cast<std::size_t>(G - 1 - below(std::max(1, G / 2)))];
    return swapSlots(c, g * S + below(S), h * S + below(S));
}

bool LayerSearch::swapAtRandom(Layout& c)
{
    const int G = c.gpus, S = c.perGpu;
    const int g = below(G), h = (g + 1 + below(G - 1)) % G;
    return swapSlots(c, g * S + below(S), h * S + below(S));
}

bool LayerSearch::reReplicateSlot(Layout& c)
{
    const int G = c.gpus;
    const int i = replicatedSlot(c, 4, [&](int a, int b) { return slotLoad(c, a) < slotLoad(c, b); });
    if (i < 0)
        return false;
    const int donor = c.expert[static_cast<std::size_t>(i)], g = c.gpuOf(i);
    int receiver = -1;
    for (int t = 0; t < 4; ++t) {
        const int e = below(static_cast<int>(m_load.size()));
        const auto eu = static_cast<std::size_t>(e);
        if (e == donor || m_count[eu] >= G || c.holds(g, e))
            continue;
        if (receiver < 0 || m_load[eu] / m_count[eu] > m_load[static_cast<std::size_t>(receiver)] /
                                                           m_count[static_cast<std::size_t>(receiver)])
            receiver = e;
    }
    if (receiver < 0 || m_load[static_cast<std::size_t>(receiver)] / m_count[static_cast<std::size_t>(receiver)] <=
                            m_load[static_cast<std::size_t>(donor)] / m_count[static_cast<std::size_t>(donor)])
        return false;
    if (!c.share.empty())
        reshare(c, i, donor, receiver);
    c.expert[static_cast<std::size_t>(i)] = receiver;
    return true;
}

bool LayerSearch::colocatePartners(Layout& c)
{
    const auto [i, ps] = randomSlotWithPartners(c);
    if (!ps)
        return false;
    const int f = (*ps)[static_cast<std::size_t>(below(std::min<int>(3, static_cast<int>(ps->size()))))].first;
    m_order.clear();
    for (int s = 0; s < static_cast<int>(c.expert.size()); ++s)
        if (c.expert[static_cast<std::size_t>(s)] == f)
            m_order.push_back(c.gpuOf(s));
    if (m_order.empty())
        return false;
    const int h = m_order[static_cast<std::size_t>(below(static_cast<int>(m_order.size())))];
    const int j = closestTrade(c, i, h, f);
    return j >= 0 && swapSlots(c, i, j);
}

bool LayerSearch::separatePartners(Layout& c)
{
    const int G = c.gpus, S = c.perGpu;
    const int g = below(G);
    int pick = -1;
    double strongest = 0;
    for (int a = g * S; a < (g + 1) * S; ++a) {
        const auto* ps = partnersOf(c.expert[static_cast<std::size_t>(a)]);
        for (int b = g * S; ps && b < (g + 1) * S; ++b)
            for (const auto& [f, ex] : *ps)
                if (f == c.expert[static_cast<std::size_t>(b)] && ex > strongest) {
                    strongest = ex;
                    pick = below(2) ? a : b;
                }
    }
    if (pick < 0)
        return false;
    const int j = closestTrade(c, pick, (g + 1 + below(G - 1)) % G);
    return j >= 0 && swapSlots(c, pick, j);
}

bool LayerSearch::spreadOverDomains(Layout& c)
{
    const int G = c.gpus;
    const int i = replicatedSlot(c, 4, [&](int a, int b) { return slotLoad(c, a) > slotLoad(c, b); });
    if (i < 0)
        return false;
    const int e = c.expert[static_cast<std::size_t>(i)], d = domainOf(c.gpuOf(i));
    const int domains = G / m_domainSize;
    m_order.assign(static_cast<std::size_t>(domains), 0);
    for (int s = 0; s < static_cast<int>(c.expert.size()); ++s)
        if (c.expert[static_cast<std::size_t>(s)] == e)
            ++m_order[static_cast<std::size_t>(domainOf(c.gpuOf(s)))];
    if (m_order[static_cast<std::size_t>(d)] < 2)
        return false;
    const int start = below(domains);
    for (int k = 0; k < domains; ++k) {
        const int to = (start + k) % domains;
        if (m_order[static_cast<std::size_t>(to)] > 0)
            continue;
        const int h = to * m_domainSize + below(m_domainSize);
        const int j = closestTrade(c, i, h);
        return j >= 0 && swapSlots(c, i, j);
    }
    return false;
}

bool LayerSearch::joinPartnerDomain(Layout& c)
{
    const auto [i, ps] = randomSlotWithPartners(c);
    if (!ps)
        return false;
    const int f = ps->front().first, d = domainOf(c.gpuOf(i));
    int target = -1;
    for (int s = 0; s < static_cast<int>(c.expert.size()); ++s) {
        if (c.expert[static_cast<std::size_t>(s)] != f)
            continue;
        if (domainOf(c.gpuOf(s)) == d)
            return false;  // already together
        target = domainOf(c.gpuOf(s));
    }
    if (target < 0)
        return false;
    const int j = closestTrade(c, i, target * m_domainSize + below(m_domainSize), f);
    return j >= 0 && swapSlots(c, i, j);
}

bool LayerSearch::shiftReplicaShare(Layout& c)
{
    const int i = replicatedSlot(c, 1, [](int, int) { return false; });
    if (i < 0)
        return false;
    const int e = c.expert[static_cast<std::size_t>(i)];
    int from = -1, to = -1;
    for (int s = 0; s < static_cast<int>(c.expert.size()); ++s) {
        if (c.expert[static_cast<std::size_t>(s)] != e)
            continue;
        const double level = m_gpuLoad[static_cast<std::size_t>(c.gpuOf(s))];
        if (c.share[static_cast<std::size_t>(s)] > 0 &&
            (from < 0 || level > m_gpuLoad[static_cast<std::size_t>(c.gpuOf(from))]))
            from = s;
        if (to < 0 || level < m_gpuLoad[static_cast<std::size_t>(c.gpuOf(to))])
            to = s;
    }
    if (from < 0 || from == to)
        return false;
    const double delta = c.share[static_cast<std::size_t>(from)] * (0.25 + 0.75 * m_rng.uniform());
    c.share[static_cast<std::size_t>(from)] -= delta;
    c.share[static_cast<std::size_t>(to)] += delta;
    return true;
}

void LayerSearch::reshare(Layout& c, int i, int donor, int receiver) const
{
    const double freed = c.share[static_cast<std::size_t>(i)];
    double rest = 0;
    for (std::size_t s = 0; s < c.expert.size(); ++s)
        if (c.expert[s] == donor && static_cast<int>(s) != i)
            rest += c.share[s];
    const double n = m_count[static_cast<std::size_t>(donor)] - 1;
    for (std::size_t s = 0; s < c.expert.size(); ++s) {
        if (c.expert[s] == donor && static_cast<int>(s) != i)
            c.share[s] = rest > 0 ? c.share[s] * (rest + freed) / rest : 1.0 / n;
        else if (c.expert[s] == receiver)
            c.share[s] *=
                m_count[static_cast<std::size_t>(receiver)] / (m_count[static_cast<std::size_t>(receiver)] + 1.0);
    }
    c.share[static_cast<std::size_t>(i)] = 1.0 / (m_count[static_cast<std::size_t>(receiver)] + 1.0);
}

}  // namespace moex::search_internal
