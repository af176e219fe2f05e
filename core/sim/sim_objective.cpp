#include "sim/sim_objective.h"

#include <stdexcept>
#include <string>

namespace moex {

namespace {

Placement startLayout(const Scenario& s, int numSlots)
{
    const int E = s.model.routed_experts;
    const int slots = numSlots > 0 ? numSlots : E + s.placement.redundant_slots;
    if (slots < E)
        throw std::invalid_argument("objective: " + std::to_string(slots) + " slots cannot hold " + std::to_string(E) +
                                    " experts");
    return contiguousPlacement(E, s.topology.numGpus(), s.model.numMoeLayers(), slots - E);
}

}  // namespace

SimObjective::SimObjective(const Scenario& scenario, const Calibration& calibration, std::vector<RoutingSample> samples,
                           int numSlots)
    : m_sim(scenario, startLayout(scenario, numSlots), calibration), m_samples(std::move(samples)),
      m_layers(scenario.model.numMoeLayers())
{
    if (m_samples.empty())
        throw std::invalid_argument("objective: at least one routing sample is needed");
    for (const RoutingSample& r : m_samples)
        if (r.num_gpus != scenario.topology.numGpus() || r.num_experts != scenario.model.routed_experts ||
            r.numLayers() != m_layers)
            throw std::invalid_argument("objective: a routing sample does not match the scenario's shape");
}

double SimObjective::layerTimeUs(int layer, const LayerPlacement& placement)
{
    m_sim.setLayerPlacement(layer, placement);
    double sum = 0;
    for (const RoutingSample& r : m_samples)
        sum += m_sim.layerTimeUs(r, layer);
    ++m_evaluations;
    return sum / static_cast<double>(m_samples.size());
}

}  // namespace moex
