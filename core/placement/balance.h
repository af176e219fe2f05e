// How evenly a placement spreads a load over GPUs, and the replica layout flaw EPLB can produce.
// Serving systems (SGLang, vLLM, TensorRT-LLM) split a replicated expert's tokens evenly over its
// replicas and exports carry no shares, so these judge every placement with even splits.
#pragma once

#include "placement/placement.h"

#include <string>
#include <vector>

namespace moex {

// Load on each GPU of one layer when each of an expert's replicas takes load[e] / replicas(e).
// Throws std::invalid_argument when `load` has fewer entries than the experts named, or an expert
// with load has no slot (its tokens would have nowhere to go).
std::vector<double> evenSplitGpuLoads(const LayerPlacement& layer, const std::vector<double>& load);

// max / mean of the GPU loads (1 when all are zero).
double maxOverMean(const std::vector<double>& gpuLoads);

// Per MoE layer max/mean GPU load; load[layer][expert], one row per placement layer.
std::vector<double> maxMeanGpuLoadPerLayer(const Placement& p, const std::vector<std::vector<double>>& load);
// Balance as the benchmark reports it: the mean over layers of max/mean GPU load.
double maxMeanGpuLoad(const Placement& p, const std::vector<std::vector<double>>& load);

// Two or more replicas of one expert on one GPU: they add memory but no balance, since both take
// their share on the same GPU (deepseek-ai/EPLB#22). Reported, never silently repaired.
struct ColocatedReplicas {
    int moe_layer = 0;  // MoE ordinal
    int gpu = 0;
    int expert = 0;
    int copies = 0;  // >= 2
};
std::vector<ColocatedReplicas> findColocatedReplicas(const Placement& p);
// One line per finding, at most `limit` lines plus a count of the rest ("" when none).
std::string describeColocated(const std::vector<ColocatedReplicas>& found, std::size_t limit = 8);

}  // namespace moex
