#include "metrics/metrics_json.h"

#include <algorithm>

namespace moex {

nlohmann::json summaryToJson(const StepTotals& s)
{
    return {{"step_time_us", s.step_time_us},
            {"tokens_per_s", s.tokens_per_s},
            {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu},
            {"tokens_per_s_per_kw", s.tokens_per_s_per_kw},
            {"imbalance", s.imbalance},
            {"dispatch_us", s.dispatch_us},
            {"combine_us", s.combine_us},
            {"expert_compute_us", s.expert_compute_us},
            {"attention_us", s.attention_us},
            {"overhead_us", s.overhead_us},
            {"dp_sync_us", s.dp_sync_us},
            {"moe_time_us", s.moe_time_us},
            {"moe_time_balanced_us", s.moe_time_balanced_us},
            {"comm_exposed_us", s.comm_exposed_us},
            {"hbm_used_gb_max", s.hbm_used_gb_max},
            {"max_concurrent_users", s.max_concurrent_users},
            {"batch_per_gpu", s.batch_per_gpu},
            {"memory_limited", s.memory_limited},
            {"power_kw", s.power_kw},
            {"straggler_gpu", s.straggler_gpu}};
}

nlohmann::json metricsToJson(const StepMetrics& m, const std::vector<std::string>& nodeNames)
{
    nlohmann::json j;
    j["source"] = m.source;
    j["step"] = m.step;
    j["summary"] = summaryToJson(m.summary);
    nlohmann::json gpus = nlohmann::json::array();
    for (std::size_t g = 0; g < m.gpus.size(); ++g) {
        const GpuMetrics& x = m.gpus[g];
        gpus.push_back({{"gpu", g},
                        {"compute_us", x.compute_us},
                        {"attention_us", x.attention_us},
                        {"dispatch_us", x.dispatch_us},
                        {"combine_us", x.combine_us},
                        {"idle_us", x.idle_us},
                        {"tokens", x.tokens},
                        {"expert_pairs", x.expert_pairs},
                        {"hbm_used_gb", x.hbm_used_gb},
                        {"power_w", x.power_w},
                        {"speed", x.speed}});
    }
    j["gpus"] = std::move(gpus);
    auto name = [&](int node) -> nlohmann::json {
        if (node >= 0 && static_cast<std::size_t>(node) < nodeNames.size())
            return nodeNames[static_cast<std::size_t>(node)];
        return node;
    };
    nlohmann::json links = nlohmann::json::array();
    for (const LinkMetrics& l : m.links)
        links.push_back({{"from", name(l.from)},
                         {"to", name(l.to)},
                         {"bytes", l.bytes},
                         {"capacity_gbps", l.capacity_gbs * 8.0},  // Gbit/s, as NICs are rated
                         {"utilization", l.utilization}});
    j["links"] = std::move(links);
    const auto G = static_cast<std::size_t>(m.num_gpus);
    nlohmann::json traffic = nlohmann::json::array();
    for (std::size_t s = 0; s < G; ++s)
        traffic.push_back(std::vector<double>(m.traffic.begin() + static_cast<std::ptrdiff_t>(s * G),
                                              m.traffic.begin() + static_cast<std::ptrdiff_t>((s + 1) * G)));
    j["traffic"] = std::move(traffic);
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerMetrics& l : m.layers)
        layers.push_back({{"layer", l.decoder_layer},
                          {"expert_load", l.expert_load},
                          {"gpu_load", l.gpu_load},
                          {"time_us", l.time_us},
                          {"dispatch_us", l.dispatch_us},
                          {"combine_us", l.combine_us},
                          {"compute_us", l.compute_us},
                          {"slowest_gpu", l.slowest_gpu},
                          {"imbalance", l.imbalance}});
    j["layers"] = std::move(layers);
    j["sim_wall_us_per_step"] = m.sim_wall_us;
    return j;
}

StepTotals meanTotals(const std::vector<StepTotals>& steps)
{
    StepTotals out;
    if (steps.empty())
        return out;
    const double n = static_cast<double>(steps.size());
    out.imbalance = 0;  // summed below (the type's default is 1)
    // Rates are not averaged: tokens over time and energy over time of all the steps, so that the
    // mean tokens/s is the tokens of the steps over their time (a slow step weighs its time).
    double seconds = 0, tokens = 0, tokensPerGpu = 0, kilojoules = 0;
    for (const StepTotals& s : steps) {
        const double t = s.step_time_us * 1e-6;
        seconds += t;
        tokens += s.tokens_per_s * t;
        tokensPerGpu += s.tokens_per_s_per_gpu * t;
        kilojoules += s.power_kw * t;
        out.step_time_us += s.step_time_us / n;
        out.imbalance += s.imbalance / n;
        out.dispatch_us += s.dispatch_us / n;
        out.combine_us += s.combine_us / n;
        out.expert_compute_us += s.expert_compute_us / n;
        out.attention_us += s.attention_us / n;
        out.overhead_us += s.overhead_us / n;
        out.dp_sync_us += s.dp_sync_us / n;
        out.moe_time_us += s.moe_time_us / n;
        out.moe_time_balanced_us += s.moe_time_balanced_us / n;
        out.comm_exposed_us += s.comm_exposed_us / n;
        out.hbm_used_gb_max = std::max(out.hbm_used_gb_max, s.hbm_used_gb_max);
        out.memory_limited = out.memory_limited || s.memory_limited;
    }
    if (seconds > 0) {
        out.tokens_per_s = tokens / seconds;
        out.tokens_per_s_per_gpu = tokensPerGpu / seconds;
        out.power_kw = kilojoules / seconds;
    } else {  // steps of no time (an empty run): plain means
        for (const StepTotals& s : steps) {
            out.tokens_per_s += s.tokens_per_s / n;
            out.tokens_per_s_per_gpu += s.tokens_per_s_per_gpu / n;
            out.power_kw += s.power_kw / n;
        }
    }
    out.tokens_per_s_per_kw = out.power_kw > 0 ? out.tokens_per_s / out.power_kw : 0.0;
    out.max_concurrent_users = steps.back().max_concurrent_users;
    out.batch_per_gpu = steps.back().batch_per_gpu;
    out.straggler_gpu = steps.back().straggler_gpu;
    return out;
}

}  // namespace moex
