// moex-cli run SCENARIO [--backend cpu] [--ranks N] [--steps N] [--warmup N] [--tokens N] [--layers L1,L2,...]
//                       [--json OUT|-] [--set KEY=VALUE]...
// The real MoE layers (core/engine) through the run API, on the backend --backend or the scenario's
// engine.backend names (cpu when the scenario says sim). The JSON has the keys of `simulate --json`
// plus `checksum` (of the last step's layer outputs: the same for any number of ranks) and
// `measured: true`; `sim_wall_us_per_step` is the engine's wall time per step.
#include "cli_args.h"
#include "commands.h"
#include "format.h"
#include "sim_run.h"

#include "common/diagnostics.h"
#include "metrics/metrics_json.h"
#include "run/host_prediction.h"
#include "run/run_loop.h"
#include "scenario/scenario_yaml.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

namespace moex::cli {

namespace {

constexpr const char* kUsage =
    "moex-cli run SCENARIO [--backend cpu] [--ranks N] [--steps N] [--warmup N] [--tokens N] "
    "[--layers L1,L2,...] [--json OUT|-] [--set KEY=VALUE]...";

[[noreturn]] void bad(const std::string& message)
{
    throw InputError(Location{"moex-cli run", 0, 0}, message);
}

std::string checksumText(double c)
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", c);
    return buf;
}

}  // namespace

