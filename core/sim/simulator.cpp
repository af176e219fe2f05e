#include "sim/simulator.h"

#include "sim/route_kernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace moex {

namespace {

// Bytes on the wire per element of a dispatched activation, block scales included:
// fp8 with one scale byte per 32 elements (MXFP8 / DeepEP's per-128 fp32 scales cost the same),
// nvfp4 with one fp8 scale per 16. Matches TensorRT-LLM's 14,336 / 7,392 / 4,032 bytes per
// 7168-wide token.
double wireBytesPerElement(DType t)
{
    switch (t) {
    case DType::fp8: return 1.0 + 1.0 / 32.0;
    case DType::nvfp4: return 0.5 + 1.0 / 16.0;
    case DType::mxfp4: return 0.5 + 1.0 / 32.0;
    case DType::fp32: return 4.0;
    default: return 2.0;
    }
}

}  // namespace

double expectedMaxOfNormals(int n)
{
    if (n <= 1)
        return 0.0;
    // E[max] = integral of x n phi(x) Phi(x)^(n-1): Simpson's rule on [-8, 8 + log n] (the
    // density of the maximum is negligible outside it for n up to a million).
    const double lo = -8.0, hi = 8.0 + std::log(static_cast<double>(n));
    const int steps = 4000;
    const double h = (hi - lo) / steps;
    const double invSqrt2Pi = 0.3989422804014327;
    double sum = 0;
    for (int i = 0; i <= steps; ++i) {
        const double x = lo + i * h;
        const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
        const double f = x * n * invSqrt2Pi * std::exp(-0.5 * x * x) * std::pow(cdf, n - 1);
        sum += f * (i == 0 || i == steps ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0));
    }
    return sum * h / 3.0;
}

Simulator::Simulator(const Scenario& scenario, const Placement& placement, const Calibration& calibration)
    : m_scenario(scenario),
      m_placement(placement),
      m_cal(calibration),
      m_fabric(scenario.topology),
      m_compute(scenario.model, scenario.topology.gpu, calibration, scenario.precision.weights, DType::bf16,
                scenario.topology.numGpus())
{
    m_mode = scenario.workload.phase == Phase::decode ? KernelMode::low_latency : KernelMode::high_throughput;
    for (std::size_t p = 0; p < m_fabric.ports().size(); ++p) {
        const Port& port = m_fabric.ports()[p];
        const double rate = portRate(port);
        m_invPortRate.push_back(rate > 0 ? 1.0 / rate : 0.0);
        // A GPU's own time in a phase counts its NVLink and NIC ports, not the switches'.
        if (rate > 0 && port.kind != PortKind::leafUp && port.kind != PortKind::leafDown)
            m_gpuPorts.emplace_back(static_cast<int>(p), port.owner);
    }
    m_nvlinkOnly = m_fabric.numDomains() == 1;
    std::vector<char> seen(m_fabric.ports().size(), 0);
    for (int g = 0; g < m_fabric.numGpus() && m_nvlinkOnly; ++g)
        for (const int p : {m_fabric.nvOut(g), m_fabric.nvIn(g)}) {
            m_nvlinkOnly = m_nvlinkOnly && p >= 0 && !seen[static_cast<std::size_t>(p)] && m_fabric.ports()[static_cast<std::size_t>(p)].owner == g;
            if (p >= 0)
                seen[static_cast<std::size_t>(p)] = 1;
        }
    const ModelSpec& model = scenario.model;
    for (int layer = 0; layer < model.num_layers; ++layer) {
        const LayerKind k = model.layerKind(layer);
        if (model.isMoeLayer(layer)) {
            m_moeMixer.push_back(k.mixer);
            continue;
        }
        ++m_aroundMixers[static_cast<int>(k.mixer)];
        m_aroundDense += k.ffn == FfnKind::dense ? 1 : 0;
    }
    m_maxOfNormals = expectedMaxOfNormals(m_fabric.numGpus());
    setSpeeds(scenario.speeds);
    buildPlans();
}

OverheadTimes Simulator::overheads(double tokensPerGpu) const
{
    const DType d = m_scenario.precision.dispatch;
    const bool lowPrecision = d != DType::bf16 && d != DType::fp16 && d != DType::fp32;
    return m_compute.overheadTimes(tokensPerGpu, lowPrecision && !perPairMessages() ? wireBytesPerElement(d) : 0.0);
}

