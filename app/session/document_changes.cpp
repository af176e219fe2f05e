#include "document_changes.h"

#include "common/diagnostics.h"
#include "sim/scenario_run.h"

#include <cmath>
#include <utility>

namespace moex::session {

namespace {

bool sameShape(const Placement& p, const Scenario& s)
{
    return p.num_experts == s.model.routed_experts && p.numLayers() == s.model.numMoeLayers()
           && p.numGpus() == s.topology.numGpus();
}

// The regenerated text of `base` with key=value, validated. Paths are absolute in the regenerated
// text; the label makes messages say which change failed.
Scenario reread(const Scenario& base, const std::string& key, const std::string& value)
{
    const std::string label = "<with " + key + "=" + value + ">";
    Scenario s = loadScenarioText(scenarioToYaml(base, std::string()), label, {{key, value}});
    s.file = base.file;
    return s;
}

PreparedChange overrideFrom(const DocumentState& current, const Scenario& base, const std::string& key,
                            const std::string& value, const CancelToken& cancel)
{
    Scenario s = reread(base, key, value);
    cancel.check();
    PreparedChange out;
    out.state.base_spec = s.placement;
    bool keep = current.placement_edited && key.rfind("placement.", 0) != 0 && key != "placement";
    if (keep && (!sameShape(current.placement, s)
                 || !checkPlacement(current.placement, s.model.routed_experts, s.topology.numGpus()).empty()))
        keep = false;  // the hand-edited placement does not fit the new shape: the strategy decides again
    if (keep) {
        out.state.placement = current.placement;
        s.placement.strategy = "explicit";
        s.placement.explicit_slots = out.state.placement;
    } else {
        out.state.placement = resolvePlacement(s, {}, 1, cancel);
    }
    out.memory = memoryRuleOf(s);
    out.state.scenario = std::move(s);
    out.state.placement_edited = keep;
    return out;
}

// Strategies that need the slots to divide evenly over the GPUs (strategies.h).
bool evenSlots(const std::string& strategy)
{
    return strategy == "eplb" || strategy == "eplb-exact" || strategy == "gem" || strategy == "search";
}

}  // namespace

PreparedChange prepareOverride(const DocumentState& current, const std::string& key, const std::string& value,
                               const CancelToken& cancel)
{
    Scenario base = current.scenario;
    base.placement = current.base_spec;
    try {
        return overrideFrom(current, base, key, value, cancel);
    } catch (const InputError& first) {
        // A new topology refused for what the old one allowed: per-GPU speeds of GPUs it lacks,
        // redundant slots its GPU count does not divide. Make the companion change and say so.
        if (key.rfind("topology", 0) != 0 || (base.speeds.per_gpu.empty() && base.placement.redundant_slots == 0))
            throw;
        Scenario probeBase = base;
        probeBase.speeds.per_gpu.clear();
        probeBase.placement.redundant_slots = 0;
        Scenario probe;
        try {
            probe = reread(probeBase, key, value);
        } catch (const InputError&) {
            throw first;  // refused for another reason: say that one
        }
        const int gpus = probe.topology.numGpus();
        std::string note;
        int dropped = 0;
        for (auto it = base.speeds.per_gpu.begin(); it != base.speeds.per_gpu.end();)
            if (it->first >= gpus) {
                it = base.speeds.per_gpu.erase(it);
                ++dropped;
            } else {
                ++it;
            }
        if (dropped > 0)
            note += "dropped the speeds of " + std::to_string(dropped) + (dropped == 1 ? " GPU" : " GPUs") + " that the new topology ("
                    + std::to_string(gpus) + " GPUs) does not have";
        // eplb, gem and search need the slots (experts + redundant) to divide evenly over the GPUs:
        // the nearest redundant count that does.
        const int r = base.placement.redundant_slots;
        const int experts = probe.model.routed_experts;
        if (r > 0 && gpus > 0 && evenSlots(base.placement.strategy) && (experts + r) % gpus != 0) {
            const int lo = (experts + r) / gpus * gpus - experts;
            const int hi = lo + gpus;
            const int rounded = lo >= 0 && r - lo <= hi - r ? lo : hi;
            base.placement.redundant_slots = rounded;
            if (!note.empty())
                note += "; ";
            note += "redundant slots " + std::to_string(r) + " -> " + std::to_string(rounded) + " (" +
                    base.placement.strategy + " needs the " + std::to_string(experts + rounded) +
                    " slots to divide evenly over the " + std::to_string(gpus) + " GPUs)";
        }
        if (note.empty())
            throw;
        try {
            PreparedChange out = overrideFrom(current, base, key, value, cancel);
            out.note = std::move(note);
            return out;
        } catch (const InputError&) {
            throw first;
        }
    }
}

PreparedChange prepareScenario(Scenario s, const CancelToken& cancel)
{
    PreparedChange out;
    out.state.placement = resolvePlacement(s, {}, 1, cancel);
    out.memory = memoryRuleOf(s);
    out.state.base_spec = s.placement;
    out.state.scenario = std::move(s);
    return out;
}

PreparedChange prepareLoad(const std::string& path, const Overrides& overrides, const CancelToken& cancel)
{
    return prepareScenario(loadScenarioFile(path, overrides), cancel);
}

}  // namespace moex::session
