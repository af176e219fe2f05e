// Internal to search.cpp: one layer as flat arrays and the local search over it (search.h
// describes the moves, the constraints and the budget).
#pragma once

#include "placement/cost_function.h"
#include "placement/gem.h"
#include "placement/placement.h"
#include "workload/synthetic_routing.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace moex::search_internal {

inline constexpr double kBalanceSlack = 1e-12;  // relative: rounding, not a real loss of balance

// One layer as flat arrays: GPU g owns slots [g * perGpu, (g + 1) * perGpu).
struct Layout {
    int gpus = 0;
    int perGpu = 0;
    std::vector<int> expert;
    std::vector<double> share;  // empty = no shares (the simulator's default replica rule)

    [[nodiscard]] bool holds(int g, int e) const
    {
        const auto* first = expert.data() + static_cast<std::ptrdiff_t>(g) * perGpu;
        return std::find(first, first + perGpu, e) != first + perGpu;
    }
    [[nodiscard]] int gpuOf(int slot) const { return slot / perGpu; }
};

Layout toLayout(const LayerPlacement& lp);           // throws when GPUs hold different slot counts
void toLayer(const Layout& l, LayerPlacement& out);  // reuses out's storage
bool hasColocation(const Layout& l);                 // two replicas of one expert on one GPU

class LayerSearch {
public:
    LayerSearch(PlacementObjective& objective, int layer, const std::vector<double>& load,
                const std::vector<double>& speed, const CoactivationPartners* partners, int numNodes,
                std::uint64_t seed)
        : m_objective(objective), m_layer(layer), m_load(load), m_speed(speed), m_partners(partners),
          m_domainSize(std::max(1, static_cast<int>(speed.size()) / std::max(1, numNodes))),
          m_multiDomain(numNodes > 1), m_rng(seed)
    {
    }

    double evaluate(const Layout& l)
    {
        toLayer(l, m_scratch);
        ++m_evaluations;
        return m_objective.layerTimeUs(m_layer, m_scratch);
    }

    // max / mean GPU load with even shares, as exports are judged.
    double balance(const Layout& l)
    {
        counts(l);
        m_gpuLoad.assign(static_cast<std::size_t>(l.gpus), 0.0);
        for (std::size_t s = 0; s < l.expert.size(); ++s) {
            const auto e = static_cast<std::size_t>(l.expert[s]);
            m_gpuLoad[static_cast<std::size_t>(l.gpuOf(static_cast<int>(s)))] += m_load[e] / m_count[e];
        }
        const double sum = std::accumulate(m_gpuLoad.begin(), m_gpuLoad.end(), 0.0);
        return sum > 0 ? *std::max_element(m_gpuLoad.begin(), m_gpuLoad.end()) * l.gpus / sum : 1.0;
    }

    // Lowers the largest GPU load (even shares) by the best single swap or replica move at a time
    // until the balance is at most `target` or no move lowers it; never makes a duplicate. No
    // evaluations: used when repairing eplb's colocated replicas cost balance.
    void descendBalance(Layout& l, double target);

    bool improve(Layout& cur, double& curTime, double balanceBound, long long evaluations)
    {
        bool improved = false;
        const long long cap = 16 * evaluations + 64;  // proposals, when constraints refuse many
        for (long long left = evaluations, proposals = 0; left > 0 && proposals < cap; ++proposals) {
            if (!propose(cur, m_cand) || balance(m_cand) > balanceBound * (1 + kBalanceSlack))
                continue;
            const double t = evaluate(m_cand);
            --left;
            if (t < curTime) {
                std::swap(cur, m_cand);
                curTime = t;
                improved = true;
            }
        }
        return improved;
    }

    [[nodiscard]] long long evaluations() const { return m_evaluations; }

private:
    enum Move {
        heavyLight,
        randomSwap,
        reReplicate,
        colocate,
        separate,
        spreadDomains,
        joinDomain,
        shiftShare,
        kMoves
    };

