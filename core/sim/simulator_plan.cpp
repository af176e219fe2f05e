// Simulator's routing plans: per MoE layer, where each slot sits, which keep row it multiplies in
// routeLayer, and the fractions replicas take of each source's tokens (DESIGN.md 5.1). Built once per
// placement, and per layer during a placement search (setLayerPlacement).
#include "sim/simulator.h"

#include "sim/route_kernel.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moex {

void Simulator::buildPlans()
{
    const int G = m_fabric.numGpus();
    const int E = m_scenario.model.routed_experts;
    if (m_placement.numGpus() != G || m_placement.numLayers() != m_scenario.model.numMoeLayers())
        throw std::invalid_argument("placement shape (" + std::to_string(m_placement.numLayers()) + " layers, "
                                    + std::to_string(m_placement.numGpus()) + " GPUs) does not match the scenario ("
                                    + std::to_string(m_scenario.model.numMoeLayers()) + " MoE layers, "
                                    + std::to_string(G) + " GPUs)");
    const auto problems = checkPlacement(m_placement, E, G);
    if (!problems.empty())
        throw std::invalid_argument("invalid placement: " + problems.front());
    m_plans.assign(static_cast<std::size_t>(m_placement.numLayers()), {});
    std::size_t maxSlots = 0;
    for (int l = 0; l < m_placement.numLayers(); ++l) {
        buildLayerPlan(l);
        maxSlots = std::max(maxSlots, m_plans[static_cast<std::size_t>(l)].slot_expert.size());
    }
    m_expertTotals.assign(static_cast<std::size_t>(E), 0);
    m_expertScaled.assign(static_cast<std::size_t>(E), 0.0);
    m_roundScratch.reserve(2 * static_cast<std::size_t>(std::max(E, G)));
    // Block layout of route_kernel.h: whole blocks of eight sources, lanes past the last source 1.
    const auto blocked = static_cast<std::size_t>((G + detail::kRouteBlock - 1) / detail::kRouteBlock) * static_cast<std::size_t>(G)
                         * detail::kRouteBlock;
    m_sentSum.assign(blocked, 0.0f);
    m_notSent.assign(blocked, 1.0f);
    m_notSentDom.assign(static_cast<std::size_t>(G) * static_cast<std::size_t>(m_fabric.numDomains()), 1.0f);
    m_slotTokens.assign(maxSlots, 0.0);
    m_slotUs.assign(maxSlots, 0.0);
    m_slotUsHalf.assign(maxSlots, 0.0);
    const std::size_t ports = m_fabric.ports().size();
    m_dispatchPort.assign(ports, 0.0);
    m_combinePort.assign(ports, 0.0);
    m_portBytesStale = false;  // no layer simulated with this plan yet: no bytes
    m_stepPortBytes.assign(ports, 0.0);
    m_gpuDispatch.assign(static_cast<std::size_t>(G), 0.0);
    m_gpuCombine.assign(static_cast<std::size_t>(G), 0.0);
    m_gpuCompute.assign(static_cast<std::size_t>(G), 0.0);
    m_gpuComputeHalf.assign(static_cast<std::size_t>(G), 0.0);
    m_gpuBusy.assign(static_cast<std::size_t>(G), 0.0);
    m_gpuPairs.assign(static_cast<std::size_t>(G), 0.0);
    m_stragglerCount.assign(static_cast<std::size_t>(G), 0);
    m_messages.assign(static_cast<std::size_t>(G), 0);
    m_inTokens.assign(static_cast<std::size_t>(G), 0.0f);
    m_blockOut.assign(static_cast<std::size_t>((G + detail::kRouteBlock - 1) / detail::kRouteBlock) * detail::kRouteBlock, 0.0f);
    m_weightsPerGpu.assign(static_cast<std::size_t>(G), 0.0);
    m_memory = memoryBudget(&m_weightsPerGpu);
}

