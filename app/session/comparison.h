// What-if comparison of two run summaries: the terms and explanation of sim/comparison.h (the same
// as `moex-cli compare`), from each summary's scenario and mean totals.
#pragma once

#include "run_summary.h"
#include "sim/comparison.h"

#include <string>
#include <vector>

namespace moex::session {

using moex::CompareTerm;

inline std::vector<CompareTerm> compareTerms(const RunSummary& a, const RunSummary& b)
{
    return moex::compareTerms(a.scenario, a.mean, b.scenario, b.mean);
}

inline std::string explainComparison(const RunSummary& a, const RunSummary& b, const std::vector<CompareTerm>& terms)
{
    return moex::explainComparison(a.scenario, a.mean, b.scenario, b.mean, terms);
}

}  // namespace moex::session
