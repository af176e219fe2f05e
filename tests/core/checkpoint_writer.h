// Test helper: writes safetensors files and whole Hugging Face checkpoint directories whose tensors
// are the engine's seeded weights, stored byte for byte in each family's layout (tst_checkpoint).
#pragma once

#include "engine/moe_layer.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace ckpt_test {

using namespace moex;
using namespace moex::engine;

struct StTensor {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::string bytes;
};
using StFile = std::map<std::string, StTensor>;          // tensor name -> tensor
using StCheckpoint = std::map<std::string, StFile>;      // shard file name -> its tensors

// u64 little-endian header length, the JSON header, the data in name order.
inline std::string safetensorsBytes(const StFile& f)
{
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    for (const auto& [name, t] : f) {
        header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
        data += t.bytes;
    }
    const std::string h = header.dump();
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<char>((static_cast<std::uint64_t>(h.size()) >> (8 * i)) & 0xff);
    return out + h + data;
}

inline void writeBytes(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Each shard into `dir`, plus model.safetensors.index.json when `index`.
inline void writeCheckpoint(const std::string& dir, const StCheckpoint& c, bool index)
{
    nlohmann::json map = nlohmann::json::object();
    for (const auto& [file, tensors] : c) {
        writeBytes(dir + "/" + file, safetensorsBytes(tensors));
        for (const auto& [name, t] : tensors)
            map[name] = file;
    }
    if (index) {
        const nlohmann::json j = {{"metadata", {{"total_size", 0}}}, {"weight_map", map}};
        writeBytes(dir + "/model.safetensors.index.json", j.dump(1));
    }
}

template <typename T>
std::string rawBytes(const T* p, std::size_t n)
{
    return std::string(reinterpret_cast<const char*>(p), n * sizeof(T));
}

// Row r of q's storage.
inline std::string rowBytes(const QuantMatrix& q, std::int64_t r, std::int64_t bytes)
{
    return rawBytes(q.rowData(static_cast<int>(r)), static_cast<std::size_t>(bytes));
}

inline StTensor f32Tensor(const std::vector<float>& v, std::vector<std::int64_t> shape)
{
    return {"F32", std::move(shape), rawBytes(v.data(), v.size())};
}

inline std::string storageBytes(const QuantMatrix& q)
{
    return rawBytes(q.storage().data(), q.storage().size());
}

// One [rows][cols] weight as the file stores it in q's own format: F32, BF16, or F8_E4M3 with
// <name>_scale_inv.
inline void putMatrix(StFile& f, const std::string& name, const QuantMatrix& q)
{
    const std::vector<std::int64_t> shape = {q.rows(), q.cols()};
    switch (q.format()) {
    case WeightFormat::f32: f[name] = {"F32", shape, storageBytes(q)}; break;
    case WeightFormat::bf16: f[name] = {"BF16", shape, storageBytes(q)}; break;
    case WeightFormat::fp8_block:
        f[name] = {"F8_E4M3", shape, storageBytes(q)};
        f[name + "_scale_inv"] = {"F32", {(q.rows() + 127) / 128, (q.cols() + 127) / 128},
                                  rawBytes(q.scaleStorage().data(), q.scaleStorage().size())};
        break;
    case WeightFormat::mxfp4: throw std::logic_error("MXFP4 matrices are written fused (gpt-oss)");
    }
}

enum class Layout { mixtral, mlp, qwen2_shared, gpt_oss_mxfp4, gpt_oss_bf16, nemotron };

// gpt-oss's fused experts of one layer: blocks + scales, or the dequantised [E, H, 2I] / [E, I, H]
// bf16 layout; gate on even rows (or columns) of gate_up, up on odd ones.
inline void putGptOssExperts(StFile& f, const std::string& p, const LayerShape& s, const std::vector<FfnWeights>& w,
                             bool mxfp4)
{
    const std::int64_t E = s.experts, H = s.hidden, I = s.inter;
    std::string gub, gus, db, ds, gubias, dbias;
    std::vector<std::uint16_t> gu(static_cast<std::size_t>(E * H * 2 * I)), dn(static_cast<std::size_t>(E * I * H));
    for (std::int64_t e = 0; e < E; ++e) {
        const FfnWeights& x = w[static_cast<std::size_t>(e)];
        for (std::int64_t i = 0; i < I; ++i) {
            if (mxfp4) {
                for (const QuantMatrix* q : {&x.gate, &x.up}) {
                    gub += rowBytes(*q, i, H / 2);
                    for (std::int64_t b = 0; b < H / 32; ++b)
                        gus += static_cast<char>(std::ilogb(q->rowScales(static_cast<int>(i))[b]) + 127);
                }
            } else {
                for (std::int64_t h = 0; h < H; ++h)
                    for (int half = 0; half < 2; ++half) {
                        const QuantMatrix& q = half == 0 ? x.gate : x.up;
                        std::uint16_t v;
                        std::memcpy(&v, q.rowData(static_cast<int>(i)) + 2 * h, 2);
                        gu[static_cast<std::size_t>(((e * H + h) * 2 * I) + 2 * i + half)] = v;
                    }
            }
            gubias += rawBytes(&x.gate_bias[static_cast<std::size_t>(i)], 1) + rawBytes(&x.up_bias[static_cast<std::size_t>(i)], 1);
        }
        for (std::int64_t h = 0; h < H; ++h) {
            if (mxfp4) {
                db += rowBytes(x.down, h, I / 2);
                for (std::int64_t b = 0; b < I / 32; ++b)
                    ds += static_cast<char>(std::ilogb(x.down.rowScales(static_cast<int>(h))[b]) + 127);
            } else {
                for (std::int64_t i = 0; i < I; ++i)
                    std::memcpy(&dn[static_cast<std::size_t>((e * I + i) * H + h)], x.down.rowData(static_cast<int>(h)) + 2 * i, 2);
            }
        }
        dbias += rawBytes(x.down_bias.data(), x.down_bias.size());
    }
    if (mxfp4) {
        f[p + "gate_up_proj_blocks"] = {"U8", {E, 2 * I, H / 32, 16}, gub};
        f[p + "gate_up_proj_scales"] = {"U8", {E, 2 * I, H / 32}, gus};
        f[p + "down_proj_blocks"] = {"U8", {E, H, I / 32, 16}, db};
        f[p + "down_proj_scales"] = {"U8", {E, H, I / 32}, ds};
    } else {
        f[p + "gate_up_proj"] = {"BF16", {E, H, 2 * I}, rawBytes(gu.data(), gu.size())};
        f[p + "down_proj"] = {"BF16", {E, I, H}, rawBytes(dn.data(), dn.size())};
    }
    f[p + "gate_up_proj_bias"] = {"F32", {E, 2 * I}, gubias};
    f[p + "down_proj_bias"] = {"F32", {E, H}, dbias};
}

// The seeded weights (makeRouterWeights / makeExpertWeights / makeSharedWeights of `s`, `seed`) of
// decoder layers `layers` in `layout`'s names, one shard per layer ("model-0000L.safetensors").
inline StCheckpoint seededCheckpoint(const LayerShape& s, std::uint64_t seed, const std::vector<int>& layers, Layout layout)
{
    StCheckpoint c;
    for (int L : layers) {
        StFile& f = c["model-" + std::to_string(10000 + L).substr(1) + ".safetensors"];
        const std::string p = (layout == Layout::nemotron ? "backbone.layers." : "model.layers.") + std::to_string(L) + ".";
        const RouterWeights r = makeRouterWeights(s, seed, L);
        const std::vector<std::int64_t> rshape = {s.experts, s.hidden};
        std::vector<FfnWeights> experts;
        for (int e = 0; e < s.experts; ++e)
            experts.push_back(makeExpertWeights(s, seed, L, e));
        switch (layout) {
        case Layout::mixtral:
            f[p + "block_sparse_moe.gate.weight"] = f32Tensor(r.weight, rshape);
            for (int e = 0; e < s.experts; ++e) {
                const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
                putMatrix(f, x + "w1.weight", experts[static_cast<std::size_t>(e)].gate);
                putMatrix(f, x + "w3.weight", experts[static_cast<std::size_t>(e)].up);
                putMatrix(f, x + "w2.weight", experts[static_cast<std::size_t>(e)].down);
            }
            break;
        case Layout::mlp:
        case Layout::qwen2_shared: {
            f[p + "mlp.gate.weight"] = f32Tensor(r.weight, rshape);
            if (!r.correction.empty())
                f[p + "mlp.gate.e_score_correction_bias"] = f32Tensor(r.correction, {s.experts});
            for (int e = 0; e < s.experts; ++e) {
                const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
                putMatrix(f, x + "gate_proj.weight", experts[static_cast<std::size_t>(e)].gate);
                putMatrix(f, x + "up_proj.weight", experts[static_cast<std::size_t>(e)].up);
                putMatrix(f, x + "down_proj.weight", experts[static_cast<std::size_t>(e)].down);
            }
            if (s.shared_inter > 0) {
                const FfnWeights sh = makeSharedWeights(s, seed, L);
                const std::string x = p + (layout == Layout::mlp ? "mlp.shared_experts." : "mlp.shared_expert.");
                putMatrix(f, x + "gate_proj.weight", sh.gate);
                putMatrix(f, x + "up_proj.weight", sh.up);
                putMatrix(f, x + "down_proj.weight", sh.down);
                if (!sh.output_gate.empty())  // Qwen's shared_expert_gate, nn.Linear(hidden, 1)
                    f[p + "mlp.shared_expert_gate.weight"] = f32Tensor(sh.output_gate, {1, s.hidden});
            }
            break;
        }
        case Layout::nemotron: {  // Nemotron-H: mixer.*, ReLU^2 experts with up and down only
            f[p + "mixer.gate.weight"] = f32Tensor(r.weight, rshape);
            if (!r.correction.empty())
                f[p + "mixer.gate.e_score_correction_bias"] = f32Tensor(r.correction, {s.experts});
            auto put = [&](const std::string& x, const FfnWeights& w) {
                if (isGated(s.activation))
                    putMatrix(f, x + "gate_proj.weight", w.gate);
                putMatrix(f, x + "up_proj.weight", w.up);
                putMatrix(f, x + "down_proj.weight", w.down);
            };
            for (int e = 0; e < s.experts; ++e)
                put(p + "mixer.experts." + std::to_string(e) + ".", experts[static_cast<std::size_t>(e)]);
            if (s.shared_inter > 0)
                put(p + "mixer.shared_experts.", makeSharedWeights(s, seed, L));
            break;
        }
        case Layout::gpt_oss_mxfp4:
        case Layout::gpt_oss_bf16:
            f[p + "mlp.router.weight"] = f32Tensor(r.weight, rshape);
            f[p + "mlp.router.bias"] = f32Tensor(r.bias, {s.experts});
            putGptOssExperts(f, p + "mlp.experts.", s, experts, layout == Layout::gpt_oss_mxfp4);
            break;
        }
    }
    return c;
}

}  // namespace ckpt_test
