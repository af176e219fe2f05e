// Expert co-activation (experts one token chooses together) and inter-layer affinity (expert i at
// layer l -> expert j at layer l + 1 for one token), from a trace or from the synthetic model, for
// placement strategies that keep co-activated experts apart (Occult, GEM) or affine ones together
// (ExFlow, MoETuner).
//
//   auto coact = coactivationMatrices(trace);             // per layer, E x E token counts
//   ExpertMatrix p = conditionalProbability(coact[0]);    // P(j chosen | i chosen)
#pragma once

#include <cstddef>
#include <vector>

namespace moex {

struct TokenTrace;
class SyntheticRouting;

// Dense n x n matrix, row-major.
struct ExpertMatrix {
    int n = 0;
    std::vector<double> values;

    ExpertMatrix() = default;
    explicit ExpertMatrix(int size)
        : n(size), values(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0.0)
    {
    }
    [[nodiscard]] double at(int i, int j) const { return values[index(i, j)]; }
    double& at(int i, int j) { return values[index(i, j)]; }
    [[nodiscard]] double rowSum(int i) const;
    [[nodiscard]] double offDiagonalSum() const;

private:
    [[nodiscard]] std::size_t index(int i, int j) const
    {
        return static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j);
    }
};

// Co-activation at one trace layer: [i][j] = tokens that chose both i and j (i != j), [i][i] =
// tokens that chose i. Symmetric; the off-diagonal sums to tokens * k * (k - 1).
ExpertMatrix coactivationMatrix(const TokenTrace& trace, int layer);
std::vector<ExpertMatrix> coactivationMatrices(const TokenTrace& trace);

// Inter-layer affinity from trace layer l to l + 1: [i][j] = tokens with expert i at l and j at
// l + 1 (tokens matched by key; a token missing from either layer does not count).
ExpertMatrix interLayerAffinity(const TokenTrace& trace, int layer);
std::vector<ExpertMatrix> interLayerAffinities(const TokenTrace& trace);  // num_layers - 1 matrices

// P(j | i) from a co-activation matrix: [i][j] / [i][i] (the share of the tokens choosing i that
// also chose j); 1 on the diagonal of experts that were chosen, 0 for rows of unchosen experts.
ExpertMatrix conditionalProbability(const ExpertMatrix& coactivation);
// Rows scaled to sum to 1 (0 rows stay 0). For an affinity matrix with k experts per token at the
// next layer, k * rowNormalised gives P(j chosen at l + 1 | i chosen at l).
ExpertMatrix rowNormalised(const ExpertMatrix& m);

// Expected co-activation of one step of the synthetic generator at one layer, from its group
// structure (popularity, consistent experts, co-activation groups, active groups per batch):
// diagonal = expected tokens choosing i, off-diagonal ∝ E[p_i p_j] over batches, scaled so that it
// sums to tokens * k * (k - 1) like a trace's. Group-limited routing is not reflected.
ExpertMatrix expectedCoactivation(const SyntheticRouting& routing, int layer);

}  // namespace moex
