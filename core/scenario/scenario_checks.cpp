#include "scenario/scenario_checks.h"
#include "common/atomic_file.h"
#include "common/file_kinds.h"
#include "common/plural.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

namespace moex {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kStrategies = {"contiguous", "round-robin", "eplb", "eplb-exact", "gem", "search", "explicit"};

std::string gb(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
    return buf;
}

// One layer's slots: a list (per GPU) of lists of expert ids, each checked against the model.
std::optional<LayerPlacement> readLayerSlots(const YAML::Node& node, ScenarioChecks& c, const Scenario& s)
{
    if (!node.IsSequence()) {
        c.r.error(node, "slots must be a list with one list of expert ids per GPU");
        return std::nullopt;
    }
    LayerPlacement layer;
    bool ok = true;
    for (const auto& gpuNode : node) {
        if (!gpuNode.IsSequence()) {
            c.r.error(gpuNode, "each GPU's slots must be a list of expert ids");
            ok = false;
            continue;
        }
        std::vector<ExpertId> slots;
        for (const auto& e : gpuNode) {
            const std::int64_t maxId = c.modelOk ? s.model.routed_experts - 1 : (1 << 20);
            auto id = c.r.asInt(e, "expert id", 0, 1 << 20);
            if (!id) {
                ok = false;
                continue;
            }
            if (*id > maxId) {
                c.r.error(e, "placement names expert " + std::to_string(*id) + ", but the model has "
                                 + std::to_string(s.model.routed_experts) + " experts (0.." + std::to_string(maxId) + ")");
                ok = false;
                continue;
            }
            slots.emplace_back(static_cast<std::int32_t>(*id));
        }
        layer.gpu_slots.push_back(std::move(slots));
    }
    if (!ok)
        return std::nullopt;
    if (c.topoOk && layer.numGpus() != s.topology.numGpus()) {
        c.r.error(node, "slots list " + std::to_string(layer.numGpus()) + " GPUs, but the topology has "
                            + std::to_string(s.topology.numGpus()));
        return std::nullopt;
    }
    if (c.modelOk) {
        const auto counts = layer.replicaCounts(s.model.routed_experts);
        std::string missing;
        int n = 0;
        for (int e = 0; e < s.model.routed_experts; ++e)
            if (counts[static_cast<std::size_t>(e)] == 0) {
                if (n < 8)
                    missing += (missing.empty() ? "" : ", ") + std::to_string(e);
                ++n;
            }
        if (n > 0) {
            c.r.error(node, "placement leaves out " + countOf(n, "expert") + ": " + missing
                                + (n > 8 ? ", ..." : "") + " (every expert needs at least one slot)");
            return std::nullopt;
        }
    }
    return layer;
}

// What a routing file is when it is one of moex's own YAML files (a scenario, a model: the file
// named in the wrong place), said in one line; "" otherwise (a trace, counts, statistics: their
// readers check them when the run starts). Only a small file that does not start as JSON is read.
std::string notRoutingData(const std::string& path)
{
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > kMaxYamlBytes || ec)
        return {};
    // A trace or counts file starts as JSON ('{', '['), a .pt or safetensors file as binary: its
    // first bytes say so, without reading it (every scenario load, and every edit, comes here).
    {
        std::ifstream in(path, std::ios::binary);
        char head[256] = {};
        in.read(head, sizeof head);
        const std::string_view start(head, static_cast<std::size_t>(in.gcount()));
        const auto first = start.find_first_not_of(" \t\r\n");
        if (first == std::string_view::npos || start[first] == '{' || start[first] == '['
            || start.find('\0') != std::string_view::npos)
            return {};
    }
    std::string text;
    try {
        text = readFile(path, kMaxYamlBytes);
    } catch (const InputError&) {
        return {};  // unreadable: the reader says so when the run starts
    }
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || text[first] == '{' || text[first] == '[' || text.find('\0') != std::string::npos)
        return {};
    Diagnostics ignored;
    const auto node = parseYaml(text, path, ignored);
    const InputKind kind = node ? classifyInput(*node) : InputKind::unknown;
    if (kind == InputKind::unknown || kind == InputKind::routing_trace || kind == InputKind::expert_counts)
        return {};
    return std::string("this is a ") + toString(kind) + ", not routing data (a JSON trace or counts file, an SGLang .pt, "
           "vLLM eplb_load_stats JSONL or a TensorRT-LLM statistics folder)";
}

}  // namespace

