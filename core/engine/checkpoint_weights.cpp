// A decoder layer's MoE weights by Hugging Face tensor name, as transformers' modeling code names
// the parameters the Hub's checkpoints are saved with (prefix model.layers.L.):
//   Mixtral          block_sparse_moe.gate.weight; block_sparse_moe.experts.E.{w1 gate, w3 up, w2 down}.weight
//   DeepSeek-V3/R1,  mlp.gate.weight (+ mlp.gate.e_score_correction_bias, sigmoid routers);
//   Kimi K2, GLM,    mlp.experts.E.{gate,up,down}_proj.weight; shared: mlp.shared_experts.{gate,up,down}_proj.weight
//   Qwen2/3-MoE      (Qwen2-MoE, Qwen3-Next, Qwen3.5: mlp.shared_expert.* and its gate
//                    mlp.shared_expert_gate.weight [1, H]); fp8-e4m3 weights with <name>_scale_inv (F32,
//                    one per 128 x 128 block, multiplied to dequantise)
//   gpt-oss          mlp.router.weight + .bias; fused experts mlp.experts.gate_up_proj_blocks
//                    [E, 2I, H/32, 16] + _scales [E, 2I, H/32] (e8m0) + _bias [E, 2I], gate the even rows
//                    and up the odd ones, down_proj_blocks [E, H, I/32, 16] + _scales + _bias [E, H];
//                    or the dequantised layout transformers saves, gate_up_proj [E, H, 2I] and
//                    down_proj [E, I, H] (input-major, transposed against nn.Linear)
//   Nemotron-H       (prefix backbone.layers.L.) mixer.gate.weight + mixer.gate.e_score_correction_bias;
//                    mixer.experts.E.{up,down}_proj.weight (ReLU^2: no gate matrix);
//                    shared: mixer.shared_experts.{up,down}_proj.weight
// Experts with a non-gated activation (ReLU^2, GELU) have no gate_proj in any naming.
// Which names a layer uses follows from its router: gpt-oss's from the model's family, Nemotron-H's
// where backbone.layers.L.mixer.gate.weight is present, Mixtral's where block_sparse_moe.gate.weight
// is, else the mlp.* names; a layer with both routers is an error.
#include "engine/checkpoint.h"

#include "common/diagnostics.h"
#include "engine/checkpoint_convert.h"

#include <algorithm>
#include <optional>

