#include "placement_edits.h"

#include "sim/compute_model.h"
#include "sim/scenario_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

namespace moex::session {

namespace {

using Slots = std::vector<ExpertId>;

std::string gb(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
    return buf;
}

int indexOf(const Slots& slots, int expert)
{
    for (std::size_t k = 0; k < slots.size(); ++k)
        if (slots[k].value == expert)
            return static_cast<int>(k);
    return -1;
}

std::string where(int layer)
{
    return layer < 0 ? std::string("in any layer") : "in MoE layer " + std::to_string(layer);
}

std::string checkArgs(const Placement& p, int layer, std::initializer_list<int> experts, std::initializer_list<int> gpus)
{
    if (layer < -1 || layer >= p.numLayers())
        return "MoE layer " + std::to_string(layer) + " does not exist (0.." + std::to_string(p.numLayers() - 1) + ")";
    for (int e : experts)
        if (e < 0 || e >= p.num_experts)
            return "expert " + std::to_string(e) + " does not exist (0.." + std::to_string(p.num_experts - 1) + ")";
    for (int g : gpus)
        if (g < 0 || g >= p.numGpus())
            return "GPU " + std::to_string(g) + " does not exist (0.." + std::to_string(p.numGpus() - 1) + ")";
    return {};
}

// Applies `edit` to the chosen layer (or each layer); `edit` returns "" when it changed the layer,
// "-" when the layer does not apply (skipped in all-layers mode), else a refusal.
std::string forLayers(Placement& p, int layer, const std::function<std::string(LayerPlacement&, int)>& edit,
                      int* applied = nullptr)
{
    if (applied)
        *applied = 0;
    if (layer >= 0) {
        std::string r = edit(p.layers[static_cast<std::size_t>(layer)], layer);
        if (r.empty() && applied)
            *applied = 1;
        return r;
    }
    int count = 0;
    std::string lastRefusal;
    for (int l = 0; l < p.numLayers(); ++l) {
        std::string r = edit(p.layers[static_cast<std::size_t>(l)], l);
        if (r.empty())
            ++count;
        else if (r != "-")
            lastRefusal = r;
    }
    if (applied)
        *applied = count;
    if (count == 0)
        return lastRefusal.empty() ? std::string("-") : lastRefusal;
    return {};
}

std::string memoryRefusal(const Placement& p, const MemoryRule& mem, int gpu, long long added)
{
    if (added <= 0 || mem.expert_bytes <= 0)
        return {};
    const long long now = slotsOnGpu(p, gpu);
    const long long limit = mem.maxSlotsPerGpu();
    if (now + added <= limit)
        return {};
    return "GPU " + std::to_string(gpu) + " is out of memory: " + std::to_string(now + added) + " expert slots ("
           + gb(static_cast<double>(now + added) * mem.expert_bytes) + ") + " + gb(mem.fixed_bytes)
           + " other weights and reserve leave no room for the KV cache of one sequence in "
           + gb(mem.usable_bytes) + " of HBM (at most " + std::to_string(std::max(0LL, limit)) + " slots fit)";
}

void resplitShares(LayerPlacement& l, int expert)
{
    if (l.shares.empty())
        return;
    int n = 0;
    for (const auto& g : l.gpu_slots)
        n += static_cast<int>(std::count(g.begin(), g.end(), ExpertId(expert)));
    if (n == 0)
        return;
    for (std::size_t g = 0; g < l.gpu_slots.size(); ++g)
        for (std::size_t k = 0; k < l.gpu_slots[g].size(); ++k)
            if (l.gpu_slots[g][k].value == expert)
                l.shares[g][k] = 1.0 / n;
}

std::string finalCheck(Placement& p, const Placement& before)
{
    const auto problems = checkPlacement(p, p.num_experts, p.numGpus());
    if (problems.empty())
        return {};
    p = before;
    return "the edit would break the placement: " + problems.front();
}

std::string alreadyHolds(int gpu, int expert, int layer)
{
    return "GPU " + std::to_string(gpu) + " already holds a replica of expert " + std::to_string(expert)
           + " in MoE layer " + std::to_string(layer) + "; two replicas on one GPU add nothing";
}

// The end of an edit that puts `applied` slots on `toGpu`: a refusal from the per-layer step, else
// the memory rule, else the structural check; any refusal restores `before`.
std::string finishSlotEdit(Placement& p, const Placement& before, const MemoryRule& mem, int toGpu, int applied,
                           const std::string& refusal)
{
    if (!refusal.empty()) {
        p = before;
        return refusal;
    }
    if (auto m = memoryRefusal(before, mem, toGpu, applied); !m.empty()) {
        p = before;
        return m;
    }
    return finalCheck(p, before);
}

}  // namespace

long long MemoryRule::maxSlotsPerGpu() const
{
    if (expert_bytes <= 0)
        return std::numeric_limits<long long>::max() / 4;
    const double room = usable_bytes - fixed_bytes - kv_bytes_per_seq;
    return room <= 0 ? 0 : static_cast<long long>(std::floor(room / expert_bytes));
}

MemoryRule memoryRuleOf(const Scenario& s)
{
    const Calibration cal = resolveCalibration(s);
    const ComputeModel cm(s.model, s.topology.gpu, cal, s.precision.weights);
    MemoryRule m;
    m.usable_bytes = s.topology.gpu.hbm_usable_gb * 1e9;
    m.expert_bytes = cm.expertBytes();
    m.fixed_bytes = s.model.nonExpertBytes() + cal.activation_reserve_gb * 1e9;
    m.kv_bytes_per_seq = cm.kvBytesPerSequence(s.workload.context_tokens);
    return m;
}

long long slotsOnGpu(const Placement& p, int gpu)
{
    long long n = 0;
    for (const auto& l : p.layers)
        n += static_cast<long long>(l.gpu_slots[static_cast<std::size_t>(gpu)].size());
    return n;
}

std::string moveExpert(Placement& p, const MemoryRule& mem, int layer, int expert, int fromGpu, int toGpu)
{
    if (auto bad = checkArgs(p, layer, {expert}, {fromGpu, toGpu}); !bad.empty())
        return bad;
    if (fromGpu == toGpu)
        return "expert " + std::to_string(expert) + " is already on GPU " + std::to_string(toGpu);
    const Placement before = p;
    int applied = 0;
    std::string r = forLayers(
        p, layer,
        [&](LayerPlacement& l, int li) -> std::string {
            auto& from = l.gpu_slots[static_cast<std::size_t>(fromGpu)];
            auto& to = l.gpu_slots[static_cast<std::size_t>(toGpu)];
            const int k = indexOf(from, expert);
            if (k < 0)
                return layer < 0 ? "-" : "GPU " + std::to_string(fromGpu) + " holds no replica of expert "
                                             + std::to_string(expert) + " in MoE layer " + std::to_string(li);
            if (indexOf(to, expert) >= 0)
                return alreadyHolds(toGpu, expert, li);
            from.erase(from.begin() + k);
            to.push_back(ExpertId(expert));
            if (!l.shares.empty()) {
                auto& fs = l.shares[static_cast<std::size_t>(fromGpu)];
                const double share = fs[static_cast<std::size_t>(k)];
                fs.erase(fs.begin() + k);
                l.shares[static_cast<std::size_t>(toGpu)].push_back(share);
            }
            return {};
        },
        &applied);
    if (r == "-")
        r = "GPU " + std::to_string(fromGpu) + " holds no replica of expert " + std::to_string(expert) + " " + where(layer);
    return finishSlotEdit(p, before, mem, toGpu, applied, r);
}

std::string replicateExpert(Placement& p, const MemoryRule& mem, int layer, int expert, int toGpu)
{
    if (auto bad = checkArgs(p, layer, {expert}, {toGpu}); !bad.empty())
        return bad;
    const Placement before = p;
    int applied = 0;
    std::string r = forLayers(
        p, layer,
        [&](LayerPlacement& l, int li) -> std::string {
            auto& to = l.gpu_slots[static_cast<std::size_t>(toGpu)];
            if (indexOf(to, expert) >= 0)
                return alreadyHolds(toGpu, expert, li);
            to.push_back(ExpertId(expert));
            if (!l.shares.empty()) {
                l.shares[static_cast<std::size_t>(toGpu)].push_back(0.0);
                resplitShares(l, expert);
            }
            return {};
        },
        &applied);
    return finishSlotEdit(p, before, mem, toGpu, applied, r);
}

std::string swapExperts(Placement& p, int layer, int expertA, int gpuA, int expertB, int gpuB)
{
    if (auto bad = checkArgs(p, layer, {expertA, expertB}, {gpuA, gpuB}); !bad.empty())
        return bad;
    if (expertA == expertB)
        return "both chips are expert " + std::to_string(expertA) + ": nothing to swap";
    if (gpuA == gpuB)
        return "experts " + std::to_string(expertA) + " and " + std::to_string(expertB)
               + " are on the same GPU: swapping them changes nothing";
    const Placement before = p;
    std::string r = forLayers(p, layer, [&](LayerPlacement& l, int li) -> std::string {
        auto& a = l.gpu_slots[static_cast<std::size_t>(gpuA)];
        auto& b = l.gpu_slots[static_cast<std::size_t>(gpuB)];
        const int ka = indexOf(a, expertA), kb = indexOf(b, expertB);
        if (ka < 0 || kb < 0)
            return layer < 0 ? "-"
                             : "GPU " + std::to_string(ka < 0 ? gpuA : gpuB) + " holds no replica of expert "
                                   + std::to_string(ka < 0 ? expertA : expertB) + " in MoE layer " + std::to_string(li);
        if (indexOf(a, expertB) >= 0 || indexOf(b, expertA) >= 0)
            return "the swap would put two replicas of expert "
                   + std::to_string(indexOf(a, expertB) >= 0 ? expertB : expertA) + " on GPU "
                   + std::to_string(indexOf(a, expertB) >= 0 ? gpuA : gpuB) + " in MoE layer " + std::to_string(li);
        std::swap(a[static_cast<std::size_t>(ka)], b[static_cast<std::size_t>(kb)]);
        if (!l.shares.empty())
            std::swap(l.shares[static_cast<std::size_t>(gpuA)][static_cast<std::size_t>(ka)],
                      l.shares[static_cast<std::size_t>(gpuB)][static_cast<std::size_t>(kb)]);
        return {};
    });
    if (r == "-")
        r = "no layer has expert " + std::to_string(expertA) + " on GPU " + std::to_string(gpuA) + " and expert "
            + std::to_string(expertB) + " on GPU " + std::to_string(gpuB);
    if (!r.empty()) {
        p = before;
        return r;
    }
    return finalCheck(p, before);
}

std::string removeReplica(Placement& p, int layer, int expert, int gpu)
{
    if (auto bad = checkArgs(p, layer, {expert}, {gpu}); !bad.empty())
        return bad;
    const Placement before = p;
    std::string r = forLayers(p, layer, [&](LayerPlacement& l, int li) -> std::string {
        auto& slots = l.gpu_slots[static_cast<std::size_t>(gpu)];
        const int k = indexOf(slots, expert);
        if (k < 0)
            return layer < 0 ? "-"
                             : "GPU " + std::to_string(gpu) + " holds no replica of expert " + std::to_string(expert)
                                   + " in MoE layer " + std::to_string(li);
        int replicas = 0;
        for (const auto& g : l.gpu_slots)
            replicas += static_cast<int>(std::count(g.begin(), g.end(), ExpertId(expert)));
        if (replicas <= 1)
            return "expert " + std::to_string(expert) + " has no other replica in MoE layer " + std::to_string(li)
                   + ": every expert keeps at least one slot";
        slots.erase(slots.begin() + k);
        if (!l.shares.empty()) {
            auto& s = l.shares[static_cast<std::size_t>(gpu)];
            s.erase(s.begin() + k);
            resplitShares(l, expert);
        }
        return {};
    });
    if (r == "-")
        r = "GPU " + std::to_string(gpu) + " holds no replica of expert " + std::to_string(expert) + " " + where(layer);
    if (!r.empty()) {
        p = before;
        return r;
    }
    return finalCheck(p, before);
}

}  // namespace moex::session
