// moex-cli place: a placement for a scenario, written in the file a serving system loads.
//   moex-cli place SCENARIO --strategy NAME [--slots R] [--load STATS] [--budget-ms N] [--seed S]
//       --format native|sglang|trtllm|vllm-ascend|eplb -o OUT [--set KEY=VALUE]...
// For example:
//   moex-cli place samples/scenarios/deepseek-r1-decode-nvl72.yaml --strategy eplb --slots 288 --format sglang -o x.json
// R defaults to the experts (no redundant slots). The load to balance comes from --load (any file
// `moex-cli load-stats` reads, matched to the model's MoE layers; a shape mismatch is an error that
// says which), else from the scenario's routing. The placement is checked for the format and
// written atomically; nothing is written when it is refused. The summary judges the placement as
// the format carries it: exports other than native have no shares, so replicas split evenly.
// For a format whose consumer cannot load two copies of one expert on one GPU (vllm-ascend), such
// copies (eplb-exact, explicit placements) are separated by the least costly slot swaps first and
// the cost in balance is printed. --mtp-layers N (trtllm): MTP layers to write after the decoder
// layers, default the model's (DeepSeek-R1: 1); 0 leaves them out.
#include "cli_args.h"
#include "commands.h"
#include "common/diagnostics.h"
#include "format.h"
#include "placement/balance.h"
#include "placement/exporters.h"
#include "placement/load_stats.h"
#include "placement/strategies.h"
#include "scenario/scenario_checks.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"
#include "run/run_loop.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

