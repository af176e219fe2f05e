// Simulator::step: one step of every MoE layer plus the layers around them (DESIGN.md 5.4-5.8).
#include "sim/simulator.h"

#include "sim/route_kernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace moex {

namespace {

void resizeMetrics(StepMetrics& out, int G, int E, int layers, std::size_t links)
{
    out.num_gpus = G;
    out.gpus.resize(static_cast<std::size_t>(G));
    std::fill(out.gpus.begin(), out.gpus.end(), GpuMetrics{});
    out.traffic.resize(static_cast<std::size_t>(G) * static_cast<std::size_t>(G));
    std::fill(out.traffic.begin(), out.traffic.end(), 0.0);
    out.layers.resize(static_cast<std::size_t>(layers));
    for (auto& l : out.layers) {  // every element is written by the layer loop
        l.expert_load.resize(static_cast<std::size_t>(E));
        l.gpu_load.resize(static_cast<std::size_t>(G));
    }
    out.links.reserve(links);
    out.links.clear();
    out.summary = StepTotals{};
}

// Rounds `n` non-negative fractional counts to integers whose sum is the rounded total (largest
// remainder): replica shares make per-GPU pair counts fractional, and a memory-limited batch
// scales every expert's count; rounding each on its own would break the invariant that a layer's
// loads sum to its token-expert pairs.
// The `missing` units go to the largest remainders, the lower index first among equal ones.
// Positive doubles order as their bit patterns do, so the remainders are selected as integers:
// the `missing`-th largest is the threshold; every remainder above it gets a unit, then those equal
// to it in index order. `scratch` holds each index's remainder bits, then the selection.
template <typename In>
void roundPreservingSum(const In* in, std::int64_t* out, std::size_t n, std::vector<std::uint64_t>& scratch)
{
    double total = 0;
    std::int64_t floored = 0;
    for (std::size_t i = 0; i < n; ++i) {  // counts are >= 0: truncation is the floor
        total += static_cast<double>(in[i]);
        out[i] = static_cast<std::int64_t>(static_cast<double>(in[i]));
        floored += out[i];
    }
    const std::int64_t missing = std::min<std::int64_t>(std::llround(total) - floored, static_cast<std::int64_t>(n));
    if (missing <= 0)
        return;
    // Only the positive remainders compete: they sum to about `missing` and each is below 1, so
    // there are at least `missing` of them.
    scratch.resize(2 * n);  // no allocation after the first layer: capacity is kept
    std::uint64_t* bits = scratch.data();
    std::uint64_t* select = bits + n;
    std::size_t positive = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double frac = static_cast<double>(in[i]) - static_cast<double>(out[i]);
        bits[i] = 0;
        if (frac > 0) {
            std::memcpy(&bits[i], &frac, sizeof frac);
            select[positive++] = bits[i];
        }
    }
    if (positive == 0)
        return;
    const auto take = static_cast<std::size_t>(std::min(missing, static_cast<std::int64_t>(positive)));
    std::nth_element(select, select + (take - 1), select + positive, std::greater<>());
    const std::uint64_t threshold = select[take - 1];
    std::size_t left = take;
    for (std::size_t i = 0; i < n; ++i) {  // branch-free: about half the remainders are above
        const bool above = bits[i] > threshold;
        out[i] += above;
        left -= above;
    }
    for (std::size_t i = 0; i < n && left > 0; ++i)
        if (bits[i] == threshold) {
            ++out[i];
            --left;
        }
}

}  // namespace

