// The simulator as a placement objective (placement/cost_function.h): the time of one MoE layer,
// averaged over a few routing samples, for a candidate layout of that layer.
//
//   std::vector<RoutingSample> samples(4);  for (auto& s : samples) routing.next(s);
//   SimObjective objective(scenario, calibration, std::move(samples), 288);
//   double us = objective.layerTimeUs(3, candidateLayer);
//
// One evaluation routes the layer once per sample (about 1/L of a simulated step each), so a
// search can afford thousands per second. The other layers keep whatever was evaluated last; they
// do not enter a layer's time.
#pragma once

#include "placement/cost_function.h"
#include "scenario/scenario.h"
#include "sim/calibration.h"
#include "sim/simulator.h"
#include "workload/routing_sample.h"

#include <vector>

namespace moex {

class SimObjective final : public PlacementObjective {
public:
    // `numSlots` physical slots per layer (0 = the scenario's experts + redundant slots), spread as
    // the contiguous layout does: the slot count per GPU sets the memory left for KV cache, so
    // candidates should keep it. Throws std::invalid_argument when there are no samples or a
    // sample does not match the scenario.
    SimObjective(const Scenario& scenario, const Calibration& calibration, std::vector<RoutingSample> samples,
                 int numSlots = 0);

    double layerTimeUs(int layer, const LayerPlacement& placement) override;
    [[nodiscard]] int numLayers() const override { return m_layers; }

    [[nodiscard]] long long evaluations() const { return m_evaluations; }
    [[nodiscard]] const std::vector<RoutingSample>& samples() const { return m_samples; }

private:
    Simulator m_sim;
    std::vector<RoutingSample> m_samples;
    int m_layers = 0;
    long long m_evaluations = 0;
};

}  // namespace moex
