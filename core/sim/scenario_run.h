// What a run of a scenario needs besides the scenario itself: its routing source, its placement
// (strategy resolved) and its calibration. Shared by moex-cli simulate/compare/bench and the GUI.
#pragma once

#include "placement/placement.h"
#include "scenario/scenario.h"
#include "sim/calibration.h"
#include "workload/routing_sample.h"

#include <memory>
#include <string>
#include <vector>

namespace moex {

class RoutingSource {
public:
    virtual ~RoutingSource() = default;
    virtual void next(RoutingSample& out) = 0;
    virtual void reset() = 0;
};

// Synthetic generator or trace replay, as the scenario's workload.routing says. `seedOverride`
// (when >= 0) replaces the scenario's seed. Throws InputError for unreadable or mismatched traces.
std::unique_ptr<RoutingSource> makeRoutingSource(const Scenario& s, long long seedOverride = -1);

// The scenario's placement: explicit slots, or its strategy applied to `load` ([MoE layer][expert];
// empty = expected load of the routing source, estimated from `samples` steps).
Placement resolvePlacement(const Scenario& s, const std::vector<std::vector<double>>& load = {});

// Expected per-layer expert load of a routing source over `steps` steps ([layer][expert]).
std::vector<std::vector<double>> estimateLoad(RoutingSource& source, int steps);

// The calibration for the scenario's GPU: `file` if given, else the scenario's calibration file,
// else the built-in default for the GPU generation.
Calibration resolveCalibration(const Scenario& s, const std::string& file = {});

}  // namespace moex
