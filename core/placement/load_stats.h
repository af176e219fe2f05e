// Expert-load statistics recorded by serving systems, read into one shape: load[MoE layer][expert].
//
//   LoadStats s = readLoadStats("expert_distribution_recorder_1718000000.pt");
//   checkLoadShape(s, model.numMoeLayers(), model.routed_experts, path);   // or alignToModel
//
// Formats (FORMATS.md of the design notes, "Imports"): SGLang recorder .pt files (torch.save, read without
// torch or any code execution), a TensorRT-LLM statistics folder (meta_info.json +
// rank*.safetensors), vLLM eplb_load_stats JSONL, per-token routing traces (JSONL), a plain JSON
// matrix and per-layer counts JSON. Bad input throws InputError located at the file (line for JSONL,
// byte offset in the message for binary formats).
#pragma once

#include "model/model_spec.h"

#include <string>
#include <vector>

namespace moex {

// What the file's layer numbers mean (FORMATS.md, "The layer-index trap").
enum class LayerIndexing {
    moe_ordinal,  // rows are the MoE layers in order (vLLM, a plain matrix)
    decoder_ids,  // layer_ids are decoder-layer indices of MoE layers (TensorRT-LLM, counts JSON, traces)
    decoder_all,  // one row per decoder layer, dense ones included (SGLang)
};

struct LoadStats {
    std::string format;  // sglang, trtllm, vllm, trace, json-matrix, json-counts, json-summary
    std::string detail;  // what was read, for people: "stat mode, 3 buffer rows summed"
    int num_experts = 0;
    std::vector<std::vector<double>> load;  // [row][expert], rows in file order
    std::vector<int> layer_ids;             // the file's layer of each row, when it names them
    int top_k = 0;                          // 0 = not in the file
    int max_expert_line = 0;                // a trace's line with the largest expert id (0 = none)
    LayerIndexing indexing = LayerIndexing::moe_ordinal;
    // Only per-layer summary statistics were in the file: each layer's counts keep its total,
    // maximum and quartiles, but which expert holds which count is a fixed shuffle.
    bool reconstructed = false;
    // The file's snapshots, where it holds several (SGLang's non-empty buffer rows, TensorRT-LLM's
    // iterations): [snapshot][row][expert], rows as in `load`, which is their sum. Empty otherwise.
    std::vector<std::vector<std::vector<double>>> snapshots;

    [[nodiscard]] int numLayers() const { return static_cast<int>(load.size()); }
    [[nodiscard]] double total(int row) const;
    [[nodiscard]] double max(int row) const;
    [[nodiscard]] double mean(int row) const;
    [[nodiscard]] double maxOverMean(int row) const;  // 0 for an empty row
};

// Detects the format from the path (folder, extension) and the first bytes, and reads it.
LoadStats readLoadStats(const std::string& path);

// Throws InputError at `file` when the statistics do not have numMoeLayers rows of numExperts:
// "has 32 layers but the model has 58 MoE layers", "has 8 experts but the model has 256"; a trace
// with an expert id past the model's is blamed at that record's line.
void checkLoadShape(const LoadStats& stats, int numMoeLayers, int numExperts, const std::string& file);

// The rows for the model's MoE layers, in order: drops SGLang's dense-layer rows, matches layer ids
// against model.moe_layers, then checks the shape as checkLoadShape does.
LoadStats alignToModel(const LoadStats& stats, const ModelSpec& model, const std::string& file);

}  // namespace moex
