// Hand edits of a placement (the canvas's drag and drop), each checked before it is applied:
// every expert keeps at least one slot in every layer, no GPU holds two replicas of one expert,
// and a GPU that gains slots must still fit its weights (plus room for one KV-cache sequence) in
// HBM. Plain C++ on core types: a refused edit returns the reason and leaves the placement as it was.
#pragma once

#include "common/ids.h"
#include "placement/placement.h"
#include "scenario/scenario.h"

#include <optional>
#include <string>

namespace moex::session {

// What one GPU's HBM must hold, with the simulator's memory rule (DESIGN.md 5.7): expert weights
// of every slot over all layers + non-expert weights + the activation reserve + KV cache.
struct MemoryRule {
    double usable_bytes = 0;
    double expert_bytes = 0;      // one routed expert, as stored
    double fixed_bytes = 0;       // non-expert weights + activation reserve
    double kv_bytes_per_seq = 0;  // one sequence at the workload's context length

    // Most expert slots (all layers together) one GPU can hold and still fit one sequence.
    [[nodiscard]] long long maxSlotsPerGpu() const;
};
MemoryRule memoryRuleOf(const Scenario& s);

// Each returns "" when applied, else why it was refused (placement untouched).
std::string moveExpert(Placement& p, const MemoryRule& mem, MoeLayers layers, ExpertId expert, GpuId fromGpu,
                       GpuId toGpu);
std::string replicateExpert(Placement& p, const MemoryRule& mem, MoeLayers layers, ExpertId expert, GpuId toGpu);
std::string swapExperts(Placement& p, MoeLayers layers, ExpertId expertA, GpuId gpuA, ExpertId expertB, GpuId gpuB);
std::string removeReplica(Placement& p, MoeLayers layers, ExpertId expert, GpuId gpu);

// Slots one GPU holds over all layers.
long long slotsOnGpu(const Placement& p, GpuId gpu);

}  // namespace moex::session