int cmdRun(const Argv& argv)
{
    Args args("run", argv,
              {{"backend"}, {"ranks"}, {"steps"}, {"warmup"}, {"tokens"}, {"layers"}, {"json"}, {"set", true, true}});
    args.requirePositionals(1, 1, kUsage);
    const Overrides overrides = args.overrides();
    // A flag and a --set of the same engine key: one would silently win (as a --set given twice,
    // which is an error too).
    for (const char* flag : {"backend", "ranks", "tokens", "layers"})
        for (const auto& [key, value] : overrides)
            if (args.has(flag) && key == std::string("engine.") + flag)
                bad("--" + std::string(flag) + " and --set engine." + flag + " both given: give one of them");
    Scenario s = loadScenarioFile(args.positionals().front(), overrides);
    args.checkOutputsAgainst(s);
    if (auto b = args.value("backend")) {
        if (*b == "cpu")
            s.engine.backend = Backend::cpu;
        else if (*b == "cuda")
            s.engine.backend = Backend::cuda;
        else
            bad("--backend " + *b + ": known backends are cpu and cuda");
    } else if (s.engine.backend == Backend::sim) {
        s.engine.backend = Backend::cpu;
    }
    if (args.has("ranks"))
        s.engine.ranks = args.intValue("ranks", 1, 1, 4096);
    if (args.has("tokens"))
        s.engine.tokens = args.intValue("tokens", 0, 1, 1 << 20);
    if (auto layers = args.value("layers")) {
        s.engine.layers.clear();
        if (!layers->empty() && layers->back() == ',')  // getline drops a last empty item: "1," read as "1"
            bad("--layers " + *layers + ": a comma with no layer after it");
        std::stringstream in(*layers);
        std::string item;
        while (std::getline(in, item, ',')) {
            try {
                // Digits only, no leading zero: stoi also took " 2", "+1", "01" and "-0".
                if (item.empty() || item.size() > 6 || !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })
                    || (item.size() > 1 && item[0] == '0'))
                    throw std::invalid_argument(item);
                s.engine.layers.push_back(std::stoi(item));
            } catch (const std::exception&) {
                bad("--layers " + *layers + ": '" + item + "' is not a decoder-layer index");
            }
            if (!s.model.isMoeLayer(s.engine.layers.back()))
                bad("--layers " + *layers + ": decoder layer " + item + " is not an MoE layer of " + s.model.name
                    + " (" + std::to_string(s.model.numMoeLayers()) + " MoE layers, the first "
                    + std::to_string(s.model.moe_layers.front()) + ", the last " + std::to_string(s.model.moe_layers.back()) + ")");
            // As engine.layers in a scenario: each layer once, ascending (a layer twice would run
            // twice and be reported as two layers).
            const std::size_t n = s.engine.layers.size();
            if (n > 1 && s.engine.layers[n - 1] <= s.engine.layers[n - 2])
                bad("--layers " + *layers + ": the layers must ascend, each once (" + item + " after "
                    + std::to_string(s.engine.layers[n - 2]) + ")");
        }
        if (s.engine.layers.empty())
            bad("--layers needs one or more MoE decoder-layer indices, e.g. --layers 3,4 (without it, every MoE layer runs)");
    }
    // What the engine is asked for on the command line: its errors name these flags, not the
    // scenario's engine section (which may not set them at all).
    for (const char* flag : {"backend", "ranks", "tokens", "layers"})
        if (auto v = args.value(flag))
            s.engine.flags[flag] = "--" + std::string(flag) + " " + *v;
    const int steps = args.intValue("steps", 3, 1, 100000);
    const int warmup = args.intValue("warmup", 1, 0, 1000);
    // The engine at real shapes takes seconds to minutes a step: say what is happening on stderr.
    RunProgress progress;
    // Making (or reading) the weights takes seconds to minutes at real shapes: say how long it took.
    const auto setupStart = std::chrono::steady_clock::now();
    progress.configured = [&](const MetricsSource& src) {
        const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - setupStart).count();
        std::cerr << "moex-cli run: " << src.detail() << "; set up in " << fixed(setup, 1) << " s; " << warmup << " warm-up + "
                  << steps << " steps\n";
    };
    // A warm-up step at prefill sizes takes minutes: say it ended and what it took.
    progress.warmedUp = [&](int i, const StepMetrics& m) {
        std::cerr << "moex-cli run: warm-up " << i + 1 << "/" << warmup << ": " << fixed(m.summary.moe_time_us / 1000.0, 1)
                  << " ms of MoE layers (not counted)\n";
    };
    progress.stepped = [&](int i, const StepMetrics& m) {
        std::cerr << "moex-cli run: step " << i + 1 << "/" << steps << ": " << fixed(m.summary.moe_time_us / 1000.0, 1)
                  << " ms of MoE layers\n";
    };
    const RunResult run = runScenario(s, steps, {}, warmup, progress);
    if (auto json = args.value("json")) {
        std::vector<std::string> names;
        for (int r = 0; r < run.last.num_gpus; ++r)
            names.push_back("rank" + std::to_string(r));
        nlohmann::json j = metricsToJson(run.last, names);
        j["summary"] = summaryToJson(run.mean);
        j["steps"] = steps;
        j["scenario"] = s.name;
        j["source"] = run.source;
        j["engine"] = run.detail;
        j["measured"] = run.measured;
        j["checksum"] = run.checksum;
        j["sim_wall_us_per_step"] = run.median_wall_us;
        // Per-layer means and medians over the measured steps, and what `compare --measured` needs to simulate
        // the same run (the scenario file, its overrides, the engine settings as they ran).
        const auto layerTimes = [](const std::vector<LayerMetrics>& layers) {
            nlohmann::json list = nlohmann::json::array();
            for (const LayerMetrics& l : layers)
                list.push_back({{"layer", l.decoder_layer}, {"time_us", l.time_us}, {"dispatch_us", l.dispatch_us},
                                {"compute_us", l.compute_us}, {"combine_us", l.combine_us}});
            return list;
        };
        j["layers_mean"] = layerTimes(run.layer_mean);
        j["layers_median"] = layerTimes(run.layer_median);
        nlohmann::json sets = nlohmann::json::array();
        for (const auto& [key, value] : args.overrides())
            sets.push_back(key + "=" + value);
        std::vector<int> ran;
        for (const LayerMetrics& l : run.last.layers)
            ran.push_back(l.decoder_layer);
        j["run"] = {{"scenario_file", s.file},
                    {"model", runModelIdentity(s)},
                    {"set", sets},
                    {"backend", s.engine.backend == Backend::cpu ? "cpu" : "cuda"},
                    {"ranks", run.last.num_gpus},
                    {"hardware_threads", static_cast<int>(std::thread::hardware_concurrency())},
                    {"layers", ran},
                    {"seed", s.engine.seed},
                    {"routing", s.engine.workload_routing ? "workload" : "computed"}};
        writeJson(*json, j.dump(1));
        if (*json == "-")
            return 0;
    }
    const StepTotals& m = run.mean;
    std::cout << "scenario         " << s.name << ": " << s.model.name << " on the " << run.source << " engine\n";
    std::cout << "engine           " << run.detail << '\n';
    std::cout << "MoE layers       " << fixed(m.moe_time_us / 1000.0, 3) << " ms per step (mean of " << run.steps.size()
              << " measured steps after " << warmup << " warm-up)\n";
    std::cout << "  router+dispatch " << fixed(m.dispatch_us / 1000.0, 3) << " ms, experts "
              << fixed(m.expert_compute_us / 1000.0, 3) << " ms (slowest rank), combine "
              << fixed(m.combine_us / 1000.0, 3) << " ms\n";
    std::cout << "tokens/s         " << fixed(m.tokens_per_s, 0) << " through the MoE layers (no attention runs)\n";
    std::cout << "imbalance        " << fixed(m.imbalance, 3) << " (max/mean rank load, mean over layers)\n";
    std::cout << "checksum         " << checksumText(run.checksum) << " (last step's layer outputs)\n";
    const std::string note = timeSharingNote(run.last.num_gpus, static_cast<int>(std::thread::hardware_concurrency()));
    if (!note.empty())
        std::cout << "note             " << note << '\n';
    return 0;
}

}  // namespace moex::cli
