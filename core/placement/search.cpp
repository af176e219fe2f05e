#include "placement/search.h"

#include "placement/replica_separation.h"

#include "placement/search_layer.h"
#include "placement/search_steady.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moex {

namespace {

using search_internal::kBalanceSlack;
using search_internal::LayerSearch;
using search_internal::Layout;

constexpr int kStarts = 4;
const char* const kStartNames[kStarts] = {"contiguous", "round-robin", "eplb", "gem"};
// Evaluations a layer may add to its share when eplb's layout, colocated replicas and all, is still
// faster than anything found without them.
constexpr long long kExtraEvaluations = 64;
// Rounds (swaps) of steadySwaps per layer at most.
constexpr int kSteadyRounds = 64;

std::uint64_t mixSeed(std::uint64_t seed, int layer)
{
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(layer) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// The local search of one layer; see search.h for the moves.
}  // namespace

Placement searchPlacement(const PlacementRequest& rq, SearchReport* report)
{
    if (!rq.objective)
        throw std::invalid_argument(
            "placement: search needs an objective to minimise (the simulator's); none was given");
    PlacementObjective& objective = *rq.objective;
    const int E = rq.num_experts, G = rq.num_gpus;
    const int L = rq.num_layers > 0 ? rq.num_layers : static_cast<int>(rq.load.size());
    if (objective.numLayers() != L)
        throw std::invalid_argument("placement: the search objective has " + std::to_string(objective.numLayers()) +
                                    " MoE layers, the request " + std::to_string(L));
    const std::vector<double> speed =
        rq.gpu_speed.empty() ? std::vector<double>(static_cast<std::size_t>(G), 1.0) : rq.gpu_speed;
    const std::vector<double> uniform(static_cast<std::size_t>(E), 1.0);

    Placement starts[kStarts];
    for (int k = 0; k < kStarts; ++k) {
        PlacementRequest sub = rq;
        sub.strategy = kStartNames[k];
        sub.objective = nullptr;
        starts[k] = makePlacement(sub);
    }
    const long long total = std::llround(std::max(0.0, rq.budget_ms) * kSearchEvaluationsPerMs);
    SearchReport r;
    r.layers = L;
    Placement out;
    out.num_experts = E;
    out.layers.resize(static_cast<std::size_t>(L));
    for (int l = 0; l < L; ++l) {
        rq.cancel.check();
        const auto& load = rq.load.empty() ? uniform : rq.load[static_cast<std::size_t>(l)];
        CoactivationPartners partners;
        if (rq.coactivation)
            partners = coactivationPartners(rq.coactivation(l));
        const bool havePartners =
            std::any_of(partners.begin(), partners.end(), [](const auto& p) { return !p.empty(); });
        LayerSearch search(objective, l, load, speed, havePartners ? &partners : nullptr, rq.num_nodes,
                           mixSeed(rq.seed, l));

        const Layout eplb = search_internal::toLayout(starts[2].layers[static_cast<std::size_t>(l)]);
        const double eplbBalance = search.balance(eplb);
        const double eplbTime = search.evaluate(eplb);
        const bool eplbColocated = search_internal::hasColocation(eplb);
        Layout cur;
        double curTime = 0, bound = eplbBalance;
        int from = -1;
        Layout repairedEplb;
        for (int k = 0; k < kStarts; ++k) {
            LayerPlacement layer = starts[k].layers[static_cast<std::size_t>(l)];
            const int moved = separateColocatedInLayer(layer, load, G / std::max(1, rq.num_nodes));
            Layout candidate = search_internal::toLayout(layer);
            if (k == 2) {
                r.repaired_colocations += moved;
                // The repair may cost balance: win it back before timing it.
                if (moved > 0 && search.balance(candidate) > eplbBalance * (1 + kBalanceSlack))
                    search.descendBalance(candidate, eplbBalance);
                repairedEplb = candidate;
            }
            const double t = k == 2 && moved == 0 ? eplbTime : search.evaluate(candidate);
            if (search.balance(candidate) <= eplbBalance * (1 + kBalanceSlack) && (from < 0 || t < curTime)) {
                cur = std::move(candidate);
                curTime = t;
                from = k;
            }
        }
        if (from < 0) {  // no layout without colocated replicas is as balanced as eplb's
            cur = repairedEplb;
            curTime = search.evaluate(cur);
            bound = search.balance(cur);
            from = 2;
        }
        ++r.starts[from];
        r.start_time_us += curTime;
        if (!rq.step_load.empty()) {
            // Per-step noise: lower the steps' largest GPU loads, not only the mean's.
            Layout steady = cur;
            if (search_internal::steadySwaps(steady, rq.step_load[static_cast<std::size_t>(l)], load, speed, bound,
                                             kSteadyRounds).swaps > 0) {
                const double t = search.evaluate(steady);
                if (t < curTime) {
                    cur = std::move(steady);
                    curTime = t;
                    ++r.steady_layers;
                }
            }
        }
        const long long share = total / L + (l < total % L ? 1 : 0);
        if (search.improve(cur, curTime, bound, std::max(0LL, share - search.evaluations())))
            ++r.improved_layers;
        if (eplbColocated && curTime > eplbTime) {
            // eplb's own layout is out of reach (it has colocated replicas): keep searching a
            // little longer for a layout without them that is as fast.
            const long long before = search.evaluations();
            if (search.improve(cur, curTime, bound, kExtraEvaluations) && curTime <= eplbTime)
                ++r.improved_layers;
            r.extra_evaluations += search.evaluations() - before;
        }
        const bool slower = curTime > eplbTime;
        const bool lessBalanced = search.balance(cur) > eplbBalance * (1 + kBalanceSlack);
        if ((slower || lessBalanced) && !eplbColocated) {
            cur = eplb;
            curTime = eplbTime;
            ++r.fallback_layers;
        } else if (slower || lessBalanced) {
            ++r.unmatched_layers;
        }
        r.eplb_time_us += eplbTime;
        r.final_time_us += curTime;
        r.evaluations += search.evaluations();
        search_internal::toLayer(cur, out.layers[static_cast<std::size_t>(l)]);
    }
    if (report)
        *report = r;
    return out;
}

}  // namespace moex
