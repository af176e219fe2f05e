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
    setSpeeds(scenario.speeds);
    buildPlans();
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
// however many of its experts sit there.
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

// Route step 2 (DESIGN.md 5.2): bytes of each GPU pair onto the fabric's ports, for dispatch
// (src -> dst) and combine (dst -> src), with the kernel's path across NVLink domains.
void Simulator::accumulatePorts(double tokensPerGpu)
{
    const int G = m_fabric.numGpus();
    const int D = m_fabric.numDomains();
    const double bd = dispatchBytesPerToken();
    const double bc = combineBytesPerToken();
    std::fill(m_dispatchPort.begin(), m_dispatchPort.end(), 0.0);
    std::fill(m_combinePort.begin(), m_combinePort.end(), 0.0);
    m_portBytesStale = false;
    std::fill(m_messages.begin(), m_messages.end(), 0);
    std::fill(m_inTokens.begin(), m_inTokens.end(), 0.0);
    m_crossTraffic = false;
    const bool ht = m_mode == KernelMode::high_throughput;
    if (ht && D > 1)
        std::fill(m_notSentDom.begin(), m_notSentDom.end(), 1.0f);
    auto add = [](std::vector<double>& v, int port, double bytes) {
        if (port >= 0)
            v[static_cast<std::size_t>(port)] += bytes;
    };
    const float T = static_cast<float>(tokensPerGpu);
    float* inTokens = m_inTokens.data();
    if (D == 1) {
        // One NVLink domain (NVL72, one HGX node): every pair is one switch hop.
        sendTotalsOneDomain(tokensPerGpu);
        for (int src = 0; src < G; ++src) {
            const double outIntra = m_blockOut[static_cast<std::size_t>(src)];
            m_messages[static_cast<std::size_t>(src)] = static_cast<std::int64_t>(outIntra + 0.5);
            add(m_dispatchPort, m_fabric.nvOut(src), outIntra * bd);
            add(m_combinePort, m_fabric.nvIn(src), outIntra * bc);
        }
    }
    // A GPU's tokens for its own experts never touch the network.
    for (int src = 0; src < G && D > 1; ++src)
        m_notSent[detail::notSentIndex(src, src, G)] = 1.0f;
    for (int src = 0; src < G && D > 1; ++src) {
        const int srcDom = m_fabric.domainOf(src);
        double outIntra = 0;
        double outTotal = 0;
        for (int dst = 0; dst < G; ++dst) {
            const float notSent = m_notSent[detail::notSentIndex(src, dst, G)];
            const float u = T * (1.0f - notSent);
            if (u <= 0.0f)
                continue;
            m_sentSum[detail::notSentIndex(src, dst, G)] += u;
            outTotal += u;
            const double tokens = u;
            const int dstDom = m_fabric.domainOf(dst);
            if (dstDom == srcDom) {
                outIntra += tokens;
                inTokens[dst] += tokens;
                continue;
            }
            m_crossTraffic = true;
            if (ht) {
                // DeepEP normal kernels: one RDMA copy per destination domain to the GPU on the
                // source's rail there, then NVLink forwarding to each destination GPU.
                m_notSentDom[static_cast<std::size_t>(src) * D + dstDom] *= notSent;
                // The GPU that receives the domain's RDMA copy (same rail, else the domain's
                // first GPU, as below) forwards it over NVLink.
                int relay = m_fabric.gpuOnRail(dstDom, m_fabric.railOf(src));
                if (relay < 0)
                    relay = m_fabric.domainGpus(dstDom).front();
                if (relay != dst) {
                    add(m_dispatchPort, m_fabric.nvOut(relay), tokens * bd);
                    add(m_dispatchPort, m_fabric.nvIn(dst), tokens * bd);
                    add(m_combinePort, m_fabric.nvOut(dst), tokens * bc);
                    add(m_combinePort, m_fabric.nvIn(relay), tokens * bc);
                }
            } else {
                // Low-latency kernels: direct RDMA from the source's NIC to the destination's.
                add(m_dispatchPort, m_fabric.nicOut(src), tokens * bd);
                add(m_dispatchPort, m_fabric.nicIn(dst), tokens * bd);
                add(m_combinePort, m_fabric.nicOut(dst), tokens * bc);
                add(m_combinePort, m_fabric.nicIn(src), tokens * bc);
                if (m_fabric.leafOf(src) != m_fabric.leafOf(dst)) {
                    add(m_dispatchPort, m_fabric.leafUp(src), tokens * bd);
                    add(m_dispatchPort, m_fabric.leafDown(dst), tokens * bd);
                    add(m_combinePort, m_fabric.leafUp(dst), tokens * bc);
                    add(m_combinePort, m_fabric.leafDown(src), tokens * bc);
                }
            }
        }
        m_messages[static_cast<std::size_t>(src)] = static_cast<std::int64_t>(outTotal + 0.5);
        add(m_dispatchPort, m_fabric.nvOut(src), outIntra * bd);
        add(m_combinePort, m_fabric.nvIn(src), outIntra * bc);
    }
    // Intra-domain arrivals: dispatch lands on the destination's NVLink ports in; combine leaves
    // from them.
    for (int dst = 0; dst < G; ++dst) {
        add(m_dispatchPort, m_fabric.nvIn(dst), inTokens[dst] * bd);
        add(m_combinePort, m_fabric.nvOut(dst), inTokens[dst] * bc);
    }
    if (ht && D > 1) {
        for (int src = 0; src < G; ++src) {
            for (int dom = 0; dom < D; ++dom) {
                if (dom == m_fabric.domainOf(src))
                    continue;
                const double tokens = tokensPerGpu * (1.0 - m_notSentDom[static_cast<std::size_t>(src) * D + dom]);
                if (tokens <= 0)
                    continue;
                const int relay = m_fabric.gpuOnRail(dom, m_fabric.railOf(src));
                const int target = relay >= 0 ? relay : m_fabric.domainGpus(dom).front();
                add(m_dispatchPort, m_fabric.nicOut(src), tokens * bd);
                add(m_dispatchPort, m_fabric.nicIn(target), tokens * bd);
                add(m_combinePort, m_fabric.nicOut(target), tokens * bc);
                add(m_combinePort, m_fabric.nicIn(src), tokens * bc);
                if (m_fabric.leafOf(src) != m_fabric.leafOf(target)) {
                    add(m_dispatchPort, m_fabric.leafUp(src), tokens * bd);
                    add(m_dispatchPort, m_fabric.leafDown(target), tokens * bd);
                    add(m_combinePort, m_fabric.leafUp(target), tokens * bc);
                    add(m_combinePort, m_fabric.leafDown(src), tokens * bc);
                }
            }
        }
    }
}

