// ModelSpec: the shape of an MoE transformer as far as placement and performance need it.
#pragma once

#include "model/dtype.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moex {

// The largest models a model file (and import-hf) describes: far beyond any model of 2026
// (DeepSeek-V3 has 61 layers and 256 routed experts), small enough that every per-layer or
// per-expert table stays small.
inline constexpr int kMaxModelLayers = 4096;
inline constexpr int kMaxRoutedExperts = 1 << 14;

enum class Scoring { softmax, sigmoid };
enum class AttentionKind { gqa, mla };  // gqa covers MHA (kv_heads == heads) and MQA

// What mixes tokens in a decoder layer (its "mixer") and what follows it. Hybrid stacks mix them:
// Qwen3.5 / Qwen3-Next 3 linear : 1 full attention, Nemotron-H Mamba-2 and MoE in separate layers,
// gpt-oss and MiMo sliding-window and full attention.
enum class MixerKind : unsigned char {
    attention,  // full attention over the whole context (MLA or GQA, `attention`)
    sliding,    // attention over the last `sliding_window` tokens (`sliding_attention` where given)
    linear,     // linear attention, Gated DeltaNet (`linear_attention`): a fixed-size state per sequence
    mamba,      // Mamba-2 selective state space (`mamba`): a fixed-size state per sequence
    none,       // no mixer (Nemotron-H's MoE-only and MLP-only layers)
};
enum class FfnKind : unsigned char { dense, moe, none };
// Expert (and dense FFN) activation. Gated ones (SwiGLU, GEGLU) have gate, up and down matrices;
// ReLU^2 (Nemotron-H) and GELU have up and down only.
enum class Activation : unsigned char { swiglu, geglu, relu2, gelu };
[[nodiscard]] constexpr bool isGated(Activation a) { return a == Activation::swiglu || a == Activation::geglu; }
[[nodiscard]] constexpr int ffnMatrices(Activation a) { return isGated(a) ? 3 : 2; }

// The synthetic routing generator's parameters this model's routing is best described by
// (workload/synthetic_routing.h; the model YAML's `routing:` block). A scenario whose synthetic
// routing leaves a parameter out takes it from here; fitted to real routing where some exists
// (docs/CALIBRATION.md, "Routing defaults per model family").
struct RoutingPrior {
    double skew = 0;
    double hot_experts = 0;
    int coactivation_groups = 0;
    double drift = 0;
    friend bool operator==(const RoutingPrior&, const RoutingPrior&) = default;
};

struct LayerKind {
    MixerKind mixer = MixerKind::attention;
    FfnKind ffn = FfnKind::moe;
    friend bool operator==(const LayerKind&, const LayerKind&) = default;
};

struct AttentionShape {
    AttentionKind kind = AttentionKind::gqa;
    int num_heads = 0;
    int num_kv_heads = 0;
    int head_dim = 0;  // per head (q/k, and v unless v_head_dim is set) for GQA
    // MLA (DeepSeek-style): latent KV rank and rope dims; KV cache per token = kv_lora_rank + qk_rope_head_dim.
    int q_lora_rank = 0;
    int kv_lora_rank = 0;
    int qk_rope_head_dim = 0;
    int qk_nope_head_dim = 0;
    int v_head_dim = 0;  // MLA's value head; GQA: the value head where it differs from head_dim (MiMo-V2-Flash)
    // 0 = full attention on every layer; > 0 = window in tokens on alternate layers (gpt-oss: even
    // layers slide, odd layers see everything), the one pattern among the supported models.
    int sliding_window = 0;

    // Elements of K and V stored per token per layer in the KV cache:
    // GQA kv_heads * (head_dim + valueHeadDim()) (K only with k_eq_v); MLA kv_lora_rank + qk_rope_head_dim
    // (the compressed latent).
    [[nodiscard]] std::int64_t kvElementsPerTokenPerLayer() const;
    // GQA's value head size: v_head_dim when set, else head_dim.
    [[nodiscard]] int valueHeadDim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
    // Parameters of one attention block (projections only, biases ignored) at hidden size h, with
    // d = head_dim and dv = valueHeadDim():
    //   GQA  h*heads*d (q; twice with output_gate) + h*kv_heads*(d + dv) (k, v; k only with k_eq_v) + heads*dv*h (o)
    //   MLA  q: q_lora_rank > 0 ? h*q_lora_rank + q_lora_rank*heads*(nope+rope) : h*heads*(nope+rope)
    //        + h*(kv_lora_rank+rope) (kv down) + kv_lora_rank*heads*(nope+v_head_dim) (kv up)
    //        + heads*v_head_dim*h (o)
    //   plus indexerParams() where the attention is sparse
    [[nodiscard]] std::int64_t params(int hidden) const;

    // Qwen3-Next / Qwen3.5 gate the attention output per head (attn_output_gate): q_proj is twice
    // as wide (query and gate).
    bool output_gate = false;
    // Gemma 4's full-attention layers (attention_k_eq_v): the values are the keys, so there is no
    // v_proj and the cache holds K only.
    bool k_eq_v = false;

    // DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5; config.json index_n_heads, index_head_dim,
    // index_topk). A "lightning indexer" scores every cached token with index_heads small heads in
    // fp8, and the attention then reads only the index_topk best-scoring tokens. Per layer
    // (DeepSeek-V3.2-Exp inference/model.py, class Indexer):
    //   wq_b (q_lora_rank or hidden) x heads*dim, wk hidden x dim, k_norm LayerNorm 2*dim,
    //   weights_proj hidden x heads
    // and its own key cache: dim fp8 values plus one fp32 scale per 128 per token (k_cache,
    // k_scale_cache). index_heads 0 = dense attention.
    int index_heads = 0;
    int index_head_dim = 0;
    int index_topk = 0;
    [[nodiscard]] bool sparse() const { return index_heads > 0 && index_head_dim > 0 && index_topk > 0; }
    [[nodiscard]] std::int64_t indexerParams(int hidden) const;
    // Bytes of the indexer's key cache per token per layer (0 when dense).
    [[nodiscard]] double indexerCacheBytesPerToken() const;

    friend bool operator==(const AttentionShape&, const AttentionShape&) = default;
};

// Gated DeltaNet (Qwen3-Next, Qwen3.5; transformers' Qwen3NextGatedDeltaNet). Per layer:
//   in_proj_qkvz  h x (2 key_dim + 2 value_dim), in_proj_ba h x 2 value_heads,
//   conv1d        (2 key_dim + value_dim) x conv_kernel, out_proj value_dim x h,
//   A_log, dt_bias value_heads each, gated RMSNorm value_head_dim,
// with key_dim = key_heads x key_head_dim, value_dim = value_heads x value_head_dim.
// State per sequence: the recurrent value_heads x key_head_dim x value_head_dim matrix (kept at the
// state dtype) and the causal convolution's last conv_kernel - 1 inputs.
struct LinearAttentionShape {
    int num_key_heads = 0;
    int num_value_heads = 0;
    int key_head_dim = 0;
    int value_head_dim = 0;
    int conv_kernel = 4;

    [[nodiscard]] std::int64_t params(int hidden) const;
    [[nodiscard]] std::int64_t stateElements() const;      // recurrent state, per sequence per layer
    [[nodiscard]] std::int64_t convStateElements() const;  // convolution window, per sequence per layer
    friend bool operator==(const LinearAttentionShape&, const LinearAttentionShape&) = default;
};

// Mamba-2 (Nemotron-H; transformers' NemotronHMamba2Mixer), d_inner = heads x head_dim,
// g = groups, n = state_size. Per layer:
//   in_proj  h x (2 d_inner + 2 g n + heads) (z, x, B, C, dt), conv1d (d_inner + 2 g n) x (conv_kernel + 1)
//   (weights and bias), A_log, D, dt_bias heads each, gated RMSNorm d_inner, out_proj d_inner x h.
// State per sequence: heads x head_dim x n (SSM state) and the convolution's last conv_kernel - 1 inputs.
struct MambaShape {
    int num_heads = 0;
    int head_dim = 0;
    int state_size = 0;
    int groups = 1;
    int conv_kernel = 4;

    [[nodiscard]] std::int64_t innerSize() const { return std::int64_t{num_heads} * head_dim; }
    [[nodiscard]] std::int64_t params(int hidden) const;
    [[nodiscard]] std::int64_t stateElements() const;
    [[nodiscard]] std::int64_t convStateElements() const;
    friend bool operator==(const MambaShape&, const MambaShape&) = default;
};

