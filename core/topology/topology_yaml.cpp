// Reading topologies from YAML: the {builtin: ...} form and custom graphs. Every problem is
// reported at its node (FILE:LINE:COL) and reading goes on, so one pass lists them all.
#include "topology/topology_yaml.h"

#include "common/atomic_file.h"
#include "common/file_kinds.h"
#include "common/number_text.h"
#include "topology/topology_detail.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace moex {

namespace {

const std::vector<std::string> kParamKeys{"builtin",      "racks",   "nodes",      "gpus_per_node",
                                          "nics_per_gpu", "nic_gbs", "nvlink_gbs", "gpus_per_leaf", "ranks"};
const std::vector<std::string> kCustomKeys{"name", "gpu", "pxn", "switch_power_w", "nodes", "links"};
const std::vector<std::string> kNodeKeys{"name", "kind", "domain", "rack", "tray", "board", "slot", "gpu"};
const std::vector<std::string> kLinkKeys{"from", "to", "kind", "gbs", "latency_us", "bidirectional"};
const std::vector<std::string> kGpuKeys{"base",         "name",        "arch",       "hbm_gb",     "hbm_usable_gb",
                                        "hbm_bw_gbs",   "bf16_tflops", "fp8_tflops", "fp4_tflops", "nvlink_gbs_per_dir",
                                        "nvlink_links", "tdp_w",       "idle_w"};
const std::vector<std::string> kNodeKinds{"gpu", "nvswitch", "nic", "leaf", "spine", "cpu"};
const std::vector<std::string> kLinkKinds{"nvlink", "network", "c2c", "pcie"};

constexpr std::size_t kMaxCustomGpus = 2048;  // see readCustomTopology
constexpr double kMaxRate = 1e9;  // GB/s, TFLOP/s, W: far above any real part, catches unit slips
// The least bandwidth (GB/s) or compute rate (TFLOP/s) a link or a GPU may have: 1 MB/s, a
// GFLOP/s, far below any real part (a 1 Gb/s Ethernet port is 0.125 GB/s). Below it a step's
// time overflows to numbers that mean nothing (1e-300 GB/s gave a 63-digit step time).
constexpr double kMinRate = 1e-3;

std::string listOf(const std::vector<std::string>& items)
{
    std::string out;
    for (const auto& s : items)
        out += (out.empty() ? "" : ", ") + s;
    return out;
}

std::string withHint(std::string msg, const std::string& word, const std::vector<std::string>& candidates)
{
    const std::string hint = didYouMean(word, candidates);
    if (!hint.empty())
        msg += "; did you mean '" + hint + "'?";
    return msg;
}

YAML::Node child(const YAML::Node& map, const std::string& key)
{
    const YAML::Node& c = map;  // const access: operator[] on a non-const node would insert the key
    return c[key];
}

// A strictly positive rate (capacity, bandwidth override); NaN and infinity are reported by asDouble.
std::optional<double> positive(YamlReader& r, const YAML::Node& map, const std::string& key, bool required,
                               const std::string& what)
{
    auto v = r.getDouble(map, key, required, std::numeric_limits<double>::lowest(), kMaxRate);
    if (v && !(*v > 0)) {
        r.error(child(map, key), what + " '" + key + "' must be positive, got " + shortestNumber(*v));
        return std::nullopt;
    }
    if (v && *v < kMinRate) {
        r.error(child(map, key), what + " '" + key + "' must be at least " + shortestNumber(kMinRate) + " GB/s (1 MB/s), got "
                                     + shortestNumber(*v));
        return std::nullopt;
    }
    return v;
}

double defaultLatency(LinkKind k)
{
    switch (k) {
    case LinkKind::nvlink: return detail::kNvlinkLinkUs;
    case LinkKind::network: return detail::kNetworkLinkUs;
    case LinkKind::c2c: return detail::kC2cLinkUs;
    case LinkKind::pcie: return detail::kPcieNicLinkUs;
    }
    return 0;
}

std::optional<GpuSpec> readGpuSpec(const YAML::Node& node, YamlReader& r)
{
    const std::vector<std::string> keys = detail::builtinGpuNames();
    auto fromKey = [&](const YAML::Node& n) -> std::optional<GpuSpec> {
        if (const GpuSpec* s = n.IsScalar() ? builtinGpu(n.Scalar()) : nullptr)
            return *s;
        const std::string got = n.IsScalar() ? n.Scalar() : std::string();
        r.error(n, withHint("unknown GPU '" + got + "'; built-in GPUs: " + listOf(keys), got, keys));
        return std::nullopt;
    };
    if (node.IsScalar())
        return fromKey(node);
    if (!r.expectMap(node, "gpu", kGpuKeys))
        return std::nullopt;
    const std::size_t before = r.errorCount();
    GpuSpec s;
    const bool hasBase = YamlReader::has(node, "base");
    if (hasBase) {
        auto base = fromKey(child(node, "base"));
        if (!base)
            return std::nullopt;
        s = *base;
    }
    // Without a base the essentials are required; the rest default to 0 (fp4 0 = no FP4 rate).
    const bool req = !hasBase;
    if (auto v = r.getName(node, "name", req))
        s.name = *v;
    if (auto v = r.getChoice(node, "arch", false, {"hopper", "blackwell", "cpu"}))
        s.arch = *v == 0 ? GpuArch::hopper : *v == 1 ? GpuArch::blackwell : GpuArch::cpu;
    const bool usableGiven = YamlReader::has(node, "hbm_usable_gb");
    // `least` > 0: a quantity every GPU has (memory, its bandwidth, the bf16 rate, power), at least
    // that much; 0: one a part may lack (0 = no FP8 or FP4 rate, no NVLink, no idle figure).
    auto number = [&](const char* key, bool required, double& field, double least) {
        const auto v = r.getDouble(node, key, required, 0, kMaxRate);
        if (v && *v < least) {
            r.error(child(node, key), std::string("'") + key + "' must be at least " + shortestNumber(least) + ", got "
                                          + shortestNumber(*v) + " (every GPU has it; 0 does not mean unset)");
            return;
        }
        if (v)
            field = *v;
    };
    number("hbm_gb", req, s.hbm_gb, kMinRate);
    number("hbm_usable_gb", false, s.hbm_usable_gb, kMinRate);
    if (!hasBase && !usableGiven)
        s.hbm_usable_gb = s.hbm_gb;
    number("hbm_bw_gbs", req, s.hbm_bw_gbs, kMinRate);
    number("bf16_tflops", req, s.bf16_tflops, kMinRate);
    number("fp8_tflops", false, s.fp8_tflops, 0);
    number("fp4_tflops", false, s.fp4_tflops, 0);
    number("nvlink_gbs_per_dir", false, s.nvlink_gbs_per_dir, 0);
    if (auto v = r.getInt(node, "nvlink_links", false, 0, 1000))
        s.nvlink_links = static_cast<int>(*v);
    // A CPU engine rank (arch cpu, the host-cpu topology) has no power model: tdp_w 0.
    number("tdp_w", req, s.tdp_w, s.arch == GpuArch::cpu ? 0 : 1);
    number("idle_w", false, s.idle_w, 0);
    if (r.errorCount() == before && s.hbm_usable_gb > s.hbm_gb)
        r.error(node, "hbm_usable_gb (" + shortestNumber(s.hbm_usable_gb) + ") exceeds hbm_gb (" +
                          shortestNumber(s.hbm_gb) + ")");
    if (r.errorCount() == before && s.idle_w > s.tdp_w)
        r.error(node, "idle_w exceeds tdp_w");
    if (r.errorCount() != before)
        return std::nullopt;
    return s;
}

struct NodeEntry {
    TopoNode node;
    YAML::Node yaml;
    YAML::Node gpuRef;  // for a NIC: the 'gpu' value naming its GPU (when hasGpuRef)
    bool hasGpuRef = false;
};

// The nodes of a custom topology as read, in file order, and their names.
struct NodeTable {
    std::vector<NodeEntry> entries;
    std::map<std::string, std::size_t> byName;
    std::vector<std::string> allNames;
    std::vector<std::string> gpuNames;