void Simulator::sendTotalsOneDomain(double tokensPerGpu)
{
    const int G = m_fabric.numGpus();
    // A GPU's tokens for its own experts never touch the network.
    for (int src = 0; src < G; ++src)
        m_notSent[detail::notSentIndex(src, src, G)] = 1.0f;
    // The tokens each GPU sends and receives, from the routing kernel's not-sent matrix in one pass.
    detail::SendTotals st;
    st.not_sent = m_notSent.data();
    st.sent_sum = m_sentSum.data();
    st.out = m_blockOut.data();
    st.in = m_inTokens.data();
    st.G = G;
    st.tokens = static_cast<float>(tokensPerGpu);
    detail::sendTotals(st);
}

Simulator::NvlinkBytes Simulator::nvlinkBytes(int g, double dispatchPerToken, double combinePerToken) const
{
    const double out = m_blockOut[static_cast<std::size_t>(g)];
    const double in = m_inTokens[static_cast<std::size_t>(g)];
    return {out * dispatchPerToken, in * dispatchPerToken, in * combinePerToken, out * combinePerToken};
}

bool Simulator::setNvlinkFastPath(bool enabled)
{
    m_nvlinkFastPath = enabled;
    return m_nvlinkOnly;
}

const std::vector<double>& Simulator::lastDispatchPortBytes() const
{
    if (m_portBytesStale) {  // the per-port form of communicateNvlinkOnly's layer, as accumulatePorts makes it
        std::fill(m_dispatchPort.begin(), m_dispatchPort.end(), 0.0);
        std::fill(m_combinePort.begin(), m_combinePort.end(), 0.0);
        const double bd = dispatchBytesPerToken(), bc = combineBytesPerToken();
        for (int g = 0; g < m_fabric.numGpus(); ++g) {
            const NvlinkBytes b = nvlinkBytes(g, bd, bc);
            m_dispatchPort[static_cast<std::size_t>(m_fabric.nvOut(g))] += b.dispatch_out;
            m_dispatchPort[static_cast<std::size_t>(m_fabric.nvIn(g))] += b.dispatch_in;
            m_combinePort[static_cast<std::size_t>(m_fabric.nvIn(g))] += b.combine_in;
            m_combinePort[static_cast<std::size_t>(m_fabric.nvOut(g))] += b.combine_out;
        }
        m_portBytesStale = false;
    }
    return m_dispatchPort;
}

