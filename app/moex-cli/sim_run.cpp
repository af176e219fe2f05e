#include "sim_run.h"

#include "common/atomic_file.h"
#include "metrics/metrics_json.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"

#include <algorithm>
#include <iostream>

namespace moex::cli {

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

SimRun runSimulation(const Scenario& s, int steps, long long seed, const std::string& calibrationFile)
{
    SimRun run;
    run.scenario = s;
    const Calibration cal = resolveCalibration(s, calibrationFile);
    run.calibration = cal.name;
    auto routing = makeRoutingSource(s, seed);
    const Placement placement = resolvePlacement(s);
    Simulator sim(s, placement, cal);
    RoutingSample sample;
    for (int i = 0; i < steps; ++i) {
        routing->next(sample);
        sim.step(sample, run.last);
        run.last.step = i;
        run.steps.push_back(run.last.summary);
        run.wall_us.push_back(run.last.sim_wall_us);
    }
    run.mean = meanTotals(run.steps);
    run.median_wall_us = median(run.wall_us);
    return run;
}

std::vector<std::string> nodeNames(const Scenario& s)
{
    std::vector<std::string> names;
    names.reserve(s.topology.nodes().size());
    for (const auto& n : s.topology.nodes())
        names.push_back(n.name);
    return names;
}

void writeJson(const std::string& target, const std::string& text)
{
    if (target == "-")
        std::cout << text << '\n';
    else
        writeFileAtomically(target, text + "\n");
}

}  // namespace moex::cli