    // A reference to a node by name (`gpuOnly`: a NIC's 'gpu'); an error at `ref` when it names none.
    std::optional<std::size_t> lookup(YamlReader& reader, const YAML::Node& ref, const std::string& what,
                                      bool gpuOnly) const
    {
        if (!ref.IsScalar()) {
            reader.error(ref, "'" + what + "' must name a node");
            return std::nullopt;
        }
        const auto it = byName.find(ref.Scalar());
        if (it == byName.end() || (gpuOnly && entries[it->second].node.kind != NodeKind::gpu)) {
            reader.error(
                ref, withHint("'" + what + "' names unknown " + (gpuOnly ? "gpu" : "node") + " '" + ref.Scalar() + "'",
                              ref.Scalar(), gpuOnly ? gpuNames : allNames));
            return std::nullopt;
        }
        return it->second;
    }
};

struct LinkEntry {
    std::size_t from, to;  // into NodeTable::entries
    LinkKind kind;
    double gbs, latency;
    bool both;
    YAML::Node yaml;
};

// One entry of 'nodes'; nullopt (errors reported) when it cannot be a node.
std::optional<NodeEntry> readNode(const YAML::Node& item, YamlReader& reader)
{
    if (!reader.expectMap(item, "topology node", kNodeKeys))
        return std::nullopt;
    NodeEntry e;
    e.yaml = item;
    auto name = reader.getName(item, "name", true);
    auto kind = reader.getChoice(item, "kind", true, kNodeKinds);
    if (!name || !kind)
        return std::nullopt;
    e.node.name = *name;
    e.node.kind = static_cast<NodeKind>(*kind);
    const bool inDomain = e.node.kind == NodeKind::gpu || e.node.kind == NodeKind::nvswitch;
    e.node.domain = static_cast<int>(reader.getInt(item, "domain", false, -1, 1 << 20).value_or(inDomain ? 0 : -1));
    if (e.node.kind == NodeKind::gpu && e.node.domain < 0)
        reader.error(child(item, "domain"), "a gpu needs an NVLink domain >= 0");
    e.node.pos.rack = static_cast<int>(reader.getInt(item, "rack", false, 0, 1 << 20).value_or(0));
    e.node.pos.tray = static_cast<int>(reader.getInt(item, "tray", false, 0, 1 << 20).value_or(0));
    e.node.pos.board = static_cast<int>(reader.getInt(item, "board", false, 0, 1 << 20).value_or(0));
    e.node.pos.slot = static_cast<int>(reader.getInt(item, "slot", false, 0, 1 << 20).value_or(0));
    if (YamlReader::has(item, "gpu")) {
        if (e.node.kind != NodeKind::nic) {
            reader.error(child(item, "gpu"), "'gpu' names the GPU a NIC serves; only nic nodes have it");
        } else {
            e.gpuRef = child(item, "gpu");
            e.hasGpuRef = true;
        }
    }
    return e;
}

// Phase 1: 'nodes', each name once; GPUs numbered in file order.
NodeTable readNodes(const YAML::Node& node, YamlReader& reader)
{
    NodeTable table;
    const YAML::Node nodes = child(node, "nodes");
    if (!nodes) {
        reader.error(node, "missing required key 'nodes'");
        return table;
    }
    if (!nodes.IsSequence()) {
        reader.error(nodes, "'nodes' must be a list of nodes");
        return table;
    }
    for (const YAML::Node& item : nodes) {
        std::optional<NodeEntry> e = readNode(item, reader);
        if (!e)
            continue;
        if (auto it = table.byName.find(e->node.name); it != table.byName.end()) {
            reader.error(child(item, "name"), "duplicate node name '" + e->node.name + "' (first defined at line " +
                                                  std::to_string(reader.at(table.entries[it->second].yaml).line) + ")");
            continue;
        }
        table.byName.emplace(e->node.name, table.entries.size());
        table.allNames.push_back(e->node.name);
        if (e->node.kind == NodeKind::gpu) {
            e->node.gpu = GpuId(static_cast<std::int32_t>(table.gpuNames.size()));
            table.gpuNames.push_back(e->node.name);
        }
        table.entries.push_back(std::move(*e));
    }
    if (table.gpuNames.empty())
        reader.error(nodes, "the topology has no gpu nodes");
    return table;
}

// Phase 2: 'links', between nodes the table knows.
std::vector<LinkEntry> readLinks(const YAML::Node& node, YamlReader& reader, const NodeTable& table)
{
    std::vector<LinkEntry> links;
    const YAML::Node linkSeq = child(node, "links");
    if (!linkSeq)
        return links;
    if (!linkSeq.IsSequence()) {
        reader.error(linkSeq, "'links' must be a list of links");
        return links;
    }
    for (const YAML::Node& item : linkSeq) {
        if (!reader.expectMap(item, "topology link", kLinkKeys))
            continue;
        std::optional<std::size_t> from, to;
        if (YamlReader::has(item, "from"))
            from = table.lookup(reader, child(item, "from"), "from", false);
        else
            reader.error(item, "missing required key 'from'");
        if (YamlReader::has(item, "to"))
            to = table.lookup(reader, child(item, "to"), "to", false);
        else
            reader.error(item, "missing required key 'to'");
        auto kind = reader.getChoice(item, "kind", true, kLinkKinds);
        auto gbs = positive(reader, item, "gbs", true, "link capacity");
        auto latency = reader.getDouble(item, "latency_us", false, 0, 1e6);
        const bool both = reader.getBool(item, "bidirectional", false).value_or(true);
        if (from && to && *from == *to)
            reader.error(item, "link from '" + table.entries[*from].node.name + "' to itself");
        if (!from || !to || !kind || !gbs || *from == *to)
            continue;
        const auto k = static_cast<LinkKind>(*kind);
        links.push_back({*from, *to, k, *gbs, latency.value_or(defaultLatency(k)), both, item});
    }
    return links;
}

// Phase 3: a NIC serves the GPU it names (which it must be linked to both ways), or else the one
// GPU it is linked to.
void assignNicGpus(NodeTable& table, const std::vector<LinkEntry>& links, YamlReader& reader)
{
    for (NodeEntry& e : table.entries) {
        if (e.node.kind != NodeKind::nic)
            continue;
        const std::size_t self = static_cast<std::size_t>(&e - table.entries.data());
        if (e.hasGpuRef) {
            if (auto g = table.lookup(reader, e.gpuRef, "gpu", true)) {
                e.node.gpu = table.entries[*g].node.gpu;
                // Traffic enters and leaves the network through this pair of links.
                bool out = false, back = false;
                for (const LinkEntry& l : links) {
                    out = out || (l.from == *g && l.to == self) || (l.both && l.from == self && l.to == *g);
                    back = back || (l.from == self && l.to == *g) || (l.both && l.from == *g && l.to == self);
                }
                if (!out || !back)
                    reader.error(e.gpuRef, "nic '" + e.node.name + "' needs a link to and from its gpu '" +
                                               e.gpuRef.Scalar() + "'");
            }
            continue;
        }
        std::vector<GpuId> linked;
        for (const LinkEntry& l : links) {
            const std::size_t other = l.from == self ? l.to : (l.to == self ? l.from : self);
            if (other != self && table.entries[other].node.kind == NodeKind::gpu &&
                std::find(linked.begin(), linked.end(), table.entries[other].node.gpu) == linked.end())
                linked.push_back(table.entries[other].node.gpu);
        }
        if (linked.size() == 1)
            e.node.gpu = linked.front();
        else
            reader.error(e.yaml, "nic '" + e.node.name + "' needs 'gpu: NAME' (the GPU it serves)");
    }
}

// Phase 4: the graph itself, routes built; nullopt (error at `node`) when a GPU cannot reach
// another or a NIC lacks its links. A bug (any other exception) propagates.
std::optional<Topology> buildGraph(Topology t, const NodeTable& table, const std::vector<LinkEntry>& links,
                                   const YAML::Node& node, YamlReader& reader)
{
    std::vector<NodeId> ids;
    for (const NodeEntry& e : table.entries)
        ids.push_back(t.addNode(e.node));
    for (const LinkEntry& l : links) {
        if (l.both)
            t.addBidirectional(ids[l.from], ids[l.to], l.kind, l.gbs, l.latency);
        else
            t.addLink({ids[l.from], ids[l.to], l.kind, l.gbs, l.latency});
    }
    try {
        t.finalize();
    } catch (const std::invalid_argument& e) {
        reader.error(node, e.what());
        return std::nullopt;
    }
    return t;
}

}  // namespace

