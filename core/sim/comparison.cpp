#include "sim/comparison.h"
#include "common/plural.h"

#include "sim/summary_text.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace moex {

namespace {

std::string fixed(double v, int digits) { return fixedText(v, digits); }

}  // namespace

std::vector<CompareTerm> compareTerms(const Scenario& sa, const StepTotals& x, const Scenario& sb, const StepTotals& y)
{
    const double ga = std::max(1, sa.topology.numGpus());
    const double gb = std::max(1, sb.topology.numGpus());
    // MoE time over the balanced floor; 0 where the floor was not computed.
    auto cost = [](const StepTotals& t) { return t.moe_time_balanced_us > 0 ? t.moe_time_us - t.moe_time_balanced_us : 0.0; };
    auto d = [](std::int64_t v) { return static_cast<double>(v); };
    return {
        {"dispatch_us", "dispatch (all MoE layers)", x.dispatch_us, y.dispatch_us, "us", true, false},
        {"combine_us", "combine (all MoE layers)", x.combine_us, y.combine_us, "us", true, false},
        {"expert_compute_us", "expert compute (slowest GPU)", x.expert_compute_us, y.expert_compute_us, "us", true, false},
        {"attention_us", "attention + dense layers", x.attention_us, y.attention_us, "us", true, false},
        {"overhead_us", "small kernels (norms, top-k, sampling)", x.overhead_us, y.overhead_us, "us", true, false},
        {"dp_sync_us", "DP attention wait (context spread)", x.dp_sync_us, y.dp_sync_us, "us", true, false},
        {"step_time_us", "step time", x.step_time_us, y.step_time_us, "us", false, false},
        {"batch_per_gpu", "batch per GPU (memory limit)", d(x.batch_per_gpu), d(y.batch_per_gpu), "tokens", false, true},
        {"tokens_per_s_per_gpu", "tokens/s per GPU", x.tokens_per_s_per_gpu, y.tokens_per_s_per_gpu, "tok/s", false, true},
        {"tokens_per_s", "tokens/s (system)", x.tokens_per_s, y.tokens_per_s, "tok/s", false, true},
        {"power_w_per_gpu", "power per GPU (incl. switches)", x.power_kw * 1e3 / ga, y.power_kw * 1e3 / gb, "W", false, false},
        {"tokens_per_s_per_kw", "tokens/s per kW", x.tokens_per_s_per_kw, y.tokens_per_s_per_kw, "tok/s/kW", false, true},
        {"imbalance", "imbalance (max/mean load)", x.imbalance, y.imbalance, "", false, false},
        {"imbalance_cost_us", "imbalance cost (over the floor)", cost(x), cost(y), "us", false, false},
        {"hbm_used_gb_max", "HBM used per GPU", x.hbm_used_gb_max, y.hbm_used_gb_max, "GB", false, false},
        {"max_concurrent_users", "concurrent sequences (system)", d(x.max_concurrent_users), d(y.max_concurrent_users), "",
         false, true},
    };
}

std::string explainComparison(const Scenario& sa, const StepTotals& x, const Scenario& sb, const StepTotals& y,
                              const std::vector<CompareTerm>& terms)
{
    std::ostringstream o;
    const double perGpu = x.tokens_per_s_per_gpu > 0 ? y.tokens_per_s_per_gpu / x.tokens_per_s_per_gpu : 0;
    const double batchRatio = x.batch_per_gpu > 0 ? static_cast<double>(y.batch_per_gpu) / static_cast<double>(x.batch_per_gpu) : 1;
    const double stepRatio = y.step_time_us > 0 ? x.step_time_us / y.step_time_us : 0;
    o << "B delivers " << fixed(perGpu, 2) << "x the tokens/s per GPU of A = " << fixed(batchRatio, 2)
      << "x batch per GPU \xC3\x97 " << fixed(stepRatio, 2) << "x step speed.\n";
    std::vector<const CompareTerm*> parts;
    for (const auto& t : terms)
        if (t.part_of_step)
            parts.push_back(&t);
    std::sort(parts.begin(), parts.end(), [](const CompareTerm* p, const CompareTerm* q) {
        return std::abs(p->delta()) > std::abs(q->delta());
    });
    // The terms that moved (at least 0.005 ms: what shows at two decimals), largest first, at most four.
    const auto moved = std::find_if(parts.begin(), parts.end(), [](const CompareTerm* p) { return std::abs(p->delta()) < 5.0; });
    parts.erase(moved, parts.end());
    if (parts.size() > 4)
        parts.resize(4);
    if (parts.empty())
        o << "No term of the step differs by 0.01 ms or more.\n";
    else
        o << "Largest differences per step: ";
    for (std::size_t i = 0; i < parts.size(); ++i)
        o << (i ? ", " : "") << parts[i]->label << " " << (parts[i]->b >= parts[i]->a ? "+" : "")
          << fixed(parts[i]->delta() / 1000.0, 2) << " ms" << (i + 1 == parts.size() ? ".\n" : "");
    const int da = sa.topology.numDomains(), db = sb.topology.numDomains();
    if (da != db)
        o << "A spans " << countOf(da, "NVLink domain") << ", B " << db << ": all-to-all traffic between domains crosses NICs ("
          << (da > db ? "A" : "B") << "), which carry far less than NVLink.\n";
    if (x.memory_limited || y.memory_limited)
        o << "Memory limits the batch of " << (x.memory_limited ? "A" : "")
          << (x.memory_limited && y.memory_limited ? " and " : "") << (y.memory_limited ? "B" : "")
          << ": weights leave too little HBM for the KV cache of the requested batch.\n";
    if (sa.overlap == Overlap::two_batch || sb.overlap == Overlap::two_batch)
        o << "With two-batch overlap, communication hides behind compute, so the step is less than the sum of the terms.\n";
    return o.str();
}

}  // namespace moex
