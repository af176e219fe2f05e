#include "model/hf_layers.h"

#include <algorithm>

namespace moex::hf {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 22;
constexpr std::int64_t kMaxHeads = 1 << 16;

bool contains(const std::string& s, const char* part)
{
    return s.find(part) != std::string::npos;
}

int readInt(ConfigReader& c, const char* key, std::int64_t min, std::int64_t max, int fallback)
{
    return static_cast<int>(c.integer(key, min, max).value_or(fallback));
}

// Nemotron-H: one letter per layer, M Mamba-2, E MoE, * attention, - MLP; each layer is a mixer or
// an FFN, never both.
std::optional<std::vector<LayerKind>> fromOverridePattern(ConfigReader& c, const std::string& pattern, int layers)
{
    if (static_cast<int>(pattern.size()) != layers) {
        c.error("hybrid_override_pattern", "hybrid_override_pattern has " + std::to_string(pattern.size())
                                               + " letters, num_hidden_layers is " + std::to_string(layers));
        return std::nullopt;
    }
    std::vector<LayerKind> out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        switch (pattern[i]) {
        case 'M': out.push_back({MixerKind::mamba, FfnKind::none}); break;
        case 'E': out.push_back({MixerKind::none, FfnKind::moe}); break;
        case '*': out.push_back({MixerKind::attention, FfnKind::none}); break;
        case '-': out.push_back({MixerKind::none, FfnKind::dense}); break;
        default:
            c.error("hybrid_override_pattern", std::string("hybrid_override_pattern letter ") + std::to_string(i + 1)
                                                   + " is '" + pattern[i]
                                                   + "': known are M (Mamba-2), E (MoE), * (attention), - (MLP)");
            return std::nullopt;
        }
    }
    return out;
}

// layer_types (Qwen3-Next, Qwen3.5, gpt-oss, Gemma, ...) or layers_block_type (Nemotron 3.5):
// one name per layer for the mixer; the FFN follows moe_layers, except for Nemotron's block types.
std::optional<std::vector<LayerKind>> fromTypeList(ConfigReader& c, const char* key, const Json& list,
                                                   const ModelSpec& m)
{
    if (!list.is_array() || static_cast<int>(list.size()) != m.num_layers) {
        c.error(key, std::string(key) + " must list one type per layer (" + std::to_string(m.num_layers)
                         + "), got " + describe(list));
        return std::nullopt;
    }
    std::vector<LayerKind> out;
    for (int i = 0; i < m.num_layers; ++i) {
        const Json& t = list[static_cast<std::size_t>(i)];
        const std::string name = t.is_string() ? t.get<std::string>() : std::string();
        LayerKind k{MixerKind::attention, m.isMoeLayer(i) ? FfnKind::moe : FfnKind::dense};
        if (name == "full_attention" || name == "attention" || name == "global_attention")
            k.mixer = MixerKind::attention;
        else if (name == "sliding_attention" || name == "sliding_window_attention" || name == "local_attention")
            k.mixer = MixerKind::sliding;
        else if (name == "linear_attention")
            k.mixer = MixerKind::linear;
        else if (name == "mamba" || name == "mamba2")
            k = {MixerKind::mamba, FfnKind::none};
        else if (name == "moe")
            k = {MixerKind::none, FfnKind::moe};
        else if (name == "mlp")
            k = {MixerKind::none, FfnKind::dense};
        else {
            c.error(key, std::string(key) + "[" + std::to_string(i) + "] is " + describe(t)
                             + ": known are full_attention, sliding_attention, linear_attention, mamba, moe, mlp");
            return std::nullopt;
        }
        out.push_back(k);
    }
    return out;
}

