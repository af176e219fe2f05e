// The counts sampler's sub-batch caps (RoutingSampler::counts, docs/MODEL.md): the scale on every
// expert's rate that keeps a row's expected pairs when a sub-batch's tokens cap the heavy experts,
// and those experts' clipped moments.
#include "workload/synthetic_routing.h"

#include "workload/random_tables.h"

#include <algorithm>
#include <cmath>

namespace moex {

namespace {

// Below p = 0.05 the binomial is the Poisson to within 5% in variance: a heavy expert's clipped
// moments are then read from the Poisson tables (within their means and caps).
bool poissonClose(double p, double rate, int tokens)
{
    return p < 0.05 && rate < detail::RandomTables::kPoissonTableMean && tokens < detail::RandomTables::kPoissonTail - 1;
}

}  // namespace

double SyntheticRouting::capScale(CountScratch& c, int n, double start) const
{
    // The factor on every expert's rate that keeps the row's expected pairs at n when sub-batch
    // caps clip the heavy experts: f(s) = sum over experts of E[pairs at rate s mu] - n = 0 by
    // Newton steps (f is increasing and concave in s; f(1) <= 0); the other experts' expected
    // pairs are s mu. 1 when the clipping loses less than 0.2% of the pairs (the exact total's
    // correction adds them back). Leaves the heavy experts' mean and standard deviation at that
    // scale in c.clipMean and c.clipSd. Newton starts at `start`, the root for fewer heavy
    // experts or 1: clipping more experts only lowers f, so f(start) <= 0 and the steps rise to
    // the root from below.
    const auto numHeavy = static_cast<std::size_t>(c.numHeavy);
    const int* heavy = c.heavy.data();
    const int* group = c.heavyGroup.data();
    double heavyMu = 0.0;
    for (std::size_t i = 0; i < numHeavy; ++i)
        heavyMu += c.mu[static_cast<std::size_t>(heavy[i])];
    // Per routing group: the tokens of one of its sub-batches (the cap of each draw).
    bool oneToken = true;
    for (std::size_t j = 0; j < static_cast<std::size_t>(m_routingGroups); ++j) {
        c.subTokens[j] = c.subs[j] > 0 ? c.cap[j] / c.subs[j] : 0;
        oneToken = oneToken && c.subTokens[j] <= 1;
    }
    const double lightMu = std::max(0.0, static_cast<double>(n) - heavyMu);
    if (oneToken)
        return capScaleOneToken(c, n, start, lightMu);
    const detail::RandomTables& tables = detail::RandomTables::get();
    double* m1s = c.heavyM1.data();
    double* m2s = c.heavyM2.data();
    double* belows = c.heavyBelow.data();  // P(X < t): about d E[min(X, t)] / d rate
    double s = start;
    for (int iteration = 0; iteration < 30; ++iteration) {
        // Each heavy expert's clipped moments at rate s mu: from the Poisson table where that is
        // close enough, else the binomial's, those evaluated together.
        int numBinomial = 0;
        for (std::size_t i = 0; i < numHeavy; ++i) {
            const auto x = static_cast<std::size_t>(heavy[i]);
            const auto j = static_cast<std::size_t>(group[i]);
            const int tokens = c.subTokens[j];
            const double rate = s * c.mu[x] / c.subs[j];
            const int pairs = tokens * m_topK;
            const double p = rate / pairs;
            if (poissonClose(p, rate, tokens)) {
                tables.clippedPoissonFromTable(rate, tokens, m1s[i], m2s[i], belows[i]);
            } else {
                const auto b = static_cast<std::size_t>(numBinomial++);
                c.binomialN[b] = pairs;
                c.binomialP[b] = std::min(1.0, p);
                c.binomialT[b] = tokens;
                c.binomialAt[b] = static_cast<int>(i);
            }
        }
        detail::clippedBinomialMany(c.binomialN.data(), c.binomialP.data(), c.binomialT.data(), numBinomial,
                                    c.binomialM1.data(), c.binomialM2.data(), c.binomialBelow.data(), m_clipAvx512);
        for (std::size_t b = 0; b < static_cast<std::size_t>(numBinomial); ++b) {
            const auto i = static_cast<std::size_t>(c.binomialAt[b]);
            m1s[i] = c.binomialM1[b];
            m2s[i] = c.binomialM2[b];
            belows[i] = c.binomialBelow[b];
        }
        double f = s * lightMu - static_cast<double>(n);
        double slope = lightMu;
        for (std::size_t i = 0; i < numHeavy; ++i) {
            const auto x = static_cast<std::size_t>(heavy[i]);
            const int subs = c.subs[static_cast<std::size_t>(group[i])];
            const double m1 = m1s[i];
            const double m2 = m2s[i];
            const double below = belows[i];
            c.clipMean[x] = subs * m1;
            c.clipSd[x] = subs * (m2 - m1 * m1);  // the variance: its root once s is final
            f += subs * m1;
            slope += c.mu[x] * below;
        }
        if (f >= -2e-3 * n || !(slope > 0.0))
            break;
        s -= f / slope;
    }
    for (std::size_t i = 0; i < numHeavy; ++i) {
        double& sd = c.clipSd[static_cast<std::size_t>(heavy[i])];
        sd = std::sqrt(std::max(0.0, sd));
    }
    return s;
}

double SyntheticRouting::capScaleOneToken(CountScratch& c, int n, double start, double lightMu) const
{
    // capScale where every sub-batch holds one token (DeepSeek-V3.2 at long context: 16 tokens a
    // GPU, each its own sub-batch). Then min(X, 1), X ~ Binomial(top_k, p) of one token's pairs,
    // has the closed form m1 = m2 = 1 - (1 - p)^top_k and P(X < 1) = (1 - p)^top_k: no table, no
    // branch, the power by squaring. A heavy expert's count over its group's sub-batches is then
    // Binomial(subs, m1): mean subs m1, variance subs m1 (1 - m1).
    const auto numHeavy = static_cast<std::size_t>(c.numHeavy);
    double* rate = c.heavyRate.data();  // per heavy expert: p / s = mu / (subs top_k)
    double* subs = c.heavySubs.data();
    double* mu = c.heavyMu.data();
    double* none = c.heavyNone.data();  // P(X = 0) at the current s
    for (std::size_t i = 0; i < numHeavy; ++i) {
        const auto x = static_cast<std::size_t>(c.heavy[i]);
        subs[i] = c.subs[static_cast<std::size_t>(c.heavyGroup[i])];
        mu[i] = c.mu[x];
        rate[i] = c.mu[x] / (subs[i] * m_topK);
    }
    double s = start;
    for (int iteration = 0; iteration < 30; ++iteration) {
        double f = s * lightMu - static_cast<double>(n);
        double slope = lightMu;
        for (std::size_t i = 0; i < numHeavy; ++i) {
            const double power = detail::powerBySquaring(1.0 - std::min(1.0, s * rate[i]), m_topK);
            none[i] = power;
            f += subs[i] * (1.0 - power);
            slope += mu[i] * power;
        }
        if (f >= -2e-3 * n || !(slope > 0.0))
            break;
        s -= f / slope;
    }
    for (std::size_t i = 0; i < numHeavy; ++i) {
        const auto x = static_cast<std::size_t>(c.heavy[i]);
        const double m1 = 1.0 - none[i];
        c.clipMean[x] = subs[i] * m1;
        c.clipSd[x] = std::sqrt(std::max(0.0, subs[i] * m1 * none[i]));
    }
    return s;
}

}  // namespace moex