const std::vector<double>& Simulator::lastCombinePortBytes() const
{
    (void)lastDispatchPortBytes();  // makes both
    return m_combinePort;
}

Simulator::LayerComm Simulator::communicate(double tokensPerGpu, bool addStepBytes)
{
    if (m_nvlinkOnly && m_nvlinkFastPath)
        return communicateNvlinkOnly(tokensPerGpu, addStepBytes);
    accumulatePorts(tokensPerGpu);
    const LayerComm c{phaseTime(m_dispatchPort, m_cal.dispatch_floor_us, m_crossTraffic),
                      phaseTime(m_combinePort, m_cal.combine_floor_us, m_crossTraffic)};
    portTimesPerGpu(m_dispatchPort, m_gpuDispatch);
    portTimesPerGpu(m_combinePort, m_gpuCombine);
    if (addStepBytes)
        for (std::size_t p = 0; p < m_stepPortBytes.size(); ++p)
            m_stepPortBytes[p] += m_dispatchPort[p] + m_combinePort[p];
    return c;
}

// accumulatePorts, phaseTime, portTimesPerGpu and the step's port bytes where only NVLink ports
// carry bytes and each GPU owns its two: dispatch puts a GPU's sent tokens on its nvOut port and
// its received ones on its nvIn port, combine the reverse. Every port gets one term per phase
// (0 + x is x), a phase lasts as long as its slowest port (a maximum, exact in any order), and a
// GPU's own time is the slower of its two ports (its NIC ports carry nothing here): the general
// path's values, in one pass over the GPUs instead of several over every port.
Simulator::LayerComm Simulator::communicateNvlinkOnly(double tokensPerGpu, bool addStepBytes)
{
    const int G = m_fabric.numGpus();
    const double bd = dispatchBytesPerToken();
    const double bc = combineBytesPerToken();
    std::fill(m_inTokens.begin(), m_inTokens.end(), 0.0f);
    sendTotalsOneDomain(tokensPerGpu);
    m_crossTraffic = false;
    m_portBytesStale = true;
    const double* inv = m_invPortRate.data();
    double* stepBytes = m_stepPortBytes.data();
    double dispatchMax = 0, combineMax = 0;
    std::int64_t messages = 0;
    for (int g = 0; g < G; ++g) {
        const auto po = static_cast<std::size_t>(m_fabric.nvOut(g));
        const auto pi = static_cast<std::size_t>(m_fabric.nvIn(g));
        messages = std::max(messages, static_cast<std::int64_t>(static_cast<double>(m_blockOut[static_cast<std::size_t>(g)]) + 0.5));
        const NvlinkBytes b = nvlinkBytes(g, bd, bc);
        const double dispatchUs = std::max(b.dispatch_out * inv[po], b.dispatch_in * inv[pi]);
        const double combineUs = std::max(b.combine_out * inv[po], b.combine_in * inv[pi]);
        m_gpuDispatch[static_cast<std::size_t>(g)] = dispatchUs;
        m_gpuCombine[static_cast<std::size_t>(g)] = combineUs;
        dispatchMax = std::max(dispatchMax, dispatchUs);
        combineMax = std::max(combineMax, combineUs);
        if (addStepBytes) {
            stepBytes[po] += b.dispatch_out + b.combine_out;
            stepBytes[pi] += b.dispatch_in + b.combine_in;
        }
    }
    return {phaseTimeOf(dispatchMax, messages, m_cal.dispatch_floor_us, false),
            phaseTimeOf(combineMax, messages, m_cal.combine_floor_us, false)};
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
    const LayerComm comm = communicate(tokens, false);
    const LayerPlan& plan = m_plans[static_cast<std::size_t>(layer)];
    const double sharedLayer = m_compute.sharedAndRouterUs(tokens);
    const double sharedLayerHalf = m_compute.sharedAndRouterUs(tokens / 2.0);
    double slowest = 0, slowestHalf = 0, minSpeed = 1e9;
    m_compute.expertSlotsUs(m_slotTokens.data(), plan.slot_expert.size(), m_slotUs.data(), tbo ? m_slotUsHalf.data() : nullptr);
    for (int g = 0; g < G; ++g) {
        double full = 0, half = 0;
        const int end = plan.gpu_slot_begin[static_cast<std::size_t>(g) + 1];
        for (int s = plan.gpu_slot_begin[static_cast<std::size_t>(g)]; s < end; ++s) {
            full += m_slotUs[static_cast<std::size_t>(s)];
            half += m_slotUsHalf[static_cast<std::size_t>(s)];  // stays 0 without two-batch overlap
        }
        const double inv = m_invSpeed[static_cast<std::size_t>(g)];
        minSpeed = std::min(minSpeed, m_speed[static_cast<std::size_t>(g)]);
        slowest = std::max(slowest, (full + sharedLayer) * inv);
        slowestHalf = std::max(slowestHalf, (half + sharedLayerHalf) * inv);
    }
    if (!tbo)
        return comm.dispatch.time_us + slowest + comm.combine.time_us;
    const Workload& w = m_scenario.workload;
    const double attnLayerHalf = m_compute.mixerUs(m_moeMixer[static_cast<std::size_t>(layer)], tokens / 2.0,
                                                   w.context_tokens, w.phase);
    const double commUs = 2.0 * (comm.dispatch.half_time_us + comm.combine.half_time_us);
    const double compute = 2.0 * (slowestHalf + attnLayerHalf / minSpeed);
    return std::max(commUs, compute);
}

