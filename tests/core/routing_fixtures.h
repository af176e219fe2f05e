// Fixtures of the routing tests (tst_workload, tst_trace_readers, tst_routing_statistics): a model
// of only the routing shape, a workload, the invariants every routing sample keeps.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "model/model_spec.h"
#include "workload/routing_sample.h"
#include "workload/workload.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>
#endif

#include <QString>

namespace moex::test {

inline ModelSpec routingModel(int layers, int experts, int topK, int groups = 1, int groupsPerToken = 1)
{
    ModelSpec m;
    m.name = "test";
    m.num_layers = layers;
    for (int l = 0; l < layers; ++l)
        m.moe_layers.push_back(l);
    m.routed_experts = experts;
    m.experts_per_token = topK;
    m.expert_groups = groups;
    m.groups_per_token = groupsPerToken;
    return m;
}

inline Workload makeWork(int tokens, double skew, double hot = 0.0, int groups = 0, double drift = 0.0, std::uint64_t seed = 1)
{
    Workload w;
    w.tokens_per_gpu = tokens;
    w.routing.skew = skew;
    w.routing.hot_experts = hot;
    w.routing.coactivation_groups = groups;
    w.routing.drift = drift;
    w.routing.seed = seed;
    return w;
}

// First broken invariant of a sample, or empty: rows sum to tokens * top_k, 0 <= count <= tokens.
inline QString violation(const RoutingSample& s)
{
    for (int l = 0; l < s.numLayers(); ++l)
        for (int g = 0; g < s.num_gpus; ++g) {
            std::int64_t sum = 0;
            for (int e = 0; e < s.num_experts; ++e) {
                const int c = s.row(l, g)[static_cast<std::size_t>(e)];
                if (c < 0 || c > s.tokens_per_gpu)
                    return QStringLiteral("layer %1 gpu %2 expert %3 has %4 pairs").arg(l).arg(g).arg(e).arg(c);
                sum += c;
            }
            if (sum != static_cast<std::int64_t>(s.tokens_per_gpu) * s.top_k)
                return QStringLiteral("layer %1 gpu %2 sums to %3").arg(l).arg(g).arg(sum);
        }
    return {};
}

inline double maxOverMean(const std::vector<double>& v)
{
    double sum = 0.0, max = 0.0;
    for (const double x : v) {
        sum += x;
        max = std::max(max, x);
    }
    return max / (sum / static_cast<double>(v.size()));
}

}  // namespace moex::test
