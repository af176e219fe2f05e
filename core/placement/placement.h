// Placement: for each MoE layer, the ordered slots of every GPU (slot -> expert), and the share of
// an expert's tokens each replica takes.
#pragma once

#include "common/ids.h"

#include <string>
#include <vector>

namespace moex {

struct LayerPlacement {
    std::vector<std::vector<ExpertId>> gpu_slots;  // [gpu][local slot] -> expert
    // Optional [gpu][local slot] share of the expert's tokens this replica takes; empty = the
    // default rule (nearest replica first, DESIGN.md section 5). When present, shares of one
    // expert's replicas sum to 1.
    std::vector<std::vector<double>> shares;

    [[nodiscard]] int numGpus() const { return static_cast<int>(gpu_slots.size()); }
    [[nodiscard]] int numSlots() const;
    // Replica count per expert (size numExperts).
    [[nodiscard]] std::vector<int> replicaCounts(int numExperts) const;
    // Flattened physical slots in rank order: phy2log as serving systems see it.
    [[nodiscard]] std::vector<int> phy2log() const;
    // Same slots and the same shares (both empty, or equal).
    bool operator==(const LayerPlacement&) const = default;
};

struct Placement {
    int num_experts = 0;
    std::vector<LayerPlacement> layers;  // one per MoE layer, in order

    [[nodiscard]] int numLayers() const { return static_cast<int>(layers.size()); }
    [[nodiscard]] int numGpus() const { return layers.empty() ? 0 : layers.front().numGpus(); }
    [[nodiscard]] int maxSlotsPerGpu() const;
    bool operator==(const Placement&) const = default;
};

// Expert e on GPU e / (E / G), with redundant slots (if any) filled round-robin by expert id.
// Slots per GPU = ceil((E + redundant) / G).
Placement contiguousPlacement(int numExperts, int numGpus, int numLayers, int redundantSlots = 0);

// Checks structural rules: every expert 0..E-1 has at least one slot in every layer, ids in range,
// shares (if any) shaped like the slots, non-negative and summing to 1 per expert.
// Returns the problems found, one string each (empty = valid).
std::vector<std::string> checkPlacement(const Placement& p, int numExperts, int numGpus);

}  // namespace moex
