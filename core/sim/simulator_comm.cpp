// The simulator's communication (DESIGN.md section 5.2-5.3): tokens onto the fabric's ports per
// layer, the one-NVLink-domain fast path, phase times from the slowest port, and the ports' rates.
#include "sim/simulator.h"

#include "sim/route_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

namespace moex {

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
    // One RDMA leg from `from` to `to` (different domains): their NICs, and the leaf up- and
    // downlinks when their leaves differ; the combine runs the other way.
    auto rdmaLeg = [&](int from, int to, double tokens) {
        add(m_dispatchPort, m_fabric.nicOut(from), tokens * bd);
        add(m_dispatchPort, m_fabric.nicIn(to), tokens * bd);
        add(m_combinePort, m_fabric.nicOut(to), tokens * bc);
        add(m_combinePort, m_fabric.nicIn(from), tokens * bc);
        if (m_fabric.leafOf(from) != m_fabric.leafOf(to)) {
            add(m_dispatchPort, m_fabric.leafUp(from), tokens * bd);
            add(m_dispatchPort, m_fabric.leafDown(to), tokens * bd);
            add(m_combinePort, m_fabric.leafUp(to), tokens * bc);
            add(m_combinePort, m_fabric.leafDown(from), tokens * bc);
        }
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
                rdmaLeg(src, dst, tokens);
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
                rdmaLeg(src, target, tokens);
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
    if (perPairMessages() && m_cal.ll_message_us > 0)
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
