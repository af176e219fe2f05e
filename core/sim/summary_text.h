// The plain-text summary of a simulated scenario that `moex-cli simulate` and the headless `moex`
// print: one labelled line per figure, from the scenario line to power.
//
//   std::cout << summaryText(scenario, meanTotals(steps));
#pragma once

#include "metrics/step_metrics.h"
#include "scenario/scenario.h"

#include <string>

namespace moex {

std::string summaryText(const Scenario& s, const StepTotals& t);

// v with `decimals` digits after the point ("%.*f"): the number format of the summaries.
std::string fixedText(double v, int decimals);

}  // namespace moex
