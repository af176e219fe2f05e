// moex-cli simulate SCENARIO [--steps N] [--seed S] [--json OUT|-] [--calibration F] [--set K=V]...
#include "cli_args.h"
#include "commands.h"
#include "format.h"
#include "sim_run.h"

#include "metrics/metrics_json.h"
#include "scenario/scenario_yaml.h"

#include <iostream>

namespace moex::cli {

namespace {

std::string ms(double us)
{
    return fixed(us / 1000.0, 2) + " ms";
}

std::string grouped(double v)
{
    std::string s = std::to_string(static_cast<long long>(v + 0.5));
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
        s.insert(static_cast<std::size_t>(i), ",");
    return s;
}

void printRun(const SimRun& run)
{
    const Scenario& s = run.scenario;
    const StepTotals& t = run.mean;
    std::cout << "scenario         " << s.name << ": " << s.model.name << " on "
              << (s.topology.builtin.empty() ? s.topology.name : s.topology.builtin) << " (" << s.topology.numGpus()
              << " GPUs, " << s.topology.numDomains() << " NVLink domain(s)), " << toString(s.workload.phase) << ", "
              << s.workload.tokens_per_gpu << " tokens/GPU, placement " << s.placement.strategy << '\n';
    std::cout << "step time        " << ms(t.step_time_us) << "  (MoE layers " << ms(t.moe_time_us)
              << ", overlap " << toString(s.overlap) << ")\n";
    std::cout << "tokens/s         " << grouped(t.tokens_per_s) << "  (" << grouped(t.tokens_per_s_per_gpu)
              << " per GPU, " << grouped(t.tokens_per_s_per_kw) << " per kW)\n";
    std::cout << "dispatch         " << ms(t.dispatch_us) << " per step over " << s.model.numMoeLayers()
              << " MoE layers (" << fixed(t.dispatch_us / s.model.numMoeLayers(), 1) << " us per layer)\n";
    std::cout << "combine          " << ms(t.combine_us) << " (" << fixed(t.combine_us / s.model.numMoeLayers(), 1)
              << " us per layer)\n";
    std::cout << "expert compute   " << ms(t.expert_compute_us) << " (slowest GPU of each layer)\n";
    std::cout << "attention+dense  " << ms(t.attention_us) << '\n';
    std::cout << "imbalance        " << fixed(t.imbalance, 3) << " (max/mean GPU load, mean over layers); straggler gpu"
              << t.straggler_gpu << '\n';
    if (t.moe_time_balanced_us > 0)
        std::cout << "imbalance cost   " << ms(t.moe_time_us - t.moe_time_balanced_us) << " per step, "
                  << fixed(t.moe_time_us > 0 ? 100.0 * (t.moe_time_us - t.moe_time_balanced_us) / t.moe_time_us : 0.0, 2)
                  << "% of MoE time (" << ms(t.moe_time_balanced_us) << " with expert work spread evenly)\n";
    std::cout << "memory           " << fixed(t.hbm_used_gb_max, 1) << " GB of " << fixed(s.topology.gpu.hbm_usable_gb, 0)
              << " GB per GPU; " << grouped(static_cast<double>(t.max_concurrent_users))
              << " concurrent sequences fit at " << s.workload.context_tokens << " tokens";
    if (t.memory_limited)
        std::cout << "; batch limited by memory to " << t.batch_per_gpu << " per GPU";
    std::cout << '\n';
    std::cout << "power            " << fixed(t.power_kw, 1) << " kW\n";
    std::cout << "simulator        " << fixed(run.median_wall_us, 0) << " us wall per step (median of "
              << run.steps.size() << "), calibration " << run.calibration << '\n';
}

}  // namespace

int cmdSimulate(const Argv& argv)
{
    Args args("simulate", argv, {{"steps"}, {"seed"}, {"json"}, {"calibration"}, {"set", true, true}});
    args.requirePositionals(1, 1, "moex-cli simulate SCENARIO [--steps N] [--seed S] [--json OUT|-] [--set KEY=VALUE]...");
    const int steps = args.intValue("steps", 10, 1, 100000);
    const long long seed = args.has("seed") ? args.intValue("seed", 0, 0, 2147483647) : -1;
    const Scenario s = loadScenarioFile(args.positionals().front(), args.overrides());
    const SimRun run = runSimulation(s, steps, seed, args.value("calibration").value_or(""));
    if (auto json = args.value("json")) {
        nlohmann::json j = metricsToJson(run.last, nodeNames(s));
        j["summary"] = summaryToJson(run.mean);
        j["steps"] = steps;
        j["scenario"] = s.name;
        j["calibration"] = run.calibration;
        j["sim_wall_us_per_step"] = run.median_wall_us;
        writeJson(*json, j.dump(1));
        if (*json == "-")
            return 0;
    }
    printRun(run);
    return 0;
}

}  // namespace moex::cli
