#include "sim/summary_text.h"
#include "common/plural.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace moex {

std::string fixedText(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

namespace {

std::string fixed(double v, int decimals) { return fixedText(v, decimals); }

std::string ms(double us) { return fixed(us / 1000.0, 2) + " ms"; }

std::string grouped(double v)
{
    std::string s = std::to_string(static_cast<long long>(v + 0.5));
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
        s.insert(static_cast<std::size_t>(i), ",");
    return s;
}

}  // namespace

std::string summaryText(const Scenario& s, const StepTotals& t)
{
    const int layers = std::max(1, s.model.numMoeLayers());
    std::ostringstream o;
    o << "scenario         " << s.name << ": " << s.model.name << " on "
      << (s.topology.builtin.empty() ? s.topology.name : s.topology.builtin) << " (" << countOf(s.topology.numGpus(), "GPU") << ", "
      << countOf(s.topology.numDomains(), "NVLink domain") << "), " << toString(s.workload.phase) << ", "
      << s.workload.tokens_per_gpu << " tokens/GPU, placement " << s.placement.strategy << '\n';
    o << "step time        " << ms(t.step_time_us) << "  (MoE layers " << ms(t.moe_time_us) << ", overlap "
      << toString(s.overlap) << ")\n";
    o << "tokens/s         " << grouped(t.tokens_per_s) << "  (" << grouped(t.tokens_per_s_per_gpu) << " per GPU, "
      << grouped(t.tokens_per_s_per_kw) << " per kW)\n";
    o << "dispatch         " << ms(t.dispatch_us) << " per step over " << s.model.numMoeLayers() << " MoE layers ("
      << fixed(t.dispatch_us / layers, 1) << " us per layer)\n";
    o << "combine          " << ms(t.combine_us) << " (" << fixed(t.combine_us / layers, 1) << " us per layer)\n";
    if (t.comm_exposed_us > 0)
        o << "not hidden       " << ms(t.comm_exposed_us) << " of the MoE layers' time is communication no compute covers\n";
    o << "expert compute   " << ms(t.expert_compute_us) << " (slowest GPU of each layer)\n";
    o << "attention+dense  " << ms(t.attention_us) << '\n';
    o << "small kernels    " << ms(t.overhead_us) << " (norms, top-k, quantisation, sampling)\n";
    if (t.dp_sync_us > 0)
        o << "DP attn wait     " << ms(t.dp_sync_us) << " (slowest rank's context, cv "
          << fixed(s.workload.context_cv, 2) << ")\n";
    o << "imbalance        " << fixed(t.imbalance, 3) << " (max/mean GPU load, mean over layers); straggler gpu"
      << t.straggler_gpu << " (slowest in the most MoE layers)\n";
    if (t.moe_time_balanced_us > 0)
        o << "imbalance cost   " << ms(t.moe_time_us - t.moe_time_balanced_us) << " per step, "
          << fixed(t.moe_time_us > 0 ? 100.0 * (t.moe_time_us - t.moe_time_balanced_us) / t.moe_time_us : 0.0, 2)
          << "% of MoE time (" << ms(t.moe_time_balanced_us) << " with expert work spread evenly)\n";
    o << "memory           " << fixed(t.hbm_used_gb_max, 1) << " GB of " << fixed(s.topology.gpu.hbm_usable_gb, 0)
      << " GB per GPU; " << grouped(static_cast<double>(t.max_concurrent_users)) << " concurrent sequences fit at "
      << s.workload.context_tokens << " tokens";
    if (t.memory_limited && t.batch_per_gpu <= 0)
        o << "\n                 NO SEQUENCE FITS: the weights and the activation reserve leave no room for one "
             "sequence's KV cache at this context, so nothing is served (more GPUs, a shorter context or a "
             "smaller format)";
    else if (t.memory_limited)
        o << "; batch limited by memory to " << t.batch_per_gpu << " per GPU";
    else if (t.hbm_used_gb_max > s.topology.gpu.hbm_usable_gb)  // prefill: its tokens are not cut to what fits
        o << "\n                 DOES NOT FIT: a GPU needs " << fixed(t.hbm_used_gb_max, 1) << " GB of its "
          << fixed(s.topology.gpu.hbm_usable_gb, 0)
          << " GB, so this step could not run as simulated (fewer tokens per GPU, a shorter context, more GPUs or a "
             "smaller format)";
    o << '\n';
    o << "power            " << fixed(t.power_kw, 1) << " kW\n";
    return o.str();
}

}  // namespace moex
