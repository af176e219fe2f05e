// The engine's measurements turned into the StepMetrics every view reads: per layer the slowest
// rank's phases, per rank the sum over layers, expert loads as the routers chose them and the
// rows between rank pairs as bytes. Internal to the engine (ep_engine.cpp measures, this adds up).
#pragma once

#include "metrics/step_metrics.h"

#include <cstdint>
#include <vector>

namespace moex::engine {

// One rank's steady-clock times in one layer, microseconds, and the token-expert rows it ran.
// `pull` is the part of `dispatch` after the counts barrier: the rows copied into the rank's
// receive buffer (the transport's own work, no waiting for other ranks).
struct PhaseTimes {
    double router = 0, dispatch = 0, pull = 0, expert = 0, wait = 0, combine = 0, layer = 0;
    std::int64_t pairs = 0;
};

struct EngineStepRecord {
    int step = 0;
    int experts = 0;
    std::int64_t tokens = 0;                       // every rank's together
    std::vector<int> rankTokens;                   // [rank]
    std::vector<int> decoderLayers;                // [configured layer] its decoder-layer index
    const std::vector<std::vector<PhaseTimes>>* times = nullptr;  // [configured layer][rank]
    const std::vector<std::vector<std::vector<std::int64_t>>>* expertLoad = nullptr;  // [rank][layer][expert]
    const std::vector<double>* trafficRows = nullptr;  // [src * ranks + dst] rows over the step's layers
    double rowBytes = 0;                           // one row of hidden states
    double wallUs = 0;
};

StepMetrics engineStepMetrics(const EngineStepRecord& rec);

}  // namespace moex::engine
