// moex-cli compare A B [--steps N] [--seed S] [--json OUT|-] [--calibration F] [--set K=V]...
// Side-by-side totals with ratios B/A, and where the difference comes from, term by term.
#include "cli_args.h"
#include "commands.h"
#include "format.h"
#include "sim_run.h"

#include "metrics/metrics_json.h"
#include "scenario/scenario_yaml.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace moex::cli {

namespace {

struct Term {
    std::string key;
    std::string label;
    double a = 0;
    double b = 0;
    std::string unit;
    bool partOfStep = false;  // a per-step time that adds up to the step (without overlap)
};

std::vector<Term> termsOf(const SimRun& a, const SimRun& b)
{
    const StepTotals& x = a.mean;
    const StepTotals& y = b.mean;
    const double ga = a.scenario.topology.numGpus(), gb = b.scenario.topology.numGpus();
    return {
        {"dispatch_us", "dispatch (all MoE layers)", x.dispatch_us, y.dispatch_us, "us", true},
        {"combine_us", "combine (all MoE layers)", x.combine_us, y.combine_us, "us", true},
        {"expert_compute_us", "expert compute (slowest GPU)", x.expert_compute_us, y.expert_compute_us, "us", true},
        {"attention_us", "attention + dense layers", x.attention_us, y.attention_us, "us", true},
        {"step_time_us", "step time", x.step_time_us, y.step_time_us, "us", false},
        {"batch_per_gpu", "batch per GPU (memory limit)", static_cast<double>(x.batch_per_gpu),
         static_cast<double>(y.batch_per_gpu), "tokens", false},
        {"tokens_per_s_per_gpu", "tokens/s per GPU", x.tokens_per_s_per_gpu, y.tokens_per_s_per_gpu, "tok/s", false},
        {"tokens_per_s", "tokens/s (system)", x.tokens_per_s, y.tokens_per_s, "tok/s", false},
        {"power_w_per_gpu", "power per GPU (incl. switches)", x.power_kw * 1e3 / ga, y.power_kw * 1e3 / gb, "W", false},
        {"tokens_per_s_per_kw", "tokens/s per kW", x.tokens_per_s_per_kw, y.tokens_per_s_per_kw, "tok/s/kW", false},
        {"imbalance", "imbalance (max/mean load)", x.imbalance, y.imbalance, "", false},
        {"hbm_used_gb_max", "HBM used per GPU", x.hbm_used_gb_max, y.hbm_used_gb_max, "GB", false},
        {"max_concurrent_users", "concurrent sequences (system)", static_cast<double>(x.max_concurrent_users),
         static_cast<double>(y.max_concurrent_users), "", false},
    };
}

std::string num(double v)
{
    std::ostringstream o;
    if (std::abs(v) >= 100)
        o << std::fixed << std::setprecision(0) << v;
    else
        o << std::fixed << std::setprecision(2) << v;
    return o.str();
}

std::string explain(const SimRun& a, const SimRun& b, const std::vector<Term>& terms)
{
    std::ostringstream o;
    const StepTotals& x = a.mean;
    const StepTotals& y = b.mean;
    const double perGpu = x.tokens_per_s_per_gpu > 0 ? y.tokens_per_s_per_gpu / x.tokens_per_s_per_gpu : 0;
    o << "B delivers " << fixed(perGpu, 2) << "x the tokens/s per GPU of A";
    const double batchRatio = x.batch_per_gpu > 0 ? static_cast<double>(y.batch_per_gpu) / x.batch_per_gpu : 1;
    const double stepRatio = y.step_time_us > 0 ? x.step_time_us / y.step_time_us : 0;
    o << " = " << fixed(batchRatio, 2) << "x batch per GPU × " << fixed(stepRatio, 2) << "x step speed.\n";
    // Rank the additive terms by how much they moved.
    std::vector<const Term*> parts;
    for (const auto& t : terms)
        if (t.partOfStep)
            parts.push_back(&t);
    std::sort(parts.begin(), parts.end(),
              [](const Term* p, const Term* q) { return std::abs(p->b - p->a) > std::abs(q->b - q->a); });
    o << "Largest differences per step: ";
    for (std::size_t i = 0; i < parts.size(); ++i)
        o << (i ? ", " : "") << parts[i]->label << " " << (parts[i]->b >= parts[i]->a ? "+" : "")
          << fixed((parts[i]->b - parts[i]->a) / 1000.0, 2) << " ms";
    o << ".\n";
    const int da = a.scenario.topology.numDomains(), db = b.scenario.topology.numDomains();
    if (da != db)
        o << "A spans " << da << " NVLink domain(s), B " << db
          << ": all-to-all traffic between domains crosses NICs (" << (da > db ? "A" : "B")
          << "), which carry far less than NVLink.\n";
    if (x.memory_limited || y.memory_limited)
        o << "Memory limits the batch of " << (x.memory_limited ? "A" : "") << (x.memory_limited && y.memory_limited ? " and " : "")
          << (y.memory_limited ? "B" : "") << ": weights leave too little HBM for the KV cache of the requested batch.\n";
    if (a.scenario.overlap == Overlap::two_batch || b.scenario.overlap == Overlap::two_batch)
        o << "With two-batch overlap, communication hides behind compute, so the step is less than the sum of the terms.\n";
    return o.str();
}

}  // namespace