double Simulator::dpSyncShare(double sequencesPerGpu) const
{
    const double cv = m_scenario.workload.context_cv;
    if (m_scenario.workload.phase != Phase::decode || cv <= 0 || sequencesPerGpu <= 0)
        return 0.0;
    return cv / std::sqrt(sequencesPerGpu) * m_maxOfNormals;
}

void Simulator::setSpeeds(const GpuSpeeds& speeds)
{
    m_scenario.speeds = speeds;
    m_speed.resize(static_cast<std::size_t>(m_fabric.numGpus()));
    m_invSpeed.resize(m_speed.size());
    for (int g = 0; g < m_fabric.numGpus(); ++g) {
        m_speed[static_cast<std::size_t>(g)] = speeds.of(g);
        m_invSpeed[static_cast<std::size_t>(g)] = 1.0 / m_speed[static_cast<std::size_t>(g)];
    }
    m_minSpeed = 1e9;
    m_speedSum = 0;
    for (const double v : m_speed) {
        m_minSpeed = std::min(m_minSpeed, v);
        m_speedSum += v;
    }
}

const char* Simulator::routeKernelName()
{
    return detail::routeKernelHasAvx2() ? "avx2" : "portable";
}

void Simulator::setPlacement(const Placement& placement)
{
    m_placement = placement;
    buildPlans();
}

double Simulator::dispatchBytesPerToken() const
{
    return m_scenario.model.hidden_size * wireBytesPerElement(m_scenario.precision.dispatch);
}

double Simulator::combineBytesPerToken() const
{
    return m_scenario.model.hidden_size * wireBytesPerElement(m_scenario.precision.combine);
}

// Route step 1 (DESIGN.md 5.1): token-expert pairs of each source go to the expert's replicas
// (explicit shares, else a replica on the same GPU, else in the same NVLink domain, else all
// evenly). m_notSent (block layout, route_kernel.h) becomes, for each src and dst, the probability
// that a token of src has none of its experts on dst: a token is sent once per destination GPU
// however many of its experts sit there; with per-pair messages (DeepEP low-latency) one minus
// the pairs src sends dst over T, so that T (1 - not-sent) counts every pair.
void Simulator::routeLayer(const RoutingSample& r, int layer, double tokensPerGpu)
{
    const LayerPlan& plan = m_plans[static_cast<std::size_t>(layer)];
    const int E = r.num_experts;
    const int T = r.tokens_per_gpu;
    const int R = static_cast<int>(plan.rep_slot.size());
    // Counts are scaled when memory limits the batch below the sample's tokens per GPU.
    const double scale = T > 0 ? tokensPerGpu / T : 0.0;
    std::fill(m_slotTokens.begin(), m_slotTokens.end(), 0.0);
    if (m_zeroRow.size() < static_cast<std::size_t>(E))
        m_zeroRow.assign(static_cast<std::size_t>(E), 0);
    // Scratch of the kernel, 32-byte aligned: keep rows (E + R) x 8, then the replicas' sums R x 8.
    constexpr std::size_t kBlock = detail::kRouteBlock;
    m_keep.resize(static_cast<std::size_t>(E + 2 * R) * kBlock + kBlock);
    float* keep = m_keep.data();
    keep += (32 - reinterpret_cast<std::uintptr_t>(keep) % 32) % 32 / sizeof(float);
    m_repTaken.resize(static_cast<std::size_t>(R));

    detail::RouteKernelIn in;
    in.counts = r.layer(layer).data();
    in.zero_row = m_zeroRow.data();
    in.G = m_fabric.numGpus();
    in.E = E;
    in.inv_tokens = T > 0 ? 1.0f / static_cast<float>(T) : 0.0f;
    in.slot_keep = plan.slot_keep.data();
    in.gpu_slot_begin = plan.gpu_slot_begin.data();
    in.R = R;
    in.rep_expert = plan.rep_expert.data();
    in.per_pair = perPairMessages();
    if (plan.fraction_index.empty()) {
        in.rep_fraction = plan.rep_fraction.data();
    } else {
        in.fraction_table = plan.fraction_table.data();
        in.fraction_index = plan.fraction_index.data();
    }
    if (layer + 1 < r.numLayers() && r.layerSize() >= static_cast<std::size_t>(8 * E))
        in.prefetch_next = r.layer(layer + 1).data();
    detail::RouteKernelOut out;
    out.totals = m_expertTotals.data();
    out.not_sent = m_notSent.data();
    out.rep_taken = m_repTaken.data();
    out.keep = keep;
    out.rep_acc = keep + static_cast<std::size_t>(E + R) * kBlock;
    detail::routeKernel(in, out);

    double* slotTokens = m_slotTokens.data();
    for (int rep = 0; rep < R; ++rep)
        slotTokens[plan.rep_slot[static_cast<std::size_t>(rep)]] += static_cast<double>(m_repTaken[static_cast<std::size_t>(rep)]) * tokensPerGpu;
    for (std::size_t k = 0; k < plan.single_slot.size(); ++k)
        slotTokens[plan.single_slot[k]] = static_cast<double>(m_expertTotals[static_cast<std::size_t>(plan.single_expert[k])]) * scale;
}

