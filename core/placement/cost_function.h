// The objective a placement search minimises. Placement never includes the simulator (DESIGN.md
// section 1): the layer that can evaluate a placement (sim's SimObjective) implements this
// interface and hands it to the strategy through PlacementRequest::objective.
//
//   SimObjective objective(scenario, calibration, samples);   // sim/sim_objective.h
//   request.objective = &objective;
//   Placement p = makePlacement(request);                      // strategy "search"
//
// Layers are independent given the routing (each MoE layer's time depends only on that layer's
// slots), so the interface evaluates one layer at a time: a search changes one layer and pays for
// one layer's evaluation, about 1/L of a simulated step.
#pragma once

#include "placement/placement.h"

namespace moex {

class PlacementObjective {
public:
    virtual ~PlacementObjective();

    // Time in microseconds of MoE layer `layer` (ordinal, 0-based) when that layer is laid out as
    // `placement`; lower is better. Deterministic: equal arguments give equal results, whatever
    // was evaluated before. Throws std::invalid_argument for a layer that is malformed (wrong GPU
    // count, an expert without a slot, ids out of range).
    virtual double layerTimeUs(int layer, const LayerPlacement& placement) = 0;

    // MoE layers the objective knows (a placement to evaluate has exactly this many).
    [[nodiscard]] virtual int numLayers() const = 0;

    // Sum of layerTimeUs over every layer of `p`.
    double totalTimeUs(const Placement& p);
};

}  // namespace moex
