#include "placement/gem.h"

#include <queue>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moex {

namespace {

// Placing an expert beside a co-activated one costs excess x the smaller per-replica load, on top
// of its own load: at excess 1 (chosen together twice as often as chance) the pair weighs as if
// the lighter one were there twice, which is about what a batch that favours them both does.
constexpr double kCoactivationWeight = 1.0;
constexpr double kMaxExcess = 8.0;

bool holds(const std::vector<ExpertId>& gpu, int expert)
{
    return std::any_of(gpu.begin(), gpu.end(), [&](ExpertId e) { return e.value == expert; });
}

bool allEqual(const std::vector<double>& v)
{
    return std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); });
}

// Step 1: active slots per GPU. GPUs tied for the largest estimate give up a slot together
// (otherwise two equally slow GPUs would each block the other's step).
std::vector<int> activeSlotsPerGpu(int perGpu, const std::vector<double>& speed, int numExperts, double totalLoad)
{
    const int G = static_cast<int>(speed.size());
    std::vector<int> active(static_cast<std::size_t>(G), perGpu);
    if (allEqual(speed))
        return active;
    int sum = perGpu * G;
    const double load = totalLoad > 0 ? totalLoad : 1.0;
    std::vector<char> tied(static_cast<std::size_t>(G), 0);
    auto estimate = [&](int g, int activeSum, bool drop) {
        return (active[static_cast<std::size_t>(g)] - (drop ? 1 : 0)) * (load / activeSum) /
               speed[static_cast<std::size_t>(g)];
    };
    for (;;) {
        double now = 0;
        for (int g = 0; g < G; ++g)
            now = std::max(now, estimate(g, sum, false));
        int drop = 0;
        for (int g = 0; g < G; ++g) {
            tied[static_cast<std::size_t>(g)] = estimate(g, sum, false) >= now * (1.0 - 1e-9);
            drop += tied[static_cast<std::size_t>(g)];
            if (tied[static_cast<std::size_t>(g)] && active[static_cast<std::size_t>(g)] == 0)
                return active;
        }
        if (sum - drop < numExperts)
            return active;
        double after = 0;
        for (int g = 0; g < G; ++g)
            after = std::max(after, estimate(g, sum - drop, tied[static_cast<std::size_t>(g)] != 0));
        if (after >= now * (1.0 - 1e-9))
            return active;
        for (int g = 0; g < G; ++g)
            active[static_cast<std::size_t>(g)] -= tied[static_cast<std::size_t>(g)];
        sum -= drop;
    }
}

// Step 2: replica counts over `slots` active slots, EPLB's greedy (largest load per replica
// first, ties to the lower id), at most `maxPerExpert` each. Slots left over (every expert at
// the cap) are not handed out.
std::vector<int> replicaCounts(const std::vector<double>& load, int slots, int maxPerExpert)
{
    const int E = static_cast<int>(load.size());
    std::vector<int> count(static_cast<std::size_t>(E), 1);
    using Entry = std::pair<double, int>;  // (load per replica, -expert)
    std::priority_queue<Entry> heap;
    for (int e = 0; e < E; ++e)
        if (maxPerExpert > 1)
            heap.emplace(load[static_cast<std::size_t>(e)], -e);
    for (int extra = slots - E; extra > 0 && !heap.empty(); --extra) {
        const int e = -heap.top().second;
        heap.pop();
        auto& c = count[static_cast<std::size_t>(e)];
        ++c;
        if (c < maxPerExpert)
            heap.emplace(load[static_cast<std::size_t>(e)] / c, -e);
    }
    return count;
}

struct Assigner {
    const std::vector<double>& speed;
    LayerPlacement layer;
    std::vector<std::vector<double>> slotLoad;  // [gpu][slot] load of that replica
    std::vector<double> gpuLoad;
    std::vector<int> room;  // free active slots
    std::vector<char> hasConsistent;
    std::vector<double> excess;  // scratch: excess of the expert being placed with each other one

    void place(int g, int e, double w)
    {
        layer.gpu_slots[static_cast<std::size_t>(g)].emplace_back(e);
        slotLoad[static_cast<std::size_t>(g)].push_back(w);
        gpuLoad[static_cast<std::size_t>(g)] += w;
        --room[static_cast<std::size_t>(g)];
    }

    double score(int g, double w) const
    {
        double penalty = 0;
        const auto& slots = layer.gpu_slots[static_cast<std::size_t>(g)];
        for (std::size_t k = 0; k < slots.size(); ++k)
            penalty += excess[slots[k].index()] * std::min(w, slotLoad[static_cast<std::size_t>(g)][k]);
        return (gpuLoad[static_cast<std::size_t>(g)] + w + kCoactivationWeight * penalty) /
               speed[static_cast<std::size_t>(g)];
    }

