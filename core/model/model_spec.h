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
    int sliding_window = 0;  // 0 = full attention on every layer

    // Elements of K and V stored per token per layer in the KV cache.
    [[nodiscard]] std::int64_t kvElementsPerTokenPerLayer() const;
    // Parameters of one attention block (projections) at hidden size h.
    [[nodiscard]] std::int64_t params(int hidden) const;
};

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

    // Estimate of non_expert_params from the shapes (attention, dense FFN, embeddings, router, norms).
    [[nodiscard]] std::int64_t estimateNonExpertParams() const;
};

std::string_view toString(Scoring s);
std::string_view toString(AttentionKind k);

}  // namespace moex
