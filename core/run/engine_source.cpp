// MetricsSource "cpu": the real MoE layers on this machine (engine/ep_engine.h), configured from the
// scenario's engine section:
//   ranks    expert-parallel ranks in this process (threads transport)
//   layers   decoder-layer indices of the MoE layers to run (empty = all)
//   weights  own (each layer its own weights) | shared (every layer streams the first listed layer's
//            weights: the bytes read per layer are the same, so timings stay honest) | auto (own when
//            they fit in 80% of the memory available, else shared)
//   tokens   per step, all ranks together (0 = the workload's tokens per GPU, at most 256)
//   seed     of the weights and hidden states
//   checkpoint  a Hugging Face checkpoint directory whose safetensors the ranks read their experts,
//            shared experts and routers from (engine/checkpoint.h); empty: seeded weights
//   routing  computed (the real gate on the hidden states) | workload (each step's token->expert
//            choices come from the scenario's routing, synthetic or trace, scaled to the engine's
//            tokens, so the engine and the simulator see the same expert loads; the router still
//            weighs the given experts)
// The experts are laid out for the ranks the engine runs, with the scenario's strategy (search and
// explicit placements, made for the topology's GPUs, fall back to eplb) and its redundant slots
// rounded to a multiple of the ranks.
#include "run/metrics_source.h"

#include "common/diagnostics.h"
#include "common/host_info.h"
#include "common/plural.h"
#include "engine/checkpoint.h"
#include "engine/ep_engine.h"
#include "placement/strategies.h"
#include "sim/scenario_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

