#include "placement/export_parse_yaml.h"

#include "common/diagnostics.h"
#include "common/yaml_reader.h"

#include <map>

namespace moex {

namespace {

void throwIfErrors(const Diagnostics& d)
{
    if (!d.empty())
        throw InputError(d);
}

// A list of expert ids, each in 0..E-1.
std::optional<std::vector<ExpertId>> expertList(const YAML::Node& node, const std::string& what, int numExperts,
                                                YamlReader& r)
{
    if (!node.IsSequence()) {
        r.error(node, what + " must be a list of expert ids");
        return std::nullopt;
    }
    std::vector<ExpertId> out;
    bool ok = true;
    for (const auto& v : node) {
        auto id = r.asInt(v, "expert id", 0, numExperts - 1);
        ok = ok && id.has_value();
        out.emplace_back(static_cast<std::int32_t>(id.value_or(0)));
    }
    return ok ? std::optional(std::move(out)) : std::nullopt;
}

std::optional<LayerPlacement> gpuLists(const YAML::Node& node, const std::string& what, int numExperts, int numGpus,
                                       YamlReader& r)
{
    if (!node.IsSequence() || static_cast<int>(node.size()) != numGpus) {
        r.error(node, what + " must be a list of " + std::to_string(numGpus) + " GPUs' slot lists");
        return std::nullopt;
    }
    LayerPlacement layer;
    bool ok = true;
    for (std::size_t g = 0; g < node.size(); ++g) {
        auto slots = expertList(node[g], what + ", GPU " + std::to_string(g), numExperts, r);
        ok = ok && slots.has_value();
        layer.gpu_slots.push_back(slots.value_or(std::vector<ExpertId>{}));
    }
    return ok ? std::optional(std::move(layer)) : std::nullopt;
}

}  // namespace

Placement parseTrtllmExport(const std::string& text, const ModelSpec& m, int numGpus, const std::string& file)
{
    Diagnostics diags;
    auto root = parseYaml(text, file, diags);
    throwIfErrors(diags);
    YamlReader r(file, diags);
    // TensorRT-LLM builds a dataclass from these keys: any other key is an error there too.
    if (!r.expectMap(*root, "the load balancer config", {"num_slots", "initial_global_assignments",
                                                         "layer_updates_per_iter"}))
        throwIfErrors(diags);
    const auto slots = r.getInt(*root, "num_slots", true, 1, 1 << 24);
    r.getInt(*root, "layer_updates_per_iter", false, 0, 1 << 30);
    if (slots && numGpus > 0 && *slots % numGpus != 0)
        r.error((*root)["num_slots"], "num_slots = " + std::to_string(*slots) + " does not divide evenly over "
                                          + std::to_string(numGpus) + " EP ranks");
    if (!YamlReader::has(*root, "initial_global_assignments"))
        r.error(*root, "missing key 'initial_global_assignments'");
    throwIfErrors(diags);
    const YAML::Node table = (*root)["initial_global_assignments"];
    if (!table.IsMap()) {
        r.error(table, "initial_global_assignments must map each MoE layer's decoder-layer index to its slots");
        throwIfErrors(diags);
    }
    std::map<int, std::vector<ExpertId>> rows;
    for (auto it = table.begin(); it != table.end(); ++it) {
        const auto layer = r.asInt(it->first, "layer index", 0, m.num_layers + m.mtp_layers - 1);
        if (!layer)
            continue;
        const int d = static_cast<int>(*layer);
        const bool mtp = d >= m.num_layers;  // an MTP layer: checked, not part of the placement
        if (!mtp && !m.isMoeLayer(d)) {
            r.error(it->first, "decoder layer " + std::to_string(d) + " is not an MoE layer of " + m.name);
            continue;
        }
        if (rows.count(d)) {
            r.error(it->first, "layer " + std::to_string(d) + " is listed twice");
            continue;
        }
        auto ids = expertList(it->second, "layer " + std::to_string(d), m.routed_experts, r);
        if (!ids)
            continue;
        if (static_cast<std::int64_t>(ids->size()) != *slots)
            r.error(it->second, "layer " + std::to_string(d) + " lists " + std::to_string(ids->size())
                                    + " slots, but num_slots is " + std::to_string(*slots)
                                    + " (TensorRT-LLM raises ValueError)");
        if (!mtp)
            rows[d] = std::move(*ids);
    }
    for (int d : m.moe_layers)
        if (!rows.count(d))
            r.error(table, "MoE layer " + std::to_string(d) + " is missing (TensorRT-LLM raises KeyError)");
    throwIfErrors(diags);

    Placement p;
    p.num_experts = m.routed_experts;
    const auto perGpu = static_cast<std::size_t>(*slots / numGpus);
    for (int d : m.moe_layers) {
        LayerPlacement layer;
        const auto& row = rows[d];
        for (int g = 0; g < numGpus; ++g)
            layer.gpu_slots.emplace_back(row.begin() + static_cast<std::ptrdiff_t>(g * perGpu),
                                         row.begin() + static_cast<std::ptrdiff_t>((g + 1) * perGpu));
        p.layers.push_back(std::move(layer));
    }
    return p;
}

Placement parseNativeExport(const std::string& text, const ModelSpec& m, int numGpus, const std::string& file)
{
    Diagnostics diags;
    auto root = parseYaml(text, file, diags);
    throwIfErrors(diags);
    YamlReader r(file, diags);
    // A bare export or a whole scenario: either way the layout sits under 'placement'.
    if (!root->IsMap() || !YamlReader::has(*root, "placement")) {
        r.error(*root, "expected a mapping with a 'placement' key");
        throwIfErrors(diags);
    }
    const YAML::Node node = (*root)["placement"];
    r.expectMap(node, "placement", {"strategy", "redundant_slots", "budget_ms", "slots", "layers", "shares"});
    if (auto s = r.getString(node, "strategy", false); s && *s != "explicit")
        r.error(node["strategy"], "a placement with explicit slots must say 'strategy: explicit', not '" + *s + "'");
    const bool hasSlots = YamlReader::has(node, "slots"), hasLayers = YamlReader::has(node, "layers");
    if (hasSlots == hasLayers)
        r.error(node, "give either 'slots' (one layout for every MoE layer) or 'layers' (one per MoE layer)");
    throwIfErrors(diags);

    Placement p;
    p.num_experts = m.routed_experts;
    const int L = m.numMoeLayers();
    if (hasSlots) {
        if (auto layer = gpuLists(node["slots"], "slots", m.routed_experts, numGpus, r))
            p.layers.assign(static_cast<std::size_t>(L), *layer);
    } else {
        const YAML::Node layers = node["layers"];
        if (!layers.IsSequence() || static_cast<int>(layers.size()) != L) {
            r.error(layers, "'layers' must list " + std::to_string(L) + " layouts, one per MoE layer");
            throwIfErrors(diags);
        }
        for (std::size_t l = 0; l < layers.size(); ++l)
            if (auto layer = gpuLists(layers[l], "MoE layer " + std::to_string(l), m.routed_experts, numGpus, r))
                p.layers.push_back(std::move(*layer));
    }
    throwIfErrors(diags);
    if (YamlReader::has(node, "shares")) {
        const YAML::Node sh = node["shares"];
        const auto& first = p.layers.front().gpu_slots;
        std::vector<std::vector<double>> shares;
        bool ok = sh.IsSequence() && sh.size() == first.size();
        for (std::size_t g = 0; ok && g < sh.size(); ++g) {
            ok = sh[g].IsSequence() && sh[g].size() == first[g].size();
            std::vector<double> row;
            for (std::size_t k = 0; ok && k < sh[g].size(); ++k) {
                auto v = r.asDouble(sh[g][k], "share", 0.0, 1.0);
                ok = v.has_value();
                row.push_back(v.value_or(0));
            }
            shares.push_back(std::move(row));
        }
        if (!ok)
            r.error(sh, "'shares' must have the same shape as the slots, each share in [0, 1]");
        for (auto& l : p.layers)
            l.shares = shares;
    }
    throwIfErrors(diags);
    return p;
}

}  // namespace moex