void Simulator::step(const RoutingSample& r, StepMetrics& out)
{
    const auto t0 = std::chrono::steady_clock::now();
    const int G = m_fabric.numGpus();
    const int E = m_scenario.model.routed_experts;
    const int L = m_scenario.model.numMoeLayers();
    if (r.num_gpus != G || r.num_experts != E || r.numLayers() != L)
        throw std::invalid_argument("routing sample shape (" + std::to_string(r.numLayers()) + " layers, "
                                    + std::to_string(r.num_gpus) + " GPUs, " + std::to_string(r.num_experts)
                                    + " experts) does not match the scenario");
    resizeMetrics(out, G, E, L, m_scenario.topology.links().size());
    out.source = "sim";
    beginStep(out);

    // What every layer of the step shares: the batch, the mixers' times, the small kernels
    // (norms, top-k, quantisation, sampling) and the data-parallel attention wait (full-attention
    // layers wait for the rank whose batch holds the most context: docs/MODEL.md section 9), the
    // shared experts and router. At full speed.
    const Workload& w = m_scenario.workload;
    StepInputs in;
    in.tokens = m_memory.tokens;
    in.tbo = m_scenario.overlap == Overlap::two_batch;
    in.mixers = m_compute.mixerTimes(in.tokens, w.context_tokens, w.phase);
    in.ov = overheads(in.tokens);
    in.ov_half = overheads(in.tokens / 2.0);
    in.sync_share = dpSyncShare(in.tokens);
    in.sync_share_half = dpSyncShare(in.tokens / 2.0);
    in.shared_us = m_compute.sharedAndRouterUs(in.tokens);
    in.shared_half_us = in.tbo ? m_compute.sharedAndRouterUs(in.tokens / 2.0) : 0.0;

    StepSums sums;
    for (int l = 0; l < L; ++l)
        stepLayer(r, l, in, out, sums);
    addTraffic(out);
    finishStep(in, sums, out);
    out.sim_wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// 5.7 Memory (memoryBudget): the KV cache left after weights bounds the decode batch. Each GPU's
// HBM use, speed and tokens; the step's per-GPU accumulators zeroed.
void Simulator::beginStep(StepMetrics& out)
{
    const MemoryBudget& mb = m_memory;
    const double reserve = m_cal.activation_reserve_gb * 1e9;
    const double sequences = m_scenario.workload.phase == Phase::decode ? mb.tokens : 1.0;
    for (std::size_t g = 0; g < out.gpus.size(); ++g) {
        GpuMetrics& gm = out.gpus[g];
        gm.hbm_used_gb = (m_weightsPerGpu[g] + reserve + sequences * mb.kv_per_sequence) / 1e9;
        gm.speed = m_speed[g];
        gm.tokens = static_cast<std::int64_t>(mb.tokens);
    }
    std::fill(m_gpuBusy.begin(), m_gpuBusy.end(), 0.0);
    std::fill(m_stepPortBytes.begin(), m_stepPortBytes.end(), 0.0);
    std::fill(m_stragglerCount.begin(), m_stragglerCount.end(), 0);
    std::fill(m_sentSum.begin(), m_sentSum.end(), 0.0f);
}

// One MoE layer: routing, exchange, expert compute, the layer's time (5.4-5.6); its metrics into
// `out`, its share of the step into `sums`.
void Simulator::stepLayer(const RoutingSample& r, int l, const StepInputs& in, StepMetrics& out, StepSums& sums)
{
    const int G = m_fabric.numGpus();
    const double minSpeed = m_minSpeed;
    const OverheadTimes& ov = in.ov;
    const OverheadTimes& ovHalf = in.ov_half;
    const bool tbo = in.tbo;
    routeLayer(r, l, in.tokens);
    LayerComm comm = communicate(in.tokens, true);
    LayerMetrics& lm = out.layers[static_cast<std::size_t>(l)];
    lm.decoder_layer = m_scenario.model.moe_layers[static_cast<std::size_t>(l)];
    // 5.6 Attention per layer (data-parallel attention: every GPU runs its own tokens); layers
    // are synchronous, so the slowest GPU's attention sets the pace.
    const MixerKind mixer = m_moeMixer[static_cast<std::size_t>(l)];
    const double attnLayer = in.mixers.of(mixer);
    const double attnLayerHalf = in.mixers.halfOf(mixer);
    const bool fullAttention = mixer == MixerKind::attention;
    const double syncLayer = fullAttention ? in.sync_share * attnLayer : 0.0;
    const double syncLayerHalf = fullAttention ? in.sync_share_half * attnLayerHalf : 0.0;
    sums.moe_attention += attnLayer;

    // 5.4 Expert compute per GPU.
    const LayerCompute c = computeLayer(l, tbo, in.shared_us, in.shared_half_us);
    ++m_stragglerCount[static_cast<std::size_t>(c.slowest_gpu)];
    recordLoads(r, in.tokens, lm, out);
    if (m_compute.cpu())
        comm = hostExchange(in.tokens);

    // 5.5 Layer time: synchronous layers, the slowest GPU sets the pace; two-batch overlap
    // hides one micro-batch's communication behind the other's compute, stage by stage. The
    // small kernels before the dispatch and the norms sit on the compute stream with the
    // attention: under two-batch overlap in its stage, otherwise the routing kernels in the
    // MoE layer and the norms beside the attention.
    const double attentionHalf = (attnLayerHalf + syncLayerHalf + ovHalf.per_layer + ovHalf.per_moe_layer) / minSpeed
                                 / overlapComputeShare();
    const LayerTimes t = layerTimes(c, comm, tbo, attentionHalf, ov.per_moe_layer / minSpeed);
    // What the exchange costs the layer: its time less the layer without one (no dispatch or
    // combine; under TBO the two micro-batches' compute also at the full SM share, which the
    // overlapped communication kernels take part of).
    const double alone = tbo ? twoBatchLayerUs(attentionHalf * overlapComputeShare(), c.slowest_half, 0.0, 0.0, overlapHidden())
                             : c.slowest + ov.per_moe_layer / minSpeed;
    sums.comm_exposed += std::max(0.0, t.time - alone);
    if (tbo) {
        sums.overhead_us += 2.0 * (ovHalf.per_layer + ovHalf.per_moe_layer);
        sums.sync_us += 2.0 * syncLayerHalf;
    } else {
        sums.overhead_us += ov.per_layer + ov.per_moe_layer;
        sums.sync_us += syncLayer;
    }
    const double besideLayer = tbo ? 0.0 : (attnLayer + syncLayer + ov.per_layer) / minSpeed;
    lm.time_us = t.time;
    lm.dispatch_us = comm.dispatch.time_us;
    lm.combine_us = comm.combine.time_us;
    lm.compute_us = c.slowest;
    lm.slowest_gpu = c.slowest_gpu;
    lm.imbalance = c.load_sum > 0 ? c.load_max / (c.load_sum / G) : 1.0;
    sums.imbalance += lm.imbalance;
    sums.moe_time += t.time + besideLayer;
    sums.balanced_time += t.balanced + besideLayer;
    StepTotals& sum = out.summary;
    sum.dispatch_us += comm.dispatch.time_us;
    sum.combine_us += comm.combine.time_us;
    sum.expert_compute_us += c.slowest;

    // Per GPU, what it runs: under two-batch overlap the two micro-batches' attention and expert
    // passes (each reads its weights again, and the floors count twice), at the full SM share (what
    // the communication kernels take of it is in comm_exposed_us); idle is then what it waits.
    const double attnOwn = tbo ? 2.0 * (attnLayerHalf + ovHalf.per_layer + ovHalf.per_moe_layer)
                               : attnLayer + ov.per_layer + ov.per_moe_layer;
    for (std::size_t g = 0; g < static_cast<std::size_t>(G); ++g) {
        GpuMetrics& gm = out.gpus[g];
        const double attn = attnOwn * m_invSpeed[g];
        const double compute = tbo ? 2.0 * m_gpuComputeHalf[g] : m_gpuCompute[g];
        gm.compute_us += compute;
        gm.attention_us += attn;
        gm.dispatch_us += m_gpuDispatch[g];
        gm.combine_us += m_gpuCombine[g];
        const double own = m_gpuDispatch[g] + m_gpuCombine[g];
        m_gpuBusy[g] += tbo ? std::max(own, compute + attn) : own + compute + attn;
    }
}

// 5.6 Around the MoE layers: attention + FFN of the dense layers, and the LM head; every layer's
// norms, the step's final norm and sampling; the full-attention layers' wait. At full speed; the
// slowest GPU sets the step, each GPU is busy for its own speed's share. Then the step's totals,
// power and links.
void Simulator::finishStep(const StepInputs& in, const StepSums& sums, StepMetrics& out)
{
    const int G = m_fabric.numGpus();
    const int L = m_scenario.model.numMoeLayers();
    const double minSpeed = m_minSpeed;
    const double tokens = in.tokens;
    double aroundFullSpeedUs = m_aroundDense * m_compute.denseFfnUs(tokens) + m_compute.headUs(tokens);
    for (int k = 0; k < kMixerKinds; ++k)
        aroundFullSpeedUs += m_aroundMixers[k] * in.mixers.full[k];
    int aroundLayers = 0;
    for (const int n : m_aroundMixers)
        aroundLayers += n;
    const double aroundOverhead = aroundLayers * in.ov.per_layer + in.ov.per_step;
    const double aroundSync =
        m_aroundMixers[static_cast<int>(MixerKind::attention)] * in.sync_share * in.mixers.of(MixerKind::attention);
    const double overheadUs = sums.overhead_us + aroundOverhead;
    const double syncUs = sums.sync_us + aroundSync;
    aroundFullSpeedUs += aroundOverhead;
    const double stepUs = sums.moe_time + (aroundFullSpeedUs + aroundSync) / minSpeed;
    StepTotals& sum = out.summary;
    sum.moe_time_us = sums.moe_time;
    sum.moe_time_balanced_us = sums.balanced_time;
    sum.comm_exposed_us = sums.comm_exposed;
    sum.attention_us = (sums.moe_attention + aroundFullSpeedUs - aroundOverhead) / minSpeed;
    sum.overhead_us = overheadUs / minSpeed;
    sum.dp_sync_us = syncUs / minSpeed;
    sum.step_time_us = stepUs;
    sum.imbalance = L > 0 ? sums.imbalance / L : 1.0;
    sum.batch_per_gpu = static_cast<std::int64_t>(tokens);
    sum.memory_limited = m_memory.limited;
    sum.max_concurrent_users = m_memory.users_per_gpu * G;
    const double stepTokens = tokens * G;
    sum.tokens_per_s = stepUs > 0 ? stepTokens / (stepUs * 1e-6) : 0.0;
    sum.tokens_per_s_per_gpu = G > 0 ? sum.tokens_per_s / G : 0.0;
    addPowerAndLinks(out, aroundFullSpeedUs);
}

Simulator::LayerCompute Simulator::computeLayer(int layer, bool halves, double sharedLayer, double sharedLayerHalf)
{
    // Each slot by roofline with tile quantisation, plus shared experts and router for the GPU's
    // own tokens and the activation over its pairs, divided by the GPU's speed.
    const int G = m_fabric.numGpus();
    const LayerPlan& plan = m_plans[static_cast<std::size_t>(layer)];
    LayerCompute c;
    m_compute.expertSlotsUs(m_slotTokens.data(), plan.slot_expert.size(), m_slotUs.data(), halves ? m_slotUsHalf.data() : nullptr);
    for (int g = 0; g < G; ++g) {
        double full = 0, half = 0, pairs = 0;
        const int first = plan.gpu_slot_begin[static_cast<std::size_t>(g)], end = plan.gpu_slot_begin[static_cast<std::size_t>(g) + 1];
        for (int s = first; s < end; ++s) {
            pairs += m_slotTokens[static_cast<std::size_t>(s)];
            full += m_slotUs[static_cast<std::size_t>(s)];
            half += m_slotUsHalf[static_cast<std::size_t>(s)];  // stays 0 without halves
        }
        if (m_compute.cpu()) {
            // A CPU rank's workers take its slots in turn (slot j to worker j mod w), as the
            // engine does: the busiest worker sets the rank's expert time.
            const int workers = m_compute.cpuWorkers(end - first);
            full = 0;
            for (int k = 0; k < workers; ++k) {
                double sumK = 0;
                for (int s = first + k; s < end; s += workers)
                    sumK += m_slotUs[static_cast<std::size_t>(s)];
                full = std::max(full, sumK);
            }
            half = 0.5 * full;
        }
        const double inv = m_invSpeed[static_cast<std::size_t>(g)];
        // The activation between the GEMMs runs over the GPU's own pairs (0 on CPU ranks).
        full += sharedLayer + m_compute.activationUs(pairs);
        half += halves ? sharedLayerHalf + m_compute.activationUs(0.5 * pairs) : 0.0;
        c.work += full;  // at speed 1
        c.work_half += half;
        full *= inv;
        half *= inv;
        m_gpuCompute[static_cast<std::size_t>(g)] = full;
        m_gpuComputeHalf[static_cast<std::size_t>(g)] = half;
        m_gpuPairs[static_cast<std::size_t>(g)] = pairs;
        c.load_sum += pairs;
        c.load_max = std::max(c.load_max, pairs);
        if (full > c.slowest) {
            c.slowest = full;
            c.slowest_gpu = g;
        }
        c.slowest_half = std::max(c.slowest_half, half);
    }
    if (m_compute.cpu() && m_compute.cpuShare() > 1) {
        // More CPU ranks than cores: the ranks' threads share the cores, and a rank that is done
        // leaves its core to the others, so the layer's experts end when the busiest rank's own
        // work is done or when the cores have done everyone's, whichever is later.
        double allRanks = 0, most = 0;
        for (int g = 0; g < G; ++g) {
            allRanks += m_gpuCompute[static_cast<std::size_t>(g)];
            most = std::max(most, m_gpuCompute[static_cast<std::size_t>(g)]);
        }
        const double end = std::max(most, allRanks / std::max(1, m_compute.cpuCores()));
        for (int g = 0; g < G; ++g) {
            double& t = m_gpuCompute[static_cast<std::size_t>(g)];
            t = std::min(end, t * m_compute.cpuShare());
            m_gpuComputeHalf[static_cast<std::size_t>(g)] = 0.5 * t;
        }
        c.slowest = end;
        c.slowest_half = 0.5 * end;
    }
    return c;
}

Simulator::LayerTimes Simulator::layerTimes(const LayerCompute& c, const LayerComm& comm, bool tbo, double attentionHalfUs,
                                            double routingUs) const
{
    // The balanced floor: every GPU finishes the layer's expert work together.
    if (tbo) {
        const double share = overlapComputeShare();
        const double hidden = overlapHidden();
        const PhaseResult& d = comm.dispatch;
        const PhaseResult& m = comm.combine;
        return {twoBatchLayerUs(attentionHalfUs, c.slowest_half / share, d.half_time_us, m.half_time_us, hidden),
                twoBatchLayerUs(attentionHalfUs, c.work_half / m_speedSum / share, d.half_time_us, m.half_time_us, hidden)};
    }
    return {comm.dispatch.time_us + c.slowest + comm.combine.time_us + routingUs,
            comm.dispatch.time_us + c.work / m_speedSum + comm.combine.time_us + routingUs};
}

void Simulator::recordLoads(const RoutingSample& r, double tokens, LayerMetrics& lm, StepMetrics& out)
{
    const int G = m_fabric.numGpus();
    const int E = m_scenario.model.routed_experts;
    roundPreservingSum(m_gpuPairs.data(), lm.gpu_load.data(), m_gpuPairs.size(), m_roundScratch);
    for (int g = 0; g < G; ++g)
        out.gpus[static_cast<std::size_t>(g)].expert_pairs += lm.gpu_load[static_cast<std::size_t>(g)];
    if (tokens == r.tokens_per_gpu) {
        std::copy(m_expertTotals.begin(), m_expertTotals.end(), lm.expert_load.begin());
    } else {
        const double scale = r.tokens_per_gpu > 0 ? tokens / r.tokens_per_gpu : 0.0;
        for (int e = 0; e < E; ++e)
            m_expertScaled[static_cast<std::size_t>(e)] = m_expertTotals[static_cast<std::size_t>(e)] * scale;
        roundPreservingSum(m_expertScaled.data(), lm.expert_load.data(), m_expertScaled.size(), m_roundScratch);
    }
}

void Simulator::addTraffic(StepMetrics& out) const
{
    // GPU x GPU traffic over the step: dispatch src -> dst, combine dst -> src.
    const int G = m_fabric.numGpus();
    const double bd = dispatchBytesPerToken(), bc = combineBytesPerToken();
    for (int s = 0; s < G; ++s)
        for (int d = 0; d < G; ++d) {
            const double t = m_sentSum[detail::notSentIndex(s, d, G)];
            out.traffic[static_cast<std::size_t>(s) * G + d] += t * bd;
            out.traffic[static_cast<std::size_t>(d) * G + s] += t * bc;
        }
}

void Simulator::addPowerAndLinks(StepMetrics& out, double aroundFullSpeedUs)
{
    // 5.8 Power: idle + (TDP - idle) x utilisation per GPU, plus switches and NICs.
    StepTotals& sum = out.summary;
    const GpuSpec& gpu = m_scenario.topology.gpu;
    const double stepUs = sum.step_time_us;
    double powerW = m_scenario.topology.switch_power_w;
    for (std::size_t g = 0; g < out.gpus.size(); ++g) {
        GpuMetrics& gm = out.gpus[g];
        gm.attention_us += aroundFullSpeedUs / gm.speed;
        const double busy = m_gpuBusy[g] + aroundFullSpeedUs / gm.speed;
        gm.idle_us = std::max(0.0, stepUs - busy);
        const double util = stepUs > 0 ? std::min(1.0, (gm.compute_us + gm.attention_us + m_cal.power_comm_weight * (gm.dispatch_us + gm.combine_us)) / stepUs) : 0.0;
        gm.power_w = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * util;
        powerW += gm.power_w;
        sum.hbm_used_gb_max = std::max(sum.hbm_used_gb_max, gm.hbm_used_gb);
    }
    sum.power_kw = powerW / 1e3;
    sum.tokens_per_s_per_kw = powerW > 0 ? sum.tokens_per_s / (powerW / 1e3) : 0.0;
    sum.straggler_gpu = static_cast<int>(std::max_element(m_stragglerCount.begin(), m_stragglerCount.end()) - m_stragglerCount.begin());

    // Per-link view: a port's bytes spread over its links by capacity; utilisation relative to
    // the step's communication time.
    const double commUs = sum.dispatch_us + sum.combine_us;
    const auto& ports = m_fabric.ports();
    for (std::size_t p = 0; p < ports.size(); ++p) {
        if (m_stepPortBytes[p] <= 0)
            continue;
        for (std::size_t k = 0; k < ports[p].links.size(); ++k) {
            const TopoLink& link = m_scenario.topology.links()[static_cast<std::size_t>(ports[p].links[k])];
            const double bytes = m_stepPortBytes[p] * ports[p].link_fraction[k];
            const double util = commUs > 0 ? bytes / (link.capacity_gbs * 1e3 * commUs) : 0.0;
            out.links.push_back({static_cast<int>(link.from.index()), static_cast<int>(link.to.index()), bytes,
                                 link.capacity_gbs, std::min(1.0, util)});
        }
    }
}

Simulator::LayerComm Simulator::hostExchange(double tokensPerGpu)
{
    // The CPU engine's threads transport (engine/ep_engine.h): dispatch runs the router, lists every
    // token-expert pair by destination and pulls the rows sent to the rank (local ones too) into its
    // slots' blocks, one copy each; combine reads the results where the experts' ranks left them and
    // sums them per token (one pass over the rows). Bytes at the calibrated copy rate, one barrier each.
    const int G = m_fabric.numGpus();
    const double row = static_cast<double>(m_scenario.model.hidden_size) * sizeof(float);
    const double pairsOut = tokensPerGpu * m_scenario.model.experts_per_token;
    double dispatchMax = 0, combineMax = 0;
    for (int g = 0; g < G; ++g) {
        const double inv = m_invSpeed[static_cast<std::size_t>(g)];
        const double d = (m_compute.cpuRouterUs(tokensPerGpu) + m_compute.cpuCopyUs(m_gpuPairs[static_cast<std::size_t>(g)] * row)) * inv;
        const double c = m_compute.cpuCopyUs(pairsOut * row) * inv;
        m_gpuDispatch[static_cast<std::size_t>(g)] = d;
        m_gpuCombine[static_cast<std::size_t>(g)] = c;
        dispatchMax = std::max(dispatchMax, d);
        combineMax = std::max(combineMax, c);
    }
    const double sync = m_compute.cpuSyncUs();
    LayerComm out;
    out.dispatch = {dispatchMax + sync, 0.5 * dispatchMax + sync};
    out.combine = {combineMax + sync, 0.5 * combineMax + sync};
    return out;
}

}  // namespace moex
