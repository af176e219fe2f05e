#include "run_summary.h"

#include "metrics/metrics_json.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"
#include "sim/summary_text.h"

#include <vector>

namespace moex::session {

RunSummary summarize(const Scenario& s, const Placement& p, int steps)
{
    RunSummary r;
    r.scenario = s;
    const Calibration cal = resolveCalibration(s);
    r.calibration = cal.name;
    auto routing = makeRoutingSource(s);
    Simulator sim(s, p, cal);
    RoutingSample sample;
    std::vector<StepTotals> totals;
    for (int i = 0; i < steps; ++i) {
        routing->next(sample);
        sim.step(sample, r.last);
        r.last.step = i;
        totals.push_back(r.last.summary);
    }
    r.steps = steps;
    r.mean = meanTotals(totals);
    return r;
}

std::string headlessSummary(const RunSummary& r)
{
    return summaryText(r.scenario, r.mean) + "(mean of " + std::to_string(r.steps) + " simulated steps, calibration " +
           r.calibration + ")\n";
}

}  // namespace moex::session
