// A Hugging Face checkpoint directory as the engine reads it: the safetensors shards that
// model.safetensors.index.json's weight_map names (every *.safetensors file of the directory when
// there is no index), each mapped read-only and its header parsed by the strict reader
// (placement/safetensors_reader.h). The weights of one decoder layer come out by Hugging Face tensor
// name (the table per family is in checkpoint_weights.cpp and docs/ENGINE.md), in the engine's
// storage formats (quant_matrix.h): a tensor whose dtype is the engine's format is copied as stored
// bytes and scales, never widened to fp32 as a whole; any other is converted a band of rows at a time.
//
//   auto ckpt = Checkpoint::open("/models/Mixtral-8x7B-v0.1");
//   FfnWeights w = ckpt->expert(layerShape(model, DType::bf16), /*layer*/ 3, /*expert*/ 5);
//
// Every problem is an InputError naming the file: a shard that is missing, truncated or whose header
// lies (the reader's checks), a tensor that is missing (named with its layer and expert, at the index
// file or the directory), or has another dtype or shape than the scenario's model needs (at its shard).
// A Checkpoint is immutable once open, so the ranks' builder threads read it side by side.
#pragma once

#include "engine/moe_layer.h"
#include "placement/safetensors_reader.h"

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace moex::engine {

class Checkpoint {
public:
    // Opens directory `dir`. Throws InputError naming the file at fault.
    static std::shared_ptr<const Checkpoint> open(const std::string& dir);
    ~Checkpoint();
    Checkpoint(const Checkpoint&) = delete;
    Checkpoint& operator=(const Checkpoint&) = delete;

    [[nodiscard]] const std::string& dir() const { return m_dir; }
    [[nodiscard]] std::size_t shardCount() const { return m_shards.size(); }

    struct Found {
        const SafetensorsTensor* tensor = nullptr;  // null: the checkpoint has no such tensor
        const std::string* file = nullptr;          // the shard that holds it
    };
    [[nodiscard]] Found find(const std::string& name) const;
    // Where an error about a missing tensor points: the index file, or the directory without one.
    [[nodiscard]] const std::string& lookupFile() const { return m_lookupFile; }

    // Decoder layer `layer`'s weights for a layer of shape `s`, each matrix stored as
    // storedFormat(its dtype, s.format); vectors (router, biases) as fp32.
    [[nodiscard]] RouterWeights router(const LayerShape& s, int layer) const;
    [[nodiscard]] FfnWeights expert(const LayerShape& s, int layer, int expert) const;
    [[nodiscard]] FfnWeights shared(const LayerShape& s, int layer) const;
    // The bytes those take once loaded (what the memory budget counts), after the same checks of
    // every tensor's presence, dtype and shape, without reading a weight.
    [[nodiscard]] std::size_t routerBytes(const LayerShape& s, int layer) const;
    [[nodiscard]] std::size_t expertBytes(const LayerShape& s, int layer, int expert) const;
    [[nodiscard]] std::size_t sharedBytes(const LayerShape& s, int layer) const;

private:
    Checkpoint() = default;
    struct Shard;
    std::string m_dir;
    std::string m_lookupFile;
    std::vector<std::unique_ptr<Shard>> m_shards;
    std::unordered_map<std::string, Found> m_tensors;
};

// The format the engine stores a tensor of safetensors dtype `dtype` in when its own format is
// `engine`: the engine's, except that F16 becomes f32 (exact) where the engine would take bf16 or
// f32, since fp16 to bf16 drops three mantissa bits.
WeightFormat storedFormat(const std::string& dtype, WeightFormat engine);

}  // namespace moex::engine
