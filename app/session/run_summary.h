// A scenario simulated for a few steps on its own simulator (not the live one): the mean totals
// and the last step in full. Used by the what-if comparison and the headless summary.
#pragma once

#include "metrics/step_metrics.h"
#include "placement/placement.h"
#include "run/run_loop.h"
#include "scenario/scenario.h"

#include <functional>
#include <string>

namespace moex::session {

struct RunSummary {
    Scenario scenario;
    StepMetrics last;
    StepTotals mean;
    int steps = 0;
    std::string calibration;
};

// Thrown by summarize when `cancelled` answers true between steps.
struct SummaryCancelled {};

// Throws (InputError, std::invalid_argument) like the simulator; SummaryCancelled when `cancelled`
// (asked after the source is configured and after each step) answers true.
RunSummary summarize(const Scenario& s, const Placement& p, int steps = kSummarySteps,
                     const std::function<bool()>& cancelled = {});

// The plain-text summary `moex SCENARIO` prints when there is no display (like moex-cli simulate).
std::string headlessSummary(const RunSummary& r);

}  // namespace moex::session
