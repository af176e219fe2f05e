#include "model/model_yaml.h"

#include "common/atomic_file.h"
#include "common/file_kinds.h"
#include "common/number_text.h"
#include "model/layer_pattern.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace moex {

namespace {

// Ranges: generous for any real model, yet they catch typos (an extra digit) early. Products of them can
// still pass 64 bits, so checkModel also bounds the parameter count as a whole.
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;
constexpr std::int64_t kMaxLayers = kMaxModelLayers;
constexpr std::int64_t kMaxExperts = kMaxRoutedExperts;
constexpr std::int64_t kMaxIntermediate = std::int64_t{1} << 20;
constexpr std::int64_t kMaxHeads = 1 << 14;
constexpr std::int64_t kMaxHeadDim = 1 << 14;
constexpr std::int64_t kMaxRank = 1 << 16;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxNonExpert = std::int64_t{1} << 46;  // ~70 T parameters
constexpr std::int64_t kMaxWindow = std::int64_t{1} << 30;

const std::vector<std::string> kModelKeys = {
    "name", "hidden_size", "num_layers", "moe_layers", "routed_experts", "experts_per_token", "shared_experts",
    "moe_intermediate_size", "shared_intermediate_size", "expert_groups", "groups_per_token", "scoring",
    "weight_dtype", "routed_scaling_factor", "non_expert_dtype", "dense_intermediate_size", "vocab_size",
    "non_expert_params", "mtp_layers", "norm_topk_prob", "shared_expert_gate", "swiglu_limit", "attention", "layers", "activation",
    "state_dtype", "sliding_attention", "linear_attention", "mamba", "tie_embeddings", "routing"};
const std::vector<std::string> kAttentionKeys = {"kind", "heads", "kv_heads", "head_dim", "q_lora_rank",
                                                 "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                                                 "v_head_dim", "sliding_window", "output_gate", "k_eq_v",
                                                 "index_heads", "index_head_dim", "index_topk"};
const std::vector<std::string> kLinearKeys = {"key_heads", "value_heads", "key_head_dim", "value_head_dim",
                                              "conv_kernel"};
const std::vector<std::string> kRoutingKeys = {"skew", "hot_experts", "coactivation_groups", "drift"};
const std::vector<std::string> kMambaKeys = {"heads", "head_dim", "state_size", "groups", "conv_kernel"};
const std::vector<std::string> kActivationNames = {"swiglu", "geglu", "relu2", "gelu"};
const std::vector<std::string> kDTypeNames = {"bf16", "fp16", "fp8", "nvfp4", "mxfp4", "int4", "fp32"};
const std::vector<std::string> kScoringNames = {"softmax", "sigmoid"};
const std::vector<std::string> kKindNames = {"gqa", "mla"};

YAML::Node child(const YAML::Node& map, const std::string& key)
{
    if (!map.IsMap())
        return {};
    const YAML::Node& cmap = map;  // const access: a non-const operator[] would insert the key
    return cmap[key];
}

void readInt(YamlReader& r, const YAML::Node& map, const std::string& key, bool required, std::int64_t min,
             std::int64_t max, int& out)
{
    if (auto v = r.getInt(map, key, required, min, max))
        out = static_cast<int>(*v);
}

std::optional<DType> readDType(YamlReader& r, const YAML::Node& map, const std::string& key)
{
    auto i = r.getChoice(map, key, false, kDTypeNames);
    if (!i)
        return std::nullopt;
    return parseDType(kDTypeNames[static_cast<std::size_t>(*i)]);
}

// moe_layers: an explicit list, or {first: F, every: E} = F, F+E, F+2E, ... below num_layers.
void readMoeLayers(YamlReader& r, const YAML::Node& map, ModelSpec& m, bool numLayersOk)
{
    const YAML::Node node = child(map, "moe_layers");
    if (!node) {
        for (int i = 0; i < m.num_layers; ++i)
            m.moe_layers.push_back(i);
        return;
    }
    if (node.IsSequence()) {
        if (auto list = r.getIntList(map, "moe_layers", false, 0, kMaxLayers - 1))
            for (std::int64_t v : *list)
                m.moe_layers.push_back(static_cast<int>(v));
        return;
    }
    if (!node.IsMap()) {
        r.error(node, "'moe_layers' must be a list of layer indices or a mapping {first: N, every: M}");
        return;
    }
    if (!r.expectMap(node, "moe_layers", {"first", "every"}))
        return;
    const std::size_t before = r.errorCount();
    const auto first = r.getInt(node, "first", false, 0, kMaxLayers - 1).value_or(0);
    const auto every = r.getInt(node, "every", false, 1, kMaxLayers).value_or(1);
    if (r.errorCount() != before || !numLayersOk)
        return;
    if (first >= m.num_layers) {
        const YAML::Node at = child(node, "first");
        r.error(at ? at : node, "'moe_layers' first = " + std::to_string(first) + " is not below num_layers = "
                                    + std::to_string(m.num_layers));
        return;
    }
    for (std::int64_t i = first; i < m.num_layers; i += every)
        m.moe_layers.push_back(static_cast<int>(i));
}

void readAttention(YamlReader& r, const YAML::Node& map, const std::string& key, int hidden, AttentionShape& a)
{
    const YAML::Node node = child(map, key);
    if (!node)
        return;
    if (!r.expectMap(node, key, kAttentionKeys))
        return;
    if (auto kind = r.getChoice(node, "kind", false, kKindNames))
        a.kind = *kind == 1 ? AttentionKind::mla : AttentionKind::gqa;
    else if (!YamlReader::has(node, "kind") && YamlReader::has(node, "kv_lora_rank"))
        a.kind = AttentionKind::mla;  // a latent KV rank says MLA even when kind is left out
    readInt(r, node, "heads", true, 1, kMaxHeads, a.num_heads);
    a.num_kv_heads = a.num_heads;
    readInt(r, node, "kv_heads", false, 1, kMaxHeads, a.num_kv_heads);
    const bool mla = a.kind == AttentionKind::mla;
    readInt(r, node, "q_lora_rank", false, 0, kMaxRank, a.q_lora_rank);
    readInt(r, node, "kv_lora_rank", mla, 1, kMaxRank, a.kv_lora_rank);
    readInt(r, node, "qk_rope_head_dim", mla, 0, kMaxHeadDim, a.qk_rope_head_dim);
    readInt(r, node, "qk_nope_head_dim", mla, 0, kMaxHeadDim, a.qk_nope_head_dim);
    a.v_head_dim = mla ? a.qk_nope_head_dim : 0;
    readInt(r, node, "v_head_dim", false, 0, kMaxHeadDim, a.v_head_dim);
    // Default per-head size: GQA splits hidden evenly over the query heads; MLA's q/k head is nope + rope.
    if (mla)
        a.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    else if (a.num_heads > 0)
        a.head_dim = hidden / a.num_heads;
    readInt(r, node, "head_dim", false, 1, kMaxHeadDim, a.head_dim);
    readInt(r, node, "sliding_window", false, 0, kMaxWindow, a.sliding_window);
    if (auto b = r.getBool(node, "output_gate", false))
        a.output_gate = *b;
    if (auto b = r.getBool(node, "k_eq_v", false))
        a.k_eq_v = *b;
    // DeepSeek Sparse Attention: all three or none.
    readInt(r, node, "index_heads", false, 0, kMaxHeads, a.index_heads);
    readInt(r, node, "index_head_dim", false, 0, kMaxHeadDim, a.index_head_dim);
    readInt(r, node, "index_topk", false, 0, kMaxWindow, a.index_topk);
    const bool anyIndexer = a.index_heads > 0 || a.index_head_dim > 0 || a.index_topk > 0;
    if (anyIndexer && !a.sparse()) {
        const char* missing = a.index_heads <= 0 ? "index_heads" : a.index_head_dim <= 0 ? "index_head_dim" : "index_topk";
        r.error(YamlReader::has(node, missing) ? child(node, missing) : node,
                std::string("sparse attention (DSA) needs index_heads, index_head_dim and index_topk all >= 1; ") + missing
                    + " is missing or 0");
    }
}

void readLinearAttention(YamlReader& r, const YAML::Node& map, LinearAttentionShape& a)
{
    const YAML::Node node = child(map, "linear_attention");
    if (!node || !r.expectMap(node, "linear_attention", kLinearKeys))
        return;
    readInt(r, node, "key_heads", true, 1, kMaxHeads, a.num_key_heads);
    readInt(r, node, "value_heads", true, 1, kMaxHeads, a.num_value_heads);
    readInt(r, node, "key_head_dim", true, 1, kMaxHeadDim, a.key_head_dim);
    readInt(r, node, "value_head_dim", true, 1, kMaxHeadDim, a.value_head_dim);
    readInt(r, node, "conv_kernel", false, 1, 64, a.conv_kernel);
}

void readMamba(YamlReader& r, const YAML::Node& map, MambaShape& a)
{
    const YAML::Node node = child(map, "mamba");
    if (!node || !r.expectMap(node, "mamba", kMambaKeys))
        return;
    readInt(r, node, "heads", true, 1, kMaxHeads, a.num_heads);
    readInt(r, node, "head_dim", true, 1, kMaxHeadDim, a.head_dim);
    readInt(r, node, "state_size", true, 1, kMaxHeadDim, a.state_size);
    readInt(r, node, "groups", false, 1, kMaxHeads, a.groups);
    readInt(r, node, "conv_kernel", false, 1, 64, a.conv_kernel);
}

// routing: {skew, hot_experts, coactivation_groups, drift}, all four (a prior is the whole
// description; the generator's own defaults fill nothing in). Ranges as a scenario's routing.
void readRouting(YamlReader& r, const YAML::Node& map, ModelSpec& m)
{
    const YAML::Node node = child(map, "routing");
    if (!node || !r.expectMap(node, "routing", kRoutingKeys))
        return;
    const std::size_t before = r.errorCount();
    RoutingPrior p;
    if (auto v = r.getDouble(node, "skew", true, 0.0, 5.0))
        p.skew = *v;
    if (auto v = r.getDouble(node, "hot_experts", true, 0.0, 1.0))
        p.hot_experts = *v;
    if (auto v = r.getInt(node, "coactivation_groups", true, 0, kMaxExperts))
        p.coactivation_groups = static_cast<int>(*v);
    if (auto v = r.getDouble(node, "drift", true, 0.0, 1.0))
        p.drift = *v;
    if (r.errorCount() == before)
        m.routing = p;
}

// layers: "LE*3 AE" (layer_pattern.h). It says which layers are MoE, so moe_layers goes with it
// only when the two agree.
void readLayers(YamlReader& r, const YAML::Node& map, ModelSpec& m, bool numLayersOk)
{
    const YAML::Node node = child(map, "layers");
    if (!node)
        return;
    auto text = r.getString(map, "layers", false);
    if (!text || !numLayersOk)
        return;
    std::string error;
    auto kinds = parseLayerPattern(*text, m.num_layers, error);
    if (!kinds) {
        r.error(node, "'layers': " + error);
        return;
    }
    std::vector<int> moe;
    for (int i = 0; i < m.num_layers; ++i)
        if ((*kinds)[static_cast<std::size_t>(i)].ffn == FfnKind::moe)
            moe.push_back(i);
    if (YamlReader::has(map, "moe_layers") && moe != m.moe_layers) {
        r.error(child(map, "moe_layers"), "'moe_layers' differs from the MoE layers (E) of 'layers': give one of them");
        return;
    }
    m.moe_layers = std::move(moe);
    m.layer_kinds = std::move(*kinds);
}

// The most specific node to blame: map[key] (or map[key][sub]) when it is written there, else the map.
YAML::Node nodeFor(const YAML::Node& map, const std::string& key, const std::string& sub = {})
{
    YAML::Node v = child(map, key);
    if (!v)
        return map;
    if (!sub.empty()) {
        YAML::Node s = child(v, sub);
        return s ? s : v;
    }
    return v;
}

std::string str(std::int64_t v)
{
    return std::to_string(v);
}

std::string quoteScalar(const std::string& s)
{
    YAML::Emitter e;
    e << s;
    return e.c_str();
}

// {first, every} reproduces the list exactly when it is an arithmetic run that reaches the last layers.
std::optional<std::pair<int, int>> compactMoeLayers(const ModelSpec& m)
{
    const auto& l = m.moe_layers;
    if (l.empty())
        return std::nullopt;
    const int every = l.size() >= 2 ? l[1] - l[0] : 1;
    if (every < 1)
        return std::nullopt;
    for (std::size_t i = 1; i < l.size(); ++i)
        if (l[i] - l[i - 1] != every)
            return std::nullopt;
    if (l.back() >= m.num_layers || l.back() + every < m.num_layers)
        return std::nullopt;
    return std::make_pair(l.front(), every);
}

void writeAttention(std::ostream& out, const char* key, const AttentionShape& a)
{
    if (a == AttentionShape{})
        return;
    const bool mlaFields = a.kind == AttentionKind::mla;
    out << key << ":\n";
    out << "  kind: " << toString(a.kind) << '\n';
    out << "  heads: " << a.num_heads << '\n';
    out << "  kv_heads: " << a.num_kv_heads << '\n';
    out << "  head_dim: " << a.head_dim << '\n';
    if (mlaFields) {
        out << "  q_lora_rank: " << a.q_lora_rank << '\n';
        out << "  kv_lora_rank: " << a.kv_lora_rank << '\n';
        out << "  qk_rope_head_dim: " << a.qk_rope_head_dim << '\n';
        out << "  qk_nope_head_dim: " << a.qk_nope_head_dim << '\n';
        out << "  v_head_dim: " << a.v_head_dim << '\n';
    } else if (a.v_head_dim > 0) {
        out << "  v_head_dim: " << a.v_head_dim << '\n';
    }
    out << "  sliding_window: " << a.sliding_window << '\n';
    if (a.output_gate)
        out << "  output_gate: true\n";
    if (a.k_eq_v)
        out << "  k_eq_v: true\n";
    if (a.sparse()) {
        out << "  index_heads: " << a.index_heads << '\n';
        out << "  index_head_dim: " << a.index_head_dim << '\n';
        out << "  index_topk: " << a.index_topk << '\n';
    }
}

}  // namespace

