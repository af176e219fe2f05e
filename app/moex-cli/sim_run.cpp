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

std::string runModelIdentity(const Scenario& s)
{
    const ModelSpec& m = s.model;
    std::string id = m.name + ": hidden " + std::to_string(m.hidden_size) + ", experts " + std::to_string(m.routed_experts) + " x "
        + std::to_string(m.moe_intermediate_size) + ", top-" + std::to_string(m.experts_per_token);
    if (m.shared_experts > 0)
        id += ", shared " + std::to_string(m.shared_experts) + " x " + std::to_string(m.shared_intermediate_size);
    return id + ", " + std::string(toString(s.precision.weights)) + " weights";
}

void writeJson(const std::string& target, const std::string& text)
{
    if (target == "-")
        std::cout << text << '\n';
    else
        writeFileAtomically(target, text + "\n");
}

}  // namespace moex::cli