Simulator::MemoryBudget Simulator::memoryBudget(std::vector<double>* weightsPerGpu) const
{
    const int G = m_fabric.numGpus();
    const Workload& w = m_scenario.workload;
    const double usable = m_scenario.topology.gpu.hbm_usable_gb * 1e9;
    const double reserve = m_cal.activation_reserve_gb * 1e9;
    MemoryBudget mb;
    mb.kv_per_sequence = m_compute.kvBytesPerSequence(w.context_tokens);
    double minFree = usable;
    for (int g = 0; g < G; ++g) {
        int slots = 0;
        for (const auto& l : m_placement.layers)
            slots += static_cast<int>(l.gpu_slots[static_cast<std::size_t>(g)].size());
        const double bytes = slots * m_compute.expertBytes() + m_scenario.model.nonExpertBytes();
        if (weightsPerGpu)
            (*weightsPerGpu)[static_cast<std::size_t>(g)] = bytes;
        minFree = std::min(minFree, usable - bytes - reserve);
    }
    if (m_compute.cpu()) {
        // The CPU engine runs MoE layers only, no KV cache, and checks its own weights' memory
        // (streaming one layer's weights when they do not fit): memory never cuts its batch.
        mb.users_per_gpu = w.tokens_per_gpu;
        mb.tokens = w.tokens_per_gpu;
        return mb;
    }
    if (minFree < 0)
        mb.users_per_gpu = 0;  // the weights alone do not fit
    else if (mb.kv_per_sequence > 0)
        mb.users_per_gpu = static_cast<std::int64_t>(minFree / mb.kv_per_sequence);
    else
        mb.users_per_gpu = w.tokens_per_gpu;  // no KV cache: memory does not bound the batch
    mb.tokens = w.tokens_per_gpu;
    if (w.phase == Phase::decode && mb.users_per_gpu < w.tokens_per_gpu) {
        mb.tokens = static_cast<double>(mb.users_per_gpu);
        mb.limited = true;
    }
    return mb;
}

