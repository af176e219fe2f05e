// The step loop every front end uses: warm-up, steps, averaging. Written once here so that
// moex-cli simulate, compare and run, the headless moex and the GUI's Compare tab agree.
#pragma once

#include "run/metrics_source.h"

#include <functional>
#include <string>
#include <vector>

namespace moex {

// Steps a summary averages over unless told otherwise (simulate, compare, the headless moex, the
// GUI's Compare tab).
inline constexpr int kSummarySteps = 10;

struct RunResult {
    std::string source;             // the source's name()
    std::string detail;             // its detail()
    bool measured = false;
    StepMetrics last;               // the final step in full
    std::vector<StepTotals> steps;  // every step's totals
    StepTotals mean;                // mean over steps (the reported summary)
    // Per layer, mean over steps of time_us, dispatch_us, compute_us and combine_us; the rest
    // (loads, slowest GPU) as in the last step.
    std::vector<LayerMetrics> layer_mean;
    // The same with the median over steps: what `compare --measured` predicts against, since on a
    // shared machine a preempted step can take several times the others and pull the mean.
    std::vector<LayerMetrics> layer_median;
    std::vector<double> wall_us;    // wall time of each step in the source's model (simulator or engine)
    double median_wall_us = 0;
    // Wall time of each whole step as the caller waits for it: the routing source's sample, the
    // model, the metrics (simulate's end to end figure).
    std::vector<double> step_wall_us;
    double mean_step_wall_us = 0;  // the mean: the first steps may replay samples (resolvePlacementAndRouting)
    double checksum = 0;            // the engine's, of the last step
};

// What a long run reports as it goes (moex-cli run prints it): after configuring, and after each
// counted step (index from 0).
struct RunProgress {
    std::function<void(const MetricsSource&)> configured;
    std::function<void(int step, const StepMetrics&)> stepped;
    std::function<void(int step, const StepMetrics&)> warmedUp;  // after each warm-up step (not counted)
};

// Configures `source` for the scenario and placement, runs `warmup` steps that are not counted,
// then `steps` steps (at least 1). Throws what the source throws.
RunResult runSteps(MetricsSource& source, const Scenario& scenario, const Placement& placement, int steps,
                   int warmup = 0, const RunProgress& progress = {});

// The scenario on the source its engine.backend names, placement resolved: what `moex-cli
// simulate`/`run` and the headless moex do.
RunResult runScenario(const Scenario& scenario, int steps, const SourceOptions& options = {}, int warmup = 0,
                      const RunProgress& progress = {});

double median(std::vector<double> v);

}  // namespace moex
