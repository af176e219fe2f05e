#include "model/hf_import.h"
#include "common/json_input.h"

#include "common/atomic_file.h"
#include "common/file_kinds.h"
#include "common/yaml_reader.h"
#include "model/hf_json.h"
#include "model/hf_layers.h"
#include "model/model_yaml.h"
#include "model/routing_prior.h"

#include <algorithm>
#include <filesystem>

namespace moex {

namespace {

using hf::ConfigReader;
using hf::Json;

constexpr std::int64_t kMaxDim = std::int64_t{1} << 22;
constexpr std::int64_t kMaxCount = 1 << 16;

// The families differ mostly in key names; these flags carry what the keys alone do not say.
struct Family {
    std::string type;                   // model_type, text_config's first
    bool intermediateIsExpert = false;  // mixtral, gpt_oss, llama4: intermediate_size is the expert FFN
    bool llama4 = false;                // shared expert of the expert size; dense FFN in intermediate_size_mlp
    bool sigmoidByDefault = false;      // deepseek_v3, kimi_k2, glm4_moe, llama4 score with a sigmoid
};

bool contains(const std::string& s, const char* part)
{
    return s.find(part) != std::string::npos;
}

Family familyOf(ConfigReader& c)
{
    // text_config's model_type ("qwen3_5_moe_text", "llama4_text") says as much as the top level's.
    std::string type;
    if (const Json* t = c.find("model_type"); t && t->is_string())
        type = t->get<std::string>();
    Family f;
    f.type = type;
    f.llama4 = contains(type, "llama4") || c.has("interleave_moe_layer_step");
    f.intermediateIsExpert = f.llama4 || contains(type, "mixtral") || contains(type, "gpt_oss")
        || (c.has("num_local_experts") && !c.has("moe_intermediate_size"));
    f.sigmoidByDefault = f.llama4 || contains(type, "deepseek_v3") || contains(type, "kimi_k2")
        || contains(type, "glm4_moe") || contains(type, "nemotron_h");
    return f;
}

std::optional<std::int64_t> firstInteger(ConfigReader& c, std::initializer_list<const char*> keys, std::int64_t min,
                                         std::int64_t max)
{
    for (const char* key : keys)
        if (c.has(key))
            return c.integer(key, min, max);
    return std::nullopt;
}

// The first of `keys` the config gives (the one firstInteger reads), or the first of them.
const char* firstKey(ConfigReader& c, std::initializer_list<const char*> keys)
{
    for (const char* key : keys)
        if (c.has(key))
            return key;
    return *keys.begin();
}

bool anyOf(ConfigReader& c, std::initializer_list<const char*> keys)
{
    return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return c.has(k); });
}

// The routing shape in the config's own keys, at their lines (checkModel would name moex's keys,
// at the file, and one wrong top-k would also fail the group check).
void checkRouting(ConfigReader& c, const ModelSpec& m, const char* expertKey, const char* topKKey)
{
    const auto str = [](int v) { return std::to_string(v); };
    if (m.experts_per_token > m.routed_experts) {
        c.error(topKKey, std::string(topKKey) + " = " + str(m.experts_per_token) + " is larger than " + expertKey + " = "
                             + str(m.routed_experts) + ": a token cannot choose more experts than there are");
        return;
    }
    if (m.routed_experts % m.expert_groups != 0) {
        c.error("n_group", "n_group = " + str(m.expert_groups) + " does not divide " + expertKey + " = " + str(m.routed_experts));
    } else if (m.groups_per_token > m.expert_groups) {
        c.error("topk_group", "topk_group = " + str(m.groups_per_token) + " is larger than n_group = " + str(m.expert_groups));
    } else if (const int reachable = m.groups_per_token * (m.routed_experts / m.expert_groups); reachable < m.experts_per_token) {
        c.error("topk_group", "topk_group = " + str(m.groups_per_token) + " of n_group = " + str(m.expert_groups) + " leaves "
                                  + str(reachable) + " experts to choose from, fewer than " + topKKey + " = "
                                  + str(m.experts_per_token));
    }
}

