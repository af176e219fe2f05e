#include "engine/ep_telemetry.h"

#include <algorithm>
#include <cstddef>

namespace moex::engine {

StepMetrics engineStepMetrics(const EngineStepRecord& rec)
{
    const auto& times = *rec.times;
    const auto& expertLoad = *rec.expertLoad;
    const auto& trafficRows = *rec.trafficRows;
    const int R = static_cast<int>(rec.rankTokens.size()), E = rec.experts;
    const std::size_t L = times.size();

    StepMetrics out;
    out.source = "cpu";
    out.step = rec.step;
    out.num_gpus = R;
    out.gpus.assign(static_cast<std::size_t>(R), GpuMetrics{});
    out.traffic.assign(static_cast<std::size_t>(R) * static_cast<std::size_t>(R), 0.0);
    StepTotals& sum = out.summary;
    std::vector<int> slowestCount(static_cast<std::size_t>(R), 0);
    for (std::size_t li = 0; li < L; ++li) {
        LayerMetrics lm;
        lm.decoder_layer = rec.decoderLayers[li];
        lm.expert_load.assign(static_cast<std::size_t>(E), 0);
        lm.gpu_load.assign(static_cast<std::size_t>(R), 0);
        const auto& pts = times[li];
        double layerUs = 0, dispatchUs = 0, combineUs = 0, computeUs = 0;
        int slowest = 0;
        for (int r = 0; r < R; ++r) {
            const PhaseTimes& pt = pts[static_cast<std::size_t>(r)];
            layerUs = std::max(layerUs, pt.layer);
            dispatchUs = std::max(dispatchUs, pt.router + pt.dispatch);
            combineUs = std::max(combineUs, pt.combine);
            if (pt.expert > computeUs) {
                computeUs = pt.expert;
                slowest = r;
            }
            lm.gpu_load[static_cast<std::size_t>(r)] = pt.pairs;
            GpuMetrics& g = out.gpus[static_cast<std::size_t>(r)];
            g.compute_us += pt.expert;
            g.attention_us += pt.router;
            g.dispatch_us += pt.dispatch;
            g.combine_us += pt.combine;
            g.expert_pairs += pt.pairs;
        }
        lm.time_us = layerUs;
        lm.dispatch_us = dispatchUs;
        lm.combine_us = combineUs;
        lm.compute_us = computeUs;
        lm.slowest_gpu = slowest;
        ++slowestCount[static_cast<std::size_t>(slowest)];
        double mx = 0, mean = 0;
        for (auto v : lm.gpu_load) {
            mx = std::max(mx, static_cast<double>(v));
            mean += static_cast<double>(v) / R;
        }
        lm.imbalance = mean > 0 ? mx / mean : 1.0;
        out.layers.push_back(std::move(lm));
        sum.moe_time_us += layerUs;
        sum.dispatch_us += dispatchUs;
        sum.combine_us += combineUs;
        sum.expert_compute_us += computeUs;
        sum.imbalance += out.layers.back().imbalance / static_cast<double>(L);
    }
    sum.imbalance -= 1.0;  // started at the default 1.0
    // Expert loads as the ranks' routers chose them; traffic both ways (dispatch rows out, combine
    // rows back) between every rank pair, over the step's layers.
    for (std::size_t li = 0; li < L; ++li)
        for (int r = 0; r < R; ++r)
            for (int x = 0; x < E; ++x)
                out.layers[li].expert_load[static_cast<std::size_t>(x)] += expertLoad[static_cast<std::size_t>(r)][li][static_cast<std::size_t>(x)];
    for (int s = 0; s < R; ++s)
        for (int d = 0; d < R; ++d)
            out.traffic[static_cast<std::size_t>(s * R + d)] = trafficRows[static_cast<std::size_t>(s * R + d)] * rec.rowBytes * 2.0;
    for (int r = 0; r < R; ++r) {
        GpuMetrics& g = out.gpus[static_cast<std::size_t>(r)];
        g.tokens = rec.rankTokens[static_cast<std::size_t>(r)];
        g.idle_us = std::max(0.0, sum.moe_time_us - (g.compute_us + g.attention_us + g.dispatch_us + g.combine_us));
    }
    sum.step_time_us = sum.moe_time_us;
    sum.tokens_per_s = sum.step_time_us > 0 ? static_cast<double>(rec.tokens) * 1e6 / sum.step_time_us : 0;
    sum.tokens_per_s_per_gpu = sum.tokens_per_s / R;
    sum.batch_per_gpu = rec.tokens / R;
    sum.straggler_gpu = static_cast<int>(std::max_element(slowestCount.begin(), slowestCount.end()) - slowestCount.begin());
    out.sim_wall_us = rec.wallUs;
    return out;
}

}  // namespace moex::engine
