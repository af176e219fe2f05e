#include "placement/placement.h"
#include "common/plural.h"

#include <algorithm>
#include <cmath>

namespace moex {

int LayerPlacement::numSlots() const
{
    int n = 0;
    for (const auto& g : gpu_slots)
        n += static_cast<int>(g.size());
    return n;
}

std::vector<int> LayerPlacement::replicaCounts(int numExperts) const
{
    std::vector<int> counts(static_cast<std::size_t>(numExperts), 0);
    for (const auto& g : gpu_slots)
        for (ExpertId e : g)
            if (e.valid() && e.value < numExperts)
                ++counts[e.index()];
    return counts;
}

std::vector<int> LayerPlacement::phy2log() const
{
    std::vector<int> out;
    out.reserve(static_cast<std::size_t>(numSlots()));
    for (const auto& g : gpu_slots)
        for (ExpertId e : g)
            out.push_back(e.value);
    return out;
}

int Placement::maxSlotsPerGpu() const
{
    std::size_t m = 0;
    for (const auto& l : layers)
        for (const auto& g : l.gpu_slots)
            m = std::max(m, g.size());
    return static_cast<int>(m);
}

Placement contiguousPlacement(int numExperts, int numGpus, int numLayers, int redundantSlots)
{
    Placement p;
    p.num_experts = numExperts;
    const int total = numExperts + redundantSlots;
    const int perGpu = (total + numGpus - 1) / numGpus;
    LayerPlacement layer;
    layer.gpu_slots.resize(static_cast<std::size_t>(numGpus));
    // Physical slot s holds expert s for s < E, then redundant slots cycle through the experts.
    // GPU g owns physical slots [g * perGpu, (g + 1) * perGpu) as every serving system does.
    for (int s = 0; s < total; ++s) {
        const int gpu = std::min(s / perGpu, numGpus - 1);
        layer.gpu_slots[static_cast<std::size_t>(gpu)].push_back(ExpertId(s % numExperts));
    }
    p.layers.assign(static_cast<std::size_t>(numLayers), layer);
    return p;
}

std::vector<std::string> checkPlacement(const Placement& p, int numExperts, int numGpus)
{
    std::vector<std::string> problems;
    for (int l = 0; l < p.numLayers(); ++l) {
        const auto& layer = p.layers[static_cast<std::size_t>(l)];
        const std::string where = "layer " + std::to_string(l) + ": ";
        if (layer.numGpus() != numGpus) {
            problems.push_back(where + "placement has " + std::to_string(layer.numGpus()) + " GPUs, topology has "
                               + std::to_string(numGpus));
            continue;
        }
        std::vector<int> count(static_cast<std::size_t>(numExperts), 0);
        for (int g = 0; g < numGpus; ++g) {
            for (ExpertId e : layer.gpu_slots[static_cast<std::size_t>(g)]) {
                if (!e.valid() || e.value >= numExperts) {
                    problems.push_back(where + "GPU " + std::to_string(g) + " names expert " + std::to_string(e.value)
                                       + ", but the model has experts 0.." + std::to_string(numExperts - 1));
                    continue;
                }
                ++count[e.index()];
            }
        }
        std::string missing;
        int nMissing = 0;
        for (int e = 0; e < numExperts; ++e) {
            if (count[static_cast<std::size_t>(e)] == 0) {
                if (nMissing < 8)
                    missing += (missing.empty() ? "" : ", ") + std::to_string(e);
                ++nMissing;
            }
        }
        if (nMissing > 0)
            problems.push_back(where + countOf(nMissing, "expert") + (nMissing == 1 ? " has" : " have") + " no slot: " + missing
                               + (nMissing > 8 ? ", ..." : ""));
        if (!layer.shares.empty()) {
            bool shaped = layer.shares.size() == layer.gpu_slots.size();
            for (std::size_t g = 0; shaped && g < layer.shares.size(); ++g)
                shaped = layer.shares[g].size() == layer.gpu_slots[g].size();
            if (!shaped) {
                problems.push_back(where + "shares must have the same shape as the slots");
                continue;
            }
            std::vector<double> sum(static_cast<std::size_t>(numExperts), 0.0);
            for (std::size_t g = 0; g < layer.shares.size(); ++g) {
                for (std::size_t s = 0; s < layer.shares[g].size(); ++s) {
                    const double v = layer.shares[g][s];
                    const ExpertId e = layer.gpu_slots[g][s];
                    if (!std::isfinite(v) || v < 0)
                        problems.push_back(where + "share of GPU " + std::to_string(g) + " slot "
                                           + std::to_string(s) + " must be a non-negative number");
                    else if (e.valid() && e.value < numExperts)
                        sum[e.index()] += v;
                }
            }
            for (int e = 0; e < numExperts; ++e)
                if (count[static_cast<std::size_t>(e)] > 0 && std::abs(sum[static_cast<std::size_t>(e)] - 1.0) > 1e-6)
                    problems.push_back(where + "shares of expert " + std::to_string(e) + " sum to "
                                       + std::to_string(sum[static_cast<std::size_t>(e)]) + ", not 1");
        }
    }
    return problems;
}

}  // namespace moex
