#include "workload/coactivation.h"

#include "workload/synthetic_routing.h"
#include "workload/trace_routing.h"

#include <algorithm>

namespace moex {

double ExpertMatrix::rowSum(int i) const
{
    double sum = 0.0;
    for (int j = 0; j < n; ++j)
        sum += at(i, j);
    return sum;
}

double ExpertMatrix::offDiagonalSum() const
{
    double sum = 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            if (i != j)
                sum += at(i, j);
    return sum;
}

ExpertMatrix coactivationMatrix(const TokenTrace& trace, int layer)
{
    ExpertMatrix m(trace.num_experts);
    const int tokens = trace.numTokens(layer);
    for (int t = 0; t < tokens; ++t) {
        const auto experts = trace.experts(layer, t);
        for (auto a : experts) {
            m.at(a, a) += 1.0;
            for (auto b : experts)
                if (b != a)
                    m.at(a, b) += 1.0;
        }
    }
    return m;
}

std::vector<ExpertMatrix> coactivationMatrices(const TokenTrace& trace)
{
    std::vector<ExpertMatrix> out;
    out.reserve(static_cast<std::size_t>(trace.num_layers));
    for (int l = 0; l < trace.num_layers; ++l)
        out.push_back(coactivationMatrix(trace, l));
    return out;
}

ExpertMatrix interLayerAffinity(const TokenTrace& trace, int layer)
{
    ExpertMatrix m(trace.num_experts);
    if (layer < 0 || layer + 1 >= trace.num_layers)
        return m;
    // Both layers list their tokens in ascending order: one merge pass matches them.
    const auto& from = trace.layer_tokens[static_cast<std::size_t>(layer)];
    const auto& to = trace.layer_tokens[static_cast<std::size_t>(layer) + 1];
    std::size_t a = 0;
    std::size_t b = 0;
    while (a < from.size() && b < to.size()) {
        if (from[a] < to[b]) {
            ++a;
        } else if (to[b] < from[a]) {
            ++b;
        } else {
            for (auto i : trace.experts(layer, static_cast<int>(a)))
                for (auto j : trace.experts(layer + 1, static_cast<int>(b)))
                    m.at(i, j) += 1.0;
            ++a;
            ++b;
        }
    }
    return m;
}

std::vector<ExpertMatrix> interLayerAffinities(const TokenTrace& trace)
{
    std::vector<ExpertMatrix> out;
    for (int l = 0; l + 1 < trace.num_layers; ++l)
        out.push_back(interLayerAffinity(trace, l));
    return out;
}

ExpertMatrix conditionalProbability(const ExpertMatrix& coactivation)
{
    ExpertMatrix p(coactivation.n);
    for (int i = 0; i < p.n; ++i) {
        const double chosen = coactivation.at(i, i);
        if (!(chosen > 0.0))
            continue;
        for (int j = 0; j < p.n; ++j)
            p.at(i, j) = i == j ? 1.0 : coactivation.at(i, j) / chosen;
    }
    return p;
}

ExpertMatrix rowNormalised(const ExpertMatrix& m)
{
    ExpertMatrix out(m.n);
    for (int i = 0; i < m.n; ++i) {
        const double sum = m.rowSum(i);
        if (sum > 0.0)
            for (int j = 0; j < m.n; ++j)
                out.at(i, j) = m.at(i, j) / sum;
    }
    return out;
}

ExpertMatrix expectedCoactivation(const SyntheticRouting& routing, int layer)
{
    // A batch's distribution is p = b' + beta * Mt * g: b' the steady part (consistent experts
    // whole, temporal ones scaled by 1 - beta), g the mean of the batch's A active groups' own
    // distributions, each group drawn i.i.d. in proportion to its mass. With u the distribution of
    // one drawn group: E[g_i] = b_i / Mt and
    //   E[g_i g_j] = (1/A) [same group] b_i b_j / (Mt * mass_g) + (1 - 1/A) b_i b_j / Mt^2.
    // Two experts of one token co-occur in proportion to E[p_i p_j].
    const int n = routing.numExperts();
    const auto b = routing.popularity(layer);
    const auto group = routing.coactivationGroup(layer);
    const int numGroups = routing.numCoactivationGroups();
    const double beta = numGroups > 0 ? routing.options().group_share : 0.0;
    const double a = std::max(routing.activeGroupsPerBatch(), 1);
    std::vector<double> groupMass(static_cast<std::size_t>(std::max(numGroups, 0)), 0.0);
    double mt = 0.0;
    for (int i = 0; i < n; ++i) {
        const auto g = group[static_cast<std::size_t>(i)];
        if (g >= 0) {
            groupMass[static_cast<std::size_t>(g)] += b[static_cast<std::size_t>(i)];
            mt += b[static_cast<std::size_t>(i)];
        }
    }
    std::vector<double> steady(static_cast<std::size_t>(n));
    std::vector<double> meanG(static_cast<std::size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) {
        const auto iu = static_cast<std::size_t>(i);
        const bool temporal = group[iu] >= 0;
        steady[iu] = temporal ? (1.0 - beta) * b[iu] : b[iu];
        if (temporal && mt > 0.0)
            meanG[iu] = b[iu] / mt;
    }
    ExpertMatrix m(n);
    double offDiagonal = 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            if (i == j)
                continue;
            const auto iu = static_cast<std::size_t>(i);
            const auto ju = static_cast<std::size_t>(j);
            double gg = 0.0;
            if (group[iu] >= 0 && group[ju] >= 0 && mt > 0.0) {
                const double bij = b[iu] * b[ju];
                gg = (1.0 - 1.0 / a) * bij / (mt * mt);
                const double mass = groupMass[static_cast<std::size_t>(group[iu])];
                if (group[iu] == group[ju] && mass > 0.0)
                    gg += bij / (a * mt * mass);
            }
            const double v = steady[iu] * steady[ju] + beta * mt * (steady[iu] * meanG[ju] + steady[ju] * meanG[iu]) +
                             beta * beta * mt * mt * gg;
            m.at(i, j) = v;
            offDiagonal += v;
        }
    const double tokens = static_cast<double>(routing.tokensPerGpu()) * routing.numGpus();
    const double k = routing.topK();
    const double scale = offDiagonal > 0.0 ? tokens * k * (k - 1.0) / offDiagonal : 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            m.at(i, j) = i == j ? std::min(tokens, tokens * k * b[static_cast<std::size_t>(i)]) : m.at(i, j) * scale;
    return m;
}

}  // namespace moex
