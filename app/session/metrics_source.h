// MetricsSource: where StepMetrics come from. "sim" (the analytical model) now; the local engine
// and remote workers implement the same interface, so SimRunner and every view work with each.
// Not thread-safe by itself: SimRunner serialises every call.
#pragma once

#include "metrics/step_metrics.h"
#include "placement/placement.h"
#include "scenario/scenario.h"

#include <memory>
#include <string>

namespace moex::session {

class MetricsSource {
public:
    virtual ~MetricsSource() = default;
    [[nodiscard]] virtual std::string name() const = 0;  // shown in the status bar: "sim", "cuda", "remote:HOST"
    // Rebuilds for a scenario and placement; the next step is step 0. Throws (InputError,
    // std::invalid_argument) and then keeps the previous configuration.
    virtual void configure(const Scenario& scenario, const Placement& placement) = 0;
    [[nodiscard]] virtual bool configured() const = 0;
    // Same scenario, another placement or GPU speeds (hand edits); takes effect at the next call.
    virtual void setPlacement(const Placement& placement, const GpuSpeeds& speeds) = 0;
    virtual void reset() = 0;                   // back to step 0 (routing restarts)
    virtual void next(StepMetrics& out) = 0;    // one more step
    // The last step's input again with the current placement, so an edit's effect is seen alone
    // (the first step when none ran yet). Undoing an edit therefore gives the same numbers back.
    virtual void repeat(StepMetrics& out) = 0;
};

// The analytical simulator over the scenario's routing (synthetic generator or trace).
std::unique_ptr<MetricsSource> makeSimSource();

}  // namespace moex::session
