// StepMetrics as JSON: the moex-cli --json contract (DESIGN.md section 4). Keys are a contract:
// summary{step_time_us, tokens_per_s, tokens_per_s_per_gpu, tokens_per_s_per_kw, imbalance,
// dispatch_us, combine_us, expert_compute_us, hbm_used_gb_max, max_concurrent_users, ...},
// gpus[], links[{from, to, bytes, capacity_gbps, utilization}], traffic[G][G], layers[{expert_load,
// gpu_load, time_us, ...}], sim_wall_us_per_step.
#pragma once

#include "metrics/step_metrics.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace moex {

// `nodeNames` names topology nodes for links (index -> name); empty: indices are written.
nlohmann::json metricsToJson(const StepMetrics& m, const std::vector<std::string>& nodeNames);
nlohmann::json summaryToJson(const StepTotals& s);

// Mean of several steps' totals (what simulate reports as its summary): times averaged, rates
// derived (tokens/s = the steps' tokens over their time, power time-weighted, tokens/s per kW =
// their quotient).
StepTotals meanTotals(const std::vector<StepTotals>& steps);

}  // namespace moex
