// TraceRouting: recorded routing (a per-token trace or per-layer counts) as RoutingSample steps.
#include "workload/trace_routing.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "workload/trace_json_helpers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <unordered_map>

namespace moex {

// ---- TraceRouting --------------------------------------------------------------------------

void TraceRouting::init(const ModelSpec& model, const Workload& workload, int numGpus, int traceLayers,
                        int traceExperts, const std::string& source, bool allowLayerCycling)
{
    const auto fail = [&](const std::string& message) { throw InputError(Location{source, 0, 0}, message); };
    m_numLayers = model.numMoeLayers();
    m_numExperts = model.routed_experts;
    m_topK = model.experts_per_token;
    m_tokensPerGpu = workload.tokens_per_gpu;
    m_numGpus = numGpus;
    if (m_numLayers < 1 || m_numExperts < 1 || m_topK < 1 || m_topK > m_numExperts)
        fail("the model needs MoE layers, routed experts and 1 <= experts_per_token <= routed_experts");
    if (m_tokensPerGpu < 0 || m_tokensPerGpu > kMaxTokensPerGpu || m_numGpus < 1)
        fail("tokens_per_gpu must be in [0, " + std::to_string(kMaxTokensPerGpu) + "] and the number of GPUs positive");
    if (static_cast<double>(m_numLayers) * m_numGpus * m_numExperts > 1e9)
        fail("layers x GPUs x experts is too large");
    if (traceLayers < 1)
        fail("the trace has no layers");
    if (traceLayers != m_numLayers && !allowLayerCycling)
        fail("the trace has " + std::to_string(traceLayers) + " MoE layers but the model has " +
             std::to_string(m_numLayers) + (traceLayers < m_numLayers ? " (fewer" : " (more") +
             " in the file); set workload.routing.layer_cycling: true to map model MoE layer l to the file's layer l % " +
             std::to_string(traceLayers));
    if (traceExperts != m_numExperts)
        fail("the trace has " + std::to_string(traceExperts) + " experts but the model has " +
             std::to_string(m_numExperts) + " routed experts" +
             (traceExperts < m_numExperts ? " (give the reader the model's expert count when the trace never "
                                            "routes to the last ones)"
                                          : ""));
    m_traceLayers = traceLayers;
}

TraceRouting::TraceRouting(TokenTrace trace, const ModelSpec& model, const Workload& workload, int numGpus,
                           TraceRoutingOptions options)
    : m_mode(options.mode)
{
    init(model, workload, numGpus, trace.num_layers, trace.num_experts, trace.source, options.allow_layer_cycling);
    if (m_mode == TraceMode::aggregated) {
        initQuotas(layerCountsFromTrace(trace).counts);
        return;
    }
    if (trace.top_k != m_topK)
        throw InputError(Location{trace.source, 0, 0}, "the trace routes each token to " + std::to_string(trace.top_k) +
                                                           " experts but the model's experts_per_token is " +
                                                           std::to_string(m_topK) + " (aggregated mode accepts it)");
    // Each token's record per layer; a token missing from a layer borrows the next one present.
    const auto numTokens = trace.tokens.size();
    m_recordOf.resize(static_cast<std::size_t>(trace.num_layers));
    for (int l = 0; l < trace.num_layers; ++l) {
        auto& rec = m_recordOf[static_cast<std::size_t>(l)];
        rec.assign(numTokens, -1);
        const auto& present = trace.layer_tokens[static_cast<std::size_t>(l)];
        for (std::size_t i = 0; i < present.size(); ++i)
            rec[static_cast<std::size_t>(present[i])] = static_cast<std::int32_t>(i);
        std::int32_t nextPresent = 0;  // the first record wraps around to the end
        for (std::size_t t = numTokens; t-- > 0;) {
            if (rec[t] >= 0)
                nextPresent = rec[t];
            else
                rec[t] = nextPresent;
        }
    }
    m_trace = std::move(trace);
}

TraceRouting::TraceRouting(const LayerCounts& counts, const ModelSpec& model, const Workload& workload, int numGpus,
                           bool allowLayerCycling)
    : m_mode(TraceMode::aggregated)
{
    init(model, workload, numGpus, counts.numLayers(), counts.num_experts, counts.source, allowLayerCycling);
    initQuotas(counts.counts);
}

void TraceRouting::initQuotas(const std::vector<std::vector<double>>& totals)
{
    // Each source routes N = tokens * top_k pairs; expert x gets N * share, but at most `tokens`
    // (one pair per token): the excess is spread over the others in proportion (water-filling).
    const auto ne = static_cast<std::size_t>(m_numExperts);
    const double pairs = static_cast<double>(m_tokensPerGpu) * m_topK;
    const double cap = m_tokensPerGpu;
    m_quota.assign(totals.size(), std::vector<double>(ne, 0.0));
    for (std::size_t l = 0; l < totals.size(); ++l) {
        std::vector<double>& q = m_quota[l];
        std::vector<char> fixed(ne, 0);
        for (std::size_t x = 0; x < ne; ++x)
            q[x] = x < totals[l].size() ? totals[l][x] : 0.0;
        for (;;) {
            double free = 0.0;
            double fixedPairs = 0.0;
            std::size_t freeCount = 0;
            for (std::size_t x = 0; x < ne; ++x) {
                if (fixed[x]) {
                    fixedPairs += cap;
                } else {
                    free += q[x];
                    ++freeCount;
                }
            }
            const double scale = free > 0.0 ? (pairs - fixedPairs) / free : 0.0;
            bool capped = false;
            for (std::size_t x = 0; x < ne; ++x) {
                if (fixed[x])
                    continue;
                q[x] = free > 0.0 ? q[x] * scale : (pairs - fixedPairs) / static_cast<double>(freeCount);
                if (q[x] > cap) {
                    q[x] = cap;
                    fixed[x] = 1;
                    capped = true;
                }
            }
            if (!capped)
                break;
        }
    }
    m_carry.assign(static_cast<std::size_t>(m_numLayers), std::vector<double>(ne, 0.0));
    m_frac.assign(ne, 0.0);
    m_order.assign(ne, 0);
}

void TraceRouting::reset()
{
    m_step = 0;
    for (auto& c : m_carry)
        std::fill(c.begin(), c.end(), 0.0);
}

void TraceRouting::next(RoutingSample& out)
{
    if (!out.hasShape(m_numLayers, m_numGpus, m_numExperts))
        out.resize(m_numLayers, m_numGpus, m_numExperts, m_tokensPerGpu, m_topK);
    out.tokens_per_gpu = m_tokensPerGpu;
    out.top_k = m_topK;
    if (m_mode == TraceMode::replay)
        nextReplay(out);
    else
        nextAggregated(out);
    ++m_step;
}

void TraceRouting::nextReplay(RoutingSample& out)
{
    // Step i takes the next tokens_per_gpu * numGpus tokens (wrapping), slot j to source j % G. The
    // same tokens at every layer, so a token stays on its source GPU through the model.
    const auto numTokens = static_cast<std::int64_t>(m_trace.tokens.size());
    const std::int64_t slots = static_cast<std::int64_t>(m_tokensPerGpu) * m_numGpus;
    const std::int64_t start = (m_step % numTokens) * (slots % numTokens) % numTokens;
    const auto k = static_cast<std::size_t>(m_topK);
    for (int l = 0; l < m_numLayers; ++l) {
        const auto tl = static_cast<std::size_t>(traceLayerOf(l));
        const std::int32_t* rec = m_recordOf[tl].data();
        const std::int32_t* experts = m_trace.layer_experts[tl].data();
        const std::span<RoutingSample::Count> counts = out.layer(l);
        std::fill(counts.begin(), counts.end(), 0);
        std::int64_t t = start;
        int src = 0;
        for (std::int64_t j = 0; j < slots; ++j) {
            const std::int32_t* e = experts + static_cast<std::size_t>(rec[t]) * k;
            RoutingSample::Count* row = counts.data() + static_cast<std::size_t>(src) * static_cast<std::size_t>(m_numExperts);
            for (std::size_t i = 0; i < k; ++i)
                ++row[e[i]];
            if (++t == numTokens)
                t = 0;
            if (++src == m_numGpus)
                src = 0;
        }
    }
}

void TraceRouting::nextAggregated(RoutingSample& out)
{
    // Each row gets its quota rounded to integers that sum to tokens * top_k exactly; what rounding
    // took or gave is carried to the next row (and step), so the sum over sources stays within a
    // pair of quota x sources for every expert (error diffusion).
    const int pairs = m_tokensPerGpu * m_topK;
    const int cap = m_tokensPerGpu;
    const auto ne = static_cast<std::size_t>(m_numExperts);
    for (int l = 0; l < m_numLayers; ++l) {
        const std::vector<double>& quota = m_quota[static_cast<std::size_t>(traceLayerOf(l))];
        std::vector<double>& carry = m_carry[static_cast<std::size_t>(l)];
        for (int s = 0; s < m_numGpus; ++s) {
            RoutingSample::Count* row = out.row(l, s).data();
            int sum = 0;
            for (std::size_t x = 0; x < ne; ++x) {
                const double want = quota[x] + carry[x];
                row[x] = static_cast<RoutingSample::Count>(std::clamp(std::floor(want), 0.0, static_cast<double>(cap)));
                m_frac[x] = want - row[x];
                sum += row[x];
            }
            // Hand out (or take back) the difference by largest (smallest) remainder; repeat passes
            // only when an expert's cap or zero blocks one.
            while (sum != pairs) {
                const bool give = sum < pairs;
                std::size_t n = 0;
                for (std::size_t x = 0; x < ne; ++x)
                    if (give ? row[x] < cap : row[x] > 0)
                        m_order[n++] = static_cast<std::int32_t>(x);
                const std::size_t need = std::min<std::size_t>(n, static_cast<std::size_t>(std::abs(pairs - sum)));
                if (need == 0)
                    break;  // cannot happen: pairs <= experts x cap
                const auto byFrac = [&](std::int32_t a, std::int32_t b) {
                    const double fa = m_frac[static_cast<std::size_t>(a)];
                    const double fb = m_frac[static_cast<std::size_t>(b)];
                    return give ? (fa > fb || (fa == fb && a < b)) : (fa < fb || (fa == fb && a < b));
                };
                std::nth_element(m_order.begin(), m_order.begin() + static_cast<std::ptrdiff_t>(need - 1),
                                 m_order.begin() + static_cast<std::ptrdiff_t>(n), byFrac);
                for (std::size_t i = 0; i < need; ++i) {
                    const auto x = static_cast<std::size_t>(m_order[i]);
                    row[x] += give ? 1 : -1;
                    m_frac[x] += give ? -1.0 : 1.0;
                    sum += give ? 1 : -1;
                }
            }
            for (std::size_t x = 0; x < ne; ++x)
                carry[x] = m_frac[x];
        }
    }
}

}  // namespace moex