std::optional<ModelSpec> readModel(const YAML::Node& node, YamlReader& r)
{
    const std::size_t before = r.errorCount();
    if (!r.expectMap(node, "model", kModelKeys))
        return std::nullopt;
    ModelSpec m;
    if (auto name = r.getName(node, "name", true)) {
        if (name->empty())
            r.error(nodeFor(node, "name"), "'name' must not be empty");
        m.name = *name;
    }
    readInt(r, node, "hidden_size", true, 1, kMaxHidden, m.hidden_size);
    const std::size_t beforeLayers = r.errorCount();
    readInt(r, node, "num_layers", true, 1, kMaxLayers, m.num_layers);
    const bool numLayersOk = r.errorCount() == beforeLayers;
    readInt(r, node, "routed_experts", true, 1, kMaxExperts, m.routed_experts);
    readInt(r, node, "experts_per_token", true, 1, kMaxExperts, m.experts_per_token);
    readInt(r, node, "moe_intermediate_size", true, 1, kMaxIntermediate, m.moe_intermediate_size);
    readInt(r, node, "shared_experts", false, 0, 1024, m.shared_experts);
    readInt(r, node, "shared_intermediate_size", false, 0, kMaxIntermediate, m.shared_intermediate_size);
    readInt(r, node, "dense_intermediate_size", false, 0, kMaxIntermediate, m.dense_intermediate_size);
    readInt(r, node, "expert_groups", false, 1, kMaxExperts, m.expert_groups);
    readInt(r, node, "groups_per_token", false, 1, kMaxExperts, m.groups_per_token);
    if (auto s = r.getChoice(node, "scoring", false, kScoringNames))
        m.scoring = *s == 1 ? Scoring::sigmoid : Scoring::softmax;
    if (auto f = r.getDouble(node, "routed_scaling_factor", false, 1e-6, 1e6))
        m.routed_scaling_factor = *f;
    if (auto t = readDType(r, node, "weight_dtype"))
        m.weight_dtype = *t;
    if (auto t = readDType(r, node, "non_expert_dtype"))
        m.non_expert_dtype = *t;
    readInt(r, node, "vocab_size", false, 0, kMaxVocab, m.vocab_size);
    readInt(r, node, "mtp_layers", false, 0, 64, m.mtp_layers);
    if (auto b = r.getBool(node, "norm_topk_prob", false))
        m.norm_topk_prob = *b;
    if (auto b = r.getBool(node, "shared_expert_gate", false))
        m.shared_expert_gate = *b;
    if (auto f = r.getDouble(node, "swiglu_limit", false, 0, 1e6))
        m.swiglu_limit = *f;
    if (auto a = r.getChoice(node, "activation", false, kActivationNames))
        m.activation = static_cast<Activation>(*a);
    if (auto t = readDType(r, node, "state_dtype"))
        m.state_dtype = *t;
    if (auto b = r.getBool(node, "tie_embeddings", false))
        m.tie_embeddings = *b;
    readMoeLayers(r, node, m, numLayersOk);
    readLayers(r, node, m, numLayersOk);
    readAttention(r, node, "attention", m.hidden_size, m.attention);
    readAttention(r, node, "sliding_attention", m.hidden_size, m.sliding_attention);
    readLinearAttention(r, node, m.linear_attention);
    readMamba(r, node, m.mamba);
    readRouting(r, node, m);
    if (auto p = r.getInt(node, "non_expert_params", false, 0, kMaxNonExpert))
        m.non_expert_params = *p;
    else if (!YamlReader::has(node, "non_expert_params"))
        m.non_expert_params = m.estimateNonExpertParams();
    if (r.errorCount() != before)
        return std::nullopt;
    return m;
}

