#include "sim/scenario_run.h"

#include "common/diagnostics.h"
#include "placement/load_stats.h"
#include "placement/strategies.h"
#include "sim/sim_objective.h"
#include "workload/coactivation.h"
#include "workload/synthetic_routing.h"
#include "workload/trace_routing.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>

namespace moex {

namespace {

// Group-limited routing: tokens of one source come from many sequences, so they choose their
// expert groups independently; 32 independent sub-batches per source approximate that.
SyntheticRoutingOptions syntheticOptions(const Workload& w)
{
    SyntheticRoutingOptions o;
    o.group_subbatches = std::max(1, std::min(w.tokens_per_gpu, 32));
    return o;
}

// The generator, keeping its first loadSteps() samples: after reset() it replays them (a copy is
// far cheaper than drawing a step again), then draws on; when a run went past them before the
// reset, a fresh generator redraws them first. The sequence is so exactly a fresh generator's,
// and a placement's load estimate and the run after it (startRunWindow) share one sequence.
class SyntheticSource final : public RoutingSource {
public:
    SyntheticSource(const ModelSpec& m, const Workload& w, int gpus) : m_model(m), m_workload(w), m_gpus(gpus)
    {
        m_gen = makeGenerator();
    }
    void next(RoutingSample& out) override
    {
        const auto kept = static_cast<std::int64_t>(m_kept.size());
        if (m_position < kept) {
            out = m_kept[static_cast<std::size_t>(m_position++)];
            return;
        }
        if (m_drawn != m_position) {  // rewound past the kept steps: a generator that has drawn only them
            m_gen = makeGenerator();
            for (std::int64_t i = 0; i < kept; ++i)
                m_gen->next(out);
            m_drawn = kept;
        }
        m_gen->next(out);
        ++m_drawn;
        if (m_drawn <= loadSteps())
            m_kept.push_back(out);
        ++m_position;
    }
    void reset() override { m_position = 0; }
    void skip(int steps) override
    {
        // Within the kept steps only the position moves; past them the generator draws on.
        const auto kept = static_cast<std::int64_t>(m_kept.size());
        const std::int64_t within = std::clamp<std::int64_t>(kept - m_position, 0, steps);
        m_position += within;
        RoutingSource::skip(steps - static_cast<int>(within));
    }

private:
    std::unique_ptr<SyntheticRouting> makeGenerator() const
    {
        return std::make_unique<SyntheticRouting>(m_model, m_workload, m_gpus, syntheticOptions(m_workload));
    }

