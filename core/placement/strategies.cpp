#include "placement/strategies.h"

#include "placement/eplb.h"
#include "placement/replica_separation.h"
#include "placement/gem.h"
#include "placement/search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace moex {

namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument("placement: " + message); }

void checkLoadShape(const std::vector<std::vector<double>>& load, int numLayers, int numExperts)
{
    if (load.empty())
        return;
    if (static_cast<int>(load.size()) != numLayers)
        fail("the load has " + std::to_string(load.size()) + " layers, but there are " + std::to_string(numLayers)
             + " MoE layers");
    for (std::size_t l = 0; l < load.size(); ++l) {
        if (static_cast<int>(load[l].size()) != numExperts)
            fail("layer " + std::to_string(l) + " of the load has " + std::to_string(load[l].size())
                 + " experts, the model has " + std::to_string(numExperts));
        for (double v : load[l])
            if (!std::isfinite(v) || v < 0)
                fail("layer " + std::to_string(l) + " of the load has a negative or non-finite value");
    }
}

// Experts receiving the redundant copies, in the order they take slots.
std::vector<int> copyOrder(int numExperts, int redundant, const std::vector<double>* load)
{
    std::vector<int> byHeat(static_cast<std::size_t>(numExperts));
    std::iota(byHeat.begin(), byHeat.end(), 0);
    if (load)
        std::stable_sort(byHeat.begin(), byHeat.end(), [&](int a, int b) {
            return (*load)[static_cast<std::size_t>(a)] > (*load)[static_cast<std::size_t>(b)];
        });
    std::vector<int> copies;
    copies.reserve(static_cast<std::size_t>(redundant));
    for (int k = 0; k < redundant; ++k)
        copies.push_back(byHeat[static_cast<std::size_t>(k % numExperts)]);
    return copies;
}

Placement eplbPlacement(const PlacementRequest& rq, int layers, int slots);

bool holds(const std::vector<ExpertId>& gpu, int expert)
{
    return std::count(gpu.begin(), gpu.end(), ExpertId(expert)) > 0;
}

LayerPlacement roundRobinLayer(int numExperts, int numGpus, int redundant, const std::vector<double>* load)
{
    LayerPlacement layer;
    auto& gpus = layer.gpu_slots;
    gpus.resize(static_cast<std::size_t>(numGpus));
    for (int e = 0; e < numExperts; ++e)
        gpus[static_cast<std::size_t>(e % numGpus)].emplace_back(e);
    std::vector<int> pending = copyOrder(numExperts, redundant, load);
    std::vector<std::pair<int, std::size_t>> copySlots;  // (gpu, local index) of each redundant slot
    for (int s = numExperts; s < numExperts + redundant; ++s) {
        const int g = s % numGpus;
        auto& gpu = gpus[static_cast<std::size_t>(g)];
        auto fits = std::find_if(pending.begin(), pending.end(), [&](int e) { return !holds(gpu, e); });
        if (fits == pending.end()) {
            // Every pending copy is already here: trade with an earlier copy that fits here and
            // whose GPU does not hold this one (else keep the duplicate; balance.h reports it).
            const int e = pending.front();
            fits = pending.begin();
            for (const auto& [og, k] : copySlots) {
                auto& other = gpus[static_cast<std::size_t>(og)];
                const int oe = other[k].value;
                if (og != g && !holds(gpu, oe) && !holds(other, e)) {
                    other[k] = ExpertId(e);
                    *fits = oe;
                    break;
                }
            }
        }
        copySlots.emplace_back(g, gpu.size());
        gpu.emplace_back(*fits);
        pending.erase(fits);
    }
    return layer;
}

}  // namespace

Placement roundRobinPlacement(int numExperts, int numGpus, int numLayers, int redundantSlots,
                              const std::vector<std::vector<double>>& load)
{
    if (numExperts <= 0 || numGpus <= 0 || numLayers < 0 || redundantSlots < 0)
        fail("round-robin needs positive experts and GPUs and no negative counts");
    checkLoadShape(load, numLayers, numExperts);
    Placement p;
    p.num_experts = numExperts;
    if (load.empty()) {
        p.layers.assign(static_cast<std::size_t>(numLayers),
                        roundRobinLayer(numExperts, numGpus, redundantSlots, nullptr));
        return p;
    }
    for (const auto& row : load)
        p.layers.push_back(roundRobinLayer(numExperts, numGpus, redundantSlots, &row));
    return p;
}

const std::vector<std::string>& placementStrategies()
{
    static const std::vector<std::string> names = {"contiguous", "round-robin", "eplb", "eplb-exact", "gem", "search"};
    return names;
}