void readWorkload(const YAML::Node& root, Scenario& s, ScenarioChecks& c)
{
    // The model's routing prior first: the scenario's own keys override it one by one.
    if (c.modelOk && s.model.routing) {
        const RoutingPrior& p = *s.model.routing;
        RoutingSpec& rs = s.workload.routing;
        rs.skew = p.skew;
        rs.hot_experts = p.hot_experts;
        rs.coactivation_groups = p.coactivation_groups;
        rs.drift = p.drift;
    }
    if (!YamlReader::has(root, "workload"))
        return;  // defaults: decode, 128 tokens per GPU, synthetic routing
    const YAML::Node node = root["workload"];
    if (!c.r.expectMap(node, "workload", {"phase", "tokens_per_gpu", "context_tokens", "context_cv", "routing"}))
        return;
    if (auto p = c.r.getChoice(node, "phase", false, {"decode", "prefill"}))
        s.workload.phase = *p == 0 ? Phase::decode : Phase::prefill;
    if (s.workload.phase == Phase::prefill)
        s.workload.tokens_per_gpu = 4096;
    // Past what one GPU routes in a step: said with the way out (chunks); other values as any range.
    long long tokens = 0;
    if (YamlReader::has(node, "tokens_per_gpu") && node["tokens_per_gpu"].IsScalar()
        && YAML::convert<long long>::decode(node["tokens_per_gpu"], tokens) && tokens > kMaxTokensPerGpu)
        c.r.error(node["tokens_per_gpu"], "'tokens_per_gpu' = " + std::to_string(tokens) + " is more than one GPU routes in one step (at most "
                                              + std::to_string(kMaxTokensPerGpu) + "); model a longer prefill as chunks of at most that");
    else if (auto t = c.r.getInt(node, "tokens_per_gpu", false, 1, kMaxTokensPerGpu))
        s.workload.tokens_per_gpu = static_cast<int>(*t);
    if (auto t = c.r.getInt(node, "context_tokens", false, 1, 16 << 20))
        s.workload.context_tokens = static_cast<int>(*t);
    if (auto v = c.r.getDouble(node, "context_cv", false, 0.0, 10.0))
        s.workload.context_cv = *v;
    if (!YamlReader::has(node, "routing"))
        return;
    const YAML::Node routing = node["routing"];
    if (!c.r.expectMap(routing, "routing",
                       {"kind", "skew", "hot_experts", "coactivation_groups", "drift", "seed", "file", "layer_cycling"}))
        return;
    RoutingSpec& rs = s.workload.routing;
    if (auto k = c.r.getChoice(routing, "kind", false, {"synthetic", "trace", "counts"}))
        rs.kind = static_cast<RoutingKind>(*k);
    if (auto v = c.r.getDouble(routing, "skew", false, 0.0, 5.0))
        rs.skew = *v;
    if (auto v = c.r.getDouble(routing, "hot_experts", false, 0.0, 1.0))
        rs.hot_experts = *v;
    const std::int64_t maxGroups = c.modelOk ? s.model.routed_experts : (1 << 20);
    if (auto v = c.r.getInt(routing, "coactivation_groups", false, 0, maxGroups))
        rs.coactivation_groups = static_cast<int>(*v);
    if (auto v = c.r.getDouble(routing, "drift", false, 0.0, 1.0))
        rs.drift = *v;
    if (auto v = c.r.getInt(routing, "seed", false, 0, std::numeric_limits<std::int64_t>::max()))
        rs.seed = static_cast<std::uint64_t>(*v);
    if (auto v = c.r.getBool(routing, "layer_cycling", false))
        rs.layer_cycling = *v;
    const bool needsFile = rs.kind != RoutingKind::synthetic;
    // Keys that would be ignored. The generator's shape where a file is replayed: an error where
    // the file says both or a --set brings the key; where a --set chose the kind, the file's keys
    // of the other kind are left (the user switched the kind of a scenario written for the other).
    // A file without a kind: the kind left out, so the file would not be read. (A file beside an
    // explicit `kind: synthetic` is kept for a switch back, as moex writes it.)
    const std::string kindName(toString(rs.kind));
    const bool kindGiven = YamlReader::has(routing, "kind");
    const std::string kindFlag = kindGiven ? c.r.flagOf(routing["kind"]) : std::string();
    if (needsFile)
        for (const char* key : {"skew", "hot_experts", "coactivation_groups", "drift", "seed"}) {
            if (!YamlReader::has(routing, key))
                continue;
            const bool keyFlag = !c.r.flagOf(routing[key]).empty();
            // A seed in the file is kept for a switch back to the generator (moex writes it
            // whatever the kind, and did before this check): only a --set of it is refused.
            if (keyFlag || (kindFlag.empty() && key != std::string("seed")))
                c.r.error(routing[key], std::string("'") + key + "' shapes the synthetic generator; routing kind '" + kindName
                                            + "'" + (kindFlag.empty() ? "" : " (" + kindFlag + ")")
                                            + " replays its file as it is: remove the key");
        }
    if (!kindGiven)
        for (const char* key : {"file", "layer_cycling"})
            if (YamlReader::has(routing, key))
                c.r.error(routing[key], std::string("'") + key + "' is for routing kind trace or counts, and the routing gives no "
                                            "kind (synthetic, the default, draws the routing): add kind: trace or kind: counts");
    if (YamlReader::has(routing, "file")) {
        const YAML::Node f = routing["file"];
        if (!f.IsScalar() || f.Scalar().empty()) {
            c.r.error(f, "'file' must be a path");
        } else {
            fs::path p(f.Scalar());
            if (p.is_relative())
                p = fs::path(c.baseDir) / p;
            p = p.lexically_normal();
            std::error_code ec;
            // A TensorRT-LLM statistics folder is a counts source too (meta_info.json + rank files);
            // a trace must be a file. (The kind may be set after the file, by a later --set.)
            const bool folderOk = rs.kind != RoutingKind::trace && fs::is_directory(p, ec);
            if (!folderOk && fs::is_directory(p, ec))
                c.r.error(f, "routing file '" + f.Scalar() + "' is a directory, not a file (" + p.string()
                                 + "); only a TensorRT-LLM statistics folder (kind counts) may be one");
            else if (!folderOk && !fs::is_regular_file(p, ec))
                c.r.error(f, "routing file '" + f.Scalar() + "' does not exist (looked for "
                                 + p.lexically_normal().string() + ")");
            else if (const std::string other = notRoutingData(p.string()); !other.empty())
                c.r.error(f, "routing file '" + f.Scalar() + "': " + other);
            rs.file = p.lexically_normal().string();
        }
    } else if (needsFile) {
        // At the kind (a --set that chose it is named), else at the routing mapping.
        c.r.error(YamlReader::has(routing, "kind") ? routing["kind"] : routing,
                  "routing kind '" + kindName + "' needs a 'file'");
    }
}