    // Every GPU with room already holds e: trade e for an expert x of a full GPU g that lacks e,
    // x moving to a GPU h with room that lacks x.
    bool placeByTrade(int e, double w)
    {
        const int G = static_cast<int>(speed.size());
        for (int h = 0; h < G; ++h) {
            if (room[static_cast<std::size_t>(h)] == 0)
                continue;
            for (int g = 0; g < G; ++g) {
                auto& slots = layer.gpu_slots[static_cast<std::size_t>(g)];
                if (g == h || holds(slots, e))
                    continue;
                for (std::size_t k = 0; k < slots.size(); ++k) {
                    const int x = slots[k].value;
                    if (holds(layer.gpu_slots[static_cast<std::size_t>(h)], x))
                        continue;
                    const double wx = slotLoad[static_cast<std::size_t>(g)][k];
                    slots[k] = ExpertId(e);
                    slotLoad[static_cast<std::size_t>(g)][k] = w;
                    gpuLoad[static_cast<std::size_t>(g)] += w - wx;
                    place(h, x, wx);
                    return true;
                }
            }
        }
        return false;
    }
};

}  // namespace

CoactivationPartners coactivationPartners(const ExpertMatrix& c, int maxPartners)
{
    const int n = c.n;
    CoactivationPartners out(static_cast<std::size_t>(n));
    double diagonal = 0;
    for (int i = 0; i < n; ++i)
        diagonal += c.at(i, i);
    const double off = c.offDiagonalSum();
    if (diagonal <= 0 || off <= 0 || maxPartners <= 0)
        return out;
    // Independent choices with the same per-expert counts give c_ij = c_ii c_jj O / D^2.
    const double norm = diagonal * diagonal / off;
    std::vector<std::pair<int, double>> row;
    for (int i = 0; i < n; ++i) {
        row.clear();
        const double ci = c.at(i, i);
        for (int j = 0; j < n && ci > 0; ++j) {
            const double cj = c.at(j, j);
            if (j == i || cj <= 0)
                continue;
            const double excess = std::min(kMaxExcess, c.at(i, j) * norm / (ci * cj) - 1.0);
            if (excess > 0.05)
                row.emplace_back(j, excess);
        }
        const auto keep = std::min(row.size(), static_cast<std::size_t>(maxPartners));
        std::partial_sort(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(keep), row.end(),
                          [](const auto& a, const auto& b) {
                              return a.second != b.second ? a.second > b.second : a.first < b.first;
                          });
        out[static_cast<std::size_t>(i)].assign(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(keep));
    }
    return out;
}

