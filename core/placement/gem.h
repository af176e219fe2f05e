// gem: GPU-variability-aware expert mapping after GEM (arXiv 2605.19945; FACTS.md section 5 of the
// design notes). GPUs of one model run at different speeds (up to 27.7% apart in the paper); a layer
// ends when the slowest GPU does, so GEM gives each GPU work in proportion to its speed.
//
//   PlacementRequest rq;  rq.strategy = "gem";  rq.gpu_speed = speeds;  rq.coactivation = ...;
//   Placement p = makePlacement(rq);
//
// Per MoE layer, with S = R / G slots per GPU:
//  1. Active slots per GPU. A slow GPU reads its experts' weights as slowly as it computes, so it
//     gets fewer slots that take tokens: starting from S everywhere, the GPU with the largest
//     estimated time (active slots x mean slot load / speed) gives up one active slot while that
//     lowers the largest estimate, as long as redundant slots are left to cover it. Its freed slots
//     become standby copies (share 0; below). With equal speeds nothing changes.
//  2. Replica counts over the active slots: EPLB's rule (a copy to the expert with the largest
//     load per replica, again and again), at most one replica per GPU.
//  3. Assignment, heaviest replica first, each to the GPU with a free active slot that ends with
//     the least time ((load + replica load + co-activation penalty) / speed), never to a GPU that
//     holds that expert. Consistent experts (load at least kGemConsistentLoad x the mean: hot in
//     almost every batch) go to GPUs without one while any is free, so they are spread out, and
//     the speed division keeps hot experts off slow GPUs. Temporal co-activated experts are kept
//     apart: placing e beside f costs excess(e, f) x min(load) more, excess = lift - 1 of their
//     co-activation over independent choice (from a per-token trace or the generator).
//  4. Token shares (only when speeds differ): each replicated expert's tokens are split over its
//     active replicas by water-filling, so that load / speed levels out — GPUs finish together.
//     Standby copies (the coldest experts not on that GPU) take share 0.
// Exports carry no shares: serving systems split a replicated expert's tokens evenly, so a gem
// placement written for export is judged with even shares (balance.h), standby copies included.
#pragma once

#include "placement/strategies.h"
#include "workload/coactivation.h"

#include <utility>
#include <vector>

namespace moex {

// An expert is consistent when its load is at least this many times the layer's mean.
inline constexpr double kGemConsistentLoad = 2.0;

// Per expert, its strongest co-activation partners: (partner, excess), excess = lift - 1 > 0,
// strongest first, at most `maxPartners` each. lift = observed co-activation / what independent
// choices with the same per-expert counts would give (1 = unrelated).
using CoactivationPartners = std::vector<std::vector<std::pair<int, double>>>;
CoactivationPartners coactivationPartners(const ExpertMatrix& coactivation, int maxPartners = 8);

// The gem layout of one layer. `load` has E entries; `speed` has G entries (> 0); slots % G == 0;
// `partners` may be null (no co-activation known). Shares are set only when speeds differ.
LayerPlacement gemLayer(const std::vector<double>& load, int numSlots, const std::vector<double>& speed,
                        const CoactivationPartners* partners);

// Token shares by water-filling (step 4 above): every replicated expert's share of its tokens on
// each of its replicas, so that load / speed levels out; slots in `standby` ([gpu][local slot],
// may be empty) take 0. Returns [gpu][local slot] shares (1 for experts with one replica).
std::vector<std::vector<double>> waterFillShares(const LayerPlacement& layer, const std::vector<double>& load,
                                                 const std::vector<double>& speed,
                                                 const std::vector<std::vector<char>>& standby = {});

// The whole placement for a validated request (makePlacement checks the request first).
Placement gemPlacement(const PlacementRequest& request);

}  // namespace moex