void checkPlacementShape(const PlacementRequest& rq)
{
    const int slots = rq.num_slots > 0 ? rq.num_slots : rq.num_experts;
    if (slots < rq.num_experts)
        fail(std::to_string(slots) + " slots cannot hold " + std::to_string(rq.num_experts)
             + " experts: every expert needs at least one slot (give at least " + std::to_string(rq.num_experts)
             + ")");
    if (rq.strategy == "contiguous" || rq.strategy == "round-robin" || rq.num_gpus <= 0)
        return;
    // eplb, gem and search: every GPU holds R / G slots, as the serving systems require.
    if (slots % rq.num_gpus != 0) {
        // The nearest slot counts that do, and the redundant slots (beyond one per expert) each means.
        const int below = slots / rq.num_gpus * rq.num_gpus;
        const int above = below + rq.num_gpus;
        const bool belowOk = below >= rq.num_experts;
        fail(rq.strategy + " needs the slots to divide evenly over the GPUs: " + std::to_string(slots) + " slots on "
             + std::to_string(rq.num_gpus) + " GPUs (try " + (belowOk ? std::to_string(below) + " or " : std::string())
             + std::to_string(above) + " slots: redundant slots "
             + (belowOk ? std::to_string(below - rq.num_experts) + " or " : std::string()) + std::to_string(above - rq.num_experts)
             + ")");
    }
}

Placement makePlacement(const PlacementRequest& rq)
{
    const auto& names = placementStrategies();
    if (std::find(names.begin(), names.end(), rq.strategy) == names.end()) {
        std::string known;
        for (const auto& n : names)
            known += (known.empty() ? "" : ", ") + n;
        fail("unknown strategy '" + rq.strategy + "' (known: " + known + ")");
    }
    if (rq.num_experts <= 0)
        fail("the number of experts must be positive");
    if (rq.num_gpus <= 0)
        fail("the number of GPUs must be positive");
    const int layers = rq.num_layers > 0 ? rq.num_layers : static_cast<int>(rq.load.size());
    if (layers <= 0)
        fail("give the number of MoE layers or a load with one row per layer");
    checkLoadShape(rq.load, layers, rq.num_experts);
    if (!rq.step_load.empty()) {
        if (static_cast<int>(rq.step_load.size()) != layers)
            fail("the per-step load has " + std::to_string(rq.step_load.size()) + " layers, but there are "
                 + std::to_string(layers) + " MoE layers");
        for (std::size_t l = 0; l < rq.step_load.size(); ++l)
            for (std::size_t s = 0; s < rq.step_load[l].size(); ++s) {
                const auto& step = rq.step_load[l][s];
                const std::string where =
                    "step " + std::to_string(s) + " of layer " + std::to_string(l) + " of the per-step load";
                if (static_cast<int>(step.size()) != rq.num_experts)
                    fail(where + " has " + std::to_string(step.size()) + " experts, the model has "
                         + std::to_string(rq.num_experts));
                for (double v : step)
                    if (!std::isfinite(v) || v < 0)
                        fail(where + " has a negative or non-finite value");
            }
    }
    checkPlacementShape(rq);
    const int slots = rq.num_slots > 0 ? rq.num_slots : rq.num_experts;
    const int redundant = slots - rq.num_experts;

    if (rq.strategy == "contiguous")
        return contiguousPlacement(rq.num_experts, rq.num_gpus, layers, redundant);
    if (rq.strategy == "round-robin")
        return roundRobinPlacement(rq.num_experts, rq.num_gpus, layers, redundant, rq.load);
    if (!rq.gpu_speed.empty()) {
        if (static_cast<int>(rq.gpu_speed.size()) != rq.num_gpus)
            fail("there are " + std::to_string(rq.gpu_speed.size()) + " GPU speeds for " + std::to_string(rq.num_gpus)
                 + " GPUs");
        for (double v : rq.gpu_speed)
            if (!std::isfinite(v) || v <= 0)
                fail("GPU speeds must be positive numbers");
    }
    if (rq.strategy == "gem")
        return gemPlacement(rq);
    if (rq.strategy == "search")
        return searchPlacement(rq);
    return eplbPlacement(rq, layers, slots);
}

namespace {

Placement eplbPlacement(const PlacementRequest& rq, int layers, int slots)
{
    const int nodes = std::max(1, rq.num_nodes);
    const int groups = std::max(1, rq.num_groups);
    if (rq.num_gpus % nodes != 0)
        fail("eplb needs the GPUs to divide evenly over the nodes: " + std::to_string(rq.num_gpus) + " GPUs in "
             + std::to_string(nodes) + " NVLink domains");
    if (rq.num_experts % groups != 0)
        fail(std::to_string(rq.num_experts) + " experts do not split into " + std::to_string(groups)
             + " equal expert groups");
    std::vector<std::vector<double>> uniform;
    if (rq.load.empty())
        uniform.assign(static_cast<std::size_t>(layers), std::vector<double>(static_cast<std::size_t>(rq.num_experts), 1.0));
    const auto& weight = rq.load.empty() ? uniform : rq.load;
    Placement p = eplbToPlacement(rebalanceExperts(weight, slots, groups, nodes, rq.num_gpus), rq.num_gpus);
    // "eplb-exact" is DeepSeek's output as it is; "eplb" moves the extra copies of an expert that
    // EPLB put on one GPU to other GPUs of the same node (replica_separation.h).
    if (rq.strategy == "eplb")
        separateColocatedReplicas(p, weight, rq.num_gpus / nodes);
    return p;
}

}  // namespace

}  // namespace moex