    double sumLoad() const { return std::accumulate(m_gpuLoad.begin(), m_gpuLoad.end(), 0.0); }
    void counts(const Layout& l)
    {
        m_count.assign(m_load.size(), 0);
        for (int e : l.expert)
            ++m_count[static_cast<std::size_t>(e)];
    }
    double slotLoad(const Layout& l, int s) const
    {
        const auto e = static_cast<std::size_t>(l.expert[static_cast<std::size_t>(s)]);
        return m_load[e] * (l.share.empty() ? 1.0 / m_count[e] : l.share[static_cast<std::size_t>(s)]);
    }
    // Load / speed per GPU as the layout routes it (shares, else even), into m_gpuLoad.
    void proxy(const Layout& l)
    {
        counts(l);
        m_gpuLoad.assign(static_cast<std::size_t>(l.gpus), 0.0);
        for (int s = 0; s < static_cast<int>(l.expert.size()); ++s)
            m_gpuLoad[static_cast<std::size_t>(l.gpuOf(s))] += slotLoad(l, s);
        for (int g = 0; g < l.gpus; ++g)
            m_gpuLoad[static_cast<std::size_t>(g)] /= m_speed[static_cast<std::size_t>(g)];
    }
    int below(int n) { return n > 0 ? static_cast<int>(m_rng.below(static_cast<std::uint32_t>(n))) : 0; }

    // Trades slots i and j (on different GPUs) unless that puts an expert twice on one GPU.
    static bool swapSlots(Layout& l, int i, int j);
    // The slot of GPU h whose load is closest to slot i's and that can trade with it (-1: none).
    int closestTrade(const Layout& l, int i, int h, int avoidExpert = -1) const;
    // A random slot whose expert has several replicas (tournament of `tries` by `better`), -1: none.
    template <class Better> int replicatedSlot(const Layout& l, int tries, Better better);
    const std::vector<std::pair<int, double>>* partnersOf(int e) const
    {
        if (!m_partners || (*m_partners)[static_cast<std::size_t>(e)].empty())
            return nullptr;
        return &(*m_partners)[static_cast<std::size_t>(e)];
    }
    int domainOf(int g) const { return g / m_domainSize; }
    // A random slot and its expert's co-activation partners (nullptr: none).
    std::pair<int, const std::vector<std::pair<int, double>>*> randomSlotWithPartners(const Layout& l)
    {
        const int i = below(static_cast<int>(l.expert.size()));
        return {i, partnersOf(l.expert[static_cast<std::size_t>(i)])};
    }

    // Draws one move (search.h lists them) and applies it to a copy of `cur` in `c`; false when
    // the drawn move does not apply.
    bool propose(const Layout& cur, Layout& c);
    // The moves, each on the copy `c` (m_gpuLoad and m_count describe it); false: not applicable.
    bool heavyToLight(Layout& c);
    bool swapAtRandom(Layout& c);
    bool reReplicateSlot(Layout& c);
    bool colocatePartners(Layout& c);
    bool separatePartners(Layout& c);
    bool spreadOverDomains(Layout& c);
    bool joinPartnerDomain(Layout& c);
    bool shiftReplicaShare(Layout& c);

    // Slot i changes from `donor` to `receiver`: the donor's other replicas take its share in
    // proportion to theirs; the receiver's new replica takes 1 / (its replicas), the others shrink.
    void reshare(Layout& c, int i, int donor, int receiver) const;

    PlacementObjective& m_objective;
    int m_layer;
    const std::vector<double>& m_load;
    const std::vector<double>& m_speed;
    const CoactivationPartners* m_partners;
    int m_domainSize;
    bool m_multiDomain;
    detail::Rng m_rng;
    long long m_evaluations = 0;
    LayerPlacement m_scratch;
    Layout m_cand, m_trial;
    std::vector<int> m_count, m_order;
    std::vector<double> m_gpuLoad;
};

}  // namespace moex::search_internal
