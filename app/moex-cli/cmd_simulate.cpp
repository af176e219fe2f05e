// moex-cli simulate SCENARIO [--steps N] [--seed S] [--json OUT|-] [--calibration F] [--set K=V]...
#include "cli_args.h"
#include "commands.h"
#include "format.h"
#include "sim_run.h"

#include "metrics/metrics_json.h"
#include "scenario/scenario_yaml.h"
#include "sim/summary_text.h"

#include <iostream>

namespace moex::cli {

namespace {

void printRun(const SimRun& run)
{
    std::cout << summaryText(run.scenario, run.mean);
    std::cout << "simulator        " << fixed(run.median_wall_us, 0) << " us wall per step in the model (median of "
              << run.steps.size() << "), " << fixed(run.mean_step_wall_us, 0)
              << " us end to end with the routing source (mean), calibration " << run.calibration << '\n';
}

}  // namespace

int cmdSimulate(const Argv& argv)
{
    Args args("simulate", argv, {{"steps"}, {"seed"}, {"json"}, {"calibration"}, {"set", true, true}});
    args.requirePositionals(1, 1, "moex-cli simulate SCENARIO [--steps N] [--seed S] [--json OUT|-] [--set KEY=VALUE]...");
    const int steps = args.intValue("steps", 10, 1, 100000);
    const long long seed = args.has("seed") ? args.intValue("seed", 0, 0, 2147483647) : -1;
    const Scenario s = loadScenarioFile(args.positionals().front(), args.overrides());
    args.checkOutputsAgainst(s);
    const SimRun run = runSimulation(s, steps, seed, args.value("calibration").value_or(""));
    if (auto json = args.value("json")) {
        nlohmann::json j = metricsToJson(run.last, nodeNames(s));
        j["summary"] = summaryToJson(run.mean);
        j["steps"] = steps;
        j["scenario"] = s.name;
        j["calibration"] = run.calibration;
        j["sim_wall_us_per_step"] = run.median_wall_us;
        j["end_to_end_us_per_step"] = run.mean_step_wall_us;
        writeJson(*json, j.dump(1));
        if (*json == "-")
            return 0;
    }
    printRun(run);
    return 0;
}

}  // namespace moex::cli
