// search: improves each MoE layer's simulated time, starting from the best of the other
// strategies, by local moves that are accepted only when they make the layer faster.
//
//   SimObjective objective(scenario, calibration, samples);    // sim/sim_objective.h
//   PlacementRequest rq;  rq.strategy = "search";  rq.objective = &objective;  rq.budget_ms = 1000;
//   Placement p = makePlacement(rq);
//
// Per layer (layers are independent given the routing, so each is searched on its own):
//  1. Starts: the layer as contiguous, round-robin, eplb and gem lay it out, each with any
//     colocated replicas separated (separateColocatedInLayer, replica_separation.h). The fastest by the objective whose balance is
//     no worse than eplb's becomes the current layout.
//     Then, when the request has the loads of single steps (PlacementRequest::step_load, the
//     steps the objective simulates), steadySwaps (search_steady.h) trades slots so that fewer
//     GPUs peak in single steps (experts that rise and fall together go to different GPUs), within
//     the same balance bound; the result replaces the start when the objective says it is faster.
//  2. Moves, drawn by a seeded generator: swap a slot of a heavily loaded GPU with one of a light
//     GPU; swap two random slots; move a replica from the expert that needs it least to the one
//     that needs it most; put an expert beside its strongest co-activation partner (Occult, less
//     traffic) or take it away from one (GEM, smoother load); on several NVLink domains, move a
//     replica into a domain that has none of that expert (its tokens stay in their domain) or an
//     expert into its partner's domain; and, when the layout has token shares (gem with GPUs of
//     different speeds), shift share between two replicas. A move is evaluated only when it keeps
//     every GPU free of a second replica of one expert and the balance (max/mean GPU load, even
//     shares) no worse than eplb's; it is kept only when the objective says strictly faster.
//  3. The result is never worse than eplb: were it slower (by the objective) or less balanced, the
//     layer falls back to eplb's layout. Where eplb's layout has two replicas of one expert on one
//     GPU (deepseek-ai/EPLB#22) it cannot be the fallback, so the search works for the guarantee:
//     the repaired layout's balance is won back by greedy swaps and replica moves (no evaluations),
//     and a layer still slower than eplb's gets up to 64 more evaluations. What remains (rare; see
//     SearchReport::unmatched_layers) keeps the layout without colocated replicas.
//
// Budget and determinism: the search makes budget_ms x kSearchEvaluationsPerMs evaluations of the
// objective in all (the starts included), split evenly over the layers, and stops there (plus at
// most 64 in a layer where eplb's colocated layout is still faster, step 3); no clock is read. The
// result depends on the request (seed and budget included) and the objective, never on the
// machine. The factor is what a 2-core x86 machine manages with the simulator objective of 8
// routing samples (resolvePlacement's) on DeepSeek-R1 / GB200 NVL72, about 0.5 ms per evaluation,
// so the budget is the wall time only roughly: 8 x HGX-H200 takes about twice as long per
// evaluation.
//
// Shares: a layout starts without shares except gem's (GPUs of different speeds). Exports drop
// shares, and the balance guarantee is with even shares, so that what is exported is never less
// balanced than eplb's; the time guarantee is for the placement as returned.
#pragma once

#include "placement/strategies.h"

#include <vector>

namespace moex {

inline constexpr double kSearchEvaluationsPerMs = 2.0;  // see "Budget and determinism"

struct SearchReport {
    long long evaluations = 0;
    int layers = 0;
    int improved_layers = 0;          // layers where a move beat the start
    int steady_layers = 0;            // layers where steadySwaps' layout beat the start
    int fallback_layers = 0;          // layers that went back to eplb's layout at the end
    int unmatched_layers = 0;         // layers where eplb's colocated layout stayed faster or more
                                      // balanced than anything found without colocation (below)
    long long extra_evaluations = 0;  // spent beyond the budget on such layers (at most 64 each)
    int repaired_colocations = 0;     // replicas of eplb's layout that shared a GPU (EPLB#22)
    double eplb_time_us = 0;          // objective, summed over layers
    double start_time_us = 0;
    double final_time_us = 0;
    int starts[4] = {0, 0, 0, 0};  // layers started from contiguous, round-robin, eplb, gem
};

// The search placement for a validated request; throws std::invalid_argument when it has no
// objective or the objective has another number of layers.
Placement searchPlacement(const PlacementRequest& request, SearchReport* report = nullptr);

}  // namespace moex