namespace moex::cli {

namespace {

constexpr const char* kUsage =
    "moex-cli place SCENARIO --strategy NAME [--slots R] [--load STATS] [--budget-ms N] [--seed S] "
    "--format native|sglang|trtllm|vllm-ascend|eplb -o OUT [--mtp-layers N] [--set KEY=VALUE]...";
constexpr int kPlaceSteps = 4;  // steps the summary simulates (fewer than simulate's, two placements to judge)

[[noreturn]] void bad(const std::string& message)
{
    throw InputError(Location{"moex-cli place", 0, 0}, message);
}

// Mean simulated MoE time per step (us) of `p` over the first steps of the scenario's routing,
// through the run API like every other front end.
double simulatedMoeUs(const Scenario& s, const Placement& p)
{
    auto source = makeSimSource();
    return runSteps(*source, s, p, kPlaceSteps).mean.moe_time_us;
}

}  // namespace

int cmdPlace(const Argv& argv)
{
    Args args("place", argv,
              {{"strategy"},
               {"slots"},
               {"load"},
               {"budget-ms"},
               {"seed"},
               {"format"},
               {"mtp-layers"},
               {"output", true, false, 'o'},
               {"set", true, true}});
    args.requirePositionals(1, 1, kUsage);
    const auto strategy = args.value("strategy");
    const auto formatName = args.value("format");
    const auto out = args.value("output");
    if (!strategy || !formatName || !out)
        bad(std::string("--strategy, --format and -o are required\nusage: ") + kUsage);
    const auto& known = placementStrategies();
    if (std::find(known.begin(), known.end(), *strategy) == known.end()) {
        std::string list;
        for (const auto& n : known)
            list += (list.empty() ? "" : ", ") + n;
        const std::string hint = didYouMean(*strategy, known);
        bad("unknown strategy '" + *strategy + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
            " (known: " + list + ")");
    }
    ExportFormat format{};
    try {
        format = exportFormatFromString(*formatName);
    } catch (const std::invalid_argument& e) {
        bad(e.what());
    }

    // The strategy and the slots are this command's flags: a --set of them would be overridden in silence.
    for (const auto& [key, value] : args.overrides())
        if (key == "placement" || key == "placement.strategy" || key == "placement.redundant_slots" || key == "placement.budget_ms")
            bad("--set " + key + "=" + value + ": place takes the placement from --strategy, --slots and --budget-ms");
    // Only the search uses a time budget and a seed.
    if (*strategy != "search")
        for (const char* flag : {"budget-ms", "seed"})
            if (args.has(flag))
                bad(std::string("--") + flag + " applies to --strategy search only, not " + *strategy);
    Scenario s = loadScenarioFile(args.positionals().front(), args.overrides());
    args.checkOutputsAgainst(s);
    const int E = s.model.routed_experts;
    const int G = s.topology.numGpus();
    // As many redundant slots as a scenario's placement.redundant_slots allows (16 per expert): a
    // million slots took 47 s and 2.5 GB to place, far past any deployment.
    const int slots = args.intValue("slots", E, 1, 17 * E);
    if (slots < E)
        bad("--slots " + std::to_string(slots) + " cannot hold the model's " + std::to_string(E) +
            " experts: every expert needs a slot (give at least " + std::to_string(E) + ")");
    s.placement.strategy = *strategy;
    s.placement.redundant_slots = slots - E;
    s.placement.explicit_slots.reset();
    // A placement the GPUs cannot hold is no export a server can load.
    if (const std::string problem = capacityProblem(s); !problem.empty())
        bad((args.has("slots") ? "--slots " + std::to_string(slots) + ": " : std::string()) + problem);
    s.placement.budget_ms = args.doubleValue("budget-ms", s.placement.budget_ms, 1, 3.6e6);
    const auto seed = static_cast<std::uint64_t>(args.intValue("seed", 1, 0, 2147483647));

    std::vector<std::vector<double>> load;
    std::string loadFrom = "the scenario's routing (8 steps)";
    if (auto file = args.value("load")) {
        load = alignToModel(readLoadStats(*file), s.model, *file).load;
        loadFrom = *file;
    }
    PlacementSetup setup = preparePlacement(s, load, seed);
    const auto t0 = std::chrono::steady_clock::now();
    Placement p;
    try {
        p = makePlacement(setup.request);
    } catch (const std::invalid_argument& e) {
        bad(e.what());
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (load.empty())
        load = setup.request.load;
    if (load.empty()) {
        auto routing = makeRoutingSource(s);
        load = estimateLoad(*routing, 8);
    }
    ExportOptions options;
    if (args.has("mtp-layers")) {
        if (format != ExportFormat::trtllm)
            bad("--mtp-layers applies to --format trtllm only");
        options.mtp_layers = args.intValue("mtp-layers", 0, 0, 64);
    }
    std::optional<SeparationReport> separated;
    p = placementForExport(p, format, load, G / std::max(1, setup.request.num_nodes), separated);
    // '-o -': the file on stdout, the summary on stderr (as topology and import-hf do, but those
    // print no summary).
    const bool toStdout = *out == "-";
    if (toStdout)
        std::cout << exportPlacement(p, s.model, format, options) << std::flush;
    else
        writePlacementExport(*out, p, s.model, format, options);
    std::ostream& report = toStdout ? std::cerr : std::cout;

    // Summary, as the file carries the placement.
    if (format != ExportFormat::native)
        for (auto& l : p.layers)
            l.shares.clear();
    const Placement contiguous = contiguousPlacement(E, G, s.model.numMoeLayers(), slots - E);
    const double moe = simulatedMoeUs(s, p);
    const double moeContiguous = simulatedMoeUs(s, contiguous);
    report << "wrote " << (toStdout ? std::string("the file to stdout") : *out) << " (" << toString(format) << "): " << *strategy << " placement of " << s.name
              << " in " << fixed(ms, 1) << " ms\n";
    report << "  slots      " << slots << " per layer (" << slots - E << " redundant) on " << countOf(G, "GPU");
    if (slots % G == 0)
        report << ", " << slots / G << " per GPU";
    report << "\n  load       " << loadFrom << '\n';
    report << "  balance    " << fixed(maxMeanGpuLoad(p, load), 3) << " max/mean GPU load, even shares (contiguous "
              << fixed(maxMeanGpuLoad(contiguous, load), 3) << ")\n";
    report << "  simulated  " << fixed(moe / 1000.0, 3) << " ms MoE time per step (contiguous "
              << fixed(moeContiguous / 1000.0, 3) << " ms), " << kPlaceSteps << " steps of the scenario's routing"
              << (format == ExportFormat::native ? "" : ", replicas splitting evenly as the file has no shares")
              << '\n';
    if (setup.objective)
        report << "  search     " << setup.objective->evaluations() << " evaluations (budget "
                  << fixed(s.placement.budget_ms, 0) << " ms, seed " << seed << ")\n";
    if (format == ExportFormat::trtllm) {
        const int mtp = options.mtp_layers >= 0 ? options.mtp_layers : s.model.mtp_layers;
        if (mtp > 0)
            report << "  mtp        " << countOf(mtp, "MTP layer") << " written as layer " << s.model.num_layers
                      << (mtp > 1 ? "..." + std::to_string(s.model.num_layers + mtp - 1) : std::string())
                      << " with the last MoE layer's assignment (--mtp-layers 0 leaves them out)\n";
    }
    if (separated)
        report << "  repaired   " << describeSeparation(*separated) << " (" << toString(format)
                  << " cannot load two copies of one expert on one GPU)\n";
    const auto colocated = findColocatedReplicas(p);
    if (!colocated.empty())
        report << "  warning    " << countOf(static_cast<long long>(colocated.size()), "GPU")
                  << (colocated.size() == 1 ? " holds" : " hold") << " two replicas of one expert (deepseek-ai/EPLB#22):\n"
                  << describeColocated(colocated);
    return 0;
}

}  // namespace moex::cli
