#include "run_summary.h"

#include "run/run_loop.h"
#include "sim/summary_text.h"

namespace moex::session {

RunSummary summarize(const Scenario& s, const Placement& p, int steps, const std::function<bool()>& cancelled)
{
    auto source = makeSimSource();
    RunProgress progress;
    if (cancelled) {
        const auto check = [&] {
            if (cancelled())
                throw SummaryCancelled{};
        };
        progress.configured = [check](const MetricsSource&) { check(); };
        progress.stepped = [check](int, const StepMetrics&) { check(); };
    }
    const RunResult run = runSteps(*source, s, p, steps, 0, progress);
    RunSummary r;
    r.scenario = s;
    r.last = run.last;
    r.mean = run.mean;
    r.steps = static_cast<int>(run.steps.size());
    r.calibration = source->calibration();
    return r;
}

std::string headlessSummary(const RunSummary& r)
{
    return summaryText(r.scenario, r.mean) + "(mean of " + std::to_string(r.steps) + " simulated steps, calibration " +
           r.calibration + ")\n";
}

}  // namespace moex::session
