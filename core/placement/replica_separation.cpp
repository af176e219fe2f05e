#include "placement/replica_separation.h"
#include "common/plural.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace moex {

namespace {

struct Candidate {
    double max_load = std::numeric_limits<double>::infinity();
    double squares = std::numeric_limits<double>::infinity();
    int gpu = -1;
    int slot = -1;
    [[nodiscard]] auto key() const { return std::tie(max_load, squares, gpu, slot); }
};

// The largest load among GPUs other than a and b, from the three largest (value, gpu) pairs.
double maxExcept(const std::vector<std::pair<double, int>>& top, int a, int b)
{
    for (const auto& [v, g] : top)
        if (g != a && g != b)
            return v;
    return 0;
}

// The extra copy of one expert on GPU g at local slot j: the best swap partner, or gpu -1.
Candidate bestSwap(const LayerPlacement& layer, const std::vector<double>& gpuLoad, const std::vector<double>& slotShare,
                   const std::vector<std::vector<char>>& holds, int g, int j, int gpusPerDomain)
{
    const int G = layer.numGpus();
    const int e = layer.gpu_slots[static_cast<std::size_t>(g)][static_cast<std::size_t>(j)].value;
    std::vector<std::pair<double, int>> top;
    for (int h = 0; h < G; ++h)
        top.emplace_back(gpuLoad[static_cast<std::size_t>(h)], h);
    const auto n = std::min<std::size_t>(3, top.size());
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(n), top.end(), std::greater<>());
    top.resize(n);

    Candidate best;
    for (int pass = 0; pass < 2 && best.gpu < 0; ++pass) {
        for (int h = 0; h < G; ++h) {
            const bool sameDomain = gpusPerDomain <= 0 || h / gpusPerDomain == g / gpusPerDomain;
            if (h == g || sameDomain != (pass == 0) || holds[static_cast<std::size_t>(h)][static_cast<std::size_t>(e)])
                continue;
            const auto& slots = layer.gpu_slots[static_cast<std::size_t>(h)];
            for (int k = 0; k < static_cast<int>(slots.size()); ++k) {
                const int f = slots[static_cast<std::size_t>(k)].value;
                if (f == e || holds[static_cast<std::size_t>(g)][static_cast<std::size_t>(f)])
                    continue;
                const double se = slotShare[static_cast<std::size_t>(e)];
                const double sf = slotShare[static_cast<std::size_t>(f)];
                const double lg = gpuLoad[static_cast<std::size_t>(g)] - se + sf;
                const double lh = gpuLoad[static_cast<std::size_t>(h)] - sf + se;
                Candidate c;
                c.max_load = std::max({lg, lh, maxExcept(top, g, h)});
                c.squares = lg * lg + lh * lh - gpuLoad[static_cast<std::size_t>(g)] * gpuLoad[static_cast<std::size_t>(g)]
                    - gpuLoad[static_cast<std::size_t>(h)] * gpuLoad[static_cast<std::size_t>(h)];
                c.gpu = h;
                c.slot = k;
                if (c.key() < best.key())
                    best = c;
            }
        }
    }
    return best;
}

}  // namespace

