#include "placement/cost_function.h"

#include <stdexcept>
#include <string>

namespace moex {

PlacementObjective::~PlacementObjective() = default;

double PlacementObjective::totalTimeUs(const Placement& p)
{
    if (p.numLayers() != numLayers())
        throw std::invalid_argument("objective: the placement has " + std::to_string(p.numLayers()) +
                                    " MoE layers, the objective " + std::to_string(numLayers()));
    double sum = 0;
    for (int l = 0; l < p.numLayers(); ++l)
        sum += layerTimeUs(l, p.layers[static_cast<std::size_t>(l)]);
    return sum;
}

}  // namespace moex
