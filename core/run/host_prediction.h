// Predicted vs measured for the CPU engine (DESIGN.md section 6): the simulator run on host-cpu
// (the engine's ranks on this machine, rates from a CPU calibration) for the step the engine
// measured, routed with the expert loads the engine saw, so that the model's error is the model's
// and not the routing's. moex-cli compare --measured and the GUI's Local engine source use it.
#pragma once

#include "metrics/step_metrics.h"
#include "scenario/scenario.h"
#include "sim/calibration.h"

#include <string>
#include <vector>

namespace moex {

// The scenario as host-cpu with `ranks` ranks and `tokens` tokens per step (all ranks): the
// topology replaced, tokens per rank the most any rank gets (layers are synchronous), no two-batch
// overlap (the engine runs its phases in turn).
Scenario hostCpuScenario(const Scenario& engineScenario, int ranks, std::int64_t tokens);

// The simulator's step for the engine's measured step `measured` (its ranks, tokens, layers and
// per-layer expert loads) of `engineScenario`, placed as the engine places (engineRankPlacement).
// The result has the measured step's layers only, in its order. Throws std::invalid_argument for
// a measured step that does not fit the scenario (layers, experts).
StepMetrics predictEngineStep(const Scenario& engineScenario, const StepMetrics& measured, const Calibration& calibration);

// One row of a predicted-vs-measured table: a phase summed over the compared layers, or one layer.
struct PredictionRow {
    std::string what;  // "MoE layers", "router+dispatch", "experts", "combine", "layer 3"
    double measured_us = 0;
    double predicted_us = 0;
    [[nodiscard]] double error() const { return measured_us > 0 ? predicted_us / measured_us - 1.0 : 0.0; }
};

// Phases (MoE layers, router+dispatch, experts, combine) then each layer's time; `measuredLayers`
// are the engine's per-layer times (means over its steps), `predicted` predictEngineStep's result.
std::vector<PredictionRow> predictionTable(const std::vector<LayerMetrics>& measuredLayers, const StepMetrics& predicted);

// Where an engine run had more ranks than hardware threads, its ranks took turns on the cores, and
// a phase's wall time includes the time a rank waited for one: router+dispatch above all, where a
// rank waits at the counts exchange for peers that are not running (measured: 4 Mixtral ranks on 2
// threads, 1-8 ms of wall time against 0.1-0.3 ms of the rank's CPU time; docs/ENGINE.md). The
// prediction has no such wait. The note saying so, or "" when every rank had a thread of its own
// (or the thread count is unknown, 0).
std::string timeSharingNote(int ranks, int hardwareThreads);

}  // namespace moex