double Simulator::allToAllUs(const std::vector<double>& pairBytes, double floorUs)
{
    // Express the byte matrix as "tokens" of one byte each so accumulatePorts' paths apply.
    const int G = m_fabric.numGpus();
    double maxBytes = 0;
    for (double b : pairBytes)
        maxBytes = std::max(maxBytes, b);
    if (maxBytes <= 0)
        return floorUs;
    const double T = maxBytes;
    for (int s = 0; s < G; ++s)
        for (int d = 0; d < G; ++d)
            m_notSent[detail::notSentIndex(s, d, G)] =
                static_cast<float>(1.0 - pairBytes[static_cast<std::size_t>(s) * G + d] / T);
    const double savedD = dispatchBytesPerToken();
    accumulatePorts(T);
    // accumulatePorts charged dispatchBytesPerToken() per token; rescale to one byte per token.
    for (double& b : m_dispatchPort)
        b /= savedD;
    // The "tokens" here are bytes: an all-to-all of byte matrices sends one message per peer, not
    // one per byte, so the low-latency per-message cost does not apply.
    std::fill(m_messages.begin(), m_messages.end(), 0);
    std::fill(m_sentSum.begin(), m_sentSum.end(), 0.0f);
    return phaseTime(m_dispatchPort, floorUs, m_crossTraffic).time_us;
}

