#include "run/run_loop.h"

#include "metrics/metrics_json.h"
#include "sim/scenario_run.h"

#include <algorithm>

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
    for (int i = 0; i < warmup; ++i)
        source.next(run.last);
    if (warmup > 0)
        source.reset();
    const int n = std::max(1, steps);
    run.steps.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        source.next(run.last);
        run.steps.push_back(run.last.summary);
        run.wall_us.push_back(run.last.sim_wall_us);
        if (progress.stepped)
            progress.stepped(i, run.last);
    }
    run.mean = meanTotals(run.steps);
    run.median_wall_us = median(run.wall_us);
    run.checksum = source.checksum();
    return run;
}

RunResult runScenario(const Scenario& scenario, int steps, const SourceOptions& options, int warmup,
                      const RunProgress& progress)
{
    auto source = makeSource(scenario, options);
    // The engine lays its experts out for the ranks it runs (engine_source.cpp), not the topology's GPUs.
    const Placement placement = scenario.engine.backend == Backend::sim ? resolvePlacement(scenario) : Placement{};
    return runSteps(*source, scenario, placement, steps, warmup, progress);
}

}  // namespace moex