void Simulator::setLayerPlacement(int layer, const LayerPlacement& placement)
{
    const int G = m_fabric.numGpus();
    const int E = m_scenario.model.routed_experts;
    if (layer < 0 || layer >= m_placement.numLayers())
        throw std::invalid_argument("setLayerPlacement: MoE layer " + std::to_string(layer) + " out of range (0.."
                                    + std::to_string(m_placement.numLayers() - 1) + ")");
    if (placement.numGpus() != G)
        throw std::invalid_argument("setLayerPlacement: the layer has " + std::to_string(placement.numGpus())
                                    + " GPUs, the topology " + std::to_string(G));
    // The structural rules of checkPlacement for one layer, without building a Placement.
    std::vector<int>& seen = m_fill;
    seen.assign(static_cast<std::size_t>(E), 0);
    bool sameSlotsPerGpu = true;
    const LayerPlacement& old = m_placement.layers[static_cast<std::size_t>(layer)];
    for (int g = 0; g < G; ++g) {
        const auto& slots = placement.gpu_slots[static_cast<std::size_t>(g)];
        sameSlotsPerGpu = sameSlotsPerGpu && slots.size() == old.gpu_slots[static_cast<std::size_t>(g)].size();
        if (!placement.shares.empty() && placement.shares[static_cast<std::size_t>(g)].size() != slots.size())
            throw std::invalid_argument("setLayerPlacement: shares must have the same shape as the slots");
        for (ExpertId e : slots) {
            if (!e.valid() || e.value >= E)
                throw std::invalid_argument("setLayerPlacement: expert " + std::to_string(e.value) + " out of range");
            seen[e.index()] = 1;
        }
    }
    if (!placement.shares.empty() && placement.shares.size() != placement.gpu_slots.size())
        throw std::invalid_argument("setLayerPlacement: shares must have the same shape as the slots");
    for (int e = 0; e < E; ++e)
        if (!seen[static_cast<std::size_t>(e)])
            throw std::invalid_argument("setLayerPlacement: expert " + std::to_string(e) + " has no slot");
    m_placement.layers[static_cast<std::size_t>(layer)] = placement;
    buildLayerPlan(layer);
    const std::size_t slots = m_plans[static_cast<std::size_t>(layer)].slot_expert.size();
    if (slots > m_slotTokens.size()) {
        m_slotTokens.resize(slots, 0.0);
        m_slotUs.resize(slots, 0.0);
        m_slotUsHalf.resize(slots, 0.0);
    }
    if (!sameSlotsPerGpu)
        m_memory = memoryBudget(&m_weightsPerGpu);
}

double Simulator::layerTimeUs(const RoutingSample& r, int layer)
{
    // The per-layer part of step() (DESIGN.md 5.1-5.5), term for term.
    const int G = m_fabric.numGpus();
    const int E = m_scenario.model.routed_experts;
    if (r.num_gpus != G || r.num_experts != E || r.numLayers() != m_scenario.model.numMoeLayers())
        throw std::invalid_argument("routing sample shape (" + std::to_string(r.numLayers()) + " layers, "
                                    + std::to_string(r.num_gpus) + " GPUs, " + std::to_string(r.num_experts)
                                    + " experts) does not match the scenario");
    if (layer < 0 || layer >= r.numLayers())
        throw std::invalid_argument("layerTimeUs: MoE layer " + std::to_string(layer) + " out of range");
    const double tokens = m_memory.tokens;
    const bool tbo = m_scenario.overlap == Overlap::two_batch;
    routeLayer(r, layer, tokens);
    LayerComm comm = communicate(tokens, false);
    const LayerCompute c = computeLayer(layer, tbo, m_compute.sharedAndRouterUs(tokens),
                                        tbo ? m_compute.sharedAndRouterUs(tokens / 2.0) : 0.0);
    if (m_compute.cpu())
        comm = hostExchange(tokens);
    const Workload& w = m_scenario.workload;
    const MixerKind mixer = m_moeMixer[static_cast<std::size_t>(layer)];
    double attentionHalf = 0;
    if (tbo) {
        const double attnLayerHalf = m_compute.mixerUs(mixer, tokens / 2.0, w.context_tokens, w.phase);
        const double syncHalf = mixer == MixerKind::attention ? dpSyncShare(tokens / 2.0) * attnLayerHalf : 0.0;
        const OverheadTimes ovHalf = overheads(tokens / 2.0);
        attentionHalf = (attnLayerHalf + syncHalf + ovHalf.per_layer + ovHalf.per_moe_layer) / m_minSpeed / overlapComputeShare();
    }
    return layerTimes(c, comm, tbo, attentionHalf, tbo ? 0.0 : overheads(tokens).per_moe_layer / m_minSpeed).time;
}

double Simulator::twoBatchLayerUs(double attentionHalf, double expertsHalf, double dispatchHalf, double combineHalf,
                                  double hidden)
{
    // Each stage: the longer of its pair, plus the part of the shorter that does not overlap.
    const double exposed = 1.0 - hidden;
    auto stage = [exposed](double x, double y) { return std::max(x, y) + exposed * std::min(x, y); };
    return stage(attentionHalf, combineHalf) + stage(attentionHalf, dispatchHalf) + stage(expertsHalf, dispatchHalf)
           + stage(expertsHalf, combineHalf);
}

}  // namespace moex