double Simulator::portRate(const Port& port) const
{
    switch (port.kind) {
    case PortKind::nvOut:
    case PortKind::nvIn:
        return port.capacity_gbs * 1e3 * m_cal.nvlink_efficiency;
    case PortKind::nicOut:
    case PortKind::nicIn: {
        const double pcie = port.pcie_gbs * 1e3 * m_cal.pcie_efficiency;
        const double net = port.network_gbs * 1e3 * m_cal.network_efficiency;
        if (pcie > 0 && net > 0)
            return std::min(pcie, net);
        return pcie > 0 || net > 0 ? std::max(pcie, net) : port.capacity_gbs * 1e3 * m_cal.network_efficiency;
    }
    default:
        return port.capacity_gbs * 1e3 * m_cal.network_efficiency;
    }
}

// Step 3 (DESIGN.md 5.3): a phase lasts as long as its busiest port, plus the path latency and
// the per-message cost of low-latency kernels, and never less than the kernel's floor.
Simulator::PhaseResult Simulator::phaseTime(const std::vector<double>& portBytes, double floorUs, bool crossDomain) const
{
    // Bytes over rate, the rate as a reciprocal (0 for a port that carries nothing): branch-free.
    // Four running maxima: one would wait on each comparison before the next.
    const double* bytes = portBytes.data();
    const double* inv = m_invPortRate.data();
    const std::size_t n = m_invPortRate.size();
    double m0 = 0, m1 = 0, m2 = 0, m3 = 0;
    std::size_t p = 0;
    for (; p + 4 <= n; p += 4) {
        m0 = std::max(m0, bytes[p] * inv[p]);
        m1 = std::max(m1, bytes[p + 1] * inv[p + 1]);
        m2 = std::max(m2, bytes[p + 2] * inv[p + 2]);
        m3 = std::max(m3, bytes[p + 3] * inv[p + 3]);
    }
    for (; p < n; ++p)
        m0 = std::max(m0, bytes[p] * inv[p]);
    const double slowest = std::max(std::max(m0, m1), std::max(m2, m3));
    const std::int64_t maxMessages = m_messages.empty() ? 0 : *std::max_element(m_messages.begin(), m_messages.end());
    return phaseTimeOf(slowest, maxMessages, floorUs, crossDomain);
}

Simulator::PhaseResult Simulator::phaseTimeOf(double slowest, std::int64_t maxMessages, double floorUs, bool crossDomain) const
{
    double messages = 0;
    if (m_mode == KernelMode::low_latency && m_cal.ll_message_us > 0)
        messages = static_cast<double>(maxMessages) * m_cal.ll_message_us;
    const double latency = crossDomain ? std::max(m_fabric.crossLatencyUs(), m_fabric.intraLatencyUs())
                                       : m_fabric.intraLatencyUs();
    PhaseResult r;
    r.time_us = std::max(floorUs, slowest + messages + latency);
    r.half_time_us = std::max(floorUs, 0.5 * (slowest + messages) + latency);
    return r;
}

void Simulator::portTimesPerGpu(const std::vector<double>& portBytes, std::vector<double>& out) const
{
    std::fill(out.begin(), out.end(), 0.0);
    for (const auto& [port, gpu] : m_gpuPorts) {
        const double t = portBytes[static_cast<std::size_t>(port)] * m_invPortRate[static_cast<std::size_t>(port)];
        double& slot = out[static_cast<std::size_t>(gpu)];
        slot = std::max(slot, t);
    }
}

}  // namespace moex
