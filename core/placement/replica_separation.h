// Two replicas of one expert on one GPU (DeepSeek's EPLB produces them: deepseek-ai/EPLB#22) add
// memory but no balance, and one consumer cannot load them at all: vllm-ascend keeps one local slot
// per expert and derives the slots per rank from rank 0's distinct experts, so a duplicate on rank 0
// shifts every other rank's physical ids and tokens go to the wrong experts (docs/PLACEMENT.md).
//
// separateColocatedReplicas moves each extra copy to another GPU by the slot swap that costs the
// least balance: the copy of expert e on GPU g trades places with expert f on GPU h, where h holds
// no e and g no f (so the swap creates no new duplicate), chosen to minimise the layer's largest
// GPU load, then the sum of squared GPU loads, then the lowest (h, slot). Loads split evenly over
// replicas, as serving systems split them; replica counts do not change. Swaps stay inside the
// NVLink domain when any swap there is possible (EPLB's hierarchical policy keeps an expert's
// replicas in its node). Shares, if any, travel with their slots.
#pragma once

#include "placement/balance.h"
#include "placement/placement.h"

#include <string>
#include <vector>

namespace moex {

struct ReplicaSwap {
    int moe_layer = 0;     // MoE ordinal
    int gpu = 0;           // held the extra copy of `expert`
    int expert = 0;
    int other_gpu = 0;     // gave `other_expert` to `gpu` and took the copy of `expert`
    int other_expert = 0;
};

struct SeparationReport {
    std::vector<ReplicaSwap> swaps;
    std::vector<ColocatedReplicas> left;  // copies no swap could separate
    // Mean over layers of max/mean GPU load (even splits), before and after.
    double balance_before = 1;
    double balance_after = 1;
    [[nodiscard]] double costPercent() const { return 100.0 * (balance_after / balance_before - 1.0); }
};

// load[layer][expert] as balance.h takes it (empty = every expert 1). gpusPerDomain: GPUs per
// NVLink domain, in GPU order (0 = one domain). Throws std::invalid_argument for a load of the
// wrong shape.
SeparationReport separateColocatedReplicas(Placement& p, const std::vector<std::vector<double>>& load,
                                           int gpusPerDomain = 0);

// The same for one layer, for callers that work layer by layer (search): `load` has one entry per
// expert; `layerIndex` only names the layer in `report` (may be null). Returns the swaps made.
int separateColocatedInLayer(LayerPlacement& layer, const std::vector<double>& load, int gpusPerDomain,
                             SeparationReport* report = nullptr, int layerIndex = 0);

// "separated N colocated replica(s) by slot swaps: balance A -> B (+C%)", plus what was left.
std::string describeSeparation(const SeparationReport& r);

}  // namespace moex