    ModelSpec m_model;
    Workload m_workload;
    int m_gpus;
    std::unique_ptr<SyntheticRouting> m_gen;
    std::vector<RoutingSample> m_kept;  // the generator's first steps
    std::int64_t m_position = 0;        // the step next() returns
    std::int64_t m_drawn = 0;           // steps m_gen has drawn
};

class TraceSource final : public RoutingSource {
public:
    explicit TraceSource(TraceRouting r) : m_trace(std::move(r)) {}
    void next(RoutingSample& out) override { m_trace.next(out); }
    void reset() override { m_trace.reset(); }

private:
    TraceRouting m_trace;
};

// Co-activation per MoE layer for gem and search: the generator's expectation, or a per-token
// trace's counts (a trace of fewer layers repeats, as its replay does); none for counts files.
std::function<ExpertMatrix(int)> coactivationOf(const Scenario& s)
{
    const Workload& w = s.workload;
    switch (w.routing.kind) {
    case RoutingKind::synthetic: {
        auto gen = std::make_shared<SyntheticRouting>(s.model, w, s.topology.numGpus(), syntheticOptions(w));
        return [gen](int layer) { return expectedCoactivation(*gen, layer); };
    }
    case RoutingKind::trace: {
        TraceReadOptions options;
        options.num_experts = s.model.routed_experts;
        auto trace = std::make_shared<TokenTrace>(readTokenTrace(w.routing.file, options));
        return [trace](int layer) { return coactivationMatrix(*trace, layer % std::max(1, trace->num_layers)); };
    }
    case RoutingKind::counts:
        break;
    }
    return {};
}

}  // namespace

bool isServingStatistics(const std::string& path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return true;  // a TensorRT-LLM statistics folder
    const std::string ext = std::filesystem::path(path).extension().string();
    return ext == ".pt" || ext == ".jsonl" || ext == ".safetensors";  // SGLang recorder, vLLM eplb_load_stats
}

LayerCounts countsFromStatistics(const std::string& path, const ModelSpec& model)
{
    const LoadStats stats = alignToModel(readLoadStats(path), model, path);
    LayerCounts counts;
    counts.source = path;
    counts.num_experts = stats.num_experts;
    counts.layer_ids = model.moe_layers;
    counts.counts = stats.load;
    counts.from_summary = stats.reconstructed;
    return counts;
}

namespace {

std::unique_ptr<RoutingSource> makeSource(const Scenario& s, long long seedOverride)
{
    Workload w = s.workload;
    if (seedOverride >= 0)
        w.routing.seed = static_cast<std::uint64_t>(seedOverride);
    const int gpus = s.topology.numGpus();
    switch (w.routing.kind) {
    case RoutingKind::synthetic:
        return std::make_unique<SyntheticSource>(s.model, w, gpus);
    case RoutingKind::trace: {
        // A trace of another depth than the model (recorded on Mixtral's 32 layers, replayed on a
        // deeper model) replays cyclically only when the scenario says workload.routing.layer_cycling.
        TraceReadOptions options;
        options.num_experts = s.model.routed_experts;
        TokenTrace trace = readTokenTrace(w.routing.file, options);
        TraceRoutingOptions cycling;
        cycling.allow_layer_cycling = w.routing.layer_cycling;
        return std::make_unique<TraceSource>(TraceRouting(std::move(trace), s.model, w, gpus, cycling));
    }
    case RoutingKind::counts: {
        const LayerCounts counts = isServingStatistics(w.routing.file)
                                       ? countsFromStatistics(w.routing.file, s.model)
                                       : readLayerCounts(w.routing.file, s.model.routed_experts);
        return std::make_unique<TraceSource>(TraceRouting(counts, s.model, w, gpus, w.routing.layer_cycling));
    }
    }
    throw std::logic_error("unknown routing kind");
}

}  // namespace

std::unique_ptr<RoutingSource> makeRoutingSource(const Scenario& s, long long seedOverride)
{
    std::unique_ptr<RoutingSource> source = makeSource(s, seedOverride);
    source->setLoadSteps(s.placement.load_steps);
    return source;
}

namespace {

void addLoad(const RoutingSample& sample, std::vector<std::vector<double>>& load)
{
    if (load.empty())
        load.assign(static_cast<std::size_t>(sample.numLayers()),
                    std::vector<double>(static_cast<std::size_t>(sample.num_experts), 0.0));
    for (int l = 0; l < sample.numLayers(); ++l) {
        const auto perExpert = sample.expertLoad(l);
        for (std::size_t e = 0; e < perExpert.size(); ++e)
            load[static_cast<std::size_t>(l)][e] += static_cast<double>(perExpert[e]);
    }
}

std::vector<std::vector<double>> loadOf(const std::vector<RoutingSample>& samples)
{
    std::vector<std::vector<double>> load;
    for (const RoutingSample& r : samples)
        addLoad(r, load);
    return load;
}

// [layer][step][expert]: each sample's per-expert load.
std::vector<std::vector<std::vector<double>>> stepLoadOf(const std::vector<RoutingSample>& samples)
{
    std::vector<std::vector<std::vector<double>>> out;
    if (samples.empty())
        return out;
    out.resize(static_cast<std::size_t>(samples.front().numLayers()));
    for (const RoutingSample& r : samples)
        for (int l = 0; l < r.numLayers() && l < static_cast<int>(out.size()); ++l) {
            const auto perExpert = r.expertLoad(l);
            out[static_cast<std::size_t>(l)].emplace_back(perExpert.begin(), perExpert.end());
        }
    return out;
}

}  // namespace

bool sameRouting(const Scenario& a, const Scenario& b)
{
    return a.model == b.model && a.topology.numGpus() == b.topology.numGpus() && a.workload.phase == b.workload.phase
        && a.workload.tokens_per_gpu == b.workload.tokens_per_gpu && a.workload.routing == b.workload.routing
        && a.placement.load_steps == b.placement.load_steps;
}

void startRunWindow(RoutingSource& source)
{
    source.reset();
    source.skip(source.loadSteps());
}

std::vector<std::vector<double>> estimateLoad(RoutingSource& source, int steps, const CancelToken& cancel)
{
    RoutingSample sample;
    std::vector<std::vector<double>> load;
    for (int i = 0; i < steps; ++i) {
        cancel.check();
        source.next(sample);
        addLoad(sample, load);
    }
    source.reset();
    return load;
}

namespace {

// A placement the strategies refuse: the scenario's error, at its placement key.
InputError placementError(const Scenario& s, const std::invalid_argument& e)
{
    const std::string what = e.what();
    const std::string message = what.starts_with("placement: ") ? what : "placement: " + what;
    if (!s.placement.flags.empty())  // a flag changed the shape: the flag, and the file it applied to
        return InputError(Location{s.placement.flags, 0, 0},
                          message + (s.file.empty() ? ""
                                     : " (" + s.file
                                           + (s.placement.flags.find(" --set ") != std::string::npos ? " with those flags)"
                                                                                                      : " with that flag)")));
    return InputError(Location{s.file, s.placement.line, s.placement.column}, message);
}

// The request's shape from the scenario: strategy, experts, GPUs, layers, domains, groups, slots.
PlacementRequest shapeRequest(const Scenario& s)
{
    PlacementRequest req;
    req.strategy = s.placement.strategy;
    req.num_experts = s.model.routed_experts;
    req.num_gpus = s.topology.numGpus();
    req.num_layers = s.model.numMoeLayers();
    req.num_nodes = s.topology.numDomains();
    req.num_groups = s.model.expert_groups;
    req.num_slots = s.model.routed_experts + s.placement.redundant_slots;
    return req;
}

}  // namespace

PlacementSetup preparePlacement(const Scenario& s, const std::vector<std::vector<double>>& load, std::uint64_t seed,
                                RoutingSource* routing, const CancelToken& cancel)
{
    const std::string& strategy = s.placement.strategy;
    PlacementSetup setup;
    PlacementRequest& req = setup.request;
    req = shapeRequest(s);
    req.load = load;
    req.budget_ms = s.placement.budget_ms;
    req.seed = seed;
    req.cancel = cancel;
    std::unique_ptr<RoutingSource> own;
    auto source = [&]() -> RoutingSource& {
        if (routing)
            return *routing;
        if (!own)
            own = makeRoutingSource(s);
        return *own;
    };
    std::vector<RoutingSample> samples;
    if (strategy == "search") {
        // The objective's samples are the steps the load is estimated from (estimateLoad's 8).
        samples.resize(kObjectiveSamples);
        for (auto& sample : samples) {
            cancel.check();
            source().next(sample);
        }
        source().reset();
        if (req.load.empty())
            req.load = loadOf(samples);
        req.step_load = stepLoadOf(samples);
    }
    if (req.load.empty() && strategy != "contiguous" && strategy != "round-robin")
        req.load = estimateLoad(source(), s.placement.load_steps, cancel);
    if (strategy == "gem" || strategy == "search") {
        for (int g = 0; g < req.num_gpus; ++g)
            req.gpu_speed.push_back(s.speeds.of(g));
        if (!routing)
            req.coactivation = coactivationOf(s);
    }
    if (strategy == "search") {
        try {
            setup.objective =
                std::make_unique<SimObjective>(s, resolveCalibration(s), std::move(samples), req.num_slots);
        } catch (const std::invalid_argument& e) {
            throw placementError(s, e);
        }
        req.objective = setup.objective.get();
    }
    return setup;
}

void checkPlacementShape(const Scenario& s)
{
    if (s.placement.explicit_slots)
        return;
    try {
        checkPlacementShape(shapeRequest(s));
    } catch (const std::invalid_argument& e) {
        throw placementError(s, e);
    }
}

PlacementAndRouting resolvePlacementAndRouting(const Scenario& s)
{
    PlacementAndRouting out;
    out.routing = makeRoutingSource(s);
    const std::string& strategy = s.placement.strategy;
    const bool estimates = !s.placement.explicit_slots && strategy != "contiguous" && strategy != "round-robin" &&
                           strategy != "search";
    out.placement = resolvePlacement(s, estimates ? estimateLoad(*out.routing, s.placement.load_steps)
                                                  : std::vector<std::vector<double>>{});
    return out;
}

Placement resolvePlacement(const Scenario& s, const std::vector<std::vector<double>>& load, std::uint64_t seed,
                           const CancelToken& cancel)
{
    if (s.placement.explicit_slots)
        return *s.placement.explicit_slots;
    const PlacementSetup setup = preparePlacement(s, load, seed, nullptr, cancel);
    try {
        return makePlacement(setup.request);
    } catch (const std::invalid_argument& e) {
        throw placementError(s, e);
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
