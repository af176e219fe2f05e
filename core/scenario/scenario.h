// Scenario = model + topology + workload + placement + precision + engine (DESIGN.md section 3).
#pragma once

#include "model/model_spec.h"
#include "placement/placement.h"
#include "topology/builtin_topologies.h"
#include "topology/topology.h"
#include "workload/workload.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moex {

// Where a part of the scenario came from, so that saving writes it back the same way.
struct SourceRef {
    enum class Kind { inline_, path, builtin, hf_config } kind = Kind::inline_;
    std::string path;  // absolute (resolved against the scenario file); written back relative on save
};

// Routing steps a load-driven placement (eplb, gem) is fitted to, before the steps a run shows.
// An assumption, not a measurement: a serving system's rebalancer fits a window of past steps
// (SGLang records its expert distribution over a window before rebalancing); 8 steps of a decode
// batch are enough for the estimate to settle on the samples (docs/MODEL.md, "Placement from the
// past"). The scenario key placement.load_steps changes it.
inline constexpr int kDefaultLoadSteps = 8;

struct PlacementSpec {
    std::string strategy = "contiguous";  // contiguous | round-robin | eplb | gem | search | explicit
    int redundant_slots = 0;
    double budget_ms = 1000;              // for search
    int load_steps = kDefaultLoadSteps;   // steps the placement's load is estimated from (1..10,000)
    std::optional<Placement> explicit_slots;
    int line = 0;  // where placement.strategy (or placement) was set, for located errors; 0 = not from a file
    int column = 0;
    // The --set flags that shaped it (placement.strategy or redundant_slots, topology.*, model.*), e.g.
    // "--set placement.redundant_slots=33": where a placement the strategies refuse is blamed.
    std::string flags;
};

struct GpuSpeeds {
    double default_speed = 1.0;
    std::map<int, double> per_gpu;  // gpu index -> speed factor (slower < 1)
    [[nodiscard]] double of(int gpu) const;
};

struct Precision {
    DType weights = DType::fp8;
    DType dispatch = DType::fp8;
    DType combine = DType::bf16;
};

enum class Overlap { none, two_batch };
// Which library's kernels move tokens in low-latency mode (decode). DeepEP's low-latency kernels
// send one message per (token, expert) pair; one-sided NVLink kernels (TensorRT-LLM's moe_a2a)
// send a token once per destination GPU. High-throughput mode (prefill) is DeepEP's normal
// kernels either way (docs/MODEL.md section 3).
enum class A2AKernel { deepep, one_sided };
enum class Backend { sim, cpu, cuda, remote };

enum class EngineWeights { automatic, own, shared };
// What multiplies each expert's tokens on the CPU engine (engine/openblas.h): the faster as
// measured for the CPU and weight format, the engine's kernels, or OpenBLAS's sgemm.
enum class EngineGemm { automatic, engine, openblas };

// The real engine's settings (run/engine_source.cpp says what each does).
struct EngineSpec {
    Backend backend = Backend::sim;
    std::string host;  // remote: HOST:PORT
    int ranks = 1;
    std::vector<int> layers;                            // decoder-layer indices; empty = every MoE layer
    EngineWeights weights = EngineWeights::automatic;  // auto | own | shared
    EngineGemm gemm = EngineGemm::automatic;           // auto | engine | openblas
    std::int64_t tokens = 0;                           // per step, all ranks; 0 = min(tokens_per_gpu, 256)
    std::uint64_t seed = 1;                            // weights and hidden states
    double memory_gb = 0;                              // weight budget; 0 = 80% of the memory available
    bool workload_routing = false;                     // routing: workload (forced choices) | computed
    std::string checkpoint;                            // Hugging Face checkpoint directory (absolute); empty = seeded weights
    int line = 0;                                      // where engine.backend was set, for located errors
    int column = 0;
    // The command-line flags that set these, per key ("ranks" -> "--ranks 16", "memory_gb" ->
    // "--set engine.memory_gb=2"): where an error about that key points instead of the file.
    std::map<std::string, std::string> flags;
    bool operator==(const EngineSpec&) const = default;
};

struct Scenario {
    std::string name;
    std::string file;      // where it was loaded from (absolute); empty for new scenarios
    ModelSpec model;
    SourceRef model_source;
    Topology topology;
    SourceRef topology_source;
    TopologyParams topology_params;  // for builtin sources
    Workload workload;
    PlacementSpec placement;
    GpuSpeeds speeds;
    Precision precision;
    bool precision_weights_set = false;  // false: weights follow the model's weight_dtype
    Overlap overlap = Overlap::none;
    A2AKernel a2a_kernel = A2AKernel::deepep;
    EngineSpec engine;
    std::string calibration;  // optional calibration file (absolute path)

    [[nodiscard]] int slotsPerGpu() const;  // ceil((E + redundant) / G)
};

// A file the scenario was read from or points to, and what it is to the scenario.
struct FileRead {
    std::string role;  // "the scenario", "its model", "its topology", "its routing file", ...
    std::string path;  // absolute
};
// Its own file, the model's and topology's files, the routing trace or counts file (or statistics
// folder), the calibration and the checkpoint folder: what an output must not replace (moex-cli).
std::vector<FileRead> filesRead(const Scenario& s);
// The file of filesRead(s) that `path` is, by any name (./x, a link), if any.
std::optional<FileRead> inputNamed(const Scenario& s, const std::string& path);

std::string_view toString(Overlap o);
std::string_view toString(A2AKernel k);
std::string_view toString(Backend b);

}  // namespace moex