void checkModel(const ModelSpec& m, const YAML::Node& where, YamlReader& r)
{
    // Positivity matters for specs built in code (HF import); YAML ranges already catch these.
    const std::pair<const char*, int> positive[] = {{"hidden_size", m.hidden_size},
                                                    {"num_layers", m.num_layers},
                                                    {"routed_experts", m.routed_experts},
                                                    {"experts_per_token", m.experts_per_token},
                                                    {"moe_intermediate_size", m.moe_intermediate_size},
                                                    {"expert_groups", m.expert_groups},
                                                    {"groups_per_token", m.groups_per_token}};
    bool allPositive = true;
    for (const auto& [key, value] : positive) {
        if (value < 1) {
            r.error(nodeFor(where, key), std::string("'") + key + "' must be at least 1, got " + str(value));
            allPositive = false;
        }
    }
    if (!allPositive)
        return;
    if (m.routing && m.routing->coactivation_groups > m.routed_experts)
        r.error(nodeFor(where, "routing", "coactivation_groups"),
                "'routing.coactivation_groups' = " + str(m.routing->coactivation_groups) + " is more than the "
                    + str(m.routed_experts) + " routed experts");
    // Counted in double first: the int64 counters of ModelSpec must never overflow on absurd input.
    const double h = m.hidden_size;
    const double layers = m.num_layers;
    const double estimate = 3.0 * h * m.moe_intermediate_size * m.routed_experts * layers
        + 3.0 * h * m.shared_intermediate_size * m.shared_experts * layers
        + 3.0 * h * m.dense_intermediate_size * layers + static_cast<double>(m.non_expert_params)
        + 2.0 * h * m.vocab_size + 8.0 * h * h * layers;
    if (estimate > 1e15) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3g", estimate);
        r.error(where, std::string("the model would have about ") + buf
                           + " parameters (over 10^15): check hidden_size, moe_intermediate_size, routed_experts "
                             "and num_layers");
        return;
    }

    if (m.experts_per_token > m.routed_experts)
        r.error(nodeFor(where, "experts_per_token"),
                "top-k (experts_per_token = " + str(m.experts_per_token)
                    + ") is larger than the expert count (routed_experts = " + str(m.routed_experts) + ")");
    if (m.routed_experts % m.expert_groups != 0) {
        r.error(nodeFor(where, "expert_groups"), "expert_groups = " + str(m.expert_groups)
                                                     + " does not divide routed_experts = " + str(m.routed_experts));
    } else if (m.groups_per_token > m.expert_groups) {
        r.error(nodeFor(where, "groups_per_token"), "groups_per_token = " + str(m.groups_per_token)
                                                        + " is larger than expert_groups = " + str(m.expert_groups));
    } else if (m.experts_per_token <= m.routed_experts) {  // (else the top-k error above says it)
        // Group-limited routing picks top-k among the experts of the chosen groups only.
        const int reachable = m.groups_per_token * (m.routed_experts / m.expert_groups);
        if (reachable < m.experts_per_token)
            r.error(nodeFor(where, "groups_per_token"),
                    "groups_per_token = " + str(m.groups_per_token) + " of expert_groups = " + str(m.expert_groups)
                        + " leave " + str(reachable) + " experts to choose from, fewer than experts_per_token = "
                        + str(m.experts_per_token));
    }

    if (m.shared_experts > 0 && m.shared_intermediate_size <= 0)
        r.error(nodeFor(where, "shared_experts"),
                "shared_experts = " + str(m.shared_experts)
                    + " needs shared_intermediate_size (the FFN size of each shared expert), which is 0");
    if (m.shared_expert_gate && m.shared_experts == 0)
        r.error(nodeFor(where, "shared_expert_gate"), "shared_expert_gate: true, but the model has no shared expert to gate");

    const YAML::Node list = child(where, "moe_layers");
    const bool located = list && list.IsSequence() && list.size() == m.moe_layers.size();
    auto layerNode = [&](std::size_t i) { return located ? YAML::Node(list[i]) : nodeFor(where, "moe_layers"); };
    if (m.moe_layers.empty())
        r.error(nodeFor(where, "moe_layers"), "'moe_layers' is empty: the model has no MoE layer");
    for (std::size_t i = 0; i < m.moe_layers.size(); ++i) {
        const int layer = m.moe_layers[i];
        if (layer < 0 || layer >= m.num_layers)
            r.error(layerNode(i), "'moe_layers' index " + str(layer) + " is out of range: num_layers = "
                                      + str(m.num_layers) + " (layers 0 to " + str(m.num_layers - 1) + ")");
        else if (i > 0 && layer <= m.moe_layers[i - 1])
            r.error(layerNode(i), "'moe_layers' must be ascending without repeats: " + str(layer) + " follows "
                                      + str(m.moe_layers[i - 1]));
    }

    const AttentionShape& a = m.attention;
    if (a.num_heads > 0 && a.kind == AttentionKind::gqa) {
        if (a.num_kv_heads < 1 || a.num_kv_heads > a.num_heads || a.num_heads % a.num_kv_heads != 0)
            r.error(nodeFor(where, "attention", "kv_heads"),
                    "attention kv_heads = " + str(a.num_kv_heads) + " must divide heads = " + str(a.num_heads));
        if (a.head_dim < 1)
            r.error(nodeFor(where, "attention", "head_dim"), "attention head_dim must be at least 1");
    }
    if (a.num_heads > 0 && a.kind == AttentionKind::mla && a.kv_lora_rank < 1)
        r.error(nodeFor(where, "attention", "kv_lora_rank"), "MLA attention needs kv_lora_rank >= 1");

    // Each mixer kind the stack uses needs its shape.
    if (!m.layer_kinds.empty() && static_cast<int>(m.layer_kinds.size()) != m.num_layers)
        r.error(nodeFor(where, "layers"), "'layers' describes " + str(static_cast<std::int64_t>(m.layer_kinds.size()))
                                              + " layers, num_layers is " + str(m.num_layers));
    const auto uses = [&](MixerKind k) { return !m.layer_kinds.empty() && m.countMixer(k) > 0; };
    if (uses(MixerKind::sliding) && m.attention.sliding_window < 1)
        r.error(nodeFor(where, "layers"), "'layers' has sliding-window layers (S) but attention.sliding_window is not set");
    if (uses(MixerKind::linear) && m.linear_attention.num_value_heads < 1)
        r.error(nodeFor(where, "layers"), "'layers' has linear-attention layers (L) but no 'linear_attention' shape");
    if (uses(MixerKind::mamba) && m.mamba.num_heads < 1)
        r.error(nodeFor(where, "layers"), "'layers' has Mamba-2 layers (M) but no 'mamba' shape");
    for (int i = 0; i < static_cast<int>(m.layer_kinds.size()); ++i) {
        if ((m.layer_kinds[static_cast<std::size_t>(i)].ffn == FfnKind::moe) != m.isMoeLayer(i)) {
            r.error(nodeFor(where, "layers"), "layer " + str(i) + ": 'layers' and moe_layers disagree on whether it is MoE");
            break;
        }
    }
    if (m.linear_attention.num_key_heads > 0 && m.linear_attention.num_value_heads % m.linear_attention.num_key_heads != 0)
        r.error(nodeFor(where, "linear_attention", "value_heads"),
                "linear_attention value_heads = " + str(m.linear_attention.num_value_heads)
                    + " must be a multiple of key_heads = " + str(m.linear_attention.num_key_heads));
    if (m.mamba.num_heads > 0 && m.mamba.num_heads % m.mamba.groups != 0)
        r.error(nodeFor(where, "mamba", "groups"), "mamba groups = " + str(m.mamba.groups)
                                                       + " must divide heads = " + str(m.mamba.num_heads));
}