void readLinearAttention(ConfigReader& c, ModelSpec& m)
{
    LinearAttentionShape& l = m.linear_attention;
    l.num_key_heads = readInt(c, "linear_num_key_heads", 1, kMaxHeads, 0);
    l.num_value_heads = readInt(c, "linear_num_value_heads", 1, kMaxHeads, 0);
    l.key_head_dim = readInt(c, "linear_key_head_dim", 1, kMaxDim, 0);
    l.value_head_dim = readInt(c, "linear_value_head_dim", 1, kMaxDim, 0);
    l.conv_kernel = readInt(c, "linear_conv_kernel_dim", 1, 64, 4);
    for (const char* key : {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim"})
        if (!c.has(key))
            c.errorAtFile(std::string("the config has linear-attention layers but no ") + key);
}

void readMamba(ConfigReader& c, ModelSpec& m)
{
    MambaShape& b = m.mamba;
    b.num_heads = readInt(c, "mamba_num_heads", 1, kMaxHeads, 0);
    b.head_dim = readInt(c, "mamba_head_dim", 1, kMaxDim, 0);
    b.state_size = readInt(c, "ssm_state_size", 1, kMaxDim, 0);
    b.groups = readInt(c, "n_groups", 1, kMaxHeads, 1);
    b.conv_kernel = readInt(c, "conv_kernel", 1, 64, 4);
    for (const char* key : {"mamba_num_heads", "mamba_head_dim", "ssm_state_size"})
        if (!c.has(key))
            c.errorAtFile(std::string("the config has Mamba-2 layers but no ") + key);
    const char* dtypeKey = c.has("mamba_ssm_cache_dtype") ? "mamba_ssm_cache_dtype" : "mamba_ssm_dtype";
    if (auto s = c.string(dtypeKey)) {
        if (*s == "bfloat16")
            m.state_dtype = DType::bf16;
        else if (*s == "float16")
            m.state_dtype = DType::fp16;
    }
}

}  // namespace

void readLayerStack(ConfigReader& c, const std::string& modelType, ModelSpec& m)
{
    std::optional<std::vector<LayerKind>> kinds;
    if (auto p = c.string("hybrid_override_pattern")) {
        kinds = fromOverridePattern(c, *p, m.num_layers);
    } else if (const Json* blocks = c.find("layers_block_type")) {
        kinds = fromTypeList(c, "layers_block_type", *blocks, m);
    } else if (const Json* types = c.find("layer_types")) {
        kinds = fromTypeList(c, "layer_types", *types, m);
    } else if (c.has("hybrid_layer_pattern")) {  // MiMo-V2-Flash: 1 = sliding window, 0 = full
        const auto flags = c.integerList("hybrid_layer_pattern", 0, 1);
        if (!flags)
            return;
        if (static_cast<int>(flags->size()) != m.num_layers) {
            c.error("hybrid_layer_pattern", "hybrid_layer_pattern lists " + std::to_string(flags->size())
                                                + " layers, num_hidden_layers is " + std::to_string(m.num_layers));
            return;
        }
        kinds.emplace();
        for (int i = 0; i < m.num_layers; ++i)
            kinds->push_back({(*flags)[static_cast<std::size_t>(i)] == 1 ? MixerKind::sliding : MixerKind::attention,
                              m.isMoeLayer(i) ? FfnKind::moe : FfnKind::dense});
    } else if (c.has("full_attention_interval")) {  // Qwen3-Next without layer_types: every n-th layer full
        const auto every = c.integer("full_attention_interval", 1, m.num_layers).value_or(1);
        kinds.emplace();
        for (int i = 0; i < m.num_layers; ++i)
            kinds->push_back({(i + 1) % every == 0 ? MixerKind::attention : MixerKind::linear,
                              m.isMoeLayer(i) ? FfnKind::moe : FfnKind::dense});
    }
    if (!kinds)
        return;
    const auto uses = [&](MixerKind k) {
        return std::any_of(kinds->begin(), kinds->end(), [k](LayerKind l) { return l.mixer == k; });
    };
    if (uses(MixerKind::linear))
        readLinearAttention(c, m);
    if (uses(MixerKind::mamba))
        readMamba(c, m);
    // Qwen3-Next gates every full-attention output; Qwen3.5 says so in attn_output_gate.
    m.attention.output_gate = c.boolean("attn_output_gate").value_or(contains(modelType, "qwen3_next"));
    if (uses(MixerKind::sliding) && m.attention.sliding_window < 1) {
        c.errorAtFile("the layer stack has sliding-window layers but the config gives no sliding_window");
        return;
    }
    if (!uses(MixerKind::sliding))
        m.attention.sliding_window = 0;  // a window no layer uses (Qwen3's use_sliding_window false)

    m.moe_layers.clear();
    for (int i = 0; i < m.num_layers; ++i)
        if ((*kinds)[static_cast<std::size_t>(i)].ffn == FfnKind::moe)
            m.moe_layers.push_back(i);
    // The default stack (full attention everywhere, or gpt-oss's even layers sliding) stays implicit.
    m.layer_kinds.clear();
    bool implicit = true;
    for (int i = 0; i < m.num_layers && implicit; ++i)
        implicit = m.layerKind(i) == (*kinds)[static_cast<std::size_t>(i)];
    if (!implicit)
        m.layer_kinds = std::move(*kinds);
}

void readActivation(ConfigReader& c, ModelSpec& m)
{
    for (const char* key : {"mlp_hidden_act", "hidden_activation", "hidden_act"}) {
        auto s = c.string(key);
        if (!s)
            continue;
        if (*s == "silu" || *s == "swish")
            m.activation = Activation::swiglu;
        else if (*s == "relu2")
            m.activation = Activation::relu2;
        else if (contains(*s, "gelu"))  // the MoE families with a GELU (Gemma) gate it: GEGLU
            m.activation = Activation::geglu;
        else
            c.error(key, std::string(key) + " '" + *s + "' is not a known FFN activation (silu, gelu*, relu2)");
        return;
    }
}

}  // namespace moex::hf
