#include "model/model_spec.h"

#include <algorithm>
#include <cmath>

namespace moex {

std::int64_t AttentionShape::kvElementsPerTokenPerLayer() const
{
    if (kind == AttentionKind::mla)
        return std::int64_t{kv_lora_rank} + qk_rope_head_dim;
    return std::int64_t{num_kv_heads} * (k_eq_v ? head_dim : head_dim + valueHeadDim());
}

std::int64_t AttentionShape::params(int hidden) const
{
    const std::int64_t h = hidden;
    const std::int64_t heads = num_heads;
    if (kind == AttentionKind::gqa) {
        const std::int64_t d = head_dim;
        const std::int64_t dv = valueHeadDim();
        const std::int64_t q = h * heads * d * (output_gate ? 2 : 1);
        return q + h * std::int64_t{num_kv_heads} * (k_eq_v ? d : d + dv) + heads * dv * h + indexerParams(hidden);
    }
    const std::int64_t qkDim = std::int64_t{qk_nope_head_dim} + qk_rope_head_dim;
    const std::int64_t q = q_lora_rank > 0 ? h * q_lora_rank + std::int64_t{q_lora_rank} * heads * qkDim
                                           : h * heads * qkDim;
    const std::int64_t kvDown = h * (std::int64_t{kv_lora_rank} + qk_rope_head_dim);
    const std::int64_t kvUp = std::int64_t{kv_lora_rank} * heads * (std::int64_t{qk_nope_head_dim} + v_head_dim);
    const std::int64_t o = heads * v_head_dim * h;
    return q + kvDown + kvUp + o + indexerParams(hidden);
}

std::int64_t AttentionShape::indexerParams(int hidden) const
{
    if (!sparse())
        return 0;
    const std::int64_t h = hidden, heads = index_heads, dim = index_head_dim;
    const std::int64_t qFrom = q_lora_rank > 0 ? q_lora_rank : h;
    return qFrom * heads * dim + h * dim + 2 * dim + h * heads;
}

double AttentionShape::indexerCacheBytesPerToken() const
{
    if (!sparse())
        return 0.0;
    return static_cast<double>(index_head_dim) + 4.0 * std::ceil(index_head_dim / 128.0);
}

std::int64_t LinearAttentionShape::params(int hidden) const
{
    const std::int64_t h = hidden;
    const std::int64_t keyDim = std::int64_t{num_key_heads} * key_head_dim;
    const std::int64_t valueDim = std::int64_t{num_value_heads} * value_head_dim;
    const std::int64_t inProj = h * (2 * keyDim + 2 * valueDim) + h * 2 * num_value_heads;
    const std::int64_t conv = (2 * keyDim + valueDim) * conv_kernel;
    return inProj + conv + valueDim * h + 2 * std::int64_t{num_value_heads} + value_head_dim;
}

std::int64_t LinearAttentionShape::stateElements() const
{
    return std::int64_t{num_value_heads} * key_head_dim * value_head_dim;
}

std::int64_t LinearAttentionShape::convStateElements() const
{
    const std::int64_t keyDim = std::int64_t{num_key_heads} * key_head_dim;
    const std::int64_t valueDim = std::int64_t{num_value_heads} * value_head_dim;
    return (2 * keyDim + valueDim) * std::max(0, conv_kernel - 1);
}

std::int64_t MambaShape::params(int hidden) const
{
    const std::int64_t h = hidden;
    const std::int64_t inner = innerSize();
    const std::int64_t bc = 2 * std::int64_t{groups} * state_size;
    const std::int64_t inProj = h * (2 * inner + bc + num_heads);
    const std::int64_t conv = (inner + bc) * (std::int64_t{conv_kernel} + 1);
    return inProj + conv + 3 * std::int64_t{num_heads} + inner + inner * h;
}

std::int64_t MambaShape::stateElements() const
{
    return innerSize() * state_size;
}

std::int64_t MambaShape::convStateElements() const
{
    return (innerSize() + 2 * std::int64_t{groups} * state_size) * std::max(0, conv_kernel - 1);
}

bool ModelSpec::isMoeLayer(int layer) const
{
    return std::binary_search(moe_layers.begin(), moe_layers.end(), layer);
}

LayerKind ModelSpec::layerKind(int layer) const
{
    if (!layer_kinds.empty())
        return layer_kinds[static_cast<std::size_t>(layer)];
    LayerKind k;
    k.mixer = attention.sliding_window > 0 && layer % 2 == 0 ? MixerKind::sliding : MixerKind::attention;
    k.ffn = isMoeLayer(layer) ? FfnKind::moe : FfnKind::dense;
    return k;
}

int ModelSpec::countMixer(MixerKind k) const
{
    int n = 0;
    for (int i = 0; i < num_layers; ++i)
        n += layerKind(i).mixer == k ? 1 : 0;
    return n;
}

int ModelSpec::countFfn(FfnKind k) const
{
    if (layer_kinds.empty())
        return k == FfnKind::moe ? numMoeLayers() : k == FfnKind::dense ? num_layers - numMoeLayers() : 0;
    return static_cast<int>(std::count_if(layer_kinds.begin(), layer_kinds.end(), [k](LayerKind l) { return l.ffn == k; }));
}

const AttentionShape& ModelSpec::attentionFor(MixerKind k) const
{
    return k == MixerKind::sliding && sliding_attention.num_heads > 0 ? sliding_attention : attention;
}

std::int64_t ModelSpec::mixerParams(MixerKind k) const
{
    switch (k) {
    case MixerKind::attention:
    case MixerKind::sliding:
        return attentionFor(k).params(hidden_size);
    case MixerKind::linear:
        return linear_attention.params(hidden_size);
    case MixerKind::mamba:
        return mamba.params(hidden_size);
    case MixerKind::none:
        return 0;
    }
    return 0;
}

double ModelSpec::cacheBytesPerSequence(int context, double kvBytesPerElement) const
{
    const double ctx = std::max(0, context);
    const double window = attention.sliding_window > 0 ? std::min(ctx, static_cast<double>(attention.sliding_window)) : ctx;
    const double stateBpe = bytesPerElement(state_dtype);
    const double perKind[] = {
        (static_cast<double>(attention.kvElementsPerTokenPerLayer()) * kvBytesPerElement + attention.indexerCacheBytesPerToken()) * ctx,
        static_cast<double>(attentionFor(MixerKind::sliding).kvElementsPerTokenPerLayer()) * kvBytesPerElement * window,
        static_cast<double>(linear_attention.stateElements()) * stateBpe
            + static_cast<double>(linear_attention.convStateElements()) * kvBytesPerElement,
        static_cast<double>(mamba.stateElements()) * stateBpe + static_cast<double>(mamba.convStateElements()) * kvBytesPerElement,
        0.0};
    double bytes = 0;
    for (int i = 0; i < num_layers; ++i)
        bytes += perKind[static_cast<int>(layerKind(i).mixer)];
    return bytes;
}

std::int64_t ModelSpec::expertParams() const
{
    return ffnMatrices(activation) * std::int64_t{hidden_size} * moe_intermediate_size;
}

double ModelSpec::expertBytes() const
{
    return static_cast<double>(expertParams()) * bytesPerElement(weight_dtype);
}

std::int64_t ModelSpec::sharedExpertParamsPerLayer() const
{
    return std::int64_t{shared_experts} * ffnMatrices(activation) * hidden_size * shared_intermediate_size;
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
    const std::int64_t dense = countFfn(FfnKind::dense);
    std::int64_t attn = 0;
    for (MixerKind k : {MixerKind::attention, MixerKind::sliding, MixerKind::linear, MixerKind::mamba})
        attn += mixerParams(k) * countMixer(k);
    const std::int64_t denseFfn = ffnMatrices(activation) * h * dense_intermediate_size * dense;
    const std::int64_t router = h * routed_experts * moe + (shared_expert_gate && shared_experts > 0 ? h * moe : 0);
    const std::int64_t embeddings = (tie_embeddings ? 1 : 2) * std::int64_t{vocab_size} * h;  // input table + output head
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

std::string_view toString(Activation a)
{
    switch (a) {
    case Activation::swiglu: return "swiglu";
    case Activation::geglu: return "geglu";
    case Activation::relu2: return "relu2";
    case Activation::gelu: return "gelu";
    }
    return "swiglu";
}

std::string_view toString(MixerKind k)
{
    switch (k) {
    case MixerKind::attention: return "full attention";
    case MixerKind::sliding: return "sliding-window attention";
    case MixerKind::linear: return "linear attention";
    case MixerKind::mamba: return "Mamba-2";
    case MixerKind::none: return "none";
    }
    return "none";
}

}  // namespace moex
