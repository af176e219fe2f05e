// Fixtures of the step-model tests (tst_sim, tst_sim_properties, tst_sim_comm, tst_sim_memory): the
// sample scenarios, a routing sample and placement of one, a step with them, small comparisons.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "metrics/step_metrics.h"
#include "placement/placement.h"
#include "scenario/scenario_yaml.h"
#include "sim/fabric.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"
#include "topology/topology.h"
#include "workload/routing_sample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>
#endif

namespace moex::test {

inline const std::string kScenarios = std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/";

inline constexpr const char* kNvlDecode = "deepseek-r1-decode-nvl72";
inline constexpr const char* kHgxDecode = "deepseek-r1-decode-hgx-h200x8";
inline constexpr const char* kNvlPrefill = "deepseek-r1-prefill-nvl72";
inline constexpr const char* kHgxPrefill = "deepseek-r1-prefill-hgx-h200x8";
inline constexpr const char* kMixtral = "mixtral-8x7b-decode-hgx-h100";

inline Scenario load(const std::string& name, const Overrides& overrides = {})
{
    return loadScenarioFile(kScenarios + name + ".yaml", overrides);
}

inline RoutingSample sampleOf(const Scenario& s, long long seed = -1)
{
    auto source = makeRoutingSource(s, seed);
    RoutingSample r;
    source->next(r);
    return r;
}

// Per-layer expert load of one routing sample ([layer][expert]).
inline std::vector<std::vector<double>> loadOf(const RoutingSample& r)
{
    std::vector<std::vector<double>> out;
    for (int l = 0; l < r.numLayers(); ++l) {
        const auto perExpert = r.expertLoad(l);
        out.emplace_back(perExpert.begin(), perExpert.end());
    }
    return out;
}

// The scenario's placement strategy fitted to the load of `r` (resolvePlacement without `load`
// would estimate it from 8 fresh routing steps: slow for prefill, and no more realistic).
inline Placement placementFor(const Scenario& s, const RoutingSample& r)
{
    return resolvePlacement(s, loadOf(r));
}

inline StepMetrics stepWith(const Scenario& s, const RoutingSample& r, const Placement& p)
{
    Simulator sim(s, p, resolveCalibration(s));
    StepMetrics m;
    sim.step(r, m);
    return m;
}

inline StepMetrics stepOf(const Scenario& s, const RoutingSample& r)
{
    return stepWith(s, r, placementFor(s, r));
}

inline StepMetrics stepOf(const Scenario& s)
{
    return stepOf(s, sampleOf(s));
}

// `a` <= `b` up to rounding of sums of doubles.
inline bool notAbove(double a, double b)
{
    return a <= b + 1e-9 * std::max(1.0, std::abs(b));
}

inline bool near(double a, double b, double rel = 1e-9)
{
    return std::abs(a - b) <= rel * std::max({1.0, std::abs(a), std::abs(b)});
}

// A copy of `t` with every link's capacity multiplied by `factor` (nodes, latencies, GPU spec kept).
inline Topology scaledCapacity(const Topology& t, double factor)
{
    Topology out;
    out.name = t.name;
    out.builtin = t.builtin;
    out.gpu = t.gpu;
    out.pxn = t.pxn;
    out.switch_power_w = t.switch_power_w;
    for (const TopoNode& n : t.nodes())
        out.addNode(n);
    for (TopoLink l : t.links()) {
        l.capacity_gbs *= factor;
        out.addLink(l);
    }
    out.finalize();
    return out;
}

inline std::int64_t sum(const std::vector<std::int64_t>& v)
{
    return std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

inline int slotsOn(const Placement& p, int gpu)
{
    int n = 0;
    for (const auto& l : p.layers)
        n += static_cast<int>(l.gpu_slots[static_cast<std::size_t>(gpu)].size());
    return n;
}

inline double portBytes(const Simulator& sim, PortKind kind)
{
    double total = 0;
    const auto& ports = sim.fabric().ports();
    for (std::size_t p = 0; p < ports.size(); ++p)
        if (ports[p].kind == kind)
            total += sim.lastDispatchPortBytes()[p];
    return total;
}

// Explicit replica shares for every expert of every layer: 1/4 and 3/4 for two replicas, even
// otherwise (binary fractions, so they sum to exactly 1).
inline Placement withShares(Placement p)
{
    for (auto& layer : p.layers) {
        const auto counts = layer.replicaCounts(p.num_experts);
        std::vector<int> seen(counts.size(), 0);
        layer.shares.assign(layer.gpu_slots.size(), {});
        for (std::size_t g = 0; g < layer.gpu_slots.size(); ++g)
            for (const ExpertId e : layer.gpu_slots[g]) {
                const auto k = static_cast<std::size_t>(e.value);
                const int n = counts[k];
                const double share = n == 2 ? (seen[k] == 0 ? 0.25 : 0.75) : 1.0 / n;
                ++seen[k];
                layer.shares[g].push_back(share);
            }
    }
    return p;
}


}  // namespace moex::test
