// Routing from recorded data: per-token traces (JSONL), per-layer expert counts (JSON), and
// TraceRouting, which turns either into RoutingSample steps.
//
//   TokenTrace t = readTokenTrace("mixtral8x7b_gsm8k_2_routing.jsonl");
//   TraceRouting routing(std::move(t), model, workload, 8);  routing.next(sample);
//
// Formats (FORMATS.md): a JSONL trace holds one object per (token, layer):
//   {"layer": 0, "experts": [7, 0], "gating_probs": [..], "token_idx": 0, "problem_id": 0, ...}
// A counts file is {"num_experts": N, "layers": [..], "expert_usage_by_layer": {"1": {"0": 812, ..}}},
// a plain matrix [[layer-0 loads..], ..], or per-layer summary statistics ("layer_statistics", as
// dumped by specMoE): the latter has no per-expert counts, so they are reconstructed (see below).
// Bad input throws InputError with FILE:LINE:COL of every problem found (up to a limit).
#pragma once

#include "model/model_spec.h"
#include "workload/routing_sample.h"
#include "workload/workload.h"

#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace moex {

struct TokenKey {
    std::int64_t problem_id = 0;
    std::int64_t token_idx = 0;
    auto operator<=>(const TokenKey&) const = default;
};

// A per-token routing trace. Tokens are keyed by (problem_id, token_idx), so the same token is
// matched across layers (records without them are keyed by their order within the layer).
struct TokenTrace {
    std::string source;  // file name, for messages
    int num_layers = 0;
    int num_experts = 0;  // as given to the reader, else max expert id + 1
    int max_expert_line = 0;  // the line of the first record with the largest expert id
    int top_k = 0;
    std::vector<int> layer_ids;    // the file's "layer" of each trace layer, ascending
    std::vector<TokenKey> tokens;  // every distinct token, in order of first appearance
    // Per trace layer: the tokens routed there (indices into tokens, ascending) and their experts,
    // top_k per token, row-major.
    std::vector<std::vector<std::int32_t>> layer_tokens;
    std::vector<std::vector<std::int32_t>> layer_experts;

    [[nodiscard]] int numTokens(int layer) const
    {
        return static_cast<int>(layer_tokens[static_cast<std::size_t>(layer)].size());
    }
    [[nodiscard]] std::span<const std::int32_t> experts(int layer, int i) const
    {
        return {layer_experts[static_cast<std::size_t>(layer)].data() + static_cast<std::size_t>(i) * top_k,
                static_cast<std::size_t>(top_k)};
    }
    // Position of token `token` in layer `layer`, or -1 when it has no record there.
    [[nodiscard]] int find(int layer, int token) const;
    // Tokens that chose each expert at one layer.
    [[nodiscard]] std::vector<std::int64_t> expertCounts(int layer) const;
};

struct TraceReadOptions {
    int num_experts = 0;  // > 0: expert ids must be below it; 0: max id + 1
    std::size_t max_file_bytes = std::size_t{1} << 30;
    std::size_t max_line_bytes = std::size_t{1} << 20;
};

TokenTrace readTokenTrace(const std::string& path, const TraceReadOptions& options = {});
// The same from text in memory; `source` names it in messages.
TokenTrace parseTokenTrace(std::string_view text, const std::string& source, const TraceReadOptions& options = {});

// Expert load per layer.
struct LayerCounts {
    std::string source;
    int num_experts = 0;
    std::vector<int> layer_ids;               // the file's layer of each entry
    std::vector<std::vector<double>> counts;  // per layer, per expert
    // True when the file held only summary statistics: the counts are then a reconstruction that
    // keeps each layer's total, maximum, quartiles and number of unused experts; which expert id
    // holds which count is not in the file and is a fixed shuffle.
    bool from_summary = false;

    [[nodiscard]] int numLayers() const { return static_cast<int>(counts.size()); }
    [[nodiscard]] double total(int layer) const;
    [[nodiscard]] double maxOverMean(int layer) const;  // 0 for an empty layer
};

LayerCounts readLayerCounts(const std::string& path, int numExperts = 0);
LayerCounts parseLayerCounts(std::string_view text, const std::string& source, int numExperts = 0);
LayerCounts layerCountsFromTrace(const TokenTrace& trace);

enum class TraceMode {
    replay,      // step i routes the next tokens_per_gpu * numGpus tokens of the trace
    aggregated,  // every step routes in proportion to the trace's per-layer expert totals
};

struct TraceRoutingOptions {
    TraceMode mode = TraceMode::replay;
    // When the trace has fewer or more layers than the model has MoE layers: false = error,
    // true = model MoE layer l uses trace layer l % trace layers.
    bool allow_layer_cycling = false;
};

class TraceRouting {
public:
    // Replay or aggregated. Throws InputError (naming the trace) when the trace does not fit the
    // model: layer count (unless cycling), expert count, or, for replay, top-k.
    TraceRouting(TokenTrace trace, const ModelSpec& model, const Workload& workload, int numGpus,
                 TraceRoutingOptions options = {});
    // Counts have no tokens: always aggregated.
    TraceRouting(const LayerCounts& counts, const ModelSpec& model, const Workload& workload, int numGpus,
                 bool allowLayerCycling = false);

    void next(RoutingSample& out);
    void reset();

    [[nodiscard]] int numLayers() const { return m_numLayers; }
    [[nodiscard]] TraceMode mode() const { return m_mode; }
    [[nodiscard]] int traceLayerOf(int layer) const { return layer % m_traceLayers; }

private:
    void init(const ModelSpec& model, const Workload& workload, int numGpus, int traceLayers, int traceExperts,
              const std::string& source, bool allowLayerCycling);
    void initQuotas(const std::vector<std::vector<double>>& totals);
    void nextReplay(RoutingSample& out);
    void nextAggregated(RoutingSample& out);

    TraceMode m_mode = TraceMode::replay;
    int m_numLayers = 0;
    int m_traceLayers = 1;
    int m_numExperts = 0;
    int m_numGpus = 0;
    int m_tokensPerGpu = 0;
    int m_topK = 0;
    std::int64_t m_step = 0;

    // Replay: the trace, and per trace layer the record to use for each token (its own, or that of
    // the next token present in the layer when it has none), so that one token stays on one source
    // GPU at every layer.
    TokenTrace m_trace;
    std::vector<std::vector<std::int32_t>> m_recordOf;

    // Aggregated: per trace layer, each source's share of pairs per expert (capped at
    // tokens_per_gpu); per model layer the rounding carried from one row to the next.
    std::vector<std::vector<double>> m_quota;
    std::vector<std::vector<double>> m_carry;
    std::vector<double> m_frac;
    std::vector<std::int32_t> m_order;
};

}  // namespace moex