int separateColocatedInLayer(LayerPlacement& layer, const std::vector<double>& load, int gpusPerDomain,
                             SeparationReport* out, int l)
{
    SeparationReport scratch;
    SeparationReport& report = out ? *out : scratch;
    const std::size_t before = report.swaps.size();
    const int numExperts = static_cast<int>(load.size());
    const int G = layer.numGpus();
    const auto counts = layer.replicaCounts(numExperts);
    std::vector<double> slotShare(static_cast<std::size_t>(numExperts), 0.0);
    for (int e = 0; e < numExperts; ++e)
        if (counts[static_cast<std::size_t>(e)] > 0)
            slotShare[static_cast<std::size_t>(e)] = load[static_cast<std::size_t>(e)] / counts[static_cast<std::size_t>(e)];
    std::vector<double> gpuLoad = evenSplitGpuLoads(layer, load);
    std::vector<std::vector<char>> holds(static_cast<std::size_t>(G), std::vector<char>(static_cast<std::size_t>(numExperts), 0));
    for (int g = 0; g < G; ++g)
        for (ExpertId e : layer.gpu_slots[static_cast<std::size_t>(g)])
            holds[static_cast<std::size_t>(g)][e.index()] = 1;

    for (int g = 0; g < G; ++g) {
        auto& slots = layer.gpu_slots[static_cast<std::size_t>(g)];
        for (int j = 0; j < static_cast<int>(slots.size()); ++j) {
            const int e = slots[static_cast<std::size_t>(j)].value;
            const bool extra = std::any_of(slots.begin(), slots.begin() + j, [e](ExpertId x) { return x.value == e; });
            if (!extra)
                continue;
            const Candidate c = bestSwap(layer, gpuLoad, slotShare, holds, g, j, gpusPerDomain);
            if (c.gpu < 0) {
                report.left.push_back({l, g, e, 2});
                continue;
            }
            auto& other = layer.gpu_slots[static_cast<std::size_t>(c.gpu)];
            const int f = other[static_cast<std::size_t>(c.slot)].value;
            std::swap(slots[static_cast<std::size_t>(j)], other[static_cast<std::size_t>(c.slot)]);
            if (!layer.shares.empty())
                std::swap(layer.shares[static_cast<std::size_t>(g)][static_cast<std::size_t>(j)],
                          layer.shares[static_cast<std::size_t>(c.gpu)][static_cast<std::size_t>(c.slot)]);
            gpuLoad[static_cast<std::size_t>(g)] += slotShare[static_cast<std::size_t>(f)] - slotShare[static_cast<std::size_t>(e)];
            gpuLoad[static_cast<std::size_t>(c.gpu)] += slotShare[static_cast<std::size_t>(e)] - slotShare[static_cast<std::size_t>(f)];
            holds[static_cast<std::size_t>(g)][static_cast<std::size_t>(f)] = 1;
            holds[static_cast<std::size_t>(c.gpu)][static_cast<std::size_t>(e)] = 1;
            // g still holds e (its first copy); h may still hold f if it had two copies of f.
            holds[static_cast<std::size_t>(c.gpu)][static_cast<std::size_t>(f)] = static_cast<char>(
                std::any_of(other.begin(), other.end(), [f](ExpertId x) { return x.value == f; }));
            report.swaps.push_back({l, g, e, c.gpu, f});
        }
    }
    return static_cast<int>(report.swaps.size() - before);
}

SeparationReport separateColocatedReplicas(Placement& p, const std::vector<std::vector<double>>& load, int gpusPerDomain)
{
    const int E = p.num_experts;
    std::vector<std::vector<double>> uniform;
    if (load.empty())
        uniform.assign(static_cast<std::size_t>(p.numLayers()), std::vector<double>(static_cast<std::size_t>(E), 1.0));
    const auto& w = load.empty() ? uniform : load;
    if (static_cast<int>(w.size()) != p.numLayers())
        throw std::invalid_argument("separating replicas: the load has " + std::to_string(w.size())
                                    + " layers, the placement " + std::to_string(p.numLayers()));
    for (std::size_t l = 0; l < w.size(); ++l)
        if (static_cast<int>(w[l].size()) != E)
            throw std::invalid_argument("separating replicas: layer " + std::to_string(l) + " of the load has "
                                        + std::to_string(w[l].size()) + " experts, the placement "
                                        + std::to_string(E));
    SeparationReport report;
    report.balance_before = maxMeanGpuLoad(p, w);
    for (int l = 0; l < p.numLayers(); ++l)
        separateColocatedInLayer(p.layers[static_cast<std::size_t>(l)], w[static_cast<std::size_t>(l)], gpusPerDomain,
                                 &report, l);
    report.balance_after = report.swaps.empty() ? report.balance_before : maxMeanGpuLoad(p, w);
    return report;
}

std::string describeSeparation(const SeparationReport& r)
{
    char buf[160];
    std::snprintf(buf, sizeof buf, " by slot swaps: balance %.4f -> %.4f (%+.2f%%)", r.balance_before,
                  r.balance_after, r.costPercent());
    std::string out = "separated " + countOf(static_cast<long long>(r.swaps.size()), "colocated replica") + buf;
    if (!r.left.empty())
        out += "; " + std::to_string(r.left.size()) + " could not be separated (no GPU can trade a slot):\n"
               + describeColocated(r.left);
    return out;
}

}  // namespace moex