// Parameter counting (all in elements, not bytes), with m = ffnMatrices(activation) (3 gated, 2 not):
//   expertParams              = m * hidden * moe_intermediate          (SwiGLU: gate, up, down)
//   routedExpertParams        = expertParams * routed_experts * numMoeLayers
//   sharedExpertParamsPerLayer = shared_experts * m * hidden * shared_intermediate_size
//   totalParams               = routed + shared per layer * numMoeLayers + non_expert_params
//   activeParams              = non_expert_params + numMoeLayers * (experts_per_token * expertParams + shared per layer)
// non_expert_params is whatever the model's makers count besides the experts; the sample files say
// where they had to set it explicitly because the shape estimate misses the published totals.
struct ModelSpec {
    std::string name;
    int hidden_size = 0;
    int num_layers = 0;
    std::vector<int> moe_layers;  // decoder-layer indices that are MoE, ascending
    // The stack per decoder layer. Empty: every layer has full attention (on alternate layers a
    // sliding window, when attention.sliding_window > 0: gpt-oss's even layers) and an MoE FFN on
    // moe_layers, a dense one elsewhere. When given, moe_layers lists exactly its MoE layers.
    std::vector<LayerKind> layer_kinds;
    int routed_experts = 0;
    int experts_per_token = 0;
    int shared_experts = 0;
    int moe_intermediate_size = 0;
    int shared_intermediate_size = 0;  // per shared expert
    int dense_intermediate_size = 0;   // FFN of the dense (non-MoE) layers
    int expert_groups = 1;
    int groups_per_token = 1;
    Scoring scoring = Scoring::softmax;
    double routed_scaling_factor = 1.0;
    DType weight_dtype = DType::bf16;      // routed expert weights
    DType non_expert_dtype = DType::bf16;  // attention, shared experts, dense layers, embeddings
    AttentionShape attention;
    // The sliding-window layers' own shape where it differs (MiMo-V2-Flash: swa_* keys); heads 0 =
    // the same shape as `attention`. The window is attention.sliding_window either way.
    AttentionShape sliding_attention;
    LinearAttentionShape linear_attention;
    MambaShape mamba;
    Activation activation = Activation::swiglu;  // experts, shared experts and dense FFNs
    DType state_dtype = DType::fp32;  // linear-attention / Mamba recurrent state (SGLang --mamba-ssm-dtype)
    int vocab_size = 0;
    bool tie_embeddings = false;  // the output head is the embedding table (tie_word_embeddings): counted once
    std::int64_t non_expert_params = 0;  // everything but routed and shared experts (attention, dense FFN, embeddings, norms, router)
    // Multi-token-prediction (MTP, "next-n") layers served after the decoder layers, each an MoE
    // layer with the same experts (DeepSeek-V3/R1: 1, config.json num_nextn_predict_layers). Not part
    // of num_layers nor of the parameter counts (the published 671B excludes them); serving systems
    // that place experts per layer index them num_layers, num_layers + 1, ... (TensorRT-LLM).
    int mtp_layers = 0;
    // Router and expert details the engine runs (engine/moe_layer.h): renormalise the top-k weights
    // (config.json norm_topk_prob; Mixtral and gpt-oss do so by construction), and gpt-oss's clamped
    // SwiGLU with expert and router biases (swiglu_limit, 0 = plain SwiGLU).
    bool norm_topk_prob = true;
    double swiglu_limit = 0;
    // The shared experts' output times sigmoid(x . g) per token, g one [hidden_size] vector per MoE
    // layer (transformers' Qwen2MoeSparseMoeBlock / Qwen3NextSparseMoeBlock shared_expert_gate:
    // Qwen2-MoE, Qwen3-Next, Qwen3.5). Counted in non_expert_params.
    bool shared_expert_gate = false;
    // Synthetic routing defaults for this model (none: the generator's own, workload.h).
    std::optional<RoutingPrior> routing;

    [[nodiscard]] int numMoeLayers() const { return static_cast<int>(moe_layers.size()); }
    [[nodiscard]] bool isMoeLayer(int layer) const;
    [[nodiscard]] LayerKind layerKind(int layer) const;
    // Layers of each mixer kind / FFN kind over the whole stack.
    [[nodiscard]] int countMixer(MixerKind k) const;
    [[nodiscard]] int countFfn(FfnKind k) const;
    // The attention shape a full or sliding layer uses.
    [[nodiscard]] const AttentionShape& attentionFor(MixerKind k) const;
    [[nodiscard]] std::int64_t mixerParams(MixerKind k) const;
    // Bytes one sequence holds at `context` tokens over all layers: KV cache of the attention layers
    // (full: context tokens; sliding: at most the window) at kvBytesPerElement, the fixed-size state
    // of linear-attention and Mamba layers (recurrent state at state_dtype, convolution window at
    // kvBytesPerElement).
    [[nodiscard]] double cacheBytesPerSequence(int context, double kvBytesPerElement) const;

    // One routed expert: ffnMatrices(activation) * hidden * moe_intermediate (SwiGLU: gate, up, down).
    [[nodiscard]] std::int64_t expertParams() const;
    [[nodiscard]] double expertBytes() const;  // at weight_dtype, block scales included
    [[nodiscard]] std::int64_t sharedExpertParamsPerLayer() const;
    [[nodiscard]] std::int64_t routedExpertParams() const;  // all layers
    [[nodiscard]] std::int64_t totalParams() const;
    [[nodiscard]] std::int64_t activeParams() const;  // per token
    [[nodiscard]] double nonExpertBytes() const;  // non-expert + shared experts at non_expert_dtype

    // Estimate of non_expert_params from the shapes: each layer's mixer (mixerParams)
    // + m * hidden * dense_intermediate_size per dense layer + hidden * routed_experts (router) per MoE layer
    // + 2 * vocab_size * hidden (embedding and output head; once when tied) + 2 * hidden per layer (norms).
    [[nodiscard]] std::int64_t estimateNonExpertParams() const;

    friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

std::string_view toString(Scoring s);
std::string_view toString(AttentionKind k);
std::string_view toString(Activation a);
std::string_view toString(MixerKind k);

}  // namespace moex
