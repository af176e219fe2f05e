// ModelSpec: the shape of an MoE transformer as far as placement and performance need it.
#pragma once

#include "model/dtype.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moex {

enum class Scoring { softmax, sigmoid };
enum class AttentionKind { gqa, mla };  // gqa covers MHA (kv_heads == heads) and MQA

struct AttentionShape {
    AttentionKind kind = AttentionKind::gqa;
    int num_heads = 0;
    int num_kv_heads = 0;
    int head_dim = 0;  // per head (q/k/v) for GQA
    // MLA (DeepSeek-style): latent KV rank and rope dims; KV cache per token = kv_lora_rank + qk_rope_head_dim.
    int q_lora_rank = 0;
    int kv_lora_rank = 0;
    int qk_rope_head_dim = 0;
    int qk_nope_head_dim = 0;
    int v_head_dim = 0;
    // 0 = full attention on every layer; > 0 = window in tokens on alternate layers (gpt-oss: even
    // layers slide, odd layers see everything), the one pattern among the supported models.
    int sliding_window = 0;

    // Elements of K and V stored per token per layer in the KV cache:
    // GQA 2 * kv_heads * head_dim; MLA kv_lora_rank + qk_rope_head_dim (the compressed latent).
    [[nodiscard]] std::int64_t kvElementsPerTokenPerLayer() const;
    // Parameters of one attention block (projections only, biases ignored) at hidden size h:
    //   GQA  h*heads*head_dim (q) + 2*h*kv_heads*head_dim (k, v) + heads*head_dim*h (o)
    //   MLA  q: q_lora_rank > 0 ? h*q_lora_rank + q_lora_rank*heads*(nope+rope) : h*heads*(nope+rope)
    //        + h*(kv_lora_rank+rope) (kv down) + kv_lora_rank*heads*(nope+v_head_dim) (kv up)
    //        + heads*v_head_dim*h (o)
    [[nodiscard]] std::int64_t params(int hidden) const;

    friend bool operator==(const AttentionShape&, const AttentionShape&) = default;
};

// Parameter counting (all in elements, not bytes):
//   expertParams              = 3 * hidden * moe_intermediate          (SwiGLU gate, up, down)
//   routedExpertParams        = expertParams * routed_experts * numMoeLayers
//   sharedExpertParamsPerLayer = shared_experts * 3 * hidden * shared_intermediate_size
//   totalParams               = routed + shared per layer * numMoeLayers + non_expert_params
//   activeParams              = non_expert_params + numMoeLayers * (experts_per_token * expertParams + shared per layer)
// non_expert_params is whatever the model's makers count besides the experts; the sample files say
// where they had to set it explicitly because the shape estimate misses the published totals.
struct ModelSpec {
    std::string name;
    int hidden_size = 0;
    int num_layers = 0;
    std::vector<int> moe_layers;  // decoder-layer indices that are MoE, ascending
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
    int vocab_size = 0;
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

    [[nodiscard]] int numMoeLayers() const { return static_cast<int>(moe_layers.size()); }
    [[nodiscard]] bool isMoeLayer(int layer) const;

    // One routed expert: SwiGLU gate, up, down = 3 * hidden * moe_intermediate.
    [[nodiscard]] std::int64_t expertParams() const;
    [[nodiscard]] double expertBytes() const;  // at weight_dtype, block scales included
    [[nodiscard]] std::int64_t sharedExpertParamsPerLayer() const;
    [[nodiscard]] std::int64_t routedExpertParams() const;  // all layers
    [[nodiscard]] std::int64_t totalParams() const;
    [[nodiscard]] std::int64_t activeParams() const;  // per token
    [[nodiscard]] double nonExpertBytes() const;  // non-expert + shared experts at non_expert_dtype

    // Estimate of non_expert_params from the shapes: attention.params(hidden) * num_layers
    // + 3 * hidden * dense_intermediate_size per dense layer + hidden * routed_experts (router) per MoE layer
    // + 2 * vocab_size * hidden (embedding and output head, untied) + 2 * hidden per layer (norms).
    [[nodiscard]] std::int64_t estimateNonExpertParams() const;

    friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

std::string_view toString(Scoring s);
std::string_view toString(AttentionKind k);

}  // namespace moex
