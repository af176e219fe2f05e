#include "placement_edits.h"

#include "sim/compute_model.h"
#include "sim/scenario_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>

namespace moex::session {

namespace {

using Slots = std::vector<ExpertId>;

std::string gb(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
    return buf;
}

std::string str(ExpertId e) { return std::to_string(e.value); }
std::string str(GpuId g) { return std::to_string(g.value); }

// Where in the GPU's slot list the expert sits, if it does.
std::optional<std::size_t> indexOf(const Slots& slots, ExpertId expert)
{
    const auto it = std::find(slots.begin(), slots.end(), expert);
    if (it == slots.end())
        return std::nullopt;
    return static_cast<std::size_t>(it - slots.begin());
}

Slots& slotsOf(LayerPlacement& l, GpuId g) { return l.gpu_slots[g.index()]; }
std::vector<double>& sharesOf(LayerPlacement& l, GpuId g) { return l.shares[g.index()]; }

std::string where(MoeLayers layers)
{
    return layers.isAll() ? std::string("in any layer") : "in MoE layer " + std::to_string(layers.layer().value);
}

std::string inLayer(MoeLayerId layer) { return "in MoE layer " + std::to_string(layer.value); }

std::string checkArgs(const Placement& p, MoeLayers layers, std::initializer_list<ExpertId> experts,
                      std::initializer_list<GpuId> gpus)
{
    if (!layers.isAll() && (!layers.layer().valid() || layers.layer().value >= p.numLayers()))
        return "MoE layer " + std::to_string(layers.layer().value) + " does not exist (0.." + std::to_string(p.numLayers() - 1) + ")";
    for (ExpertId e : experts)
        if (!e.valid() || e.value >= p.num_experts)
            return "expert " + str(e) + " does not exist (0.." + std::to_string(p.num_experts - 1) + ")";
    for (GpuId g : gpus)
        if (!g.valid() || g.value >= p.numGpus())
            return "GPU " + str(g) + " does not exist (0.." + std::to_string(p.numGpus() - 1) + ")";
    return {};
}

// What an edit did to one layer.
struct LayerEdit {
    enum class Outcome {
        applied,
        notHere,  // what it edits is not in this layer: skipped when editing every layer
        refused,
    };
    Outcome outcome = Outcome::applied;
    std::string reason;  // notHere (used when only this layer was asked for) and refused