std::vector<std::vector<double>> waterFillShares(const LayerPlacement& layer, const std::vector<double>& load,
                                                 const std::vector<double>& speed,
                                                 const std::vector<std::vector<char>>& standby)
{
    const int G = layer.numGpus();
    const int E = static_cast<int>(load.size());
    auto isStandby = [&](int g, std::size_t k) {
        return !standby.empty() && standby[static_cast<std::size_t>(g)][k] != 0;
    };
    // Replicas of each expert that take tokens, as (gpu, local slot).
    std::vector<std::vector<std::pair<int, std::size_t>>> replicas(static_cast<std::size_t>(E));
    for (int g = 0; g < G; ++g)
        for (std::size_t k = 0; k < layer.gpu_slots[static_cast<std::size_t>(g)].size(); ++k)
            if (!isStandby(g, k))
                replicas[layer.gpu_slots[static_cast<std::size_t>(g)][k].index()].emplace_back(g, k);
    std::vector<std::vector<double>> share(static_cast<std::size_t>(G));
    std::vector<double> level(static_cast<std::size_t>(G), 0.0);  // load on each GPU
    for (int g = 0; g < G; ++g)
        share[static_cast<std::size_t>(g)].assign(layer.gpu_slots[static_cast<std::size_t>(g)].size(), 0.0);
    for (int e = 0; e < E; ++e) {
        const auto& reps = replicas[static_cast<std::size_t>(e)];
        for (const auto& [g, k] : reps) {
            share[static_cast<std::size_t>(g)][k] = 1.0 / static_cast<double>(reps.size());
            level[static_cast<std::size_t>(g)] += load[static_cast<std::size_t>(e)] / static_cast<double>(reps.size());
        }
    }
    std::vector<int> order;
    for (int e = 0; e < E; ++e)
        if (replicas[static_cast<std::size_t>(e)].size() > 1 && load[static_cast<std::size_t>(e)] > 0)
            order.push_back(e);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return load[static_cast<std::size_t>(a)] > load[static_cast<std::size_t>(b)];
    });
    struct Level {
        double base, speed;
        std::size_t rep;
    };
    std::vector<Level> levels;
    for (int pass = 0; pass < 4; ++pass) {
        for (int e : order) {
            const auto& reps = replicas[static_cast<std::size_t>(e)];
            const double w = load[static_cast<std::size_t>(e)];
            bool distinct = true;
            for (std::size_t i = 0; i < reps.size(); ++i)
                for (std::size_t j = i + 1; j < reps.size(); ++j)
                    distinct = distinct && reps[i].first != reps[j].first;
            if (!distinct)
                continue;  // two replicas on one GPU (EPLB#22): keep their even split
            levels.clear();
            for (std::size_t r = 0; r < reps.size(); ++r) {
                const auto [g, k] = reps[r];
                level[static_cast<std::size_t>(g)] -= share[static_cast<std::size_t>(g)][k] * w;
                levels.push_back({level[static_cast<std::size_t>(g)], speed[static_cast<std::size_t>(g)], r});
            }
            std::sort(levels.begin(), levels.end(), [](const Level& a, const Level& b) {
                const double ta = a.base / a.speed, tb = b.base / b.speed;
                return ta != tb ? ta < tb : a.rep < b.rep;
            });
            // Fill the lowest levels first: with the first j replicas taking tokens, the common
            // level is (w + their bases) / (their speeds); stop where the next one sits above it.
            double baseSum = 0, speedSum = 0, lambda = 0;
            for (std::size_t j = 0; j < levels.size(); ++j) {
                baseSum += levels[j].base;
                speedSum += levels[j].speed;
                lambda = (w + baseSum) / speedSum;
                if (j + 1 == levels.size() || lambda <= levels[j + 1].base / levels[j + 1].speed)
                    break;
            }
            double total = 0;
            for (const Level& l : levels)
                total += std::max(0.0, lambda * l.speed - l.base);
            for (const Level& l : levels) {
                const auto [g, k] = reps[l.rep];
                const double s = total > 0 ? std::max(0.0, lambda * l.speed - l.base) / total
                                           : 1.0 / static_cast<double>(reps.size());
                share[static_cast<std::size_t>(g)][k] = s;
                level[static_cast<std::size_t>(g)] += s * w;
            }
        }
    }
    return share;
}