std::vector<int> moeLayers(ConfigReader& c, const Family& f, int layers)
{
    std::vector<int> out;
    if (c.has("moe_layers")) {  // llama4 in newer transformers lists them
        if (auto list = c.integerList("moe_layers", 0, layers - 1))
            for (auto v : *list)
                out.push_back(static_cast<int>(v));
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }
    if (f.llama4) {  // transformers: range(step - 1, layers, step)
        const auto step = c.integer("interleave_moe_layer_step", 1, kMaxCount).value_or(1);
        for (std::int64_t i = step - 1; i < layers; i += step)
            out.push_back(static_cast<int>(i));
        return out;
    }
    std::vector<std::int64_t> mlpOnly = c.integerList("mlp_only_layers", 0, std::max(layers - 1, 0)).value_or(std::vector<std::int64_t>{});
    auto dense = [&](int i) { return std::find(mlpOnly.begin(), mlpOnly.end(), i) != mlpOnly.end(); };
    if (const Json* freqList = c.find("moe_layer_freq"); freqList && freqList->is_array()) {
        // The per-layer form some checkpoints use: [0, 1, 1, ...], 1 = MoE (first_k_dense_replace,
        // when given, still keeps the first layers dense).
        const auto flags = c.integerList("moe_layer_freq", 0, 1);
        if (!flags)
            return out;
        if (static_cast<int>(flags->size()) != layers) {
            c.error("moe_layer_freq", "the per-layer moe_layer_freq lists " + std::to_string(flags->size())
                                          + " layers, num_hidden_layers is " + std::to_string(layers));
            return out;
        }
        const auto firstK = c.integer("first_k_dense_replace", 0, kMaxCount).value_or(0);
        for (int i = 0; i < layers; ++i)
            if ((*flags)[static_cast<std::size_t>(i)] == 1 && i >= firstK && !dense(i))
                out.push_back(i);
        return out;
    }
    if (anyOf(c, {"first_k_dense_replace", "moe_layer_freq"})) {  // deepseek_v3, kimi_k2, glm4_moe
        const auto firstK = c.integer("first_k_dense_replace", 0, kMaxCount).value_or(0);
        const auto freq = c.integer("moe_layer_freq", 1, kMaxCount).value_or(1);
        for (int i = 0; i < layers; ++i)
            if (i >= firstK && i % freq == 0 && !dense(i))
                out.push_back(i);
        return out;
    }
    const auto step = c.integer("decoder_sparse_step", 1, kMaxCount).value_or(1);  // qwen*_moe
    for (int i = 0; i < layers; ++i)
        if ((i + 1) % step == 0 && !dense(i))
            out.push_back(i);
    return out;
}

DType torchDType(ConfigReader& c)
{
    for (const char* key : {"torch_dtype", "dtype"}) {
        const Json* s = c.find(key);
        if (!s)
            continue;
        if (!s->is_string()) {
            c.error(key, std::string("'") + key + "' must be a string such as \"bfloat16\", got " + hf::describe(*s));
            return DType::bf16;
        }
        const std::string v = s->get<std::string>();
        if (v == "bfloat16")
            return DType::bf16;
        if (v == "float16")
            return DType::fp16;
        if (v == "float32")
            return DType::fp32;
        if (v == "float8_e4m3fn")
            return DType::fp8;
        c.error(key, std::string("'") + key + "' is \"" + v + "\": moex reads bfloat16, float16, float32 and float8_e4m3fn "
                         "(it was read as bfloat16); set weight_dtype and non_expert_dtype by hand");
        return DType::bf16;
    }
    return DType::bf16;
}

// Does a list of module patterns (ignore, modules_to_not_convert, exclude_modules) keep attention unquantized?
bool keepsAttention(const Json& q)
{
    for (const char* key : {"ignore", "modules_to_not_convert", "exclude_modules"}) {
        auto it = q.find(key);
        if (it == q.end() || !it->is_array())
            continue;
        for (const Json& p : *it)
            if (p.is_string() && (contains(p.get<std::string>(), "attn") || contains(p.get<std::string>(), "attention")))
                return true;
    }
    return false;
}

