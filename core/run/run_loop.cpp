#include "run/run_loop.h"

#include "metrics/metrics_json.h"
#include "sim/scenario_run.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <numeric>

namespace moex {

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

RunResult runSteps(MetricsSource& source, const Scenario& scenario, const Placement& placement, int steps, int warmup,
                   const RunProgress& progress)
{
    source.configure(scenario, placement);
    if (progress.configured)
        progress.configured(source);
    RunResult run;
    run.source = source.name();
    run.detail = source.detail();
    run.measured = source.measured();
    for (int i = 0; i < warmup; ++i) {
        source.next(run.last);
        if (progress.warmedUp)
            progress.warmedUp(i, run.last);
    }
    if (warmup > 0)
        source.reset();
    const int n = std::max(1, steps);
    run.steps.reserve(static_cast<std::size_t>(n));
    std::vector<std::array<std::vector<double>, 4>> perStep;  // [layer][field] one value per step
    run.step_wall_us.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        source.next(run.last);
        run.step_wall_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        run.steps.push_back(run.last.summary);
        if (i == 0)
            perStep.resize(run.last.layers.size());
        for (std::size_t l = 0; l < run.last.layers.size() && l < perStep.size(); ++l) {
            const LayerMetrics& lm = run.last.layers[l];
            const double values[4] = {lm.time_us, lm.dispatch_us, lm.compute_us, lm.combine_us};
            for (std::size_t f = 0; f < 4; ++f)
                perStep[l][f].push_back(values[f]);
        }
        run.wall_us.push_back(run.last.sim_wall_us);
        if (progress.stepped)
            progress.stepped(i, run.last);
    }
    run.mean = meanTotals(run.steps);
    // Per layer, each phase's mean and median over the steps; the rest as in the last step.
    const auto mean = [](const std::vector<double>& v) {
        return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(std::max<std::size_t>(1, v.size()));
    };
    const auto perLayer = [&](auto statistic) {
        std::vector<LayerMetrics> out = run.last.layers;
        for (std::size_t l = 0; l < out.size() && l < perStep.size(); ++l) {
            out[l].time_us = statistic(perStep[l][0]);
            out[l].dispatch_us = statistic(perStep[l][1]);
            out[l].compute_us = statistic(perStep[l][2]);
            out[l].combine_us = statistic(perStep[l][3]);
        }
        return out;
    };
    run.layer_mean = perLayer(mean);
    run.layer_median = perLayer([](const std::vector<double>& v) { return median(v); });
    run.median_wall_us = median(run.wall_us);
    run.mean_step_wall_us = mean(run.step_wall_us);
    run.checksum = source.checksum();
    return run;
}

RunResult runScenario(const Scenario& scenario, int steps, const SourceOptions& options, int warmup,
                      const RunProgress& progress)
{
    if (scenario.engine.backend == Backend::sim && options.seed < 0 && !options.routing) {
        // The run goes on from the steps the placement's load was estimated from (startRunWindow).
        PlacementAndRouting placed = resolvePlacementAndRouting(scenario);
        SourceOptions withRouting = options;
        withRouting.routing = placed.routing;
        auto source = makeSource(scenario, withRouting);
        return runSteps(*source, scenario, placed.placement, steps, warmup, progress);
    }
    auto source = makeSource(scenario, options);
    // The engine lays its experts out for the ranks it runs (engine_source.cpp), not the topology's GPUs.
    const Placement placement = scenario.engine.backend == Backend::sim ? resolvePlacement(scenario) : Placement{};
    return runSteps(*source, scenario, placement, steps, warmup, progress);
}

}  // namespace moex
