// What a run of a scenario needs besides the scenario itself: its routing source, its placement
// (strategy resolved) and its calibration. Shared by moex-cli simulate/compare/bench and the GUI.
#pragma once

#include "common/cancel.h"
#include "placement/placement.h"
#include "placement/strategies.h"
#include "scenario/scenario.h"
#include "sim/calibration.h"
#include "sim/sim_objective.h"
#include "workload/routing_sample.h"
#include "workload/trace_routing.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace moex {

class RoutingSource {
public:
    virtual ~RoutingSource() = default;
    virtual void next(RoutingSample& out) = 0;
    virtual void reset() = 0;  // back to the first step
    // Passes `steps` steps without returning them.
    virtual void skip(int steps)
    {
        RoutingSample unused;
        for (int i = 0; i < steps; ++i)
            next(unused);
    }
    // The steps a placement's load is estimated from, before a run's window (startRunWindow):
    // the scenario's placement.load_steps (makeRoutingSource sets it).
    [[nodiscard]] int loadSteps() const { return m_loadSteps; }
    void setLoadSteps(int steps) { m_loadSteps = steps; }

private:
    int m_loadSteps = kDefaultLoadSteps;
};

// Rewinds `source` to the first step a run shows: the one after the loadSteps() steps a placement's
// load is estimated from (estimateLoad, preparePlacement read the source from its first step). A
// placement fitted to past routing is so judged on steps it has not seen, as a serving system's
// rebalancer (EPLB's window of past steps) is; explicit and load-blind placements run the same
// window.
void startRunWindow(RoutingSource& source);

// True when makeRoutingSource(a) and makeRoutingSource(b) draw the same steps: the same model,
// GPU count, phase, tokens per GPU and routing (a placement, precision or context edit keeps them).
bool sameRouting(const Scenario& a, const Scenario& b);

// True for the files a serving system's expert-load recorder writes (an SGLang .pt, a
// TensorRT-LLM statistics folder, vLLM eplb_load_stats JSONL): routing kind `counts` reads them
// with readLoadStats, matched to the model's MoE layers (a shape mismatch is an error naming both);
// other counts files (JSON) are read by readLayerCounts.
bool isServingStatistics(const std::string& path);
LayerCounts countsFromStatistics(const std::string& path, const ModelSpec& model);

// Synthetic generator or trace replay, as the scenario's workload.routing says. `seedOverride`
// (when >= 0) replaces the scenario's seed. Throws InputError for unreadable or mismatched traces.
std::unique_ptr<RoutingSource> makeRoutingSource(const Scenario& s, long long seedOverride = -1);

// What makePlacement needs for the scenario's strategy, with R = experts +
// placement.redundant_slots: `load` ([MoE layer][expert]; empty = the routing's expected load,
// estimated from placement.load_steps steps, for the strategies that use load); for gem and search the GPUs' speed
// factors (gpus.speed) and the routing's co-activation (the generator's expectedCoactivation, or a
// per-token trace's; none for counts); for search a SimObjective over the routing's first
// kObjectiveSamples steps (default calibration of the scenario), placement.budget_ms and `seed`.
// `routing` (reset after use) replaces the scenario's own routing source when given.
struct PlacementSetup {
    PlacementRequest request;
    std::unique_ptr<SimObjective> objective;  // search only; request.objective points at it
};
// `cancel` is checked between routing steps and handed to the request (search checks it per layer).
PlacementSetup preparePlacement(const Scenario& s, const std::vector<std::vector<double>>& load = {},
                                std::uint64_t seed = 1, RoutingSource* routing = nullptr,
                                const CancelToken& cancel = {});

// The scenario's placement: its explicit slots, or makePlacement(preparePlacement(...).request).
// Throws InputError (located at the scenario) when the strategy refuses the request, Cancelled
// once `cancel` is (the GUI's placement jobs, superseded by a newer edit).
Placement resolvePlacement(const Scenario& s, const std::vector<std::vector<double>>& load = {},
                           std::uint64_t seed = 1, const CancelToken& cancel = {});

// Routing steps the search objective of preparePlacement averages over.
inline constexpr int kObjectiveSamples = 8;

// resolvePlacement(s), with the routing source the load was estimated from: a run starts it at
// startRunWindow, right after those steps (the synthetic source keeps them, so they are not drawn
// again). The same placement and steps as resolvePlacement and a fresh makeRoutingSource(s).
struct PlacementAndRouting {
    Placement placement;
    std::shared_ptr<RoutingSource> routing;
};
PlacementAndRouting resolvePlacementAndRouting(const Scenario& s);

// What resolvePlacement would refuse for the placement's shape alone (slots against experts and
// GPUs), without estimating a load or placing: an InputError at the placement key. Explicit slots
// pass (the scenario loader checked them).
void checkPlacementShape(const Scenario& s);

// Expected per-layer expert load of a routing source over `steps` steps ([layer][expert]).
std::vector<std::vector<double>> estimateLoad(RoutingSource& source, int steps, const CancelToken& cancel = {});

// The calibration for the scenario's GPU: `file` if given, else the scenario's calibration file,
// else the built-in default for the GPU generation.
Calibration resolveCalibration(const Scenario& s, const std::string& file = {});

}  // namespace moex
