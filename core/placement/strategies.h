// Placement strategies behind one entry point, so the CLI, the scenario and the benchmark choose a
// strategy by name: contiguous (the serving systems' default), round-robin, eplb (DeepSeek's
// balancer, eplb.h, with the extra copies it puts on one GPU moved to others: replica_separation.h),
// eplb-exact (DeepSeek's output as it is, same-GPU copies included), gem (GPU-variability-aware, gem.h) and search (improves the simulated time,
// search.h). docs/PLACEMENT.md explains each.
#pragma once

#include "common/cancel.h"
#include "placement/placement.h"
#include "workload/coactivation.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace moex {

class PlacementObjective;

struct PlacementRequest {
    std::string strategy = "contiguous";
    int num_experts = 0;  // E, routed experts per MoE layer
    int num_gpus = 0;     // G, EP ranks
    int num_layers = 0;   // MoE layers; 0 = one per row of `load`
    int num_nodes = 1;    // NVLink domains (EPLB's "nodes")
    int num_groups = 1;   // expert groups of the model (ModelSpec::expert_groups)
    int num_slots = 0;    // R, physical slots per layer over all GPUs; 0 = E (no redundancy)
    // [MoE layer][expert] load to balance; empty = uniform. Strategies that ignore load accept it.
    std::vector<std::vector<double>> load;

    // gem, search: speed factor of each GPU (size G, 1 = nominal, slower < 1); empty = all 1.
    std::vector<double> gpu_speed;
    // gem, search: co-activation of one MoE layer as coactivationMatrix / expectedCoactivation give
    // it (E x E: [i][j] tokens choosing both, [i][i] tokens choosing i). Called at most once per
    // layer by each strategy that uses it; unset = none known (load alone decides).
    std::function<ExpertMatrix(int layer)> coactivation;
    // search: per-step loads, [MoE layer][step][expert], of the routing steps the objective
    // simulates (preparePlacement fills it); empty = unknown: the search then balances the mean
    // load only, not what each step's own fluctuation costs (search_steady.h).
    std::vector<std::vector<std::vector<double>>> step_load;
    // search: what it minimises (sim's SimObjective); required, not owned, must outlive the call.
    PlacementObjective* objective = nullptr;
    // search: time budget, turned into a fixed number of evaluations (search.h), and its seed. The
    // result depends on both and on nothing else (not on the machine's speed).
    double budget_ms = 1000;
    std::uint64_t seed = 1;
    // search: checked before each layer; makePlacement throws Cancelled once it is cancelled.
    CancelToken cancel;
};

// Expert e on GPU e % G. Redundant copies continue the cycle: physical slot s (s >= E) goes to GPU
// s % G. Which experts get copies: without load, experts 0, 1, 2, ... in turn; with load, the
// hottest of that layer first (ties by lower id), wrapping round when there are more copies than
// experts. A copy is never put on a GPU that already holds that expert when another pending copy
// fits there (the first such copy in hot-first order takes the slot), or, failing that, when an
// earlier copy can trade places with it; copies beside their original add no balance.
// GPUs get ceil or floor of (E + redundant) / G slots. `load`, if given, has numLayers rows of E.
Placement roundRobinPlacement(int numExperts, int numGpus, int numLayers, int redundantSlots,
                              const std::vector<std::vector<double>>& load = {});

// Builds the placement a request names. Throws std::invalid_argument with a clear message for an
// unknown strategy (listing the known ones), R < E, R not a multiple of G for eplb, gem and search,
// a load whose shape does not match, search without an objective, and the like.
Placement makePlacement(const PlacementRequest& request);
// The checks of the request's shape alone (slots against experts and GPUs), which need no load:
// throws std::invalid_argument as makePlacement does. For `moex-cli validate`, which places nothing.
void checkPlacementShape(const PlacementRequest& request);

// The names makePlacement accepts.
const std::vector<std::string>& placementStrategies();

}  // namespace moex