namespace moex {

namespace {

std::string gb(std::size_t bytes)
{
    // In GB down to 10 MB, in MB below it ("need 0.00 GB … 0.00 GB are available" said nothing).
    char buf[32];
    const double b = static_cast<double>(bytes);
    if (b >= 1e7)
        std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
    else
        std::snprintf(buf, sizeof buf, "%.3f MB", b / 1e6);
    return buf;
}

// Where an error about the engine's `keys` points: the flags that set those keys, else the
// scenario's engine section (a --set of another engine key is not to blame).
Location engineLocation(const Scenario& s, std::initializer_list<const char*> keys)
{
    std::string flags;
    for (const char* key : keys)
        if (const auto it = s.engine.flags.find(key); it != s.engine.flags.end())
            flags += (flags.empty() ? "" : " ") + it->second;
    if (!flags.empty())
        return Location{flags, 0, 0};
    return Location{s.file.empty() ? std::string("scenario") : s.file, s.engine.line, s.engine.column};
}

// The tokens a step of the engine runs: engine.tokens, else the scenario's tokens per GPU up to 256.
std::int64_t engineTokens(const Scenario& s)
{
    return s.engine.tokens > 0 ? s.engine.tokens : std::min<std::int64_t>(s.workload.tokens_per_gpu, 256);
}

}  // namespace

void checkEngineSettings(const Scenario& s)
{
    const EngineSpec& spec = s.engine;
    if (spec.backend == Backend::cuda)
        throw InputError(engineLocation(s, {"backend"}), "engine.backend: cuda: this build has no CUDA engine backend yet "
                                            "(moex-cli devices says what it has); use cpu or sim");
    if (spec.backend == Backend::remote)
        throw InputError(engineLocation(s, {"backend"}), "engine.backend: remote: this build has no remote worker client yet; "
                                            "use cpu or sim");
    const int ranks = spec.ranks;
    if (ranks < 1 || ranks > s.model.routed_experts)
        throw InputError(engineLocation(s, {"ranks"}), "engine.ranks = " + std::to_string(ranks) + ": give 1 to "
                                                + std::to_string(s.model.routed_experts) + " ranks (one expert each at most)");
    if (spec.gemm == EngineGemm::openblas && !engine::openblas::library().loaded())
        throw InputError(engineLocation(s, {"gemm"}), "engine.gemm: openblas, but " + engine::openblas::library().error);
    const std::int64_t tokens = engineTokens(s);
    if (tokens < ranks)
        throw InputError(engineLocation(s, {"tokens", "ranks"}), std::to_string(tokens) + " tokens per step cannot give each of "
                                                + std::to_string(ranks) + " ranks a token (engine.tokens)");
    for (int d : spec.layers.empty() ? s.model.moe_layers : spec.layers)
        if (!s.model.isMoeLayer(d))
            throw InputError(engineLocation(s, {"layers"}), "engine.layers: decoder layer " + std::to_string(d)
                                                    + " is not an MoE layer of " + s.model.name);
}

Placement engineRankPlacement(const Scenario& s, int ranks)
{
    const int E = s.model.routed_experts;
    int slots = E + s.placement.redundant_slots;
    slots -= slots % ranks;
    if (slots < E)
        slots += ranks;
    PlacementRequest rq;
    rq.strategy = s.placement.strategy == "search" || s.placement.strategy == "explicit" ? "eplb" : s.placement.strategy;
    rq.num_experts = E;
    rq.num_gpus = ranks;
    rq.num_layers = s.model.numMoeLayers();
    rq.num_groups = E % std::max(1, s.model.expert_groups) == 0 ? std::max(1, s.model.expert_groups) : 1;
    rq.num_slots = slots;
    return makePlacement(rq);
}

std::vector<int> forcedChoices(const RoutingSample& sample, int layer, std::int64_t tokens, int topk)
{
    const int E = sample.num_experts;
    const auto counts = sample.layer(layer);
    std::vector<double> load(static_cast<std::size_t>(E), 0.0);
    double total = 0;
    for (int src = 0; src < sample.num_gpus; ++src)
        for (int e = 0; e < E; ++e) {
            const double c = counts[static_cast<std::size_t>(src) * static_cast<std::size_t>(E) + static_cast<std::size_t>(e)];
            load[static_cast<std::size_t>(e)] += c;
            total += c;
        }
    const std::int64_t pairs = tokens * topk;
    // Largest remainder: each expert's share of the pairs, ties to the lower expert id.
    std::vector<std::int64_t> n(static_cast<std::size_t>(E), 0);
    std::vector<std::pair<double, int>> rest;
    std::int64_t given = 0;
    for (int e = 0; e < E; ++e) {
        const double exact = total > 0 ? load[static_cast<std::size_t>(e)] * static_cast<double>(pairs) / total
                                       : static_cast<double>(pairs) / E;
        n[static_cast<std::size_t>(e)] = std::min<std::int64_t>(tokens, static_cast<std::int64_t>(exact));
        given += n[static_cast<std::size_t>(e)];
        rest.emplace_back(exact - static_cast<double>(n[static_cast<std::size_t>(e)]), e);
    }
    std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; given < pairs; i = (i + 1) % rest.size()) {
        auto& c = n[static_cast<std::size_t>(rest[i].second)];
        if (c < tokens) {
            ++c;
            ++given;
        }
    }
    // Pairs sorted by expert; token t takes pairs t, t + T, ..., t + (k-1) T. An expert's pairs are
    // consecutive and at most T, so no token gets one expert twice.
    std::vector<int> list;
    list.reserve(static_cast<std::size_t>(pairs));
    for (int e = 0; e < E; ++e)
        list.insert(list.end(), static_cast<std::size_t>(n[static_cast<std::size_t>(e)]), e);
    std::vector<int> ids(static_cast<std::size_t>(pairs));
    for (std::int64_t t = 0; t < tokens; ++t)
        for (int j = 0; j < topk; ++j)
            ids[static_cast<std::size_t>(t * topk + j)] = list[static_cast<std::size_t>(t + j * tokens)];
    return ids;
}

namespace {

static_assert(static_cast<int>(EngineGemm::openblas) == static_cast<int>(engine::openblas::GemmChoice::openblas)
              && static_cast<int>(EngineGemm::engine) == static_cast<int>(engine::openblas::GemmChoice::engine));

// What multiplies the experts' tokens, for the run's detail line.
std::string gemmDetail(const engine::LayerShape& shape, EngineGemm gemm)
{
    const std::string kernel = std::string("the engine's ") + engine::toString(engine::activeKernel()) + " kernels";
    const int from = shape.openblas_from_tokens;
    if (from == 0)
        return "expert GEMMs on " + kernel
               + (gemm == EngineGemm::automatic && !engine::openblas::library().loaded() ? " (OpenBLAS not loaded)" : "");
    if (from == 1)
        return "expert GEMMs on OpenBLAS";
    return "expert GEMMs on OpenBLAS from " + std::to_string(from) + " tokens per expert, " + kernel + " below";
}

class EngineSource final : public MetricsSource {
public:
    std::string name() const override { return "cpu"; }
    std::string detail() const override { return m_detail; }
    bool measured() const override { return true; }