std::optional<TopologyParams> readTopologyParams(const YAML::Node& node, YamlReader& reader)
{
    if (!reader.expectMap(node, "topology", kParamKeys))
        return std::nullopt;
    const std::size_t before = reader.errorCount();
    TopologyParams p;
    const std::vector<std::string> names = builtinTopologyNames();
    if (auto b = reader.getString(node, "builtin", true)) {
        p.builtin = *b;
        if (!detail::isNvl72(p.builtin) && !detail::isHgx(p.builtin) && !detail::isHostCpu(p.builtin))
            reader.error(child(node, "builtin"),
                         withHint("unknown built-in topology '" + p.builtin + "'; valid names: " + listOf(names),
                                  p.builtin, names));
    }
    // Parameters of the other family are errors, not silently ignored numbers.
    auto wrongFamily = [&](const char* key, bool applies, const std::string& hint) {
        if (!p.builtin.empty() && (detail::isNvl72(p.builtin) || detail::isHgx(p.builtin) || detail::isHostCpu(p.builtin)) && !applies &&
            YamlReader::has(node, key)) {
            reader.error(child(node, key), std::string("'") + key + "' does not apply to " + p.builtin + "; " + hint);
            return true;
        }
        return false;
    };
    const bool nvl = detail::isNvl72(p.builtin);
    const bool hgx = detail::isHgx(p.builtin);
    const bool host = detail::isHostCpu(p.builtin);
    if (!wrongFamily("ranks", host, "'ranks' sets the CPU engine's ranks of host-cpu"))
        if (auto v = reader.getInt(node, "ranks", false, 1, 256))
            p.ranks = static_cast<int>(*v);
    if (!wrongFamily("racks", nvl, "hgx-* topologies grow by 'nodes'"))
        if (auto v = reader.getInt(node, "racks", false, 1, 16))
            p.racks = static_cast<int>(*v);
    if (!wrongFamily("nodes", hgx, "NVL72 topologies grow by 'racks' (72 GPUs each)"))
        if (auto v = reader.getInt(node, "nodes", false, 1, 128))
            p.nodes = static_cast<int>(*v);
    if (!wrongFamily("gpus_per_node", hgx, "an NVL72 rack always has 72 GPUs"))
        if (auto v = reader.getInt(node, "gpus_per_node", false, 1, 8))
            p.gpus_per_node = static_cast<int>(*v);
    if (auto v = reader.getInt(node, "nics_per_gpu", false, 1, 4))
        p.nics_per_gpu = static_cast<int>(*v);
    if (auto v = reader.getInt(node, "gpus_per_leaf", false, 0, 4096))
        p.gpus_per_leaf = static_cast<int>(*v);
    if (auto v = positive(reader, node, "nic_gbs", false, "NIC bandwidth"))
        p.nic_gbs = *v;
    if (auto v = positive(reader, node, "nvlink_gbs", false, "NVLink bandwidth"))
        p.nvlink_gbs = *v;
    if (reader.errorCount() != before)
        return std::nullopt;
    return p;
}

