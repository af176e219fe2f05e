// buildLoadReport: the file's balance, then every (strategy, redundant slots per GPU) point run as
// `moex-cli simulate` runs it, then the knee of the curve as the recommendation.
#include "run/load_report.h"

#include "common/diagnostics.h"
#include "placement/balance.h"
#include "run/run_loop.h"
#include "scenario/scenario_checks.h"
#include "sim/scenario_run.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <numeric>
#include <sstream>

namespace moex {

namespace {

// Nearest-rank percentile of `v` (0 < q <= 1).
double percentile(std::vector<double> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// The `count` experts of a layer's row with the most load (ties to the lower id).
std::vector<int> hottestOf(const std::vector<double>& row, int count)
{
    std::vector<int> ids(row.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
        return row[static_cast<std::size_t>(a)] > row[static_cast<std::size_t>(b)];
    });
    ids.resize(std::min<std::size_t>(ids.size(), static_cast<std::size_t>(std::max(0, count))));
    return ids;
}

std::string ms(double us)
{
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(2);
    o << us / 1000.0 << " ms";
    return o.str();
}

std::string pct(double x)
{
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(1);
    o << 100.0 * x << "%";
    return o.str();
}

// "file:line:col: error: placement: gem: ..." -> "placement: gem: ...".
std::string withoutLocation(const std::string& what)
{
    const auto at = what.find("error: ");
    std::string text = at == std::string::npos ? what : what.substr(at + 7);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

// `redundant` slots beyond the experts (0 for the baseline; else slotsPerGpu x GPUs - experts).
ReportPoint runPoint(const Scenario& withStats, const std::string& strategy, int redundant, int steps,
                     const std::vector<std::vector<double>>& fileLoad, Placement* placementOut, StepMetrics* last)
{
    Scenario s = withStats;
    const int G = s.topology.numGpus();
    s.placement.strategy = strategy;
    s.placement.redundant_slots = redundant;
    s.placement.explicit_slots.reset();
    ReportPoint p;
    p.strategy = strategy;
    p.slot_count = s.model.routed_experts + redundant;
    p.slots_per_gpu = (p.slot_count + G - 1) / G;
    p.redundant_slots = redundant;
    // The weights must fit before anything runs, as the scenario loader checks (checkCapacity).
    const double need = weightBytesPerGpu(s, s.slotsPerGpu());
    if (s.topology.gpu.hbm_usable_gb > 0 && need > s.topology.gpu.hbm_usable_gb * 1e9) {
        p.fits = false;
        p.hbm_used_gb = need / 1e9;
        return p;
    }
    PlacementAndRouting placed = resolvePlacementAndRouting(s);
    p.balance = maxMeanGpuLoad(placed.placement, fileLoad);
    SourceOptions options;
    options.routing = placed.routing;
    auto source = makeSource(s, options);
    const RunResult r = runSteps(*source, s, placed.placement, steps);
    p.moe_time_us = r.mean.moe_time_us;
    p.step_time_us = r.mean.step_time_us;
    p.tokens_per_s = r.mean.tokens_per_s;
    p.max_concurrent_users = r.mean.max_concurrent_users;
    p.hbm_used_gb = r.mean.hbm_used_gb_max;
    p.fits = r.mean.max_concurrent_users > 0;
    if (placementOut)
        *placementOut = placed.placement;
    if (last)
        *last = r.last;
    return p;
}

}  // namespace

Scenario scenarioWithStatistics(const Scenario& s, const std::string& statsPath)
{
    Scenario out = s;
    out.workload.routing.kind = RoutingKind::counts;
    out.workload.routing.file = std::filesystem::absolute(statsPath).lexically_normal().string();
    out.engine.backend = Backend::sim;  // the report is the model's what-if
    (void)countsFromStatistics(out.workload.routing.file, out.model);  // the shape check, before any work
    return out;
}

LoadReport buildLoadReport(const Scenario& scenario, const std::string& statsPath, const LoadReportOptions& options)
{
    LoadReport rep;
    rep.stats_path = statsPath;
    rep.scenario = scenarioWithStatistics(scenario, statsPath);
    const Scenario& s = rep.scenario;
    const LoadStats stats = alignToModel(readLoadStats(statsPath), s.model, statsPath);
    rep.file_load = stats.load;
    rep.format = stats.format;
    rep.detail = stats.detail;
    rep.scenario_name = s.name;
    rep.gpus = s.topology.numGpus();
    rep.experts = s.model.routed_experts;
    rep.moe_layers = s.model.numMoeLayers();
    rep.layer_ids = s.model.moe_layers;
    rep.snapshots = std::max<int>(1, static_cast<int>(stats.snapshots.size()));
    const int G = rep.gpus;
    const int E = rep.experts;

    // EPLB off: the experts in id order over the GPUs, the file's counts.
    const Placement contiguous = contiguousPlacement(E, G, rep.moe_layers);
    rep.layer_imbalance = maxMeanGpuLoadPerLayer(contiguous, stats.load);
    rep.imbalance_p50 = percentile(rep.layer_imbalance, 0.50);
    rep.imbalance_p90 = percentile(rep.layer_imbalance, 0.90);
    rep.imbalance_p99 = percentile(rep.layer_imbalance, 0.99);
    rep.imbalance_max = percentile(rep.layer_imbalance, 1.0);

    // The hottest experts: over their layer's mean, and how often they are hot in each snapshot.
    rep.hot_count = std::max(1, static_cast<int>(std::ceil(0.05 * E)));
    for (int l = 0; l < rep.moe_layers; ++l) {
        const auto& row = stats.load[static_cast<std::size_t>(l)];
        const double total = std::accumulate(row.begin(), row.end(), 0.0);
        if (!(total > 0))
            continue;
        for (const int e : hottestOf(row, rep.hot_count)) {
            HotExpert h;
            h.decoder_layer = rep.layer_ids[static_cast<std::size_t>(l)];
            h.expert = e;
            h.share = row[static_cast<std::size_t>(e)] / total;
            h.over_mean = h.share * E;
            if (stats.snapshots.size() >= 2) {
                int hot = 0;
                for (const auto& snap : stats.snapshots) {
                    const auto top = hottestOf(snap[static_cast<std::size_t>(l)], rep.hot_count);
                    hot += std::find(top.begin(), top.end(), e) != top.end() ? 1 : 0;
                }
                h.stability = static_cast<double>(hot) / static_cast<double>(stats.snapshots.size());
            }
            rep.hottest.push_back(h);
        }
    }
    std::stable_sort(rep.hottest.begin(), rep.hottest.end(),
                     [](const HotExpert& a, const HotExpert& b) { return a.over_mean > b.over_mean; });
    if (rep.hottest.size() > 10)
        rep.hottest.resize(10);

    // The curve.
    rep.baseline = runPoint(s, "contiguous", 0, options.steps, stats.load, &rep.baseline_placement, &rep.metrics_off);
    rep.recommended_placement = rep.baseline_placement;
    rep.traffic_off = rep.metrics_off.traffic;
    rep.baseline.strategy = "contiguous";
    std::vector<int> extra = options.extra_slots_per_gpu;
    if (extra.empty())
        extra = {0, 1, 2, 4, 8};
    const int fewest = (E + G - 1) / G;  // slots per GPU that hold every expert once
    std::vector<StepMetrics> metricsOf;
    std::vector<Placement> placements;
    for (const std::string& strategy : options.strategies) {
        for (const int x : extra) {
            Placement placement;
            StepMetrics metrics;
            ReportPoint p;
            const int r = (fewest + x) * G - E;
            try {
                p = runPoint(s, strategy, r, options.steps, stats.load, &placement, &metrics);
            } catch (const InputError& e) {  // a strategy that refuses these slots (the file's shape was checked above)
                rep.refused.push_back(strategy + " with " + std::to_string(E + r) + " slots: " + withoutLocation(e.what()));
                continue;
            } catch (const std::invalid_argument& e) {
                rep.refused.push_back(strategy + " with " + std::to_string(E + r) + " slots: " + e.what());
                continue;
            }
            rep.curve.push_back(p);
            metricsOf.push_back(std::move(metrics));
            placements.push_back(std::move(placement));
            if (!p.fits)
                break;  // more slots leave even less memory
        }
    }

    // The knee: per strategy, from its fewest slots on, a point replaces the knee while it gains at
    // least knee_gain of the knee's step time per slot per GPU it adds; the best knee wins if it
    // beats EPLB off by knee_gain.
    int best = -1;
    for (std::size_t i = 0; i < rep.curve.size();) {
        std::size_t end = i;
        while (end < rep.curve.size() && rep.curve[end].strategy == rep.curve[i].strategy)
            ++end;
        int knee = -1;
        for (std::size_t j = i; j < end && rep.curve[j].fits; ++j) {
            if (knee < 0) {
                knee = static_cast<int>(j);
                continue;
            }
            // knee_gain for every slot per GPU added: two more slots must gain about twice as much.
            const ReportPoint& k = rep.curve[static_cast<std::size_t>(knee)];
            const int added = rep.curve[j].slots_per_gpu - k.slots_per_gpu;
            if (rep.curve[j].step_time_us <= std::pow(1.0 - options.knee_gain, std::max(1, added)) * k.step_time_us)
                knee = static_cast<int>(j);
            else
                break;
        }
        if (knee >= 0 && (best < 0 || rep.curve[static_cast<std::size_t>(knee)].step_time_us
                                          < rep.curve[static_cast<std::size_t>(best)].step_time_us))
            best = knee;
        i = end;
    }
    std::ostringstream sentence;
    const double base = rep.baseline.step_time_us;
    if (best >= 0 && rep.curve[static_cast<std::size_t>(best)].step_time_us <= (1.0 - options.knee_gain) * base) {
        rep.recommended = best;
        const ReportPoint& p = rep.curve[static_cast<std::size_t>(best)];
        rep.recommended_placement = placements[static_cast<std::size_t>(best)];
        rep.metrics_on = metricsOf[static_cast<std::size_t>(best)];
        rep.traffic_on = rep.metrics_on.traffic;
        const std::int64_t lostUsers = rep.baseline.max_concurrent_users - p.max_concurrent_users;
        sentence << "Turn on " << p.strategy << " with " << p.redundant_slots << " redundant expert"
                 << (p.redundant_slots == 1 ? "" : "s") << " (" << p.slot_count << " slots, " << p.slots_per_gpu
                 << " per GPU): the step drops from "
                 << ms(base) << " to " << ms(p.step_time_us) << " (" << pct(p.step_time_us / base - 1.0)
                 << "), max/mean GPU load from " << std::setprecision(3) << rep.baseline.balance << " to " << p.balance;
        if (lostUsers > 0)
            sentence << ", for " << lostUsers << " fewer concurrent users of KV cache";
        sentence << "; more slots gain less than " << pct(options.knee_gain) << " of the step per slot per GPU.";
    } else {
        rep.metrics_on = rep.metrics_off;
        rep.traffic_on = rep.traffic_off;
        sentence << "Keep EPLB off: no strategy and slot count tried beats the contiguous layout's " << ms(base)
                 << " step by " << pct(options.knee_gain) << " or more (the file's max/mean GPU load is "
                 << std::setprecision(3) << rep.baseline.balance << ").";
    }
    rep.recommendation = sentence.str();
    return rep;
}

std::string reproduceCommand(const std::string& scenarioFile, const std::string& statsPath, const ReportPoint& p,
                             int steps)
{
    std::ostringstream o;
    o << "moex-cli simulate " << scenarioFile << " --steps " << steps
      << " --set workload.routing.kind=counts --set workload.routing.file=" << statsPath
      << " --set placement.strategy=" << p.strategy << " --set placement.redundant_slots=" << p.redundant_slots;
    return o.str();
}

}  // namespace moex