    void configure(const Scenario& s, const Placement& given) override
    {
        const EngineSpec& spec = s.engine;
        const int ranks = spec.ranks;
        checkEngineSettings(s);
        engine::EngineConfig cfg;
        cfg.seed = spec.seed;
        cfg.gemm = static_cast<engine::openblas::GemmChoice>(spec.gemm);
        cfg.tokens = engineTokens(s);
        cfg.layers = spec.layers.empty() ? s.model.moe_layers : spec.layers;
        const Placement placement = given.numGpus() == ranks && given.numLayers() == s.model.numMoeLayers()
            ? given
            : engineRankPlacement(s, ranks);
        const DType dtype = s.precision.weights;
        // Opened afresh each time (a new placement re-reads it too): the shards are mapped only while
        // the engine reads its weights, so files rewritten in between are read as they are now.
        if (!spec.checkpoint.empty())
            cfg.checkpoint = engine::Checkpoint::open(spec.checkpoint);
        const std::size_t available = meminfoBytes("MemAvailable");
        const std::size_t budget = spec.memory_gb > 0 ? static_cast<std::size_t>(spec.memory_gb * 1e9)
                                                      : available / 10 * 8;
        cfg.shared_weights = spec.weights == EngineWeights::shared;
        std::size_t need = engine::EpEngine::weightBytesNeeded(s.model, dtype, placement, cfg);
        if (spec.weights == EngineWeights::automatic && budget > 0 && need > budget) {
            cfg.shared_weights = true;
            need = engine::EpEngine::weightBytesNeeded(s.model, dtype, placement, cfg);
        }
        if (budget > 0 && need > budget)
            throw InputError(engineLocation(s, {"memory_gb", "layers", "weights", "checkpoint", "ranks"}),
                             "the engine's weights need " + gb(need) + (cfg.shared_weights ? " (one layer, shared)" : "")
                                 + " but " + gb(budget) + " are available (80% of free memory, or engine.memory_gb); "
                                 + (cfg.shared_weights ? "one layer's weights alone do not fit: use a smaller precision.weights, or a "
                                                         "larger engine.memory_gb where this machine has the memory"
                                                       : "run fewer layers (engine.layers) or use engine.weights: shared"));
        // And a step's buffers beside them: a million tokens of a small model took 20 GB and ended
        // in std::bad_alloc.
        const std::size_t activations = engine::EpEngine::activationBytesNeeded(s.model, dtype, cfg, ranks,
                                                                                      engine::EpEngine::expertWorkersNeeded(placement, ranks));
        if (budget > 0 && activations > budget - need)
            throw InputError(engineLocation(s, {"tokens", "memory_gb"}), "a step's buffers at " + std::to_string(cfg.tokens) + " tokens need up to "
                                                    + gb(activations) + " beside the weights' " + gb(need) + ", but " + gb(budget)
                                                    + " are available (80% of free memory, or engine.memory_gb); give fewer "
                                                      "tokens (engine.tokens, moex-cli run --tokens)");
        std::unique_ptr<RoutingSource> routing;
        if (spec.workload_routing) {
            routing = makeRoutingSource(s);
            startRunWindow(*routing);  // the steps the simulator's run shows
        }
        auto built = std::make_unique<engine::EpEngine>(s.model, dtype, placement, cfg);
        m_engine = std::move(built);
        m_routing = std::move(routing);
        m_ordinals.clear();
        for (int d : cfg.layers)
            m_ordinals.push_back(static_cast<int>(std::find(s.model.moe_layers.begin(), s.model.moe_layers.end(), d)
                                                  - s.model.moe_layers.begin()));
        m_forced.clear();
        m_scenario = s;
        cfg.checkpoint.reset();
        m_cfg = cfg;
        m_step = 0;
        std::ostringstream d;
        d << countOf(ranks, "rank") << ", " << countOf(static_cast<long long>(cfg.layers.size()), "MoE layer") << (cfg.shared_weights ? " on one layer's shared weights" : "")
          << ", " << cfg.tokens << " tokens per step, " << engine::toString(m_engine->shape().format) << " weights ("
          << gb(m_engine->weightBytes()) << ", " << (spec.checkpoint.empty() ? "seeded" : "from checkpoint " + spec.checkpoint)
          << "), " << gemmDetail(m_engine->shape(), spec.gemm) << ", " << (m_routing ? "workload" : "computed")
          << " routing, threads transport";
        m_detail = d.str();
    }

