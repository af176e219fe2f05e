// One MoE layer's math as serving systems run it (DESIGN.md section 6), family by family:
//   softmax      softmax over the expert logits, top-k, renormalised over the k when
//                norm_topk_prob (Mixtral, Qwen3); no renormalisation otherwise (Qwen2-MoE style)
//   sigmoid      DeepSeek-V3/R1, Kimi K2, GLM: sigmoid scores; selection on scores + the
//                correction bias, group-limited (each group scored by its two best biased scores,
//                the best topk_group groups kept), top-k; weights = the unbiased scores of the k,
//                renormalised when norm_topk_prob, times routed_scaling_factor
//   gpt-oss      logits with a router bias, top-k on logits, softmax over the k
// Experts are SwiGLU FFNs: down(silu(gate x) * up x); gpt-oss's with biases and its clamped form
// (gate <= limit, |up| <= limit, glu = gate * sigmoid(alpha gate), (up + 1) * glu); GEGLU
// (Gemma) down(gelu_tanh(gate x) * up x); non-gated ReLU^2 (Nemotron-H, transformers' NemotronHMLP)
// down(relu(up x)^2) and GELU down(gelu_tanh(up x)), with no gate matrix. Shared experts are one
// FFN of intermediate shared_experts x shared_intermediate_size on every token, its output times
// sigmoid(shared_expert_gate . x) where the family gates it (Qwen2-MoE, Qwen3-Next, Qwen3.5).
// Combine: out[t] = sum over the token's k experts, in top-k order, of weight x expert output, plus
// the shared experts' output.
//
// Every kernel of the engine's own computes each token's output with the same arithmetic in the
// same order whatever the other tokens of its batch, so an expert gives bit-identical results on
// any rank and in any batch: the output of N ranks equals one rank's. OpenBLAS's sgemm
// (openblas_from_tokens) gives the same batch the same result, but a token's result depends on
// its batch: ep_engine.cpp uses it only where each expert's batch is the same on any number of ranks.
#pragma once

#include "engine/quant_matrix.h"
#include "model/model_spec.h"

#include <cstdint>
#include <vector>

namespace moex::engine {

enum class RouterKind { softmax, sigmoid_grouped, gpt_oss };

struct LayerShape {
    int hidden = 0;
    int inter = 0;        // routed expert intermediate size
    int experts = 0;
    int topk = 0;
    int groups = 1;
    int topk_groups = 1;
    int shared_inter = 0;  // all shared experts together (0 = none)
    bool shared_gate = false;  // the shared experts' output times sigmoid(x . gate) (Qwen's shared_expert_gate)
    RouterKind router = RouterKind::softmax;
    bool norm_topk_prob = true;
    float scaling = 1.0f;
    float swiglu_limit = 0;  // > 0: gpt-oss's clamped SwiGLU with biases
    float swiglu_alpha = 1.702f;
    Activation activation = Activation::swiglu;
    WeightFormat format = WeightFormat::f32;
    // > 0: an expert given at least this many tokens multiplies them through OpenBLAS's sgemm
    // (engine/openblas.h) on float32 blocks of its weights, dequantised a block at a time; the
    // engine's own kernels otherwise (and always when 0). The caller checks that OpenBLAS loads.
    int openblas_from_tokens = 0;
};

// Whether ffnForward multiplies n tokens of shape s through OpenBLAS.
inline bool viaOpenBlas(const LayerShape& s, int n)
{
    return s.openblas_from_tokens > 0 && n >= s.openblas_from_tokens;
}

// The shape of `m`'s MoE layers, its weights stored in `weights`.
LayerShape layerShape(const ModelSpec& m, DType weights);

struct FfnWeights {
    QuantMatrix gate;  // [inter][hidden]; empty for non-gated activations
    QuantMatrix up;    // [inter][hidden]
    QuantMatrix down;  // [hidden][inter]
    std::vector<float> gate_bias, up_bias, down_bias;  // gpt-oss only
    // [hidden]: each token's output times sigmoid(output_gate . x); empty: none (the shared expert
    // of a model with shared_expert_gate only).
    std::vector<float> output_gate;
    [[nodiscard]] std::size_t bytes() const;
};

struct RouterWeights {
    std::vector<float> weight;      // [experts][hidden]
    std::vector<float> bias;        // gpt-oss: logit bias [experts]
    std::vector<float> correction;  // sigmoid: e_score_correction_bias [experts]
};

// Seeded weights: every value from (seed, layer, what, expert) alone, at scale 1/sqrt(fan-in).
FfnWeights makeExpertWeights(const LayerShape& s, std::uint64_t seed, int layer, int expert);
FfnWeights makeSharedWeights(const LayerShape& s, std::uint64_t seed, int layer);
RouterWeights makeRouterWeights(const LayerShape& s, std::uint64_t seed, int layer);
// Hidden states of token `token` (a global index) of a step: H values in [-1, 1).
void makeTokenHidden(std::uint64_t seed, int step, std::int64_t token, int hidden, float* out);

// Routes n tokens (x: n x H): ids and weights n x topk, in top-k order.
void route(const LayerShape& s, const RouterWeights& w, const float* x, int n, int* ids, float* weights);

// The same with the experts given (ids: n x topk, distinct per token): the weights the family's
// router gives those experts for these hidden states (workload routing: the scenario's choices
// forced, the router still weighs them).
void routeForced(const LayerShape& s, const RouterWeights& w, const float* x, int n, const int* ids, float* weights);

// y[t] = FFN(x[t]) for n tokens (times sigmoid(output_gate . x[t]) where w has one); rows of x and
// y are H floats at x + t * H. `scratch` grows as needed.
void ffnForward(const LayerShape& s, int inter, const FfnWeights& w, const float* x, int n, float* y,
                std::vector<float>& scratch);

// Fixed-order dot product (8 partial sums, combined pairwise): the one reduction every kernel uses.
float dot(const float* a, const float* b, int n);

}  // namespace moex::engine