void readPlacementPart(const YAML::Node& root, Scenario& s, ScenarioChecks& c)
{
    if (!YamlReader::has(root, "placement"))
        return;
    const YAML::Node node = root["placement"];
    if (!c.r.expectMap(node, "placement", {"strategy", "redundant_slots", "budget_ms", "load_steps", "slots", "layers", "shares"}))
        return;
    PlacementSpec& p = s.placement;
    const YAML::Node at = YamlReader::has(node, "strategy") ? node["strategy"] : node;
    p.line = at.Mark().line + 1;
    p.column = at.Mark().column + 1;
    if (auto st = c.r.getChoice(node, "strategy", false, kStrategies))
        p.strategy = kStrategies[static_cast<std::size_t>(*st)];
    const std::int64_t maxRedundant = c.modelOk ? 16LL * s.model.routed_experts : (1 << 20);
    if (auto v = c.r.getInt(node, "redundant_slots", false, 0, maxRedundant))
        p.redundant_slots = static_cast<int>(*v);
    if (auto v = c.r.getDouble(node, "budget_ms", false, 1.0, 3.6e6))
        p.budget_ms = *v;
    if (auto v = c.r.getInt(node, "load_steps", false, 1, 10000))
        p.load_steps = static_cast<int>(*v);

    const bool hasSlots = YamlReader::has(node, "slots");
    const bool hasLayers = YamlReader::has(node, "layers");
    if (hasSlots && hasLayers) {
        c.r.error(node, "give either 'slots' (one layout for every MoE layer) or 'layers' (one per MoE layer), not both");
        return;
    }
    if (!hasSlots && !hasLayers) {
        if (p.strategy == "explicit")
            c.r.error(node, "strategy 'explicit' needs 'slots' or 'layers'");
        return;
    }
    if (YamlReader::has(node, "strategy") && p.strategy != "explicit")
        c.r.error(node["strategy"], "explicit slots are given, so 'strategy' must be 'explicit' (or left out)");
    // What a strategy reads would be ignored: the slots say how many there are and where.
    for (const char* key : {"redundant_slots", "budget_ms"})
        if (YamlReader::has(node, key))
            c.r.error(node[key], std::string("explicit slots are given, so '") + key
                                     + "' has no effect: remove it (the slots are the placement), or name a strategy instead of the slots");
    p.strategy = "explicit";
    if (!c.modelOk || !c.topoOk)
        return;  // cannot check slots without both
    Placement placement;
    placement.num_experts = s.model.routed_experts;
    if (hasSlots) {
        auto layer = readLayerSlots(node["slots"], c, s);
        if (!layer)
            return;
        placement.layers.assign(static_cast<std::size_t>(s.model.numMoeLayers()), *layer);
    } else {
        const YAML::Node layers = node["layers"];
        if (!layers.IsSequence()) {
            c.r.error(layers, "'layers' must be a list with one slot layout per MoE layer");
            return;
        }
        if (static_cast<int>(layers.size()) != s.model.numMoeLayers()) {
            c.r.error(layers, "'layers' has " + std::to_string(layers.size()) + " entries, but the model has "
                                  + std::to_string(s.model.numMoeLayers()) + " MoE layers");
            return;
        }
        bool ok = true;
        for (const auto& l : layers) {
            auto layer = readLayerSlots(l, c, s);
            ok = ok && layer.has_value();
            if (layer)
                placement.layers.push_back(std::move(*layer));
        }
        if (!ok)
            return;
    }
    if (YamlReader::has(node, "shares")) {
        const YAML::Node sh = node["shares"];
        LayerPlacement& first = placement.layers.front();
        bool ok = sh.IsSequence() && sh.size() == first.gpu_slots.size();
        std::vector<std::vector<double>> shares;
        for (std::size_t g = 0; ok && g < sh.size(); ++g) {
            ok = sh[g].IsSequence() && sh[g].size() == first.gpu_slots[g].size();
            std::vector<double> row;
            for (std::size_t k = 0; ok && k < sh[g].size(); ++k) {
                auto v = c.r.asDouble(sh[g][k], "share", 0.0, 1.0);
                ok = v.has_value();
                row.push_back(v.value_or(0));
            }
            shares.push_back(std::move(row));
        }
        if (!ok) {
            c.r.error(sh, "'shares' must have the same shape as the slots, each share in [0, 1]");
            return;
        }
        for (auto& l : placement.layers)
            l.shares = shares;
        // One layout for every layer ('slots'): its problems once, not once a layer (33 lines for Mixtral).
        Placement checked = placement;
        if (hasSlots)
            checked.layers.resize(1);
        for (const auto& problem : checkPlacement(checked, s.model.routed_experts, s.topology.numGpus()))
            c.r.error(sh, hasSlots && problem.starts_with("layer 0: ") ? problem.substr(9) : problem);
    }
    p.explicit_slots = std::move(placement);
}

