// The one run API (DESIGN.md section 6): where StepMetrics come from. "sim" (the analytical model),
// "cpu" (the real MoE layers on this machine's CPU, engine/ep_engine.h), later "cuda" and "remote".
// moex-cli simulate / compare / run, the headless moex and the GUI's runner all drive a
// MetricsSource through runSteps (run_loop.h). Not thread-safe by itself: a caller serialises calls.
#pragma once

#include "metrics/step_metrics.h"
#include "placement/placement.h"
#include "scenario/scenario.h"
#include "workload/routing_sample.h"

#include "sim/calibration.h"

#include <memory>
#include <optional>
#include <string>

namespace moex {

class RoutingSource;

class MetricsSource {
public:
    virtual ~MetricsSource() = default;
    [[nodiscard]] virtual std::string name() const = 0;  // shown in the status bar: "sim", "cpu", "remote:HOST"
    // What produced the numbers, for summaries: "calibration blackwell-default", "4 ranks, fp8 ...".
    [[nodiscard]] virtual std::string detail() const = 0;
    // sim: the calibration's name ("" for measured sources).
    [[nodiscard]] virtual std::string calibration() const { return {}; }
    // True for measured sources (the engine): their JSON carries `measured: true` and a checksum.
    [[nodiscard]] virtual bool measured() const { return false; }
    // Rebuilds for a scenario and placement; the next step is step 0. Throws (InputError,
    // std::invalid_argument) and then keeps the previous configuration.
    virtual void configure(const Scenario& scenario, const Placement& placement) = 0;
    [[nodiscard]] virtual bool configured() const = 0;
    // Same scenario, another placement or GPU speeds (hand edits); takes effect at the next call.
    virtual void setPlacement(const Placement& placement, const GpuSpeeds& speeds) = 0;
    virtual void reset() = 0;                   // back to step 0 (routing restarts)
    virtual void next(StepMetrics& out) = 0;    // one more step
    // The last step's input again with the current placement, so an edit's effect is seen alone
    // (the first step when none ran yet). Undoing an edit therefore gives the same numbers back.
    virtual void repeat(StepMetrics& out) = 0;
    // The engine: checksum of the last step's layer outputs (0 for the model).
    [[nodiscard]] virtual double checksum() const { return 0; }
};

struct SourceOptions {
    long long seed = -1;              // routing seed override (-1: the scenario's)
    std::string calibration_file;     // sim: calibration override ("" = the scenario's)
    std::optional<Calibration> calibration;  // sim: this calibration as it is (before calibration_file)
    // sim: the routing source to step (rewound by configure) instead of making the scenario's, e.g.
    // resolvePlacementAndRouting's; the seed override does not apply to it.
    std::shared_ptr<RoutingSource> routing;
};

// The analytical simulator over the scenario's routing (synthetic generator or trace).
std::unique_ptr<MetricsSource> makeSimSource(const SourceOptions& options = {});
// The real MoE layers on the CPU (engine.* of the scenario: ranks, layers, weights, tokens, seed).
std::unique_ptr<MetricsSource> makeCpuEngineSource();

// Workload routing for the engine: `tokens` tokens' top-k choices (token-major, distinct per token)
// whose expert loads are layer `layer`'s of `sample` scaled to tokens x topk pairs (largest
// remainder, each expert at most `tokens`).
std::vector<int> forcedChoices(const RoutingSample& sample, int layer, std::int64_t tokens, int topk);

// The experts laid out for the engine's `ranks` with the scenario's strategy (search and explicit
// placements, made for the topology's GPUs, fall back to eplb), redundant slots rounded to a
// multiple of the ranks: the layout the engine runs when it is given none for its ranks.
Placement engineRankPlacement(const Scenario& scenario, int ranks);

// What the engine would refuse of the scenario's engine section before building anything: a
// backend this build lacks, ranks outside 1..experts, OpenBLAS asked for and not loaded, fewer
// tokens than ranks, a layer that is not an MoE layer. InputError at the key (or the flag that set
// it). EngineSource::configure, makeSource, `moex-cli validate` and the window check with it.
void checkEngineSettings(const Scenario& scenario);

// The source `scenario.engine.backend` names. A backend this build lacks (cuda without the CUDA
// engine, remote) is an InputError located at the scenario's engine.backend, never a fallback.
std::unique_ptr<MetricsSource> makeSource(const Scenario& scenario, const SourceOptions& options = {});

}  // namespace moex