int cmdCompare(const Argv& argv)
{
    Args args("compare", argv, {{"steps"}, {"seed"}, {"json"}, {"calibration"}, {"set", true, true}});
    args.requirePositionals(2, 2, "moex-cli compare A B [--steps N] [--json OUT|-]");
    const int steps = args.intValue("steps", 10, 1, 100000);
    const long long seed = args.has("seed") ? args.intValue("seed", 0, 0, 2147483647) : -1;
    const std::string cal = args.value("calibration").value_or("");
    const Scenario sa = loadScenarioFile(args.positionals()[0], args.overrides());
    const Scenario sb = loadScenarioFile(args.positionals()[1], args.overrides());
    const SimRun a = runSimulation(sa, steps, seed, cal);
    const SimRun b = runSimulation(sb, steps, seed, cal);
    const auto terms = termsOf(a, b);
    if (auto json = args.value("json")) {
        nlohmann::json j;
        j["a"] = {{"scenario", sa.name}, {"summary", summaryToJson(a.mean)}};
        j["b"] = {{"scenario", sb.name}, {"summary", summaryToJson(b.mean)}};
        nlohmann::json ratios, list = nlohmann::json::array();
        for (const auto& t : terms) {
            const double r = t.a != 0 ? t.b / t.a : 0.0;
            ratios[t.key] = r;
            list.push_back({{"name", t.key}, {"a", t.a}, {"b", t.b}, {"delta", t.b - t.a}, {"ratio", r}, {"unit", t.unit}});
        }
        j["ratio"] = ratios;
        j["terms"] = list;
        j["explanation"] = explain(a, b, terms);
        writeJson(*json, j.dump(1));
        if (*json == "-")
            return 0;
    }
    std::cout << "A: " << sa.name << "\nB: " << sb.name << "\n\n";
    std::cout << std::left << std::setw(34) << "" << std::right << std::setw(14) << "A" << std::setw(14) << "B"
              << std::setw(10) << "B/A" << std::setw(14) << "B-A" << "\n";
    for (const auto& t : terms) {
        const double r = t.a != 0 ? t.b / t.a : 0.0;
        std::string unit = t.unit == "us" ? " ms" : (t.unit.empty() ? "" : " " + t.unit);
        const double scale = t.unit == "us" ? 1e-3 : 1.0;
        std::cout << std::left << std::setw(34) << (t.label + unit) << std::right << std::setw(14) << num(t.a * scale)
                  << std::setw(14) << num(t.b * scale) << std::setw(9) << fixed(r, 2) << "x" << std::setw(14)
                  << num((t.b - t.a) * scale) << "\n";
    }
    std::cout << "\n" << explain(a, b, terms);
    return 0;
}

}  // namespace moex::cli
