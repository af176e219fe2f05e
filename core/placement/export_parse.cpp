// Parse-back of the placement exports: each file read as strictly as the system it is meant for
// reads it (FORMATS.md), so a test that parses an export back proves the system can load it.
#include "placement/export_parse_yaml.h"
#include "common/json_input.h"
#include "placement/exporters.h"

#include "common/diagnostics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace moex {

namespace {

using Json = nlohmann::json;

class JsonReader {
public:
    explicit JsonReader(std::string file) : m_file(std::move(file)) {}

    [[noreturn]] void fail(const std::string& message) const { throw InputError(Location{m_file, 0, 0}, message); }

    Json parse(const std::string& text) const { return parseJsonInput(text, m_file, 0, "the placement file"); }

    // An object whose keys are exactly `required` plus any of `optional`.
    void expectKeys(const Json& obj, const std::string& what, const std::vector<std::string>& required) const
    {
        if (!obj.is_object())
            fail(what + " must be a JSON object");
        for (const auto& [key, value] : obj.items())
            if (std::find(required.begin(), required.end(), key) == required.end())
                fail("unknown key '" + key + "' in " + what);
        for (const auto& key : required)
            if (!obj.contains(key))
                fail(what + " lacks the key '" + key + "'");
    }

    int integer(const Json& v, const std::string& what, int min, int max) const
    {
        if (!v.is_number_integer())
            fail(what + " must be an integer");
        const auto x = v.get<std::int64_t>();
        if (x < min || x > max)
            fail(what + " = " + std::to_string(x) + " is outside " + std::to_string(min) + ".." + std::to_string(max));
        return static_cast<int>(x);
    }