// Weight formats of the routed experts and of everything else from quantization_config.
void readDTypes(ConfigReader& c, ModelSpec& m)
{
    const DType base = torchDType(c);
    m.weight_dtype = base;
    m.non_expert_dtype = base;
    const Json* q = c.object("quantization_config");
    if (!q) {
        if (const Json* other = c.find("quantization_config"))  // a string, a list: not the mapping transformers writes
            c.error("quantization_config", "'quantization_config' must be an object with quant_method, got " + hf::describe(*other));
        return;
    }
    // A member of the wrong type is an error naming it (nlohmann's "type must be number" said
    // neither which key nor where); absent members read as not given.
    bool typeError = false;
    const std::string qAt = c.objectPointer("quantization_config");
    // `at`: the JSON Pointer of `obj`, to locate a member's error at its key.
    auto text = [&](const Json& obj, const std::string& at, const char* key) -> std::string {
        const auto it = obj.find(key);
        if (it == obj.end() || it->is_null())
            return {};
        if (!it->is_string()) {
            c.errorAt(at + "/" + key, key, std::string("quantization_config's '") + key + "' must be a string, got " + hf::describe(*it));
            typeError = true;
            return {};
        }
        return it->get<std::string>();
    };
    auto whole = [&](const Json& obj, const std::string& at, const char* key) -> std::int64_t {
        const auto it = obj.find(key);
        if (it == obj.end() || it->is_null())
            return 0;
        if (!it->is_number_integer()) {
            c.errorAt(at + "/" + key, key, std::string("quantization_config's '") + key + "' must be a whole number of bits, got " + hf::describe(*it));
            typeError = true;
            return 0;
        }
        return it->get<std::int64_t>();
    };
    const std::string method = text(*q, qAt, "quant_method");
    std::optional<DType> experts;
    if (method == "fp8") {
        experts = DType::fp8;
    } else if (method == "mxfp4") {
        experts = DType::mxfp4;
    } else if (method == "compressed-tensors" || method == "compressed_tensors") {
        // The first config group's weights say the format: 4-bit int (Kimi K2 Thinking), 4-bit float (NVFP4), fp8.
        auto groups = q->find("config_groups");
        if (groups != q->end() && groups->is_object()) {
            for (const auto& [name, group] : groups->items()) {
                if (!group.is_object())
                    continue;
                auto w = group.find("weights");
                if (w == group.end() || !w->is_object())
                    continue;
                const std::string wAt = qAt + "/config_groups/" + jsonPointerToken(name) + "/weights";
                const std::int64_t bits = whole(*w, wAt, "num_bits");
                std::string type = text(*w, wAt, "type");
                if (type.empty())
                    type = "int";
                if (bits == 4)
                    experts = type == "float" ? DType::nvfp4 : DType::int4;
                else if (bits == 8)
                    experts = DType::fp8;
                if (experts || typeError)
                    break;
            }
        }
    } else if (method == "modelopt") {
        const std::string algo = text(*q, qAt, "quant_algo");
        if (algo == "NVFP4")
            experts = DType::nvfp4;
        else if (algo == "FP8")
            experts = DType::fp8;
    } else if (method == "awq" || method == "gptq") {
        if (whole(*q, qAt, "bits") == 4)
            experts = DType::int4;
    }
    if (typeError)
        return;
    if (!experts) {
        c.errorAt(qAt, "quantization_config", "quantization_config with quant_method '" + method
                                           + "' is not understood (known: fp8, mxfp4, compressed-tensors with 4 or 8 "
                                             "bits, modelopt NVFP4/FP8, awq/gptq 4-bit); set weight_dtype by hand");
        return;
    }
    m.weight_dtype = *experts;
    // mxfp4 (gpt-oss) quantizes only the experts; the others quantize all linear layers unless told not to.
    m.non_expert_dtype = method == "mxfp4" || keepsAttention(*q) ? base : *experts;
    if (isFourBit(m.non_expert_dtype))
        m.non_expert_dtype = base;  // attention and embeddings are never shipped in 4 bits by these formats
}

