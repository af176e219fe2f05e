// StepMetrics as CSV: one row per GPU (times, tokens, HBM, power, speed), then the step's totals
// as "summary" rows of key,value. Loads in any spreadsheet.
#pragma once

#include "metrics/step_metrics.h"

#include <string>

namespace moex::session {

std::string metricsToCsv(const StepMetrics& m);

}  // namespace moex::session
