// DeepSeek's expert-parallelism load balancer (deepseek-ai/EPLB, eplb.py rebalance_experts),
// ported to plain C++ with the same results: redundant replicas for hot experts, then a
// balanced packing of the replicas onto GPUs.
//
// Policy, as in the reference: hierarchical when the expert groups divide evenly over the nodes
// (NVLink domains): groups -> nodes, replicate inside each node, pack each node's replicas onto
// its GPUs; otherwise global: the same with one group and one node.
//
// Sameness with the Python reference:
//   - arithmetic is float32 throughout, as the reference converts the weights with .float(), so
//     near-ties resolve the same way. Group sums are accumulated in double and rounded once; torch
//     sums in a CPU-dependent order, which only matters for non-integer loads (integer loads below
//     2^24 sum exactly in any order).
//   - torch.sort(descending) on CPU is libstdc++'s std::sort keyed on the value alone (unstable);
//     we call the same std::sort with the same key, so with libstdc++ even ties come out in the
//     reference's order. Ties are common, not a corner case: the replicas of one expert carry
//     equal loads, so a stable sort would already reorder phy2log for distinct expert loads.
//     Checked against eplb.py under torch 1.13.1 (CPU) on 508 random cases (Zipf, float, small
//     integers full of ties, all zeros; hierarchical and global): phy2log, log2phy and logcnt
//     identical. With another standard library, the order among exactly equal loads may differ;
//     replica counts and per-GPU loads could then differ only where loads tie exactly.
//   - argmax/argmin scans that pick the first index become heaps keyed on (value, index): the
//     same choice, O(log n) instead of O(n).
#pragma once

#include "placement/placement.h"

#include <vector>

namespace moex {

struct EplbResult {
    int num_layers = 0;
    int num_experts = 0;   // logical
    int num_replicas = 0;  // physical slots R
    bool hierarchical = false;
    std::vector<std::vector<int>> phy2log;               // [layer][slot] -> logical expert
    std::vector<std::vector<int>> phyrank;               // [layer][slot] -> replica rank of that slot
    std::vector<std::vector<std::vector<int>>> log2phy;  // [layer][expert][maxcnt], padded with -1
    std::vector<std::vector<int>> logcnt;                // [layer][expert] -> replica count
};

// weight[layer][expert]: load per logical expert (e.g. token counts), all rows the same length E.
// Throws std::invalid_argument when the shape rules of the reference do not hold
// (numReplicas >= E and a multiple of numGpus, numGpus a multiple of numNodes, E a multiple of
// numGroups) or a load is negative or not finite.
EplbResult rebalanceExperts(const std::vector<std::vector<double>>& weight, int numReplicas, int numGroups,
                            int numNodes, int numGpus);

// True when rebalanceExperts uses the hierarchical policy for these counts.
inline bool eplbUsesHierarchical(int numGroups, int numNodes) { return numNodes > 0 && numGroups % numNodes == 0; }

// GPU g owns physical slots [g*R/G, (g+1)*R/G), in slot order, as every serving system assigns them.
// Shares are left empty: exports carry none, and balance is judged with even splits (balance.h).
Placement eplbToPlacement(const EplbResult& r, int numGpus);

}  // namespace moex
