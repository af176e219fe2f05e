#include "model/model_spec.h"

#include <algorithm>

namespace moex {

std::int64_t AttentionShape::kvElementsPerTokenPerLayer() const
{
    if (kind == AttentionKind::mla)
        return std::int64_t{kv_lora_rank} + qk_rope_head_dim;
    return 2 * std::int64_t{num_kv_heads} * head_dim;
}

std::int64_t AttentionShape::params(int hidden) const
{
    const std::int64_t h = hidden;
    const std::int64_t heads = num_heads;
    if (kind == AttentionKind::gqa) {
        const std::int64_t d = head_dim;
        return h * heads * d + 2 * h * std::int64_t{num_kv_heads} * d + heads * d * h;
    }
    const std::int64_t qkDim = std::int64_t{qk_nope_head_dim} + qk_rope_head_dim;
    const std::int64_t q = q_lora_rank > 0 ? h * q_lora_rank + std::int64_t{q_lora_rank} * heads * qkDim
                                           : h * heads * qkDim;
    const std::int64_t kvDown = h * (std::int64_t{kv_lora_rank} + qk_rope_head_dim);
    const std::int64_t kvUp = std::int64_t{kv_lora_rank} * heads * (std::int64_t{qk_nope_head_dim} + v_head_dim);
    const std::int64_t o = heads * v_head_dim * h;
    return q + kvDown + kvUp + o;
}

bool ModelSpec::isMoeLayer(int layer) const
{
    return std::binary_search(moe_layers.begin(), moe_layers.end(), layer);
}

std::int64_t ModelSpec::expertParams() const
{
    return 3 * std::int64_t{hidden_size} * moe_intermediate_size;
}

double ModelSpec::expertBytes() const
{
    return static_cast<double>(expertParams()) * bytesPerElement(weight_dtype);
}

std::int64_t ModelSpec::sharedExpertParamsPerLayer() const
{
    return std::int64_t{shared_experts} * 3 * hidden_size * shared_intermediate_size;
}

std::int64_t ModelSpec::routedExpertParams() const
{
    return expertParams() * routed_experts * numMoeLayers();
}

std::int64_t ModelSpec::totalParams() const
{
    return routedExpertParams() + sharedExpertParamsPerLayer() * numMoeLayers() + non_expert_params;
}

std::int64_t ModelSpec::activeParams() const
{
    const std::int64_t perLayer = std::int64_t{experts_per_token} * expertParams() + sharedExpertParamsPerLayer();
    return non_expert_params + numMoeLayers() * perLayer;
}

double ModelSpec::nonExpertBytes() const
{
    const std::int64_t params = non_expert_params + sharedExpertParamsPerLayer() * numMoeLayers();
    return static_cast<double>(params) * bytesPerElement(non_expert_dtype);
}

std::int64_t ModelSpec::estimateNonExpertParams() const
{
    const std::int64_t h = hidden_size;
    const std::int64_t layers = num_layers;
    const std::int64_t moe = numMoeLayers();
    const std::int64_t dense = std::max<std::int64_t>(0, layers - moe);
    const std::int64_t attn = attention.params(hidden_size) * layers;
    const std::int64_t denseFfn = 3 * h * dense_intermediate_size * dense;
    const std::int64_t router = h * routed_experts * moe;
    const std::int64_t embeddings = 2 * std::int64_t{vocab_size} * h;  // input table + untied output head
    const std::int64_t norms = 2 * h * layers;
    return attn + denseFfn + router + embeddings + norms;
}

std::string_view toString(Scoring s)
{
    return s == Scoring::sigmoid ? "sigmoid" : "softmax";
}

std::string_view toString(AttentionKind k)
{
    return k == AttentionKind::mla ? "mla" : "gqa";
}

}  // namespace moex
