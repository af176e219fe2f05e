#include "metrics_csv.h"

#include <cstdio>
#include <sstream>

namespace moex::session {

namespace {

std::string num(double v)
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

}  // namespace

std::string metricsToCsv(const StepMetrics& m)
{
    std::ostringstream o;
    o << "gpu,compute_us,attention_us,dispatch_us,combine_us,idle_us,tokens,expert_pairs,hbm_used_gb,power_w,speed\n";
    for (std::size_t g = 0; g < m.gpus.size(); ++g) {
        const GpuMetrics& x = m.gpus[g];
        o << g << ',' << num(x.compute_us) << ',' << num(x.attention_us) << ',' << num(x.dispatch_us) << ','
          << num(x.combine_us) << ',' << num(x.idle_us) << ',' << x.tokens << ',' << x.expert_pairs << ','
          << num(x.hbm_used_gb) << ',' << num(x.power_w) << ',' << num(x.speed) << '\n';
    }
    const StepTotals& s = m.summary;
    o << "\nsummary,value\n";
    o << "source," << m.source << "\nstep," << m.step << "\nstep_time_us," << num(s.step_time_us) << "\ntokens_per_s,"
      << num(s.tokens_per_s) << "\ntokens_per_s_per_gpu," << num(s.tokens_per_s_per_gpu) << "\ntokens_per_s_per_kw,"
      << num(s.tokens_per_s_per_kw) << "\nimbalance," << num(s.imbalance) << "\ndispatch_us," << num(s.dispatch_us)
      << "\ncombine_us," << num(s.combine_us) << "\nexpert_compute_us," << num(s.expert_compute_us) << "\nattention_us,"
      << num(s.attention_us) << "\noverhead_us," << num(s.overhead_us) << "\ndp_sync_us," << num(s.dp_sync_us)
      << "\nmoe_time_us," << num(s.moe_time_us) << "\nmoe_time_balanced_us,"
      << num(s.moe_time_balanced_us) << "\nhbm_used_gb_max," << num(s.hbm_used_gb_max)
      << "\nmax_concurrent_users," << s.max_concurrent_users << "\nbatch_per_gpu," << s.batch_per_gpu
      << "\nmemory_limited," << (s.memory_limited ? "true" : "false") << "\npower_kw," << num(s.power_kw)
      << "\nstraggler_gpu," << s.straggler_gpu << '\n';
    return o.str();
}

}  // namespace moex::session
