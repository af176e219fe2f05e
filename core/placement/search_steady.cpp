#include "placement/search_steady.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

namespace moex::search_internal {

namespace {

// The candidates for the loaded side of a swap: the GPUs contributing most to the objective.
constexpr int kHeavyGpus = 8;

inline double pow16(double x)
{
    x *= x;
    x *= x;
    x *= x;
    return x * x;
}

}  // namespace

double steadyObjective(const Layout& l, const std::vector<std::vector<double>>& stepLoad,
                       const std::vector<double>& speed)
{
    if (stepLoad.empty() || l.expert.empty())
        return 0;
    std::vector<int> count(static_cast<std::size_t>(*std::max_element(l.expert.begin(), l.expert.end())) + 1, 0);
    for (int e : l.expert)
        ++count[static_cast<std::size_t>(e)];
    double f = 0;
    std::vector<double> gpu(static_cast<std::size_t>(l.gpus));
    for (const auto& x : stepLoad) {
        const double total = std::accumulate(x.begin(), x.end(), 0.0);
        if (total <= 0)
            continue;
        std::fill(gpu.begin(), gpu.end(), 0.0);
        for (std::size_t s = 0; s < l.expert.size(); ++s) {
            const auto e = static_cast<std::size_t>(l.expert[s]);
            gpu[static_cast<std::size_t>(l.gpuOf(static_cast<int>(s)))] +=
                x[e] * (l.share.empty() ? 1.0 / count[e] : l.share[s]);
        }
        for (int g = 0; g < l.gpus; ++g)
            f += pow16(gpu[static_cast<std::size_t>(g)] / speed[static_cast<std::size_t>(g)] * l.gpus / total);
    }
    return f;
}

SteadyResult steadySwaps(Layout& l, const std::vector<std::vector<double>>& stepLoad,
                         const std::vector<double>& meanLoad, const std::vector<double>& speed,
                         double balanceBound, int maxRounds)
{
    SteadyResult result;
    const int S = static_cast<int>(stepLoad.size());
    const int G = l.gpus, per = l.perGpu;
    const int n = static_cast<int>(l.expert.size());
    if (S == 0 || G < 2 || n == 0)
        return result;
    const auto us = [](int v) { return static_cast<std::size_t>(v); };

    std::vector<int> count(meanLoad.size(), 0);
    for (int e : l.expert)
        ++count[us(e)];
    // Per step: GPUs / the step's total load, so that a GPU at the mean is 1.
    std::vector<double> scale(us(S), 0.0);
    for (int s = 0; s < S; ++s) {
        const double total = std::accumulate(stepLoad[us(s)].begin(), stepLoad[us(s)].end(), 0.0);
        scale[us(s)] = total > 0 ? G / total : 0.0;
    }
    // Per slot: its scaled load in each step (val[slot * S + s]) and its mean load, even shares (mbv).
    std::vector<double> val(us(n) * us(S)), mbv(us(n));
    for (int i = 0; i < n; ++i) {
        const auto e = us(l.expert[us(i)]);
        const double w = l.share.empty() ? 1.0 / count[e] : l.share[us(i)];
        for (int s = 0; s < S; ++s)
            val[us(i) * us(S) + us(s)] = stepLoad[us(s)][e] * w * scale[us(s)];
        mbv[us(i)] = meanLoad[e] / count[e];
    }
    // P[g * S + s]: GPU g's scaled load / speed in step s; MB[g]: its mean load (balance).
    std::vector<double> inv(us(G)), P(us(G) * us(S), 0.0), MB(us(G), 0.0);
    for (int g = 0; g < G; ++g)
        inv[us(g)] = 1.0 / speed[us(g)];
    for (int i = 0; i < n; ++i) {
        const int g = l.gpuOf(i);
        MB[us(g)] += mbv[us(i)];
        for (int s = 0; s < S; ++s)
            P[us(g) * us(S) + us(s)] += val[us(i) * us(S) + us(s)] * inv[us(g)];
    }
    const double limit = balanceBound * std::accumulate(MB.begin(), MB.end(), 0.0) / G * (1 + kBalanceSlack);
    std::vector<double> part(us(G), 0.0);  // each GPU's term of the objective
    const auto partOf = [&](int g) {
        double f = 0;
        for (int s = 0; s < S; ++s)
            f += pow16(P[us(g) * us(S) + us(s)]);
        return f;
    };
    for (int g = 0; g < G; ++g)
        part[us(g)] = partOf(g);
    double F = std::accumulate(part.begin(), part.end(), 0.0);
    result.before = F;

    std::vector<int> heavy(us(G));
    const int numHeavy = std::min(G, kHeavyGpus);
    std::vector<double> pg16(us(S)), ph16(us(S));
    for (int round = 0; round < maxRounds; ++round) {
        std::iota(heavy.begin(), heavy.end(), 0);
        std::partial_sort(heavy.begin(), heavy.begin() + numHeavy, heavy.end(), [&](int a, int b) {
            return part[us(a)] != part[us(b)] ? part[us(a)] > part[us(b)] : a < b;
        });
        double bestDelta = -1e-12 * F;
        int bi = -1, bj = -1;
        for (int k = 0; k < numHeavy; ++k) {
            const int g = heavy[us(k)];
            const double* pg = &P[us(g) * us(S)];
            for (int s = 0; s < S; ++s)
                pg16[us(s)] = pow16(pg[s]);
            for (int h = 0; h < G; ++h) {
                if (h == g)
                    continue;
                const double* ph = &P[us(h) * us(S)];
                for (int s = 0; s < S; ++s)
                    ph16[us(s)] = pow16(ph[s]);
                const double ig = inv[us(g)], ih = inv[us(h)];
                for (int i = g * per; i < (g + 1) * per; ++i) {
                    const int ei = l.expert[us(i)];
                    const double* vi = &val[us(i) * us(S)];
                    for (int j = h * per; j < (h + 1) * per; ++j) {
                        const int ej = l.expert[us(j)];
                        const double dm = mbv[us(j)] - mbv[us(i)];
                        if (ei == ej || MB[us(g)] + dm > limit || MB[us(h)] - dm > limit)
                            continue;
                        const double* vj = &val[us(j) * us(S)];
                        double delta = 0;
                        for (int s = 0; s < S; ++s) {
                            const double d = vj[s] - vi[s];
                            delta += pow16(pg[s] + d * ig) - pg16[us(s)] + pow16(ph[s] - d * ih) - ph16[us(s)];
                        }
                        if (delta < bestDelta && !l.holds(h, ei) && !l.holds(g, ej)) {
                            bestDelta = delta;
                            bi = i;
                            bj = j;
                        }
                    }
                }
            }
        }
        if (bi < 0)
            break;
        const int g = l.gpuOf(bi), h = l.gpuOf(bj);
        std::swap(l.expert[us(bi)], l.expert[us(bj)]);
        if (!l.share.empty())
            std::swap(l.share[us(bi)], l.share[us(bj)]);
        std::swap(mbv[us(bi)], mbv[us(bj)]);
        for (int x : {g, h}) {  // summed afresh: no drift against how balance() adds them up
            MB[us(x)] = 0;
            for (int i = x * per; i < (x + 1) * per; ++i)
                MB[us(x)] += mbv[us(i)];
        }
        for (int s = 0; s < S; ++s) {
            double& vi = val[us(bi) * us(S) + us(s)];
            double& vj = val[us(bj) * us(S) + us(s)];
            P[us(g) * us(S) + us(s)] += (vj - vi) * inv[us(g)];
            P[us(h) * us(S) + us(s)] += (vi - vj) * inv[us(h)];
            std::swap(vi, vj);
        }
        part[us(g)] = partOf(g);
        part[us(h)] = partOf(h);
        F = std::accumulate(part.begin(), part.end(), 0.0);
        ++result.swaps;
    }
    result.after = F;
    return result;
}

}  // namespace moex::search_internal
