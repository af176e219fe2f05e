// The load-statistics report (issue 21): "should I turn on EPLB, and with how many redundant
// experts?", answered from a serving system's recorder file for a scenario.
//
//   LoadReport r = buildLoadReport(scenario, "expert_distribution_recorder.pt", {});
//   r.recommendation   // one sentence
//
// Every figure is what `moex-cli simulate` gives for the scenario with the file as its routing
// (workload.routing kind counts, file STATS: each step draws the file's per-layer expert shares)
// and the point's placement (strategy, placement.redundant_slots): the report runs the same
// scenario through the same run API (runScenario), and reproduceCommand() prints the command.
// The balance figures (max/mean GPU load) are of the file's own counts.
#pragma once

#include "metrics/step_metrics.h"
#include "placement/load_stats.h"
#include "placement/placement.h"
#include "scenario/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moex {

struct LoadReportOptions {
    // Slots per GPU to try beyond the fewest that hold every expert (ceil(experts / GPUs)): each
    // point has slots_per_gpu x GPUs slots per layer, the redundant ones being that minus the
    // experts. Empty: 0, 1, 2, 4, 8 while the memory holds them.
    std::vector<int> extra_slots_per_gpu;
    std::vector<std::string> strategies = {"eplb", "search", "gem"};
    int steps = 10;  // simulated steps averaged per point (simulate's default)
    // A point is worth its slots when it gains at least this fraction of step time over the point
    // with fewer slots, per slot per GPU it adds (the knee of the curve).
    double knee_gain = 0.02;
};

struct ReportPoint {
    std::string strategy;  // "contiguous" for the baseline (EPLB off)
    int slots_per_gpu = 0;
    int slot_count = 0;        // per layer, all GPUs: slots_per_gpu x GPUs (not "slots": a Qt macro)
    int redundant_slots = 0;   // slots - experts (placement.redundant_slots)
    double balance = 0;        // max/mean GPU load on the file's counts, mean over layers (even replica shares)
    double moe_time_us = 0;    // simulated, mean over steps
    double step_time_us = 0;
    double tokens_per_s = 0;   // whole system
    std::int64_t max_concurrent_users = 0;  // whole system, at the scenario's context
    double hbm_used_gb = 0;    // per GPU, the fullest
    bool fits = true;          // false: the slots' weights leave no KV cache (not simulated further)
};

struct HotExpert {
    int decoder_layer = 0;  // decoder-layer index
    int expert = 0;
    double share = 0;       // of its layer's pairs
    double over_mean = 0;   // its load over its layer's mean expert load
    // Of the file's snapshots, the fraction in which it is among its layer's hottest
    // `hot_count` experts (-1: the file has one snapshot).
    double stability = -1;
};

struct LoadReport {
    std::string stats_path;
    std::string format, detail;  // from readLoadStats
    std::string scenario_name;
    int gpus = 0, experts = 0, moe_layers = 0, snapshots = 1;
    std::vector<int> layer_ids;              // decoder index of each MoE layer
    std::vector<double> layer_imbalance;     // contiguous placement (EPLB off), file counts
    double imbalance_p50 = 0, imbalance_p90 = 0, imbalance_p99 = 0, imbalance_max = 0;
    int hot_count = 0;                       // experts per layer counted as hot for stability
    std::vector<HotExpert> hottest;          // the hottest (layer, expert) pairs, hottest first
    ReportPoint baseline;                    // contiguous, no redundant slots: EPLB off (slots = experts)
    std::vector<ReportPoint> curve;          // per strategy, per redundant slots per GPU
    std::vector<std::string> refused;        // points a strategy refused, with its reason
    int recommended = -1;                    // index into curve; -1: keep EPLB off
    std::string recommendation;              // one sentence
    Placement recommended_placement;         // the recommended point's (the baseline's when -1)
    std::vector<double> traffic_off, traffic_on;  // GPU x GPU bytes of the last simulated step
    Placement baseline_placement;                 // EPLB off (contiguous)
    StepMetrics metrics_off, metrics_on;          // the last simulated step of each (links, per-GPU times)
    Scenario scenario;                       // the scenario as run (routing = the file)
    std::vector<std::vector<double>> file_load;  // [MoE layer][expert], the file's counts matched to the model
};

// The scenario with the statistics file as its routing (kind counts), as `--set
// workload.routing.kind=counts --set workload.routing.file=STATS` makes it; throws InputError when
// the file's layers or experts do not match the model (naming both).
Scenario scenarioWithStatistics(const Scenario& s, const std::string& statsPath);

LoadReport buildLoadReport(const Scenario& s, const std::string& statsPath, const LoadReportOptions& options);

// The moex-cli command that gives `p`'s figures; `statsPath` absolute (simulate resolves a relative
// --set path against the scenario's folder).
std::string reproduceCommand(const std::string& scenarioFile, const std::string& statsPath, const ReportPoint& p,
                             int steps);

}  // namespace moex
