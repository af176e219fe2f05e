// What-if comparison of two scenarios, term by term like `moex-cli compare`: dispatch, combine,
// expert compute, attention, step time, memory-limited batch, tokens/s, power, imbalance, memory,
// with ratios B/A and an explanation of where the difference comes from.
#pragma once

#include "run_summary.h"

#include <string>
#include <vector>

namespace moex::session {

struct CompareTerm {
    std::string key;    // the moex-cli compare --json name, e.g. "dispatch_us"
    std::string label;  // "dispatch (all MoE layers)"
    double a = 0;
    double b = 0;
    std::string unit;   // "us", "tokens", "tok/s", "W", "GB", ""
    bool part_of_step = false;       // adds up to the step (without overlap)
    bool higher_is_better = false;   // tokens/s, batch, ...

    [[nodiscard]] double ratio() const { return a != 0 ? b / a : 0.0; }
    [[nodiscard]] double delta() const { return b - a; }
};

std::vector<CompareTerm> compareTerms(const RunSummary& a, const RunSummary& b);
// A few sentences: the tokens/s per GPU ratio = batch ratio x step-speed ratio, the terms that
// moved most, NVLink domains crossed, memory limits, overlap.
std::string explainComparison(const RunSummary& a, const RunSummary& b, const std::vector<CompareTerm>& terms);

}  // namespace moex::session