    std::vector<int> intRow(const Json& v, const std::string& what, int min, int max) const
    {
        if (!v.is_array())
            fail(what + " must be a list of integers");
        std::vector<int> out;
        out.reserve(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            out.push_back(integer(v[i], what + "[" + std::to_string(i) + "]", min, max));
        return out;
    }

    const Json& array(const Json& v, const std::string& what, std::size_t size) const
    {
        if (!v.is_array() || v.size() != size)
            fail(what + " must be a list of " + std::to_string(size) + " entries"
                 + (v.is_array() ? ", it has " + std::to_string(v.size()) : std::string()));
        return v;
    }

private:
    std::string m_file;
};

// Rank g owns physical slots [g*R/G, (g+1)*R/G) of each row.
Placement fromPhy2log(const std::vector<std::vector<int>>& rows, int numExperts, int numGpus, const JsonReader& r)
{
    Placement p;
    p.num_experts = numExperts;
    for (const auto& row : rows) {
        const int R = static_cast<int>(row.size());
        if (numGpus <= 0 || R % numGpus != 0)
            r.fail(std::to_string(R) + " slots per layer do not divide evenly over " + std::to_string(numGpus)
                   + " GPUs");
        LayerPlacement layer;
        layer.gpu_slots.resize(static_cast<std::size_t>(numGpus));
        for (int s = 0; s < R; ++s)
            layer.gpu_slots[static_cast<std::size_t>(s / (R / numGpus))].emplace_back(row[static_cast<std::size_t>(s)]);
        p.layers.push_back(std::move(layer));
    }
    return p;
}

void requireValid(const Placement& p, int numGpus, const std::string& file)
{
    const auto problems = checkPlacement(p, p.num_experts, numGpus);
    if (problems.empty())
        return;
    Diagnostics d;
    for (const auto& s : problems)
        d.error(Location{file, 0, 0}, "MoE " + s);
    throw InputError(std::move(d));
}

Placement parseSglang(const std::string& text, const ModelSpec& m, int G, const JsonReader& r)
{
    const Json root = r.parse(text);
    if (root.is_object() && root.contains("logical_count") && !root.contains("physical_to_logical_map"))
        r.fail("this file holds 'logical_count' (expert load for SGLang's own EPLB), not a placement");
    r.expectKeys(root, "the SGLang expert location file", {"physical_to_logical_map"});
    const Json& rows = r.array(root["physical_to_logical_map"], "physical_to_logical_map (one row per decoder layer)",
                               static_cast<std::size_t>(m.num_layers));
    std::vector<std::vector<int>> moe;
    std::size_t width = 0;
    for (int d = 0; d < m.num_layers; ++d) {
        const std::string what = "physical_to_logical_map[" + std::to_string(d) + "]";
        auto row = r.intRow(rows[static_cast<std::size_t>(d)], what, 0, m.routed_experts - 1);
        if (d == 0)
            width = row.size();
        if (row.size() != width)
            r.fail(what + " has " + std::to_string(row.size()) + " slots, row 0 has " + std::to_string(width));
        if (m.isMoeLayer(d))
            moe.push_back(std::move(row));
    }
    return fromPhy2log(moe, m.routed_experts, G, r);
}

Placement parseVllmAscend(const std::string& text, const ModelSpec& m, int G, const JsonReader& r)
{
    const Json root = r.parse(text);
    r.expectKeys(root, "the vllm-ascend expert map", {"moe_layer_count", "layer_list"});
    const int L = m.numMoeLayers();
    r.integer(root["moe_layer_count"], "moe_layer_count", L, L);
    const Json& list = r.array(root["layer_list"], "layer_list", static_cast<std::size_t>(L));
    Placement p;
    p.num_experts = m.routed_experts;
    p.layers.resize(static_cast<std::size_t>(L));
    std::vector<bool> seenLayer(static_cast<std::size_t>(L), false);
    std::size_t width = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = "layer_list[" + std::to_string(i) + "]";
        r.expectKeys(list[i], at, {"layer_id", "device_count", "device_list"});
        const int id = r.integer(list[i]["layer_id"], at + ".layer_id (MoE ordinal)", 0, L - 1);
        if (seenLayer[static_cast<std::size_t>(id)])
            r.fail(at + ".layer_id " + std::to_string(id) + " appears twice");
        seenLayer[static_cast<std::size_t>(id)] = true;
        r.integer(list[i]["device_count"], at + ".device_count", G, G);
        const Json& devices = r.array(list[i]["device_list"], at + ".device_list", static_cast<std::size_t>(G));
        auto& slots = p.layers[static_cast<std::size_t>(id)].gpu_slots;
        slots.resize(static_cast<std::size_t>(G));
        std::vector<bool> seenDevice(static_cast<std::size_t>(G), false);
        for (std::size_t k = 0; k < devices.size(); ++k) {
            const std::string dat = at + ".device_list[" + std::to_string(k) + "]";
            r.expectKeys(devices[k], dat, {"device_id", "device_expert"});
            const int dev = r.integer(devices[k]["device_id"], dat + ".device_id", 0, G - 1);
            if (seenDevice[static_cast<std::size_t>(dev)])
                r.fail(dat + ".device_id " + std::to_string(dev) + " appears twice");
            seenDevice[static_cast<std::size_t>(dev)] = true;
            const auto experts = r.intRow(devices[k]["device_expert"], dat + ".device_expert", 0, m.routed_experts - 1);
            if (i == 0 && k == 0)
                width = experts.size();
            if (experts.size() != width)
                r.fail(dat + ".device_expert has " + std::to_string(experts.size())
                       + " experts, the first device has " + std::to_string(width) + " (all must be equal)");
            for (int e : experts)
                slots[static_cast<std::size_t>(dev)].emplace_back(e);
        }
    }
    return p;
}

Placement parseEplb(const std::string& text, const ModelSpec& m, int G, const JsonReader& r)
{
    const Json root = r.parse(text);
    r.expectKeys(root, "the EPLB tensors", {"phy2log", "log2phy", "logcnt"});
    const auto L = static_cast<std::size_t>(m.numMoeLayers());
    const int E = m.routed_experts;
    const Json& phy = r.array(root["phy2log"], "phy2log", L);
    const Json& cnt = r.array(root["logcnt"], "logcnt", L);
    const Json& l2p = r.array(root["log2phy"], "log2phy", L);
    std::vector<std::vector<int>> rows;
    std::size_t maxCnt = 0;
    for (std::size_t l = 0; l < L; ++l) {
        const std::string at = "[" + std::to_string(l) + "]";
        rows.push_back(r.intRow(phy[l], "phy2log" + at, 0, E - 1));
        if (rows.back().size() != rows.front().size())
            r.fail("phy2log" + at + " has " + std::to_string(rows.back().size()) + " slots, row 0 has "
                   + std::to_string(rows.front().size()));
        const int R = static_cast<int>(rows.back().size());
        const auto counts = r.intRow(r.array(cnt[l], "logcnt" + at, static_cast<std::size_t>(E)), "logcnt" + at, 0, R);
        std::vector<std::vector<int>> slotsOf(static_cast<std::size_t>(E));
        for (int s = 0; s < R; ++s)
            slotsOf[static_cast<std::size_t>(rows.back()[static_cast<std::size_t>(s)])].push_back(s);
        const Json& table = r.array(l2p[l], "log2phy" + at, static_cast<std::size_t>(E));
        for (int e = 0; e < E; ++e) {
            const std::string eat = at + "[" + std::to_string(e) + "]";
            auto& mine = slotsOf[static_cast<std::size_t>(e)];
            if (counts[static_cast<std::size_t>(e)] != static_cast<int>(mine.size()))
                r.fail("logcnt" + eat + " = " + std::to_string(counts[static_cast<std::size_t>(e)]) + ", but phy2log"
                       + at + " holds expert " + std::to_string(e) + " " + std::to_string(mine.size()) + " times");
            auto listed = r.intRow(table[static_cast<std::size_t>(e)], "log2phy" + eat, -1, R - 1);
            if (maxCnt == 0)
                maxCnt = listed.size();
            if (listed.size() != maxCnt)
                r.fail("log2phy" + eat + " has " + std::to_string(listed.size()) + " entries, log2phy[0][0] has "
                       + std::to_string(maxCnt) + " (one padded width for all)");
            // The first logcnt entries are the expert's slots (any order), the rest -1.
            const auto n = mine.size();
            bool ok = n <= listed.size() && std::all_of(listed.begin() + static_cast<std::ptrdiff_t>(n), listed.end(),
                                                        [](int v) { return v == -1; });
            if (ok) {
                std::vector<int> head(listed.begin(), listed.begin() + static_cast<std::ptrdiff_t>(n));
                std::sort(head.begin(), head.end());
                ok = head == mine;
            }
            if (!ok)
                r.fail("log2phy" + eat + " does not list exactly the slots of expert " + std::to_string(e)
                       + " in phy2log" + at + ", padded with -1");
        }
    }
    return fromPhy2log(rows, E, G, r);
}

}  // namespace

Placement parsePlacementExport(const std::string& text, const ModelSpec& model, int numGpus, ExportFormat fmt,
                               const std::string& file)
{
    return withJsonErrors(file, 0, [&] {
        const std::string name = file.empty() ? "<" + std::string(toString(fmt)) + " export>" : file;
        if (numGpus <= 0)
            throw std::invalid_argument("parsing a placement export needs a positive GPU count");
        if (model.numMoeLayers() == 0 || model.routed_experts <= 0)
            throw InputError(Location{name, 0, 0}, "the model " + model.name + " has no routed experts to place");
        Placement p;
        const JsonReader r(name);
        switch (fmt) {
        case ExportFormat::sglang: p = parseSglang(text, model, numGpus, r); break;
        case ExportFormat::vllm_ascend: p = parseVllmAscend(text, model, numGpus, r); break;
        case ExportFormat::eplb: p = parseEplb(text, model, numGpus, r); break;
        case ExportFormat::trtllm: p = parseTrtllmExport(text, model, numGpus, name); break;
        case ExportFormat::native: p = parseNativeExport(text, model, numGpus, name); break;
        }
        requireValid(p, numGpus, name);
        return p;
    });
}

}  // namespace moex