LayerPlacement gemLayer(const std::vector<double>& load, int numSlots, const std::vector<double>& speed,
                        const CoactivationPartners* partners)
{
    const int E = static_cast<int>(load.size());
    const int G = static_cast<int>(speed.size());
    if (E <= 0 || G <= 0 || numSlots < E || numSlots % G != 0)
        throw std::invalid_argument("gem: needs experts, GPUs and a slot count that is at least the experts and a "
                                    "multiple of the GPUs");
    const int perGpu = numSlots / G;
    const double total = std::accumulate(load.begin(), load.end(), 0.0);
    const std::vector<int> active = activeSlotsPerGpu(perGpu, speed, E, total);
    const int activeSum = std::accumulate(active.begin(), active.end(), 0);
    const std::vector<int> count = replicaCounts(load, activeSum, G);

    struct Item {
        double w;
        int e;
    };
    std::vector<Item> items;
    items.reserve(static_cast<std::size_t>(activeSum));
    for (int e = 0; e < E; ++e)
        for (int r = 0; r < count[static_cast<std::size_t>(e)]; ++r)
            items.push_back({load[static_cast<std::size_t>(e)] / count[static_cast<std::size_t>(e)], e});
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.w > b.w; });
    const double mean = total / E;
    auto consistent = [&](int e) {
        return total > 0 && load[static_cast<std::size_t>(e)] >= kGemConsistentLoad * mean;
    };

    Assigner a{speed,
               {},
               {},
               std::vector<double>(static_cast<std::size_t>(G), 0.0),
               active,
               std::vector<char>(static_cast<std::size_t>(G), 0),
               std::vector<double>(static_cast<std::size_t>(E), 0.0)};
    a.layer.gpu_slots.resize(static_cast<std::size_t>(G));
    a.slotLoad.resize(static_cast<std::size_t>(G));
    for (const Item& it : items) {
        if (partners)
            for (const auto& [f, ex] : (*partners)[static_cast<std::size_t>(it.e)])
                a.excess[static_cast<std::size_t>(f)] = ex;
        const bool spread = consistent(it.e);
        bool freeWithout = false;  // a GPU with room and no consistent expert yet
        for (int g = 0; spread && g < G; ++g)
            freeWithout = freeWithout ||
                          (a.room[static_cast<std::size_t>(g)] > 0 && !a.hasConsistent[static_cast<std::size_t>(g)] &&
                           !holds(a.layer.gpu_slots[static_cast<std::size_t>(g)], it.e));
        int best = -1;
        double bestScore = 0;
        for (int g = 0; g < G; ++g) {
            if (a.room[static_cast<std::size_t>(g)] == 0 || holds(a.layer.gpu_slots[static_cast<std::size_t>(g)], it.e))
                continue;
            if (freeWithout && a.hasConsistent[static_cast<std::size_t>(g)])
                continue;
            const double s = a.score(g, it.w);
            // Ties go to the faster GPU, then the lower index.
            if (best < 0 || s < bestScore ||
                (s == bestScore && speed[static_cast<std::size_t>(g)] > speed[static_cast<std::size_t>(best)])) {
                best = g;
                bestScore = s;
            }
        }
        if (best >= 0)
            a.place(best, it.e, it.w);
        else if (!a.placeByTrade(it.e, it.w))
            throw std::invalid_argument("gem: cannot place " + std::to_string(count[static_cast<std::size_t>(it.e)]) +
                                        " replicas of expert " + std::to_string(it.e) + " on distinct GPUs");
        if (spread && best >= 0)
            a.hasConsistent[static_cast<std::size_t>(best)] = 1;
        if (partners)
            for (const auto& [f, ex] : (*partners)[static_cast<std::size_t>(it.e)])
                a.excess[static_cast<std::size_t>(f)] = 0.0;
    }

    // Standby copies fill the slots that take no tokens: the coldest experts this GPU lacks, so
    // that a system splitting evenly (exports) loses the least balance to them.
    std::vector<int> byCold(static_cast<std::size_t>(E));
    std::iota(byCold.begin(), byCold.end(), 0);
    std::stable_sort(byCold.begin(), byCold.end(), [&](int x, int y) {
        return load[static_cast<std::size_t>(x)] < load[static_cast<std::size_t>(y)];
    });
    std::vector<int> copies = count;
    std::vector<std::vector<char>> standby(static_cast<std::size_t>(G));
    std::size_t next = 0;
    for (int g = 0; g < G; ++g) {
        auto& slots = a.layer.gpu_slots[static_cast<std::size_t>(g)];
        standby[static_cast<std::size_t>(g)].assign(slots.size(), 0);
        while (static_cast<int>(slots.size()) < perGpu) {
            int pick = -1;
            for (std::size_t tried = 0; tried < byCold.size() && pick < 0; ++tried) {
                const int e = byCold[(next + tried) % byCold.size()];
                if (!holds(slots, e) && copies[static_cast<std::size_t>(e)] < G) {
                    pick = e;
                    next = (next + tried + 1) % byCold.size();
                }
            }
            if (pick < 0)
                throw std::invalid_argument("gem: no expert left for a standby slot on GPU " + std::to_string(g));
            slots.emplace_back(pick);
            ++copies[static_cast<std::size_t>(pick)];
            standby[static_cast<std::size_t>(g)].push_back(1);
        }
    }
    if (!allEqual(speed))
        a.layer.shares = waterFillShares(a.layer, load, speed, standby);
    return std::move(a.layer);
}

Placement gemPlacement(const PlacementRequest& rq)
{
    const int E = rq.num_experts;
    const int G = rq.num_gpus;
    const int layers = rq.num_layers > 0 ? rq.num_layers : static_cast<int>(rq.load.size());
    const int slots = rq.num_slots > 0 ? rq.num_slots : E;
    const std::vector<double> speed =
        rq.gpu_speed.empty() ? std::vector<double>(static_cast<std::size_t>(G), 1.0) : rq.gpu_speed;
    const std::vector<double> uniform(static_cast<std::size_t>(E), 1.0);
    Placement p;
    p.num_experts = E;
    p.layers.reserve(static_cast<std::size_t>(layers));
    for (int l = 0; l < layers; ++l) {
        CoactivationPartners partners;
        if (rq.coactivation) {
            const ExpertMatrix m = rq.coactivation(l);
            if (m.n != E)
                throw std::invalid_argument("gem: the co-activation of MoE layer " + std::to_string(l) + " is " +
                                            std::to_string(m.n) + " x " + std::to_string(m.n) + ", the model has " +
                                            std::to_string(E) + " experts");
            partners = coactivationPartners(m);
        }
        const auto& row = rq.load.empty() ? uniform : rq.load[static_cast<std::size_t>(l)];
        p.layers.push_back(gemLayer(row, slots, speed, rq.coactivation ? &partners : nullptr));
    }
    return p;
}

}  // namespace moex
