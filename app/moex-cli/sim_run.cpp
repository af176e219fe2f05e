#include "sim_run.h"

#include "common/atomic_file.h"
#include "metrics/metrics_json.h"
#include "sim/scenario_run.h"

#include <cstdlib>
#include <iostream>

namespace moex::cli {

SimRun runSimulation(const Scenario& s, int steps, long long seed, const std::string& calibrationFile)
{
    SourceOptions options;
    options.seed = seed;
    options.calibration_file = calibrationFile;
    SimRun run;
    if (seed < 0) {  // the run replays the steps the placement's load was estimated from
        PlacementAndRouting placed = resolvePlacementAndRouting(s);
        options.routing = placed.routing;
        auto source = makeSimSource(options);
        static_cast<RunResult&>(run) = runSteps(*source, s, placed.placement, steps);
        run.scenario = s;
        run.calibration = source->calibration();
        return run;
    }
    auto source = makeSimSource(options);
    static_cast<RunResult&>(run) = runSteps(*source, s, resolvePlacement(s), steps);
    run.scenario = s;
    run.calibration = source->calibration();
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

std::string samplesDir()
{
    const char* env = std::getenv("MOEX_SAMPLES");
    return env ? env : MOEX_SAMPLES_DIR;
}

void writeJson(const std::string& target, const std::string& text)
{
    if (target == "-")
        std::cout << text << '\n';
    else
        writeFileAtomically(target, text + "\n");
}

}  // namespace moex::cli