void readGpus(const YAML::Node& root, Scenario& s, ScenarioChecks& c)
{
    if (!YamlReader::has(root, "gpus"))
        return;
    const YAML::Node node = root["gpus"];
    if (!c.r.expectMap(node, "gpus", {"speed"}) || !YamlReader::has(node, "speed"))
        return;
    const YAML::Node speed = node["speed"];
    if (!speed.IsMap()) {
        c.r.error(speed, "'speed' must be a mapping such as {default: 1.0, gpu17: 0.85}");
        return;
    }
    const int numGpus = c.topoOk ? s.topology.numGpus() : (1 << 20);
    std::map<int, std::pair<std::string, YAML::Node>> seen;  // GPU -> its key as written, for two spellings of one GPU
    for (auto it = speed.begin(); it != speed.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
        auto v = c.r.asDouble(it->second, "speed of " + key, 0.01, 10.0);
        if (key == "default") {
            if (v)
                s.speeds.default_speed = *v;
            continue;
        }
        std::string digits = key.rfind("gpu", 0) == 0 ? key.substr(3) : key;
        int gpu = -1;
        if (!digits.empty() && digits.size() < 8 && digits.find_first_not_of("0123456789") == std::string::npos)
            gpu = std::stoi(digits);
        if (gpu < 0) {
            c.r.error(it->first, "speed keys are 'default' or a GPU such as 'gpu17', got '" + key + "'");
            continue;
        }
        if (gpu >= numGpus) {
            c.r.error(it->first, "GPU " + std::to_string(gpu) + " does not exist: the topology has "
                                     + std::to_string(numGpus) + " GPUs (0.." + std::to_string(numGpus - 1) + ")");
            continue;
        }
        // gpu3, gpu03 and 3 are one GPU: the last of them would win in silence. (A --set of it
        // under another spelling than the file's replaces the file's value, as any --set does.)
        if (const auto [first, fresh] = seen.emplace(gpu, std::make_pair(key, it->first)); !fresh) {
            const std::string wasFlag = c.r.flagOf(first->second.second);
            const bool flagOverFile = wasFlag.empty() && !c.r.flagOf(it->first).empty();
            if (flagOverFile) {
                first->second = {key, it->first};
                if (v)
                    s.speeds.per_gpu[gpu] = *v;
                continue;
            }
            c.r.error(it->first, "GPU " + std::to_string(gpu) + " is given twice: as '" + first->second.first + "' ("
                                     + (wasFlag.empty() ? "line " + std::to_string(c.r.at(first->second.second).line) : wasFlag)
                                     + ") and as '"
                                     + key + "'; give it once");
            continue;
        }
        if (v)
            s.speeds.per_gpu[gpu] = *v;
    }
}