namespace moex::engine {

namespace {

enum class Naming { mixtral, mlp, gpt_oss, nemotron };

const std::vector<std::string> kMatrixDtypes = {"BF16", "F16", "F32", "F8_E4M3"};
const std::vector<std::string> kFloatDtypes = {"BF16", "F16", "F32"};

std::string shapeText(const std::vector<std::int64_t>& shape)
{
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string listText(const std::vector<std::string>& items)
{
    std::string s;
    for (std::size_t i = 0; i < items.size(); ++i)
        s += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
    return s;
}

struct FfnSource {
    std::optional<MatrixSource> gate;  // none for non-gated activations
    MatrixSource up, down;
    std::optional<VectorSource> gateBias, upBias, downBias;
    std::optional<VectorSource> outputGate;  // Qwen's shared_expert_gate [1, hidden]
};

struct RouterSource {
    VectorSource weight;
    std::optional<VectorSource> bias, correction;
};

// Looks tensors up for one part of one layer (`what`: "decoder layer 3, expert 5"), each problem an
// InputError naming the file and the tensor.
class Lookup {
public:
    Lookup(const Checkpoint& c, const LayerShape& s, int layer, std::string what)
        : m_c(c), m_s(s), m_prefix(layerPrefix(c, layer)), m_what(std::move(what))
    {
    }

    // Nemotron-H's checkpoints root the decoder at backbone., every other family at model.
    static std::string layerPrefix(const Checkpoint& c, int layer)
    {
        const std::string backbone = "backbone.layers." + std::to_string(layer) + ".";
        return c.find(backbone + "mixer.gate.weight").tensor != nullptr ? backbone : "model.layers." + std::to_string(layer) + ".";
    }
    [[nodiscard]] bool nemotron() const { return m_prefix.starts_with("backbone."); }

    [[nodiscard]] std::string name(const std::string& suffix) const { return m_prefix + suffix; }
    [[nodiscard]] bool has(const std::string& suffix) const { return m_c.find(name(suffix)).tensor != nullptr; }
    [[nodiscard]] const LayerShape& shape() const { return m_s; }

    // The tensor; `alternative`, when given, is named in the error as the other name it may have.
    Checkpoint::Found need(const std::string& suffix, const std::string& role, const std::string& alternative = {}) const
    {
        const Checkpoint::Found f = m_c.find(name(suffix));
        if (f.tensor == nullptr)
            throw InputError(Location{m_c.lookupFile(), 0, 0},
                             "the checkpoint has no tensor '" + name(suffix) + "'"
                                 + (alternative.empty() ? "" : " (nor '" + name(alternative) + "')") + ": the " + role
                                 + " of " + m_what + " (checkpoint " + m_c.dir() + ")");
        return f;
    }

    void check(const Checkpoint::Found& f, const std::string& role, const std::vector<std::string>& dtypes,
               const std::vector<std::int64_t>& shape, const std::string& dims) const
    {
        const SafetensorsTensor& t = *f.tensor;
        const std::string where = "tensor '" + t.name + "' (the " + role + " of " + m_what + ")";
        if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end())
            throw InputError(Location{*f.file, 0, 0}, where + " has dtype " + t.dtype + "; the engine reads "
                                                          + listText(dtypes) + " here");
        if (t.shape != shape)
            throw InputError(Location{*f.file, 0, 0}, where + " has shape " + shapeText(t.shape)
                                                          + "; the scenario's model needs " + shapeText(shape) + " ("
                                                          + dims + ")");
    }

    // A plain [rows][cols] weight, fp8 with its block scales.
    MatrixSource matrix(const std::string& suffix, const std::string& role, int rows, int cols, const std::string& dims,
                        const std::string& alternative = {}) const
    {
        MatrixSource m;
        m.data = need(suffix, role, alternative);
        check(m.data, role, kMatrixDtypes, {rows, cols}, dims);
        m.name = m.data.tensor->name;
        m.dtype = m.data.tensor->dtype;
        m.rows = rows;
        m.cols = cols;
        m.rowStride = static_cast<std::size_t>(cols);
        if (m.dtype == "F8_E4M3") {
            const std::string scales = suffix + "_scale_inv";
            m.scales = need(scales, role + "'s fp8 block scales");
            check(m.scales, role + "'s fp8 block scales", {"F32", "BF16"}, {(rows + 127) / 128, (cols + 127) / 128},
                  "one per 128 x 128 block");
        }
        return m;
    }

    VectorSource vector(const std::string& suffix, const std::string& role, const std::vector<std::int64_t>& shape,
                        const std::string& dims, const std::string& alternative = {}) const
    {
        VectorSource v;
        v.data = need(suffix, role, alternative);
        check(v.data, role, kFloatDtypes, shape, dims);
        v.n = 1;
        for (std::int64_t d : shape)
            v.n *= static_cast<std::size_t>(d);
        return v;
    }

private:
    const Checkpoint& m_c;
    const LayerShape& m_s;
    std::string m_prefix;
    std::string m_what;
};

Naming namingOf(const Checkpoint& c, const LayerShape& s, int layer)
{
    if (s.router == RouterKind::gpt_oss)
        return Naming::gpt_oss;
    const Lookup l(c, s, layer, {});
    if (l.nemotron())
        return Naming::nemotron;
    if (s.router == RouterKind::sigmoid_grouped)
        return Naming::mlp;  // its correction bias lives beside mlp.gate.weight
    const bool mixtral = l.has("block_sparse_moe.gate.weight");
    // Both routers in one layer: which set of experts is the model's cannot be told, and reading
    // one of them without a word ran on weights the user may not have meant.
    if (mixtral && l.has("mlp.gate.weight"))
        throw InputError(Location{c.lookupFile(), 0, 0},
                         "decoder layer " + std::to_string(layer) + " has both '" + l.name("block_sparse_moe.gate.weight")
                             + "' and '" + l.name("mlp.gate.weight") + "': two namings of one layer's router (checkpoint "
                             + c.dir() + ")");
    return mixtral ? Naming::mixtral : Naming::mlp;
}


RouterSource routerSource(const Checkpoint& c, const LayerShape& s, int layer)
{
    const Lookup l(c, s, layer, "decoder layer " + std::to_string(layer) + "'s router");
    const std::int64_t E = s.experts, H = s.hidden;
    const std::string dims = "routed experts x hidden_size";
    RouterSource r;
    switch (namingOf(c, s, layer)) {
    case Naming::gpt_oss:
        r.weight = l.vector("mlp.router.weight", "gate weight", {E, H}, dims);
        r.bias = l.vector("mlp.router.bias", "logit bias", {E}, "routed experts");
        break;
    case Naming::mixtral: r.weight = l.vector("block_sparse_moe.gate.weight", "gate weight", {E, H}, dims); break;
    case Naming::nemotron:
        r.weight = l.vector("mixer.gate.weight", "gate weight", {E, H}, dims);
        if (s.router == RouterKind::sigmoid_grouped)
            r.correction = l.vector("mixer.gate.e_score_correction_bias", "score correction bias", {E}, "routed experts");
        break;
    case Naming::mlp:
        r.weight = l.vector("mlp.gate.weight", "gate weight", {E, H}, dims,
                            s.router == RouterKind::softmax ? "block_sparse_moe.gate.weight" : "");
        if (s.router == RouterKind::sigmoid_grouped)
            r.correction = l.vector("mlp.gate.e_score_correction_bias", "score correction bias", {E}, "routed experts");
        break;
    }
    return r;
}

// One expert FFN's matrices, named `base` + gate, up, down (`alternative` + the same: another
// name the error message mentions); no gate for a non-gated activation.
FfnSource plainFfn(const Lookup& l, const std::string& base, const std::string& alternative, int inter,
                   const std::string& gate, const std::string& up, const std::string& down)
{
    const int H = l.shape().hidden;
    const auto alt = [&](const std::string& n) { return alternative.empty() ? std::string() : alternative + n; };
    FfnSource f;
    if (isGated(l.shape().activation))
        f.gate = l.matrix(base + gate, "gate projection", inter, H, "intermediate x hidden_size", alt(gate));
    f.up = l.matrix(base + up, "up projection", inter, H, "intermediate x hidden_size", alt(up));
    f.down = l.matrix(base + down, "down projection", H, inter, "hidden_size x intermediate", alt(down));
    return f;
}

// gpt-oss's fused experts: expert e's slice, gate on even rows of gate_up and up on odd ones.
FfnSource gptOssExpert(const Lookup& l, int e)
{
    const LayerShape& s = l.shape();
    const std::int64_t E = s.experts, H = s.hidden, I = s.inter;
    const auto ue = static_cast<std::size_t>(e), uH = static_cast<std::size_t>(H), uI = static_cast<std::size_t>(I);
    FfnSource f;
    MatrixSource& gate = f.gate.emplace();
    auto fill = [](MatrixSource& m, const Checkpoint::Found& data, const Checkpoint::Found& scales, const std::string& dtype,
                   std::int64_t rows, std::int64_t cols) {
        m.data = data;
        m.scales = scales;
        m.name = data.tensor->name;
        m.dtype = dtype;
        m.rows = static_cast<int>(rows);
        m.cols = static_cast<int>(cols);
    };
    const std::string p = "mlp.experts.";
    if (l.has(p + "gate_up_proj_blocks") || !l.has(p + "gate_up_proj")) {
        const auto gub = l.need(p + "gate_up_proj_blocks", "fused gate/up MXFP4 blocks", p + "gate_up_proj");
        if (H % 32 != 0 || I % 32 != 0)
            throw InputError(Location{*gub.file, 0, 0},
                             "tensor '" + gub.tensor->name + "': MXFP4 blocks run along rows of 32, but the scenario's "
                                 "model has hidden_size " + std::to_string(H) + " and intermediate size " + std::to_string(I));
        l.check(gub, "fused gate/up MXFP4 blocks", {"U8"}, {E, 2 * I, H / 32, 16},
                "experts x 2 intermediate x hidden_size/32 x 16 bytes");
        const auto gus = l.need(p + "gate_up_proj_scales", "fused gate/up MXFP4 scales");
        l.check(gus, "fused gate/up MXFP4 scales", {"U8"}, {E, 2 * I, H / 32}, "experts x 2 intermediate x hidden_size/32");
        const auto db = l.need(p + "down_proj_blocks", "down MXFP4 blocks");
        l.check(db, "down MXFP4 blocks", {"U8"}, {E, H, I / 32, 16}, "experts x hidden_size x intermediate/32 x 16 bytes");
        const auto ds = l.need(p + "down_proj_scales", "down MXFP4 scales");
        l.check(ds, "down MXFP4 scales", {"U8"}, {E, H, I / 32}, "experts x hidden_size x intermediate/32");
        fill(gate, gub, gus, "MXFP4", I, H);
        fill(f.up, gub, gus, "MXFP4", I, H);
        fill(f.down, db, ds, "MXFP4", H, I);
        gate.first = ue * 2 * uI;  // packed rows
        f.up.first = gate.first + 1;
        gate.rowStride = f.up.rowStride = 2;
        f.down.first = ue * uH;
        f.down.rowStride = 1;
    } else {
        const auto gu = l.need(p + "gate_up_proj", "fused gate/up weight");
        l.check(gu, "fused gate/up weight", kFloatDtypes, {E, H, 2 * I}, "experts x hidden_size x 2 intermediate");
        const auto d = l.need(p + "down_proj", "fused down weight");
        l.check(d, "fused down weight", kFloatDtypes, {E, I, H}, "experts x intermediate x hidden_size");
        fill(gate, gu, {}, gu.tensor->dtype, I, H);
        fill(f.up, gu, {}, gu.tensor->dtype, I, H);
        fill(f.down, d, {}, d.tensor->dtype, H, I);
        // gate (i, h) = gate_up[e][h][2i], up (i, h) = gate_up[e][h][2i + 1], down (h, i) = down[e][i][h].
        gate.first = ue * uH * 2 * uI;
        f.up.first = gate.first + 1;
        gate.rowStride = f.up.rowStride = 2;
        gate.colStride = f.up.colStride = 2 * uI;
        f.down.first = ue * uI * uH;
        f.down.rowStride = 1;
        f.down.colStride = uH;
    }
    const VectorSource gub = l.vector(p + "gate_up_proj_bias", "fused gate/up bias", {E, 2 * I}, "experts x 2 intermediate");
    const VectorSource db = l.vector(p + "down_proj_bias", "down bias", {E, H}, "experts x hidden_size");
    f.gateBias = VectorSource{gub.data, ue * 2 * uI, 2, uI};
    f.upBias = VectorSource{gub.data, ue * 2 * uI + 1, 2, uI};
    f.downBias = VectorSource{db.data, ue * uH, 1, uH};
    return f;
}

FfnSource expertSource(const Checkpoint& c, const LayerShape& s, int layer, int e)
{
    const Lookup l(c, s, layer, "decoder layer " + std::to_string(layer) + ", expert " + std::to_string(e));
    const std::string E = std::to_string(e);
    switch (namingOf(c, s, layer)) {
    case Naming::gpt_oss: return gptOssExpert(l, e);
    case Naming::mixtral:
        return plainFfn(l, "block_sparse_moe.experts." + E + ".", {}, s.inter, "w1.weight", "w3.weight", "w2.weight");
    case Naming::nemotron:
        return plainFfn(l, "mixer.experts." + E + ".", {}, s.inter, "gate_proj.weight", "up_proj.weight", "down_proj.weight");
    case Naming::mlp: break;
    }
    return plainFfn(l, "mlp.experts." + E + ".", {}, s.inter, "gate_proj.weight", "up_proj.weight", "down_proj.weight");
}

FfnSource sharedSource(const Checkpoint& c, const LayerShape& s, int layer)
{
    const Lookup l(c, s, layer, "decoder layer " + std::to_string(layer) + "'s shared experts");
    if (l.nemotron())
        return plainFfn(l, "mixer.shared_experts.", {}, s.shared_inter, "gate_proj.weight", "up_proj.weight", "down_proj.weight");
    // Qwen2-MoE names its one shared expert in the singular.
    const bool singular = !l.has("mlp.shared_experts.gate_proj.weight") && l.has("mlp.shared_expert.gate_proj.weight");
    FfnSource f = plainFfn(l, singular ? "mlp.shared_expert." : "mlp.shared_experts.", singular ? "" : "mlp.shared_expert.",
                           s.shared_inter, "gate_proj.weight", "up_proj.weight", "down_proj.weight");
    if (s.shared_gate)  // Qwen2-MoE, Qwen3-Next, Qwen3.5: nn.Linear(hidden_size, 1) beside the shared expert
        f.outputGate = l.vector("mlp.shared_expert_gate.weight", "shared expert gate", {1, s.hidden}, "1 x hidden_size");
    return f;
}

FfnWeights loadFfn(const FfnSource& f, WeightFormat fmt)
{
    FfnWeights w;
    if (f.gate)
        w.gate = loadMatrix(*f.gate, fmt);
    w.up = loadMatrix(f.up, fmt);
    w.down = loadMatrix(f.down, fmt);
    if (f.gateBias) {
        w.gate_bias = loadVector(*f.gateBias);
        w.up_bias = loadVector(*f.upBias);
        w.down_bias = loadVector(*f.downBias);
    }
    if (f.outputGate)
        w.output_gate = loadVector(*f.outputGate);
    return w;
}

std::size_t ffnBytes(const FfnSource& f, WeightFormat fmt)
{
    std::size_t b = (f.gate ? loadedBytes(*f.gate, fmt) : 0) + loadedBytes(f.up, fmt) + loadedBytes(f.down, fmt);
    if (f.gateBias)
        b += (f.gateBias->n + f.upBias->n + f.downBias->n) * sizeof(float);
    if (f.outputGate)
        b += f.outputGate->n * sizeof(float);
    return b;
}

}  // namespace

WeightFormat storedFormat(const std::string& dtype, WeightFormat engine)
{
    if (dtype == "F16" && (engine == WeightFormat::bf16 || engine == WeightFormat::f32))
        return WeightFormat::f32;
    return engine;
}

RouterWeights Checkpoint::router(const LayerShape& s, int layer) const
{
    const RouterSource r = routerSource(*this, s, layer);
    RouterWeights w;
    w.weight = loadVector(r.weight);
    if (r.bias)
        w.bias = loadVector(*r.bias);
    if (r.correction)
        w.correction = loadVector(*r.correction);
    return w;
}

std::size_t Checkpoint::routerBytes(const LayerShape& s, int layer) const
{
    const RouterSource r = routerSource(*this, s, layer);
    return (r.weight.n + (r.bias ? r.bias->n : 0) + (r.correction ? r.correction->n : 0)) * sizeof(float);
}

FfnWeights Checkpoint::expert(const LayerShape& s, int layer, int expert) const
{
    return loadFfn(expertSource(*this, s, layer, expert), s.format);
}

std::size_t Checkpoint::expertBytes(const LayerShape& s, int layer, int expert) const
{
    return ffnBytes(expertSource(*this, s, layer, expert), s.format);
}

FfnWeights Checkpoint::shared(const LayerShape& s, int layer) const
{
    return s.shared_inter > 0 ? loadFfn(sharedSource(*this, s, layer), s.format) : FfnWeights{};
}

std::size_t Checkpoint::sharedBytes(const LayerShape& s, int layer) const
{
    return s.shared_inter > 0 ? ffnBytes(sharedSource(*this, s, layer), s.format) : 0;
}

}  // namespace moex::engine
