#include "run_summary.h"

#include "metrics/metrics_json.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace moex::session {

namespace {

std::string fmt(const char* f, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string ms(double us) { return fmt("%.2f ms", us / 1000.0); }

std::string grouped(double v)
{
    std::string s = std::to_string(static_cast<long long>(v + 0.5));
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
        s.insert(static_cast<std::size_t>(i), ",");
    return s;
}

}  // namespace

RunSummary summarize(const Scenario& s, const Placement& p, int steps)
{
    RunSummary r;
    r.scenario = s;
    const Calibration cal = resolveCalibration(s);
    r.calibration = cal.name;
    auto routing = makeRoutingSource(s);
    Simulator sim(s, p, cal);
    RoutingSample sample;
    std::vector<StepTotals> totals;
    for (int i = 0; i < steps; ++i) {
        routing->next(sample);
        sim.step(sample, r.last);
        r.last.step = i;
        totals.push_back(r.last.summary);
    }
    r.steps = steps;
    r.mean = meanTotals(totals);
    return r;
}

std::string headlessSummary(const RunSummary& r)
{
    const Scenario& s = r.scenario;
    const StepTotals& t = r.mean;
    const double layers = std::max(1, s.model.numMoeLayers());
    std::ostringstream o;
    o << "scenario         " << s.name << ": " << s.model.name << " on "
      << (s.topology.builtin.empty() ? s.topology.name : s.topology.builtin) << " (" << s.topology.numGpus() << " GPUs, "
      << s.topology.numDomains() << " NVLink domain(s)), " << toString(s.workload.phase) << ", "
      << s.workload.tokens_per_gpu << " tokens/GPU, placement " << s.placement.strategy << '\n';
    o << "step time        " << ms(t.step_time_us) << "  (MoE layers " << ms(t.moe_time_us) << ", overlap "
      << toString(s.overlap) << ")\n";
    o << "tokens/s         " << grouped(t.tokens_per_s) << "  (" << grouped(t.tokens_per_s_per_gpu) << " per GPU, "
      << grouped(t.tokens_per_s_per_kw) << " per kW)\n";
    o << "dispatch         " << ms(t.dispatch_us) << " (" << fmt("%.1f", t.dispatch_us / layers) << " us per MoE layer)\n";
    o << "combine          " << ms(t.combine_us) << " (" << fmt("%.1f", t.combine_us / layers) << " us per MoE layer)\n";
    o << "expert compute   " << ms(t.expert_compute_us) << " (slowest GPU of each layer)\n";
    o << "attention+dense  " << ms(t.attention_us) << '\n';
    o << "imbalance        " << fmt("%.3f", t.imbalance) << " (max/mean GPU load, mean over layers)\n";
    if (t.moe_time_balanced_us > 0)
        o << "imbalance cost   " << ms(t.moe_time_us - t.moe_time_balanced_us) << " per step, "
          << fmt("%.2f", t.moe_time_us > 0 ? 100.0 * (t.moe_time_us - t.moe_time_balanced_us) / t.moe_time_us : 0.0)
          << "% of MoE time (" << ms(t.moe_time_balanced_us) << " with expert work spread evenly)\n";
    o << "straggler        gpu" << t.straggler_gpu << " (slowest GPU most often)\n";
    o << "memory           " << fmt("%.1f", t.hbm_used_gb_max) << " GB of " << fmt("%.0f", s.topology.gpu.hbm_usable_gb)
      << " GB per GPU; " << grouped(static_cast<double>(t.max_concurrent_users)) << " concurrent sequences fit at "
      << s.workload.context_tokens << " tokens";
    if (t.memory_limited)
        o << "; batch limited by memory to " << t.batch_per_gpu << " per GPU";
    o << '\n';
    o << "power            " << fmt("%.1f", t.power_kw) << " kW\n";
    o << "(mean of " << r.steps << " simulated steps, calibration " << r.calibration << ")\n";
    return o.str();
}

}  // namespace moex::session