void readPrecisionAndEngine(const YAML::Node& root, Scenario& s, ScenarioChecks& c)
{
    if (c.modelOk)
        s.precision.weights = s.model.weight_dtype;
    if (YamlReader::has(root, "precision")) {
        const YAML::Node node = root["precision"];
        if (c.r.expectMap(node, "precision", {"weights", "dispatch", "combine"})) {
            const std::vector<std::string> all = {"bf16", "fp16", "fp8", "nvfp4", "mxfp4", "int4"};
            if (auto w = c.r.getChoice(node, "weights", false, all)) {
                s.precision.weights = *parseDType(all[static_cast<std::size_t>(*w)]);
                s.precision_weights_set = true;
            }
            const std::vector<std::string> comm = {"bf16", "fp8", "nvfp4"};
            if (auto d = c.r.getChoice(node, "dispatch", false, comm))
                s.precision.dispatch = *parseDType(comm[static_cast<std::size_t>(*d)]);
            if (auto d = c.r.getChoice(node, "combine", false, {"bf16", "fp8"}))
                s.precision.combine = *d == 0 ? DType::bf16 : DType::fp8;
        }
    }
    if (YamlReader::has(root, "overlap")) {
        if (auto o = c.r.getChoice(root, "overlap", false, {"none", "two-batch"}))
            s.overlap = *o == 0 ? Overlap::none : Overlap::two_batch;
    }
    if (YamlReader::has(root, "a2a_kernel")) {
        if (auto k = c.r.getChoice(root, "a2a_kernel", false, {"deepep", "one-sided"}))
            s.a2a_kernel = *k == 0 ? A2AKernel::deepep : A2AKernel::one_sided;
    }
    if (YamlReader::has(root, "engine")) {
        const YAML::Node node = root["engine"];
        if (c.r.expectMap(node, "engine", {"backend", "host", "ranks", "routing", "layers", "weights", "tokens",
                                           "seed", "memory_gb", "checkpoint", "gemm"})) {
            const YAML::Node at = YamlReader::has(node, "backend") ? node["backend"] : node;
            s.engine.line = at.Mark().line + 1;
            s.engine.column = at.Mark().column + 1;
            if (auto b = c.r.getChoice(node, "backend", false, {"sim", "cpu", "cuda", "remote"}))
                s.engine.backend = static_cast<Backend>(*b);
            if (auto h = c.r.getString(node, "host", s.engine.backend == Backend::remote))
                s.engine.host = *h;
            if (auto n = c.r.getInt(node, "ranks", false, 1, 4096))
                s.engine.ranks = static_cast<int>(*n);
            if (auto r = c.r.getChoice(node, "routing", false, {"computed", "workload"}))
                s.engine.workload_routing = *r == 1;
            if (auto w = c.r.getChoice(node, "weights", false, {"auto", "own", "shared"}))
                s.engine.weights = static_cast<EngineWeights>(*w);
            if (auto g = c.r.getChoice(node, "gemm", false, {"auto", "engine", "openblas"}))
                s.engine.gemm = static_cast<EngineGemm>(*g);
            if (auto t = c.r.getInt(node, "tokens", false, 1, 1 << 20))
                s.engine.tokens = *t;
            if (auto seed = c.r.getInt(node, "seed", false, 0, std::int64_t{1} << 53))
                s.engine.seed = static_cast<std::uint64_t>(*seed);
            if (auto g = c.r.getDouble(node, "memory_gb", false, 1e-6, 1e6))
                s.engine.memory_gb = *g;
            if (auto dir = c.r.getString(node, "checkpoint", false)) {
                // Relative to the scenario file, as every path in it; "" keeps the seeded weights.
                if (!dir->empty()) {
                    fs::path p(*dir);
                    if (p.is_relative())
                        p = fs::path(c.baseDir) / p;
                    p = p.lexically_normal();
                    std::error_code ec;
                    if (!fs::is_directory(p, ec))
                        c.r.error(node["checkpoint"], "engine.checkpoint '" + *dir + "' is not a directory (looked for "
                                                          + p.string() + ")");
                    s.engine.checkpoint = p.string();
                } else {
                    s.engine.checkpoint.clear();
                }
            }
            if (YamlReader::has(node, "layers")) {
                const YAML::Node layers = node["layers"];
                if (layers.IsScalar() && layers.Scalar() == "all") {
                    s.engine.layers.clear();
                } else if (!layers.IsSequence() || layers.size() == 0) {
                    c.r.error(layers, std::string("engine.layers must be 'all' or a list of MoE decoder-layer indices")
                                          + (layers.IsScalar() && !layers.Scalar().empty() && layers.Scalar().front() == '['
                                                 ? " (--set gives scalars only: a list goes in the file, or moex-cli run --layers 3,4)"
                                                 : ""));
                } else {
                    s.engine.layers.clear();
                    for (const auto& l : layers) {
                        auto d = c.r.asInt(l, "decoder-layer index", 0, 1 << 16);
                        if (!d)
                            continue;
                        if (c.modelOk && !s.model.isMoeLayer(static_cast<int>(*d)))
                            c.r.error(l, "decoder layer " + std::to_string(*d) + " is not an MoE layer of " + s.model.name);
                        else if (!s.engine.layers.empty() && *d <= s.engine.layers.back())
                            c.r.error(l, "engine.layers must ascend");
                        else
                            s.engine.layers.push_back(static_cast<int>(*d));
                    }
                }
            }
        }
    }
    if (YamlReader::has(root, "calibration")) {
        const YAML::Node f = root["calibration"];
        if (!f.IsScalar() || f.Scalar().empty()) {
            c.r.error(f, "'calibration' must be a file path");
            return;
        }
        fs::path p(f.Scalar());
        if (p.is_relative())
            p = fs::path(c.baseDir) / p;
        p = p.lexically_normal();  // "dir/../x" must not need "dir" to exist
        std::error_code ec;
        if (fs::is_directory(p, ec))
            c.r.error(f, "calibration file '" + f.Scalar() + "' is a directory, not a file (" + p.string() + ")");
        else if (!fs::is_regular_file(p, ec))
            c.r.error(f, "calibration file '" + f.Scalar() + "' does not exist (looked for "
                             + p.lexically_normal().string() + ")");
        s.calibration = p.lexically_normal().string();
    }
}