    bool configured() const override { return m_engine != nullptr; }

    void setPlacement(const Placement& placement, const GpuSpeeds& speeds) override
    {
        // Each rank holds its experts in memory: a new layout rebuilds them (GPU speeds do not
        // apply to measured ranks). A placement for other than the engine's ranks keeps the
        // engine's own layout, as configure() does.
        if (!m_engine)
            throw std::logic_error("the engine has no scenario yet");
        Scenario s = m_scenario;
        s.speeds = speeds;
        // The routing goes on where it was, so repeat() runs the last step's tokens again.
        const int step = m_step;
        auto routing = std::move(m_routing);
        auto forced = std::move(m_forced);
        configure(s, placement);
        m_step = step;
        if (routing)
            m_routing = std::move(routing);
        m_forced = std::move(forced);
    }

    void reset() override
    {
        m_step = 0;
        if (m_routing)
            startRunWindow(*m_routing);
        m_forced.clear();
    }

    void next(StepMetrics& out) override
    {
        if (!m_engine)
            throw std::logic_error("the engine has no scenario yet");
        if (m_routing) {
            m_routing->next(m_sample);
            m_forced.clear();
            for (int o : m_ordinals)
                m_forced.push_back(forcedChoices(m_sample, o, m_cfg.tokens, m_engine->shape().topk));
        }
        run(m_step++, out);
    }

    void repeat(StepMetrics& out) override
    {
        if (!m_engine)
            throw std::logic_error("the engine has no scenario yet");
        if (m_routing && m_forced.empty()) {
            next(out);
            return;
        }
        run(std::max(0, m_step - 1), out);
    }

    double checksum() const override { return m_checksum; }

private:
    void run(int step, StepMetrics& out)
    {
        m_checksum = m_routing ? m_engine->step(step, out, m_forced) : m_engine->step(step, out);
        // The checksum sums every output element: NaN or infinity anywhere shows in it. Seeded
        // weights never give one; a checkpoint with NaN or infinite weights or scales (an e8m0
        // scale of 255, an e4m3 0x7f) or products past float's range does, and a run that printed
        // "checksum nan" with exit 0 measured nothing.
        if (!std::isfinite(m_checksum)) {
            const std::string& ckpt = m_scenario.engine.checkpoint;
            throw InputError(engineLocation(m_scenario, {"checkpoint"}),
                             "step " + std::to_string(step) + ": the MoE layers' output is not finite (NaN or infinity): "
                                 + (ckpt.empty() ? std::string("the seeded weights overflowed")
                                                 : "the checkpoint " + ckpt + " holds NaN or infinite weights or scales, or "
                                                   "weights whose products overflow float"));
        }
    }

    Scenario m_scenario;
    std::unique_ptr<engine::EpEngine> m_engine;
    std::unique_ptr<RoutingSource> m_routing;
    RoutingSample m_sample;
    std::vector<int> m_ordinals;
    std::vector<std::vector<int>> m_forced;
    engine::EngineConfig m_cfg;
    std::string m_detail;
    int m_step = 0;
    double m_checksum = 0;
};

}  // namespace

std::unique_ptr<MetricsSource> makeCpuEngineSource()
{
    return std::make_unique<EngineSource>();
}

std::unique_ptr<MetricsSource> makeSource(const Scenario& s, const SourceOptions& options)
{
    switch (s.engine.backend) {
    case Backend::sim: return makeSimSource(options);
    case Backend::cpu: return makeCpuEngineSource();
    case Backend::cuda:
    case Backend::remote:
        checkEngineSettings(s);  // says which backend this build lacks
        break;
    }
    throw std::logic_error("unhandled engine backend");
}

}  // namespace moex
