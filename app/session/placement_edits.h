// Hand edits of a placement (the canvas's drag and drop), each checked before it is applied:
// every expert keeps at least one slot in every layer, no GPU holds two replicas of one expert,
// and a GPU that gains slots must still fit its weights (plus room for one KV-cache sequence) in
// HBM. Plain C++ on core types: a refused edit returns the reason and leaves the placement as it was.
#pragma once

#include "placement/placement.h"
#include "scenario/scenario.h"

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

// Each returns "" when applied, else why it was refused (placement untouched). `layer` is a MoE
// layer index, or -1 for every layer (applied where it can be, refused if it can be nowhere).
std::string moveExpert(Placement& p, const MemoryRule& mem, int layer, int expert, int fromGpu, int toGpu);
std::string replicateExpert(Placement& p, const MemoryRule& mem, int layer, int expert, int toGpu);
std::string swapExperts(Placement& p, int layer, int expertA, int gpuA, int expertB, int gpuB);
std::string removeReplica(Placement& p, int layer, int expert, int gpu);

// Slots one GPU holds over all layers.
long long slotsOnGpu(const Placement& p, int gpu);

}  // namespace moex::session