// One layer's plan from m_placement. Vectors are cleared and refilled, so rebuilding a layer
// during a search reuses their storage.
void Simulator::buildLayerPlan(int l)
{
    const int G = m_fabric.numGpus();
    const int E = m_scenario.model.routed_experts;
    const LayerPlacement& lp = m_placement.layers[static_cast<std::size_t>(l)];
    LayerPlan& plan = m_plans[static_cast<std::size_t>(l)];
    plan.slot_gpu.clear();
    plan.slot_expert.clear();
    plan.slot_share.clear();
    plan.single_expert.clear();
    plan.single_slot.clear();
    plan.gpu_slot_begin.assign(static_cast<std::size_t>(G) + 1, 0);
    for (int g = 0; g < G; ++g) {
        plan.gpu_slot_begin[static_cast<std::size_t>(g) + 1] =
            plan.gpu_slot_begin[static_cast<std::size_t>(g)] + static_cast<int>(lp.gpu_slots[static_cast<std::size_t>(g)].size());
        for (std::size_t k = 0; k < lp.gpu_slots[static_cast<std::size_t>(g)].size(); ++k) {
            plan.slot_gpu.push_back(g);
            plan.slot_expert.push_back(lp.gpu_slots[static_cast<std::size_t>(g)][k].value);
            plan.slot_share.push_back(lp.shares.empty() ? -1.0f
                                                        : static_cast<float>(lp.shares[static_cast<std::size_t>(g)][k]));
        }
    }
    plan.expert_count.assign(static_cast<std::size_t>(E), 0);
    for (int e : plan.slot_expert)
        ++plan.expert_count[static_cast<std::size_t>(e)];
    plan.expert_first.assign(static_cast<std::size_t>(E), 0);
    for (int e = 1; e < E; ++e)
        plan.expert_first[static_cast<std::size_t>(e)] =
            plan.expert_first[static_cast<std::size_t>(e) - 1] + plan.expert_count[static_cast<std::size_t>(e) - 1];
    plan.replica_slots.assign(plan.slot_expert.size(), 0);
    std::vector<int>& fill = m_fill;
    fill.assign(static_cast<std::size_t>(E), 0);
    for (std::size_t s = 0; s < plan.slot_expert.size(); ++s) {
        const auto e = static_cast<std::size_t>(plan.slot_expert[s]);
        plan.replica_slots[static_cast<std::size_t>(plan.expert_first[e] + fill[e]++)] = static_cast<int>(s);
    }
    // Replicated experts (or experts with explicit shares) get one keep row per replica.
    plan.slot_keep.assign(plan.slot_expert.size(), 0);
    plan.rep_slot.clear();
    plan.rep_expert.clear();
    plan.rep_fraction.clear();
    std::vector<float>& repFractions = m_repFractions;  // [replica][src]
    std::vector<float>& fractions = m_expertFractions;  // [replica of one expert][src]
    repFractions.clear();
    for (int e = 0; e < E; ++e) {
        const int n = plan.expert_count[static_cast<std::size_t>(e)];
        const int* reps = plan.replica_slots.data() + plan.expert_first[static_cast<std::size_t>(e)];
        const bool explicitShares = plan.slot_share[static_cast<std::size_t>(reps[0])] >= 0;
        if (n == 1 && !explicitShares) {
            plan.single_expert.push_back(e);
            plan.single_slot.push_back(reps[0]);
            plan.slot_keep[static_cast<std::size_t>(reps[0])] = e;
            continue;
        }
        fractions.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(G), 0.0f);
        for (int j = 0; j < n; ++j) {
            plan.slot_keep[static_cast<std::size_t>(reps[j])] = E + static_cast<int>(plan.rep_slot.size());
            plan.rep_slot.push_back(reps[j]);
            plan.rep_expert.push_back(e);
        }
        for (int src = 0; src < G; ++src) {
            int local = 0, sameDomain = 0;
            for (int j = 0; j < n; ++j) {
                const int g = plan.slot_gpu[static_cast<std::size_t>(reps[j])];
                local += g == src;
                sameDomain += m_fabric.domainOf(g) == m_fabric.domainOf(src);
            }
            const int chosen = local > 0 ? local : (sameDomain > 0 ? sameDomain : n);
            for (int j = 0; j < n; ++j) {
                const int s = reps[j];
                const int g = plan.slot_gpu[static_cast<std::size_t>(s)];
                float fraction = 0;
                if (explicitShares)
                    fraction = plan.slot_share[static_cast<std::size_t>(s)];
                else if (local > 0 ? g == src : (sameDomain > 0 ? m_fabric.domainOf(g) == m_fabric.domainOf(src) : true))
                    fraction = 1.0f / static_cast<float>(chosen);
                fractions[static_cast<std::size_t>(j) * G + static_cast<std::size_t>(src)] = fraction;
            }
        }
        repFractions.insert(repFractions.end(), fractions.begin(), fractions.begin() + static_cast<std::ptrdiff_t>(n) * G);
    }
    // Stored [block of 8 sources][replica][8] so that routeLayer reads them in one sequential pass.
    const int R = static_cast<int>(plan.rep_slot.size());
    const int blocks = (G + 7) / 8;
    plan.rep_fraction.assign(static_cast<std::size_t>(blocks) * static_cast<std::size_t>(R) * 8, 0.0f);
    for (int rep = 0; rep < R; ++rep)
        for (int src = 0; src < G; ++src)
            plan.rep_fraction[(static_cast<std::size_t>(src / 8) * R + static_cast<std::size_t>(rep)) * 8 + static_cast<std::size_t>(src % 8)] =
                repFractions[static_cast<std::size_t>(rep) * G + static_cast<std::size_t>(src)];
    plan.fraction_index.clear();
    static_assert(std::tuple_size_v<decltype(plan.fraction_table)> == detail::kFractionTable);
    if (detail::compactFractions(plan.rep_fraction, plan.fraction_table, plan.fraction_index))
        std::vector<float>().swap(plan.rep_fraction);  // a quarter of the bytes: the dense form is not kept
    else
        std::vector<std::uint8_t>().swap(plan.fraction_index);
}

}  // namespace moex