double weightBytesPerGpu(const Scenario& s, int slotsPerGpu)
{
    const double expertBytes = static_cast<double>(s.model.expertParams()) * bytesPerElement(s.precision.weights);
    return expertBytes * slotsPerGpu * s.model.numMoeLayers() + s.model.nonExpertBytes();
}

std::string capacityProblem(const Scenario& s)
{
    const int slots = s.slotsPerGpu();
    const double need = weightBytesPerGpu(s, slots);
    const double have = s.topology.gpu.hbm_usable_gb * 1e9;
    if (have <= 0 || need <= have)
        return {};
    return "weights do not fit: " + std::to_string(slots) + " expert slots per GPU × " + std::to_string(s.model.numMoeLayers())
           + " MoE layers plus the non-expert weights need " + gb(need) + " per GPU, but a " + s.topology.gpu.name + " has "
           + gb(have) + " usable (use more GPUs, fewer redundant slots or a smaller weight format)";
}

void checkCapacity(const YAML::Node& root, const Scenario& s, ScenarioChecks& c)
{
    const std::string problem = capacityProblem(s);
    if (problem.empty())
        return;
    // A flag that changed what a GPU holds is the cause, not the file's placement line.
    if (!c.capacityFlags.empty()) {
        const bool several = c.capacityFlags.find(" --set ") != std::string::npos;
        c.r.diagnostics().error(Location{c.capacityFlags, 0, 0},
                                problem + " (" + c.r.file() + (several ? " with those flags)" : " with that flag)"));
        return;
    }
    c.r.error(YamlReader::has(root, "placement") ? root["placement"] : root["topology"], problem);
}

}  // namespace moex
