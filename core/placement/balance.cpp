#include "placement/balance.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace moex {

std::vector<double> evenSplitGpuLoads(const LayerPlacement& layer, const std::vector<double>& load)
{
    const auto counts = layer.replicaCounts(static_cast<int>(load.size()));
    for (const auto& g : layer.gpu_slots)
        for (ExpertId e : g)
            if (!e.valid() || e.index() >= load.size())
                throw std::invalid_argument("balance: the placement names expert " + std::to_string(e.value)
                                            + ", but the load has " + std::to_string(load.size()) + " experts");
    for (std::size_t e = 0; e < load.size(); ++e)
        if (counts[e] == 0 && load[e] != 0)
            throw std::invalid_argument("balance: expert " + std::to_string(e)
                                        + " has load but no slot in the placement");
    std::vector<double> gpuLoad(layer.gpu_slots.size(), 0.0);
    for (std::size_t g = 0; g < layer.gpu_slots.size(); ++g)
        for (ExpertId e : layer.gpu_slots[g])
            gpuLoad[g] += load[e.index()] / counts[e.index()];
    return gpuLoad;
}

double maxOverMean(const std::vector<double>& gpuLoads)
{
    if (gpuLoads.empty())
        return 1.0;
    const double sum = std::accumulate(gpuLoads.begin(), gpuLoads.end(), 0.0);
    if (sum <= 0)
        return 1.0;
    const double mean = sum / static_cast<double>(gpuLoads.size());
    return *std::max_element(gpuLoads.begin(), gpuLoads.end()) / mean;
}

std::vector<double> maxMeanGpuLoadPerLayer(const Placement& p, const std::vector<std::vector<double>>& load)
{
    if (load.size() != p.layers.size())
        throw std::invalid_argument("balance: the load has " + std::to_string(load.size())
                                    + " layers, the placement " + std::to_string(p.layers.size()));
    std::vector<double> out;
    out.reserve(load.size());
    for (std::size_t l = 0; l < load.size(); ++l)
        out.push_back(maxOverMean(evenSplitGpuLoads(p.layers[l], load[l])));
    return out;
}

double maxMeanGpuLoad(const Placement& p, const std::vector<std::vector<double>>& load)
{
    const auto perLayer = maxMeanGpuLoadPerLayer(p, load);
    if (perLayer.empty())
        return 1.0;
    return std::accumulate(perLayer.begin(), perLayer.end(), 0.0) / static_cast<double>(perLayer.size());
}

std::vector<ColocatedReplicas> findColocatedReplicas(const Placement& p)
{
    std::vector<ColocatedReplicas> found;
    std::vector<int> ids;
    for (int l = 0; l < p.numLayers(); ++l) {
        const auto& layer = p.layers[static_cast<std::size_t>(l)];
        for (int g = 0; g < layer.numGpus(); ++g) {
            ids.clear();
            for (ExpertId e : layer.gpu_slots[static_cast<std::size_t>(g)])
                ids.push_back(e.value);
            std::sort(ids.begin(), ids.end());
            for (std::size_t i = 0; i < ids.size();) {
                std::size_t j = i + 1;
                while (j < ids.size() && ids[j] == ids[i])
                    ++j;
                if (j - i > 1)
                    found.push_back({l, g, ids[i], static_cast<int>(j - i)});
                i = j;
            }
        }
    }
    return found;
}

std::string describeColocated(const std::vector<ColocatedReplicas>& found, std::size_t limit)
{
    std::string out;
    for (std::size_t i = 0; i < found.size() && i < limit; ++i) {
        const auto& f = found[i];
        out += "MoE layer " + std::to_string(f.moe_layer) + ": GPU " + std::to_string(f.gpu) + " holds "
               + std::to_string(f.copies) + " replicas of expert " + std::to_string(f.expert)
               + " (the extra copies add no balance)\n";
    }
    if (found.size() > limit)
        out += "... and " + std::to_string(found.size() - limit) + " more\n";
    return out;
}

}  // namespace moex