void readAttention(ConfigReader& c, ModelSpec& m)
{
    auto heads = c.integer("num_attention_heads", 1, kMaxCount);
    if (!heads)
        return;
    AttentionShape& a = m.attention;
    a.num_heads = static_cast<int>(*heads);
    a.num_kv_heads = static_cast<int>(c.integer("num_key_value_heads", 1, kMaxCount).value_or(*heads));
    // Said here in the config's names and at its line (the model's own check says it in moex's).
    if (c.has("num_key_value_heads") && a.num_kv_heads > 0 && a.num_heads % a.num_kv_heads != 0)
        c.error("num_key_value_heads", "num_key_value_heads = " + std::to_string(a.num_kv_heads)
                                           + " must divide num_attention_heads = " + std::to_string(a.num_heads)
                                           + " (each key/value head serves a whole group of query heads)");
    const auto kvLora = c.integer("kv_lora_rank", 0, kMaxDim).value_or(0);
    if (kvLora > 0) {
        a.kind = AttentionKind::mla;
        a.kv_lora_rank = static_cast<int>(kvLora);
        a.q_lora_rank = static_cast<int>(c.integer("q_lora_rank", 0, kMaxDim).value_or(0));
        a.qk_rope_head_dim = static_cast<int>(c.integer("qk_rope_head_dim", 0, kMaxDim).value_or(64));
        a.qk_nope_head_dim = static_cast<int>(c.integer("qk_nope_head_dim", 0, kMaxDim).value_or(128));
        a.v_head_dim = static_cast<int>(c.integer("v_head_dim", 0, kMaxDim).value_or(a.qk_nope_head_dim));
        a.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
        // DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5).
        if (c.has("index_n_heads") || c.has("index_topk")) {
            a.index_heads = static_cast<int>(c.integer("index_n_heads", 1, kMaxCount).value_or(0));
            a.index_head_dim = static_cast<int>(c.integer("index_head_dim", 1, kMaxDim).value_or(128));
            a.index_topk = static_cast<int>(c.integer("index_topk", 1, kMaxDim).value_or(0));
            for (const char* key : {"index_n_heads", "index_topk"})
                if (!c.has(key))
                    c.error(key, std::string("sparse attention (DSA) needs ") + key + " beside index_n_heads / index_topk");
        }
    } else {
        a.head_dim = static_cast<int>(c.integer("head_dim", 1, kMaxDim).value_or(m.hidden_size / a.num_heads));
        // Without head_dim, transformers takes hidden_size / num_attention_heads: said in those
        // names at hidden_size's line (the model's check said "attention head_dim" at the file).
        if (!c.has("head_dim") && m.hidden_size > 0 && m.hidden_size < a.num_heads)
            c.error("hidden_size", "hidden_size = " + std::to_string(m.hidden_size) + " is smaller than num_attention_heads = "
                                       + std::to_string(a.num_heads) + ", so the head size hidden_size / num_attention_heads is 0 "
                                       + "(give head_dim, or check both)");
        a.v_head_dim = static_cast<int>(c.integer("v_head_dim", 0, kMaxDim).value_or(0));  // MiMo-V2-Flash: 128 of 192
        if (a.v_head_dim == a.head_dim)
            a.v_head_dim = 0;
    }
    // Gemma 4: the full-attention layers have their own head size and KV heads (global_*), K = V;
    // the sliding layers keep head_dim and num_key_value_heads.
    if (c.has("global_head_dim") || c.has("num_global_key_value_heads")) {
        m.sliding_attention = a;
        a.head_dim = static_cast<int>(c.integer("global_head_dim", 1, kMaxDim).value_or(a.head_dim));
        a.num_kv_heads = static_cast<int>(c.integer("num_global_key_value_heads", 1, kMaxCount).value_or(a.num_kv_heads));
        a.k_eq_v = c.boolean("attention_k_eq_v").value_or(false);
    }
    // MiMo-V2-Flash: the sliding-window layers' own heads (swa_*).
    if (c.has("swa_num_attention_heads") || c.has("swa_num_key_value_heads") || c.has("swa_head_dim")) {
        AttentionShape& s = m.sliding_attention;
        s = a;
        s.num_heads = static_cast<int>(c.integer("swa_num_attention_heads", 1, kMaxCount).value_or(a.num_heads));
        s.num_kv_heads = static_cast<int>(c.integer("swa_num_key_value_heads", 1, kMaxCount).value_or(a.num_kv_heads));
        s.head_dim = static_cast<int>(c.integer("swa_head_dim", 1, kMaxDim).value_or(a.head_dim));
        s.v_head_dim = static_cast<int>(c.integer("swa_v_head_dim", 0, kMaxDim).value_or(a.v_head_dim));
        if (s.v_head_dim == s.head_dim)
            s.v_head_dim = 0;
    }
    // A window counts only where some layer uses it: Qwen3 ships sliding_window with use_sliding_window false.
    const auto window = c.integer("sliding_window", 0, std::int64_t{1} << 30);
    bool used = c.boolean("use_sliding_window").value_or(true);
    if (const Json* types = c.find("layer_types"); types && types->is_array())
        used = used && std::any_of(types->begin(), types->end(), [](const Json& t) {
                   return t.is_string() && contains(t.get<std::string>(), "sliding");
               });
    if (window && used)
        a.sliding_window = static_cast<int>(*window);
}