    static LayerEdit done() { return {}; }
    static LayerEdit notHere(std::string why) { return {Outcome::notHere, std::move(why)}; }
    static LayerEdit refuse(std::string why) { return {Outcome::refused, std::move(why)}; }
};

// What an edit of the chosen layers did: how many layers it changed, and why not, when none.
struct EditTally {
    int applied = 0;
    std::string refusal;  // "" when at least one layer changed
};

// Applies `edit` to the chosen layer or to each layer. Editing every layer, layers where the edit
// does not apply are skipped, and when it applied nowhere the refusal is the last layer's, or
// `nowhere` when no layer refused.
EditTally forLayers(Placement& p, MoeLayers layers, const std::function<LayerEdit(LayerPlacement&, MoeLayerId)>& edit,
                    const std::string& nowhere)
{
    EditTally tally;
    if (!layers.isAll()) {
        LayerEdit r = edit(p.layers[layers.layer().index()], layers.layer());
        if (r.outcome == LayerEdit::Outcome::applied)
            tally.applied = 1;
        else
            tally.refusal = std::move(r.reason);
        return tally;
    }
    std::string lastRefusal;
    for (int l = 0; l < p.numLayers(); ++l) {
        LayerEdit r = edit(p.layers[static_cast<std::size_t>(l)], MoeLayerId(l));
        if (r.outcome == LayerEdit::Outcome::applied)
            ++tally.applied;
        else if (r.outcome == LayerEdit::Outcome::refused)
            lastRefusal = std::move(r.reason);
    }
    if (tally.applied == 0)
        tally.refusal = lastRefusal.empty() ? nowhere : lastRefusal;
    return tally;
}

std::string memoryRefusal(const Placement& p, const MemoryRule& mem, GpuId gpu, long long added)
{
    if (added <= 0 || mem.expert_bytes <= 0)
        return {};
    const long long now = slotsOnGpu(p, gpu);
    const long long limit = mem.maxSlotsPerGpu();
    if (now + added <= limit)
        return {};
    return "GPU " + str(gpu) + " is out of memory: " + std::to_string(now + added) + " expert slots ("
           + gb(static_cast<double>(now + added) * mem.expert_bytes) + ") + " + gb(mem.fixed_bytes)
           + " other weights and reserve leave no room for the KV cache of one sequence in "
           + gb(mem.usable_bytes) + " of HBM (at most " + std::to_string(std::max(0LL, limit)) + " slots fit)";
}

void resplitShares(LayerPlacement& l, ExpertId expert)
{
    if (l.shares.empty())
        return;
    int n = 0;
    for (const auto& g : l.gpu_slots)
        n += static_cast<int>(std::count(g.begin(), g.end(), expert));
    if (n == 0)
        return;
    for (std::size_t g = 0; g < l.gpu_slots.size(); ++g)
        for (std::size_t k = 0; k < l.gpu_slots[g].size(); ++k)
            if (l.gpu_slots[g][k] == expert)
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

std::string alreadyHolds(GpuId gpu, ExpertId expert, MoeLayerId layer)
{
    return "GPU " + str(gpu) + " already holds a replica of expert " + str(expert) + " " + inLayer(layer)
           + "; two replicas on one GPU add nothing";
}

std::string holdsNo(GpuId gpu, ExpertId expert) { return "GPU " + str(gpu) + " holds no replica of expert " + str(expert); }

// The end of an edit that puts `tally.applied` slots on `toGpu`: a refusal from the per-layer
// step, else the memory rule, else the structural check; any refusal restores `before`.
std::string finishSlotEdit(Placement& p, const Placement& before, const MemoryRule& mem, GpuId toGpu,
                           const EditTally& tally)
{
    if (!tally.refusal.empty()) {
        p = before;
        return tally.refusal;
    }
    if (auto m = memoryRefusal(before, mem, toGpu, tally.applied); !m.empty()) {
        p = before;
        return m;
    }
    return finalCheck(p, before);
}

// The end of an edit that adds no slot: a refusal restores `before`, else the structural check.
std::string finishEdit(Placement& p, const Placement& before, const EditTally& tally)
{
    if (!tally.refusal.empty()) {
        p = before;
        return tally.refusal;
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

long long slotsOnGpu(const Placement& p, GpuId gpu)
{
    long long n = 0;
    for (const auto& l : p.layers)
        n += static_cast<long long>(l.gpu_slots[gpu.index()].size());
    return n;
}

std::string moveExpert(Placement& p, const MemoryRule& mem, MoeLayers layers, ExpertId expert, GpuId fromGpu,
                       GpuId toGpu)
{
    if (auto bad = checkArgs(p, layers, {expert}, {fromGpu, toGpu}); !bad.empty())
        return bad;
    if (fromGpu == toGpu)
        return "expert " + str(expert) + " is already on GPU " + str(toGpu);
    const Placement before = p;
    const EditTally tally = forLayers(
        p, layers,
        [&](LayerPlacement& l, MoeLayerId li) {
            auto& from = slotsOf(l, fromGpu);
            auto& to = slotsOf(l, toGpu);
            const auto k = indexOf(from, expert);
            if (!k)
                return LayerEdit::notHere(holdsNo(fromGpu, expert) + " " + inLayer(li));
            if (indexOf(to, expert))
                return LayerEdit::refuse(alreadyHolds(toGpu, expert, li));
            from.erase(from.begin() + static_cast<std::ptrdiff_t>(*k));
            to.push_back(expert);
            if (!l.shares.empty()) {
                auto& fs = sharesOf(l, fromGpu);
                const double share = fs[*k];
                fs.erase(fs.begin() + static_cast<std::ptrdiff_t>(*k));
                sharesOf(l, toGpu).push_back(share);
            }
            return LayerEdit::done();
        },
        holdsNo(fromGpu, expert) + " " + where(layers));
    return finishSlotEdit(p, before, mem, toGpu, tally);
}

std::string replicateExpert(Placement& p, const MemoryRule& mem, MoeLayers layers, ExpertId expert, GpuId toGpu)
{
    if (auto bad = checkArgs(p, layers, {expert}, {toGpu}); !bad.empty())
        return bad;
    const Placement before = p;
    const EditTally tally = forLayers(
        p, layers,
        [&](LayerPlacement& l, MoeLayerId li) {
            auto& to = slotsOf(l, toGpu);
            if (indexOf(to, expert))
                return LayerEdit::refuse(alreadyHolds(toGpu, expert, li));
            to.push_back(expert);
            if (!l.shares.empty()) {
                sharesOf(l, toGpu).push_back(0.0);
                resplitShares(l, expert);
            }
            return LayerEdit::done();
        },
        "the placement has no MoE layer to replicate expert " + str(expert) + " in");
    return finishSlotEdit(p, before, mem, toGpu, tally);
}

std::string swapExperts(Placement& p, MoeLayers layers, ExpertId expertA, GpuId gpuA, ExpertId expertB, GpuId gpuB)
{
    if (auto bad = checkArgs(p, layers, {expertA, expertB}, {gpuA, gpuB}); !bad.empty())
        return bad;
    if (expertA == expertB)
        return "both chips are expert " + str(expertA) + ": nothing to swap";
    if (gpuA == gpuB)
        return "experts " + str(expertA) + " and " + str(expertB) + " are on the same GPU: swapping them changes nothing";
    const Placement before = p;
    const EditTally tally = forLayers(
        p, layers,
        [&](LayerPlacement& l, MoeLayerId li) {
            auto& a = slotsOf(l, gpuA);
            auto& b = slotsOf(l, gpuB);
            const auto ka = indexOf(a, expertA), kb = indexOf(b, expertB);
            if (!ka || !kb)
                return LayerEdit::notHere(!ka ? holdsNo(gpuA, expertA) + " " + inLayer(li)
                                              : holdsNo(gpuB, expertB) + " " + inLayer(li));
            const bool aGetsTwo = indexOf(a, expertB).has_value();
            if (aGetsTwo || indexOf(b, expertA))
                return LayerEdit::refuse("the swap would put two replicas of expert " + str(aGetsTwo ? expertB : expertA)
                                         + " on GPU " + str(aGetsTwo ? gpuA : gpuB) + " " + inLayer(li));
            std::swap(a[*ka], b[*kb]);
            if (!l.shares.empty())
                std::swap(sharesOf(l, gpuA)[*ka], sharesOf(l, gpuB)[*kb]);
            return LayerEdit::done();
        },
        "no layer has expert " + str(expertA) + " on GPU " + str(gpuA) + " and expert " + str(expertB) + " on GPU "
            + str(gpuB));
    return finishEdit(p, before, tally);
}

std::string removeReplica(Placement& p, MoeLayers layers, ExpertId expert, GpuId gpu)
{
    if (auto bad = checkArgs(p, layers, {expert}, {gpu}); !bad.empty())
        return bad;
    const Placement before = p;
    const EditTally tally = forLayers(
        p, layers,
        [&](LayerPlacement& l, MoeLayerId li) {
            auto& slots = slotsOf(l, gpu);
            const auto k = indexOf(slots, expert);
            if (!k)
                return LayerEdit::notHere(holdsNo(gpu, expert) + " " + inLayer(li));
            int replicas = 0;
            for (const auto& g : l.gpu_slots)
                replicas += static_cast<int>(std::count(g.begin(), g.end(), expert));
            if (replicas <= 1)
                return LayerEdit::refuse("expert " + str(expert) + " has no other replica " + inLayer(li)
                                         + ": every expert keeps at least one slot");
            slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(*k));
            if (!l.shares.empty()) {
                auto& s = sharesOf(l, gpu);
                s.erase(s.begin() + static_cast<std::ptrdiff_t>(*k));
                resplitShares(l, expert);
            }
            return LayerEdit::done();
        },
        holdsNo(gpu, expert) + " " + where(layers));
    return finishEdit(p, before, tally);
}

}  // namespace moex::session