ModelSpec loadModelFile(const std::string& path, const ModelYamlEdit& edit)
{
    return loadModelText(readFile(path), path, edit);
}

ModelSpec loadModelText(const std::string& text, const std::string& file, const ModelYamlEdit& edit)
{
    Diagnostics diags;
    auto root = parseYaml(text, file, diags);
    if (!root)
        throw InputError(std::move(diags));
    std::vector<NodeOrigin> origins;
    if (edit) {
        origins = edit(*root, diags);
        if (!diags.empty())
            throw InputError(std::move(diags));
    }
    YamlReader r(file, diags, std::move(origins));
    if (const std::string other = wrongKindMessage(classifyInput(*root), InputKind::model); !other.empty()) {
        r.error(*root, other);
        throw InputError(std::move(diags));
    }
    auto m = readModel(*root, r);
    if (m)
        checkModel(*m, *root, r);
    if (!m || !diags.empty())
        throw InputError(std::move(diags));
    return *m;
}

std::string modelToYaml(const ModelSpec& m)
{
    std::ostringstream out;
    char summary[128];
    std::snprintf(summary, sizeof summary, "# moex model: %.1fB parameters, %.1fB active per token\n",
                  static_cast<double>(m.totalParams()) / 1e9, static_cast<double>(m.activeParams()) / 1e9);
    out << summary;
    out << "name: " << quoteScalar(m.name) << '\n';
    out << "hidden_size: " << m.hidden_size << '\n';
    out << "num_layers: " << m.num_layers << '\n';
    if (!m.layer_kinds.empty()) {
        out << "# mixer A full attention, S sliding window, L linear attention, M Mamba-2; FFN E MoE, D dense; - none\n";
        out << "layers: " << quoteScalar(formatLayerPattern(m.layer_kinds)) << '\n';
    } else if (auto compact = compactMoeLayers(m)) {
        out << "moe_layers: {first: " << compact->first << ", every: " << compact->second << "}\n";
    } else {
        out << "moe_layers: [";
        for (std::size_t i = 0; i < m.moe_layers.size(); ++i)
            out << (i ? ", " : "") << m.moe_layers[i];
        out << "]\n";
    }
    out << "routed_experts: " << m.routed_experts << '\n';
    out << "experts_per_token: " << m.experts_per_token << '\n';
    out << "shared_experts: " << m.shared_experts << '\n';
    out << "moe_intermediate_size: " << m.moe_intermediate_size << '\n';
    out << "shared_intermediate_size: " << m.shared_intermediate_size << '\n';
    out << "dense_intermediate_size: " << m.dense_intermediate_size << '\n';
    out << "expert_groups: " << m.expert_groups << '\n';
    out << "groups_per_token: " << m.groups_per_token << '\n';
    out << "scoring: " << toString(m.scoring) << '\n';
    out << "routed_scaling_factor: " << shortestNumber(m.routed_scaling_factor) << '\n';
    out << "weight_dtype: " << toString(m.weight_dtype) << '\n';
    out << "non_expert_dtype: " << toString(m.non_expert_dtype) << '\n';
    out << "vocab_size: " << m.vocab_size << '\n';
    if (m.tie_embeddings)
        out << "tie_embeddings: true\n";
    out << "non_expert_params: " << m.non_expert_params << '\n';
    if (m.mtp_layers > 0)
        out << "mtp_layers: " << m.mtp_layers << '\n';
    if (!m.norm_topk_prob)
        out << "norm_topk_prob: false\n";
    if (m.shared_expert_gate)
        out << "shared_expert_gate: true\n";
    if (m.swiglu_limit > 0)
        out << "swiglu_limit: " << shortestNumber(m.swiglu_limit) << '\n';
    if (m.activation != Activation::swiglu)
        out << "activation: " << toString(m.activation) << '\n';
    if (m.state_dtype != DType::fp32)
        out << "state_dtype: " << toString(m.state_dtype) << '\n';
    writeAttention(out, "attention", m.attention);
    writeAttention(out, "sliding_attention", m.sliding_attention);
    if (const LinearAttentionShape& l = m.linear_attention; !(l == LinearAttentionShape{})) {
        out << "linear_attention:\n";
        out << "  key_heads: " << l.num_key_heads << '\n';
        out << "  value_heads: " << l.num_value_heads << '\n';
        out << "  key_head_dim: " << l.key_head_dim << '\n';
        out << "  value_head_dim: " << l.value_head_dim << '\n';
        out << "  conv_kernel: " << l.conv_kernel << '\n';
    }
    if (const MambaShape& b = m.mamba; !(b == MambaShape{})) {
        out << "mamba:\n";
        out << "  heads: " << b.num_heads << '\n';
        out << "  head_dim: " << b.head_dim << '\n';
        out << "  state_size: " << b.state_size << '\n';
        out << "  groups: " << b.groups << '\n';
        out << "  conv_kernel: " << b.conv_kernel << '\n';
    }
    if (m.routing) {
        out << "routing: {skew: " << shortestNumber(m.routing->skew) << ", hot_experts: "
            << shortestNumber(m.routing->hot_experts) << ", coactivation_groups: " << m.routing->coactivation_groups
            << ", drift: " << shortestNumber(m.routing->drift) << "}\n";
    }
    return out.str();
}

}  // namespace moex