std::string modelNameAsGiven(ConfigReader& c, const std::string& file)
{
    if (auto n = c.find("_name_or_path"); n && n->is_string()) {
        std::string s = n->get<std::string>();
        while (!s.empty() && s.back() == '/')
            s.pop_back();
        if (const auto slash = s.rfind('/'); slash != std::string::npos)
            s = s.substr(slash + 1);
        if (!s.empty())
            return s;
    }
    // Hub mirrors save configs as "org--name.json"; the stem then names the model.
    std::string stem = std::filesystem::path(file).stem().string();
    if (const auto sep = stem.rfind("--"); sep != std::string::npos)
        stem = stem.substr(sep + 2);
    if (!stem.empty() && stem != "config" && stem.find_first_of("<>") == std::string::npos)
        return stem;
    if (auto t = c.find("model_type"); t && t->is_string())
        return t->get<std::string>();
    return "hf-model";
}

// A name the model file can carry (it refuses control characters in names: names go into the
// files moex writes and onto the terminal).
std::string modelName(ConfigReader& c, const std::string& file)
{
    return printableLine(modelNameAsGiven(c, file));
}

// The config's JSON; where it is not even shaped as JSON but one of moex's own YAML files (a model file given as
// hf_config, say), one error saying which file it is instead of a JSON syntax error at its first '#'.
Json parseConfigJson(const std::string& text, const std::string& file, JsonKeyOffsets& keys)
{
    try {
        return parseJsonInput(text, file, 0, "config.json", keys);
    } catch (const JsonSyntaxError&) {
        const auto first = text.find_first_not_of(" \t\r\n");
        if (first == std::string::npos || text[first] == '{' || text[first] == '[')
            throw;  // JSON with a syntax error: the error says where
        Diagnostics ignored;
        const auto node = parseYaml(text, file, ignored);
        const std::string other = node ? wrongKindMessage(classifyInput(*node), InputKind::hf_config) : std::string();
        if (!other.empty())
            throw InputError(Location{file, 1, 1}, other);
        throw;
    }
}

}  // namespace

