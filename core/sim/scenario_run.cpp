#include "sim/scenario_run.h"

#include "common/diagnostics.h"
#include "placement/strategies.h"
#include "workload/synthetic_routing.h"
#include "workload/trace_routing.h"

#include <algorithm>
#include <stdexcept>

namespace moex {

namespace {

class SyntheticSource final : public RoutingSource {
public:
    // Group-limited routing: tokens of one source come from many sequences, so they choose their
    // expert groups independently; 32 independent sub-batches per source approximate that.
    SyntheticSource(const ModelSpec& m, const Workload& w, int gpus) : m_gen(m, w, gpus, options(w)) {}
    void next(RoutingSample& out) override { m_gen.next(out); }
    void reset() override { m_gen.reset(); }

private:
    static SyntheticRoutingOptions options(const Workload& w)
    {
        SyntheticRoutingOptions o;
        o.group_subbatches = std::max(1, std::min(w.tokens_per_gpu, 32));
        return o;
    }
    SyntheticRouting m_gen;
};

class TraceSource final : public RoutingSource {
public:
    explicit TraceSource(TraceRouting r) : m_trace(std::move(r)) {}
    void next(RoutingSample& out) override { m_trace.next(out); }
    void reset() override { m_trace.reset(); }

private:
    TraceRouting m_trace;
};

}  // namespace

std::unique_ptr<RoutingSource> makeRoutingSource(const Scenario& s, long long seedOverride)
{
    Workload w = s.workload;
    if (seedOverride >= 0)
        w.routing.seed = static_cast<std::uint64_t>(seedOverride);
    const int gpus = s.topology.numGpus();
    switch (w.routing.kind) {
    case RoutingKind::synthetic:
        return std::make_unique<SyntheticSource>(s.model, w, gpus);
    case RoutingKind::trace: {
        // A trace recorded on a model with fewer layers (e.g. Mixtral's 32) replays cyclically
        // onto a deeper model only when the trace is a counts file; a per-token trace must match.
        TraceReadOptions options;
        options.num_experts = s.model.routed_experts;
        TokenTrace trace = readTokenTrace(w.routing.file, options);
        return std::make_unique<TraceSource>(TraceRouting(std::move(trace), s.model, w, gpus));
    }
    case RoutingKind::counts: {
        const LayerCounts counts = readLayerCounts(w.routing.file, s.model.routed_experts);
        return std::make_unique<TraceSource>(TraceRouting(counts, s.model, w, gpus));
    }
    }
    throw std::logic_error("unknown routing kind");
}

std::vector<std::vector<double>> estimateLoad(RoutingSource& source, int steps)
{
    RoutingSample sample;
    std::vector<std::vector<double>> load;
    for (int i = 0; i < steps; ++i) {
        source.next(sample);
        if (load.empty())
            load.assign(static_cast<std::size_t>(sample.numLayers()),
                        std::vector<double>(static_cast<std::size_t>(sample.num_experts), 0.0));
        for (int l = 0; l < sample.numLayers(); ++l) {
            const auto perExpert = sample.expertLoad(l);
            for (std::size_t e = 0; e < perExpert.size(); ++e)
                load[static_cast<std::size_t>(l)][e] += static_cast<double>(perExpert[e]);
        }
    }
    source.reset();
    return load;
}

Placement resolvePlacement(const Scenario& s, const std::vector<std::vector<double>>& load)
{
    if (s.placement.explicit_slots)
        return *s.placement.explicit_slots;
    PlacementRequest req;
    req.strategy = s.placement.strategy;
    req.num_experts = s.model.routed_experts;
    req.num_gpus = s.topology.numGpus();
    req.num_layers = s.model.numMoeLayers();
    req.num_nodes = s.topology.numDomains();
    req.num_groups = s.model.expert_groups;
    req.num_slots = s.model.routed_experts + s.placement.redundant_slots;
    req.load = load;
    if (req.load.empty() && s.placement.strategy != "contiguous" && s.placement.strategy != "round-robin") {
        auto source = makeRoutingSource(s);
        req.load = estimateLoad(*source, 8);
    }
    try {
        return makePlacement(req);
    } catch (const std::invalid_argument& e) {
        throw InputError(Location{s.file, 0, 0}, std::string("placement: ") + e.what());
    }
}

Calibration resolveCalibration(const Scenario& s, const std::string& file)
{
    const Calibration base = defaultCalibration(s.topology.gpu.arch);
    if (!file.empty())
        return loadCalibrationFile(file, base);
    if (!s.calibration.empty())
        return loadCalibrationFile(s.calibration, base);
    return base;
}

}  // namespace moex
