// moex-cli compare A B [--steps N] [--seed S] [--json OUT|-] [--calibration F] [--set K=V]...
// moex-cli compare --measured RUN.json [--calibration BEFORE [--calibration AFTER]]: predicted vs measured
// (cmd_compare_measured.cpp).
// Side-by-side totals with ratios B/A, and where the difference comes from, term by term.
#include "cli_args.h"
#include "commands.h"

#include "common/diagnostics.h"
#include "format.h"
#include "sim_run.h"

#include "metrics/metrics_json.h"
#include "scenario/scenario_yaml.h"
#include "sim/comparison.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace moex::cli {

namespace {

std::string num(double v)
{
    std::ostringstream o;
    if (std::abs(v) >= 100)
        o << std::fixed << std::setprecision(0) << v;
    else
        o << std::fixed << std::setprecision(2) << v;
    return o.str();
}

}  // namespace

int cmdCompare(const Argv& argv)
{
    Args args("compare", argv, {{"steps"}, {"seed"}, {"json"}, {"calibration", true, true}, {"set", true, true}, {"measured"}});
    if (auto run = args.value("measured")) {
        // The run file says what ran (its scenario, settings, steps and seed): these would be ignored.
        for (const char* flag : {"set", "steps", "seed"})
            if (args.has(flag))
                throw InputError(Location{"moex-cli compare", 0, 0},
                                 std::string("--") + flag + " is not an option of compare --measured: the run file ("
                                     + *run + ") says what ran; predict another set-up with compare A B or simulate");
        args.requirePositionals(0, 0, "moex-cli compare --measured RUN.json [--calibration BEFORE [--calibration AFTER]] [--json OUT|-]");
        const std::vector<std::string> cals = args.values("calibration");
        if (cals.size() > 2)
            throw InputError(Location{"moex-cli compare", 0, 0},
                             "--calibration: at most two with --measured (taken right before and right after the run), got "
                                 + std::to_string(cals.size()));
        return compareMeasured(*run, cals, args.value("json"));
    }
    if (args.values("calibration").size() > 1)
        throw InputError(Location{"moex-cli compare", 0, 0}, "--calibration: one calibration file for compare A B");
    args.requirePositionals(2, 2, "moex-cli compare A B [--steps N] [--json OUT|-] | compare --measured RUN.json");
    const int steps = args.intValue("steps", 10, 1, 100000);
    const long long seed = args.has("seed") ? args.intValue("seed", 0, 0, 2147483647) : -1;
    const std::string cal = args.value("calibration").value_or("");
    const Scenario sa = loadScenarioFile(args.positionals()[0], args.overrides());
    const Scenario sb = loadScenarioFile(args.positionals()[1], args.overrides());
    args.checkOutputsAgainst(sa);
    args.checkOutputsAgainst(sb);
    const SimRun a = runSimulation(sa, steps, seed, cal);
    const SimRun b = runSimulation(sb, steps, seed, cal);
    const std::vector<CompareTerm> terms = compareTerms(sa, a.mean, sb, b.mean);
    const std::string explanation = explainComparison(sa, a.mean, sb, b.mean, terms);
    if (auto json = args.value("json")) {
        nlohmann::json j;
        j["a"] = {{"scenario", sa.name}, {"summary", summaryToJson(a.mean)}};
        j["b"] = {{"scenario", sb.name}, {"summary", summaryToJson(b.mean)}};
        nlohmann::json ratios, list = nlohmann::json::array();
        for (const auto& t : terms) {
            // null where A is 0: no ratio (0 would read as "B has none").
            const nlohmann::json ratio = t.ratio() ? nlohmann::json(*t.ratio()) : nlohmann::json(nullptr);
            ratios[t.key] = ratio;
            list.push_back({{"name", t.key}, {"a", t.a}, {"b", t.b}, {"delta", t.delta()}, {"ratio", ratio}, {"unit", t.unit}});
        }
        j["ratio"] = ratios;
        j["terms"] = list;
        j["explanation"] = explanation;
        writeJson(*json, j.dump(1));
        if (*json == "-")
            return 0;
    }
    std::cout << "A: " << sa.name << "\nB: " << sb.name << "\n\n";
    auto labelOf = [](const CompareTerm& t) { return t.label + (t.unit == "us" ? " ms" : (t.unit.empty() ? "" : " " + t.unit)); };
    std::size_t width = 0;  // the longest label and a space (labels are ASCII)
    for (const auto& t : terms)
        width = std::max(width, labelOf(t).size() + 1);
    std::cout << std::left << std::setw(static_cast<int>(width)) << "" << std::right << std::setw(14) << "A" << std::setw(14)
              << "B" << std::setw(10) << "B/A" << std::setw(14) << "B-A" << "\n";
    for (const auto& t : terms) {
        const double scale = t.unit == "us" ? 1e-3 : 1.0;
        // No ratio where A is 0: a dash (3 bytes of UTF-8, one column: the field 2 wider).
        const std::string ratio = t.ratio() ? fixed(*t.ratio(), 2) + "x" : "–";
        std::cout << std::left << std::setw(static_cast<int>(width)) << labelOf(t) << std::right << std::setw(14)
                  << num(t.a * scale) << std::setw(14) << num(t.b * scale) << std::setw(t.ratio() ? 10 : 12) << ratio
                  << std::setw(14) << num(t.delta() * scale) << "\n";
    }
    std::cout << "\n" << explanation;
    return 0;
}

}  // namespace moex::cli