ModelSpec importHfConfig(const std::string& jsonText, const std::string& file)
{
    return withJsonErrors(file, 0, [&] {
        JsonKeyOffsets keys;
        const Json root = parseConfigJson(jsonText, file, keys);
        if (!root.is_object())
            throw InputError(Location{file, 1, 1}, "a Hugging Face config.json must hold a JSON object");

        Diagnostics diags;
        ConfigReader c(root, jsonText, file, diags, &keys);
        const Family family = familyOf(c);

        // Every missing key is named at once, so one edit fixes the file.
        std::vector<std::string> missing;
        const bool isMoe = anyOf(c, {"num_local_experts", "num_experts", "n_routed_experts"});
        if (!isMoe)
            c.errorAtFile("not an MoE model: missing num_local_experts/num_experts/n_routed_experts");
        const char* interKey = c.has("moe_intermediate_size") || !family.intermediateIsExpert ? "moe_intermediate_size"
                                                                                              : "intermediate_size";
        // num_attention_heads too: without it the model was imported with no attention at all
        // (a Mixtral step 2.9 times too fast, DeepSeek-R1 11.5 B active parameters short).
        for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads"})
            if (!c.has(key))
                missing.emplace_back(key);
        if (isMoe && !anyOf(c, {"num_experts_per_tok", "experts_per_token", "moe_topk", "top_k_experts"}))
            missing.emplace_back("num_experts_per_tok");
        if (isMoe && !c.has(interKey))
            missing.emplace_back(interKey);
        if (!missing.empty()) {
            std::string list;
            for (const auto& k : missing)
                list += (list.empty() ? "" : ", ") + k;
            c.errorAtFile("missing keys: " + list);
        }

        ModelSpec m;
        m.name = modelName(c, file);
        m.hidden_size = static_cast<int>(c.integer("hidden_size", 1, kMaxDim).value_or(0));
        // The model file's limits: import-hf never writes a file that validate refuses.
        m.num_layers = static_cast<int>(c.integer("num_hidden_layers", 1, kMaxModelLayers).value_or(0));
        const std::initializer_list<const char*> kExpertKeys = {"n_routed_experts", "num_local_experts", "num_experts"};
        const std::initializer_list<const char*> kTopKKeys = {"num_experts_per_tok", "experts_per_token", "moe_topk",
                                                                  "top_k_experts"};
        m.routed_experts = static_cast<int>(firstInteger(c, kExpertKeys, 1, kMaxRoutedExperts).value_or(0));
        m.experts_per_token = static_cast<int>(firstInteger(c, kTopKKeys, 1, kMaxRoutedExperts).value_or(0));
        m.moe_intermediate_size = static_cast<int>(c.integer(interKey, 1, kMaxDim).value_or(0));
        if (!diags.empty())
            throw InputError(std::move(diags));

        // The shared expert's own FFN size, where the family gives one (Nemotron-H and others:
        // moe_shared_expert_intermediate_size); else each shared expert has the expert size.
        const auto sharedSize = c.integer("moe_shared_expert_intermediate_size", 0, kMaxDim);
        if (c.has("n_shared_experts")) {  // deepseek_v3, kimi_k2, glm4_moe, nemotron_h
            m.shared_experts = static_cast<int>(c.integer("n_shared_experts", 0, kMaxCount).value_or(0));
            m.shared_intermediate_size =
                m.shared_experts > 0 ? static_cast<int>(sharedSize.value_or(m.moe_intermediate_size)) : 0;
        } else if (sharedSize && *sharedSize > 0) {
            m.shared_experts = 1;
            m.shared_intermediate_size = static_cast<int>(*sharedSize);
        } else if (auto size = c.integer("shared_expert_intermediate_size", 0, kMaxDim); size && *size > 0) {
            m.shared_experts = 1;  // qwen2_moe, qwen3_next, qwen3_5_moe: one shared expert of its own size,
            m.shared_intermediate_size = static_cast<int>(*size);
            m.shared_expert_gate = true;  // its output gated per token (shared_expert_gate)
        } else if (family.llama4) {
            m.shared_experts = 1;
            m.shared_intermediate_size = m.moe_intermediate_size;
        } else if (c.boolean("enable_moe_block").value_or(false)) {
            // Gemma 4: every layer runs its dense MLP (intermediate_size) beside the MoE block, on
            // every token: in cost and parameters one shared expert of that size.
            m.shared_experts = 1;
            m.shared_intermediate_size = static_cast<int>(c.integer("intermediate_size", 1, kMaxDim).value_or(0));
        }
        const bool gemmaMoe = c.boolean("enable_moe_block").value_or(false);
        if (gemmaMoe)
            m.dense_intermediate_size = 0;  // the MLP is the shared expert above
        else if (family.llama4)
            m.dense_intermediate_size = static_cast<int>(c.integer("intermediate_size_mlp", 0, kMaxDim).value_or(0));
        else if (!family.intermediateIsExpert)
            m.dense_intermediate_size = static_cast<int>(c.integer("intermediate_size", 0, kMaxDim).value_or(0));

        const std::size_t beforeLayers = diags.size();
        m.moe_layers = moeLayers(c, family, m.num_layers);
        if (m.moe_layers.empty() && diags.size() == beforeLayers && m.num_layers > 0) {
            // In the config's names, at the key that made every layer dense ("'moe_layers' is
            // empty", moex's key at the file, said nothing a config's author could act on).
            const char* why = "num_hidden_layers";
            for (const char* key : {"moe_layers", "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers",
                                    "decoder_sparse_step", "interleave_moe_layer_step", "layer_types"})
                if (c.has(key)) {
                    why = key;
                    break;
                }
            c.error(why, std::string("none of the ") + std::to_string(m.num_layers) + " layers is an MoE layer by this config's '"
                             + why + "': an MoE model needs at least one");
        }
        const auto groups = c.integer("n_group", 1, kMaxCount);
        const auto groupsPerToken = c.integer("topk_group", 1, kMaxCount);
        m.expert_groups = static_cast<int>(groups.value_or(1));
        m.groups_per_token = static_cast<int>(groupsPerToken.value_or(1));
        // A group count that was refused reads as absent: no second error about a 1 the file never says.
        if ((groups || !c.has("n_group")) && (groupsPerToken || !c.has("topk_group")))
            checkRouting(c, m, firstKey(c, kExpertKeys), firstKey(c, kTopKKeys));
        if (!diags.empty())
            throw InputError(std::move(diags));
        m.scoring = family.sigmoidByDefault ? Scoring::sigmoid : Scoring::softmax;
        if (auto s = c.string("scoring_func")) {
            if (*s == "sigmoid")
                m.scoring = Scoring::sigmoid;
            else if (*s == "softmax")
                m.scoring = Scoring::softmax;
            else
                c.error("scoring_func", "scoring_func '" + *s + "' is not one of: softmax, sigmoid");
        }
        m.routed_scaling_factor = c.number("routed_scaling_factor", 1e-6, 1e6).value_or(1.0);
        readDTypes(c, m);
        readAttention(c, m);
        const bool hadMoe = !m.moe_layers.empty();
        hf::readLayerStack(c, family.type, m);
        if (hadMoe && m.moe_layers.empty() && c.has("layer_types"))
            c.error("layer_types", "none of the " + std::to_string(m.num_layers)
                                       + " layers is an MoE layer by this config's 'layer_types': an MoE model needs at least one");
        hf::readActivation(c, m);
        m.vocab_size = static_cast<int>(c.integer("vocab_size", 0, std::int64_t{1} << 24).value_or(0));
        m.tie_embeddings = c.boolean("tie_word_embeddings").value_or(false);
        // DeepSeek-V3/R1 (1), Kimi K2 (0): num_nextn_predict_layers.
        m.mtp_layers = static_cast<int>(c.integer("num_nextn_predict_layers", 0, 64).value_or(0));
        if (auto b = c.boolean("norm_topk_prob"))
            m.norm_topk_prob = *b;
        m.swiglu_limit = c.number("swiglu_limit", 0, 1e6).value_or(0.0);
        m.routing = routingPriorForFamily(family.type);
        // The family's prior was fitted on its real expert count: a smaller model of the family (a
        // 3-expert Mixtral) gets at most one co-activation group per expert, not an error about a
        // key its config never gave.
        if (m.routing && m.routed_experts > 0)
            m.routing->coactivation_groups = std::min(m.routing->coactivation_groups, m.routed_experts);
        m.non_expert_params = m.estimateNonExpertParams();

        if (!diags.empty())  // said at the config's keys: the model's checks would say it again, unlocated
            throw InputError(std::move(diags));
        YamlReader checks(file, diags);  // semantic checks shared with model YAML, located at the file
        checkModel(m, YAML::Node(), checks);
        if (!diags.empty())
            throw InputError(std::move(diags));
        return m;
    });
}

ModelSpec importHfConfigFile(const std::string& path)
{
    return importHfConfig(readFile(path), path);
}

}  // namespace moex
