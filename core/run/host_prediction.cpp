#include "run/host_prediction.h"

#include "run/metrics_source.h"
#include "sim/simulator.h"
#include "topology/builtin_topologies.h"

#include <algorithm>
#include <stdexcept>

namespace moex {

Scenario hostCpuScenario(const Scenario& engineScenario, int ranks, std::int64_t tokens)
{
    Scenario s = engineScenario;
    TopologyParams p;
    p.builtin = "host-cpu";
    p.ranks = ranks;
    s.topology = buildTopology(p);
    s.topology_params = p;
    s.topology_source = {SourceRef::Kind::builtin, {}};
    s.speeds = GpuSpeeds{};
    s.overlap = Overlap::none;  // the engine runs its phases one after the other
    s.workload.tokens_per_gpu = static_cast<int>((tokens + ranks - 1) / ranks);
    return s;
}

StepMetrics predictEngineStep(const Scenario& engineScenario, const StepMetrics& measured, const Calibration& calibration)
{
    const int R = measured.num_gpus;
    const ModelSpec& model = engineScenario.model;
    const int E = model.routed_experts, K = model.experts_per_token;
    if (R < 1 || measured.layers.empty())
        throw std::invalid_argument("the measured step has no ranks or no layers");
    std::int64_t tokens = 0;
    for (const GpuMetrics& g : measured.gpus)
        tokens += g.tokens;
    const Scenario s = hostCpuScenario(engineScenario, R, tokens);
    const Placement placement = engineRankPlacement(engineScenario, R);

    // The engine's loads, each expert's pairs spread over the source ranks (whole pairs, the
    // remainders dealt round the ranks so that every rank sends about the same).
    RoutingSample sample;
    sample.resize(model.numMoeLayers(), R, E, s.workload.tokens_per_gpu, K);
    std::fill(sample.all_counts.begin(), sample.all_counts.end(), RoutingSample::Count{0});
    std::vector<int> ordinals;
    for (const LayerMetrics& lm : measured.layers) {
        const auto it = std::find(model.moe_layers.begin(), model.moe_layers.end(), lm.decoder_layer);
        if (it == model.moe_layers.end())
            throw std::invalid_argument("measured layer " + std::to_string(lm.decoder_layer) + " is not an MoE layer of " + model.name);
        if (static_cast<int>(lm.expert_load.size()) != E)
            throw std::invalid_argument("measured layer " + std::to_string(lm.decoder_layer) + " has " + std::to_string(lm.expert_load.size())
                                        + " expert loads, the model " + std::to_string(E) + " experts");
        const int o = static_cast<int>(it - model.moe_layers.begin());
        ordinals.push_back(o);
        auto counts = sample.layer(o);
        int next = 0;
        for (int e = 0; e < E; ++e) {
            const std::int64_t load = lm.expert_load[static_cast<std::size_t>(e)];
            for (int src = 0; src < R; ++src) {
                std::int64_t c = load / R;
                counts[static_cast<std::size_t>(src) * E + e] = static_cast<RoutingSample::Count>(std::min<std::int64_t>(c, s.workload.tokens_per_gpu));
            }
            for (std::int64_t extra = load % R; extra > 0; --extra) {
                auto& c = counts[static_cast<std::size_t>(next) * E + e];
                if (c < s.workload.tokens_per_gpu)
                    ++c;
                next = (next + 1) % R;
            }
        }
    }
    Simulator sim(s, placement, calibration);
    StepMetrics all;
    sim.step(sample, all);
    StepMetrics out = all;
    out.source = "sim (host-cpu)";
    out.layers.clear();
    StepTotals& t = out.summary;
    t.moe_time_us = t.dispatch_us = t.combine_us = t.expert_compute_us = 0;
    for (int o : ordinals) {
        const LayerMetrics& lm = all.layers[static_cast<std::size_t>(o)];
        out.layers.push_back(lm);
        t.moe_time_us += lm.time_us;
        t.dispatch_us += lm.dispatch_us;
        t.combine_us += lm.combine_us;
        t.expert_compute_us += lm.compute_us;
    }
    t.step_time_us = t.moe_time_us;  // the engine runs no attention
    return out;
}

std::string timeSharingNote(int ranks, int hardwareThreads)
{
    if (hardwareThreads <= 0 || ranks <= hardwareThreads)
        return {};
    return std::to_string(ranks) + " ranks ran on " + std::to_string(hardwareThreads) +
           (hardwareThreads == 1 ? " hardware thread" : " hardware threads") +
           " and took turns on them: each phase's wall time includes waiting for a core, "
           "router+dispatch above all (a rank waits at the counts exchange for peers that are not running), "
           "which the prediction does not model; compare the MoE-layer total, or run at most " +
           std::to_string(hardwareThreads) + (hardwareThreads == 1 ? " rank" : " ranks");
}

std::vector<PredictionRow> predictionTable(const std::vector<LayerMetrics>& measuredLayers, const StepMetrics& predicted)
{
    std::vector<PredictionRow> rows(4);
    rows[0].what = "MoE layers";
    rows[1].what = "router+dispatch";
    rows[2].what = "experts";
    rows[3].what = "combine";
    std::vector<PredictionRow> perLayer;
    for (const LayerMetrics& m : measuredLayers) {
        const auto it = std::find_if(predicted.layers.begin(), predicted.layers.end(),
                                     [&](const LayerMetrics& p) { return p.decoder_layer == m.decoder_layer; });
        if (it == predicted.layers.end())
            continue;
        rows[0].measured_us += m.time_us;
        rows[0].predicted_us += it->time_us;
        rows[1].measured_us += m.dispatch_us;
        rows[1].predicted_us += it->dispatch_us;
        rows[2].measured_us += m.compute_us;
        rows[2].predicted_us += it->compute_us;
        rows[3].measured_us += m.combine_us;
        rows[3].predicted_us += it->combine_us;
        perLayer.push_back({"layer " + std::to_string(m.decoder_layer), m.time_us, it->time_us});
    }
    rows.insert(rows.end(), perLayer.begin(), perLayer.end());
    return rows;
}

}  // namespace moex
