// What-if comparison of two simulated scenarios, term by term: dispatch, combine, expert compute,
// attention, step time, memory-limited batch, tokens/s, power, imbalance and what it costs, memory,
// with ratios B/A and a few sentences on where the difference comes from. `moex-cli compare` prints
// it; the GUI's Compare A / B tab shows it.
#pragma once

#include "metrics/step_metrics.h"
#include "scenario/scenario.h"

#include <optional>
#include <string>
#include <vector>

namespace moex {

struct CompareTerm {
    std::string key;    // the moex-cli compare --json name, e.g. "dispatch_us"
    std::string label;  // "dispatch (all MoE layers)"
    double a = 0;
    double b = 0;
    std::string unit;   // "us", "tokens", "tok/s", "W", "GB", ""
    bool part_of_step = false;       // adds up to the step (without overlap)
    bool higher_is_better = false;   // tokens/s, batch, ...

    // B / A; none where A is 0 (B has some where A has none, or neither has any).
    [[nodiscard]] std::optional<double> ratio() const { return a != 0 ? std::optional<double>(b / a) : std::nullopt; }
    [[nodiscard]] double delta() const { return b - a; }
};

// a and b: each scenario's mean totals over its simulated steps.
std::vector<CompareTerm> compareTerms(const Scenario& sa, const StepTotals& a, const Scenario& sb, const StepTotals& b);

// The tokens/s per GPU ratio = batch ratio x step-speed ratio, the terms that moved most, NVLink
// domains crossed, memory limits, overlap.
std::string explainComparison(const Scenario& sa, const StepTotals& a, const Scenario& sb, const StepTotals& b,
                              const std::vector<CompareTerm>& terms);

}  // namespace moex
