// Expert-parallel MoE layers on the CPU, ranks in one process (transport "threads"). Each rank is a
// thread that holds its own experts (the placement's slots of its GPU) and its own tokens, and the
// step runs as it would between GPUs:
//   router     the gate GEMM and top-k on the rank's tokens (moe_layer.h)
//   dispatch   each source lists per destination the rows it sends (token, choice, local slot);
//              counts per destination exchanged (a ranks x ranks matrix behind a barrier), then
//              every rank pulls the rows sent to it from the sources' hidden states into one
//              receive buffer, one contiguous block per local slot (source order within a block:
//              DeepEP's low-latency layout, what a grouped GEMM takes)
//   expert     each local slot's FFN over its block in place (no gather, no scatter), plus the
//              shared experts on the rank's own tokens
//   combine    every source reads its rows' results where the experts' ranks left them and sums
//              them per token in top-k order
// A token's expert runs on the replica on its own rank when there is one, else on replica
// (token + k) mod copies. Every phase is timed per rank with the steady clock; the step yields
// StepMetrics from those measurements, the per-expert token counts and the bytes between rank
// pairs, and a checksum of the layers' outputs that does not depend on the number of ranks.
// No attention runs between the MoE layers: each layer gets its own seeded hidden states.
#pragma once

#include "engine/moe_layer.h"
#include "engine/openblas.h"
#include "metrics/step_metrics.h"
#include "placement/placement.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace moex::engine {

class Checkpoint;

struct EngineConfig {
    std::int64_t tokens = 128;   // per step, all ranks together (split evenly, the first ranks one more)
    std::vector<int> layers;     // decoder-layer indices of MoE layers to run, ascending
    bool shared_weights = false; // every layer runs on one layer's weights and layout (the first listed)
    std::uint64_t seed = 1;      // weights (unless read from `checkpoint`) and hidden states
    // The weights of every rank's experts, shared experts and routers read from a Hugging Face
    // checkpoint (checkpoint.h), which the engine lets go of once they are read; null: seeded weights.
    std::shared_ptr<const Checkpoint> checkpoint;
    // What multiplies each expert's tokens (engine/openblas.h): sets the shape's
    // openblas_from_tokens; openblas where OpenBLAS does not load throws std::runtime_error.
    openblas::GemmChoice gemm = openblas::GemmChoice::automatic;
    // Called by every expert worker of every rank before its slots run (rank, worker): what it
    // throws is that worker's failure, as a std::bad_alloc would be. step() must rethrow it with no
    // rank left waiting (tst_ep_engine); empty in every real run.
    std::function<void(int rank, int worker)> before_experts;
};

class EpEngine {
public:
    // `placement` has one layer per MoE layer of the model and one GPU per rank. Builds each rank's
    // weights (in parallel, one thread per rank). Throws std::invalid_argument for a placement or
    // layer list that does not fit the model, InputError for a checkpoint that lacks a tensor the
    // ranks need or holds it in another dtype or shape (checked before anything is built).
    EpEngine(const ModelSpec& model, DType weights, const Placement& placement, const EngineConfig& config);
    ~EpEngine();
    EpEngine(const EpEngine&) = delete;
    EpEngine& operator=(const EpEngine&) = delete;

    [[nodiscard]] int ranks() const;
    [[nodiscard]] const LayerShape& shape() const;
    [[nodiscard]] std::size_t weightBytes() const;  // all ranks' expert, shared and router weights
    // Bytes the weights would take for this model, placement and config, without building them:
    // exactly weightBytes() of the engine they would build. With a checkpoint, every tensor the
    // ranks would load is checked first (InputError as the constructor's).
    static std::size_t weightBytesNeeded(const ModelSpec& model, DType weights, const Placement& placement,
                                         const EngineConfig& config);
    // An upper bound of the bytes a step's buffers take at config.tokens on `ranks` ranks with
    // `threads` expert workers in all (each rank: its share of the cores, at most one a slot): hidden states and outputs, every (token, choice) row sent
    // and its result, and each worker's FFN activations for a slot that gets every token.
    static std::size_t activationBytesNeeded(const ModelSpec& model, DType weights, const EngineConfig& config, int ranks,
                                             int threads);
    // The expert workers one of `ranks` ranks starts for a layer where it holds `slots` slots: its
    // share of this machine's cores, at least one, at most one a slot (also the workers that build
    // a rank's experts, with slots = its experts).
    static int expertWorkers(int ranks, std::size_t slots);
    // The expert workers of all ranks together at the placement's fullest layer of each rank: the
    // `threads` activationBytesNeeded counts.
    static int expertWorkersNeeded(const Placement& placement, int ranks);

    // Runs step `step` over every configured layer; fills `out` (source "cpu") and returns the
    // checksum: sum over layers, tokens (in global order) and elements of output x (1 + index mod 13).
    // `lastOutput`, when given, receives the last layer's output, tokens x hidden, in token order.
    double step(int step, StepMetrics& out, std::vector<float>* lastOutput = nullptr);
    // The same with every token's experts given ([configured layer][token * topk + j], tokens in
    // global order, distinct per token): workload routing.
    double step(int step, StepMetrics& out, const std::vector<std::vector<int>>& forcedIds,
                std::vector<float>* lastOutput = nullptr);

    // The last step's exchange per rank, microseconds summed over its layers: the dispatch's copies
    // after the counts barrier plus the combine (barrier waits excluded); what bench engine's a2a
    // line divides the exchanged bytes by.
    [[nodiscard]] std::vector<double> lastExchangeUs() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

}  // namespace moex::engine
