// A GPU's (or engine rank's) busy time in a step: the step less the time it waited. Not the sum
// of its phases: under two-batch overlap its traffic runs beside its compute, and that sum exceeds
// the step (docs/MODEL.md section 5).
#pragma once

#include "metrics/step_metrics.h"

#include <algorithm>
#include <cstddef>

namespace moex {

[[nodiscard]] inline double gpuBusyUs(const StepMetrics& m, std::size_t gpu)
{
    return std::max(0.0, m.summary.step_time_us - m.gpus[gpu].idle_us);
}

}  // namespace moex
