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

// A GPU's step as the per-GPU breakdown shows it: compute, attention + dense, the communication
// not hidden behind its compute (split over dispatch and combine in the proportion of its own),
// and idle, adding up to the step. Exposed communication is its busy time beyond compute and
// attention, or, where larger, the layers' exposed communication (StepTotals::comm_exposed_us),
// which every GPU waits out whatever its own traffic (under two-batch overlap a GPU's own traffic
// hides behind its compute, but the layer's first dispatch and last combine do not). What is left
// is idle: waiting for slower GPUs (docs/MODEL.md section 5).
struct GpuStepSplit {
    double compute_us = 0;
    double attention_us = 0;
    double dispatch_us = 0;  // not hidden
    double combine_us = 0;   // not hidden
    double idle_us = 0;
};

[[nodiscard]] inline GpuStepSplit gpuStepSplit(const StepMetrics& m, std::size_t gpu)
{
    const GpuMetrics& g = m.gpus[gpu];
    const double work = g.compute_us + g.attention_us;
    const double comm = g.dispatch_us + g.combine_us;
    const double busyBeyond = std::clamp(gpuBusyUs(m, gpu) - work, 0.0, comm);
    const double waited = std::clamp(m.summary.comm_exposed_us, 0.0, std::max(0.0, m.summary.step_time_us - work));
    const double exposed = std::max(busyBeyond, waited);
    const double dShare = comm > 0 ? g.dispatch_us / comm : 0.5;
    GpuStepSplit s;
    s.compute_us = g.compute_us;
    s.attention_us = g.attention_us;
    s.dispatch_us = exposed * dShare;
    s.combine_us = exposed * (1.0 - dShare);
    s.idle_us = std::max(0.0, g.idle_us - (exposed - busyBeyond));
    return s;
}

}  // namespace moex