std::optional<Topology> readCustomTopology(const YAML::Node& node, YamlReader& reader)
{
    if (!reader.expectMap(node, "topology", kCustomKeys))
        return std::nullopt;
    // Neither a built-in nor a custom topology ({kind: tpu}): one error that says what a topology
    // is, not "missing 'gpu'" and "missing 'nodes'" after its unknown keys.
    if (!YamlReader::has(node, "gpu") && !YamlReader::has(node, "nodes") && !YamlReader::has(node, "links")) {
        reader.error(node, "a topology is a built-in ({builtin: NAME}, NAME one of " + listOf(builtinTopologyNames())
                               + ") or a custom one with 'gpu', 'nodes' and 'links' (moex-cli topology NAME -o FILE "
                                 "writes a built-in out to start from)");
        return std::nullopt;
    }
    const std::size_t before = reader.errorCount();
    Topology t;
    t.name = reader.getName(node, "name", false).value_or("custom");
    if (YamlReader::has(node, "gpu")) {
        if (auto g = readGpuSpec(child(node, "gpu"), reader))
            t.gpu = *g;
    } else {
        reader.error(node, "missing required key 'gpu' (a built-in GPU such as h200, or a mapping)");
    }
    t.pxn = reader.getBool(node, "pxn", false).value_or(true);
    t.switch_power_w = reader.getDouble(node, "switch_power_w", false, 0, kMaxRate).value_or(0);

    NodeTable table = readNodes(node, reader);
    const std::vector<LinkEntry> links = readLinks(node, reader, table);
    assignNicGpus(table, links, reader);
    if (reader.errorCount() != before)
        return std::nullopt;
    // The simulator keeps a route for every GPU pair and moves traffic between every pair each
    // step: both grow with the square of the GPU count (2,000 GPUs on one switch: 0.6 s and 0.4 GB to
    // build the routes; 4,000: 4.2 s and 1.6 GB; 9,000 ran out of memory). Expert-parallel groups of
    // real deployments are far smaller (96-320 GPUs; the built-ins reach 1,152), so larger files are
    // refused before any route is built.
    if (table.gpuNames.size() > kMaxCustomGpus) {
        reader.error(node, "the topology has " + std::to_string(table.gpuNames.size()) + " GPUs; moex simulates at most "
                               + std::to_string(kMaxCustomGpus) + " (every GPU pair has a route and traffic each step: "
                               "model the expert-parallel group, not the whole fleet)");
        return std::nullopt;
    }
    return buildGraph(std::move(t), table, links, node, reader);
}

std::optional<Topology> readTopology(const YAML::Node& node, YamlReader& reader)
{
    if (!YamlReader::has(node, "builtin"))
        return readCustomTopology(node, reader);
    auto p = readTopologyParams(node, reader);
    if (!p)
        return std::nullopt;
    try {
        return buildTopology(*p);
    } catch (const std::invalid_argument& e) {
        reader.error(node, e.what());
    }
    return std::nullopt;
}

Topology loadTopologyFile(const std::string& path)
{
    return loadTopologyText(readFile(path), path);
}

Topology loadTopologyText(const std::string& text, const std::string& file)
{
    Diagnostics diags;
    const auto root = parseYaml(text, file, diags);
    if (!root)
        throw InputError(diags);
    YamlReader reader(file, diags);
    if (const std::string other = wrongKindMessage(classifyInput(*root), InputKind::topology); !other.empty()) {
        reader.error(*root, other);
        throw InputError(diags);
    }
    auto t = readTopology(*root, reader);
    if (!t || !diags.empty())
        throw InputError(diags);
    return std::move(*t);
}

}  // namespace moex
