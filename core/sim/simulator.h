// The analytical step model (DESIGN.md section 5; equations in docs/MODEL.md).
//   Simulator sim(scenario, placement, calibration);
//   sim.step(routingSample, metrics);   // allocation-free after the first call
#pragma once

#include "metrics/step_metrics.h"
#include "placement/placement.h"
#include "scenario/scenario.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/fabric.h"
#include "workload/routing_sample.h"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace moex {

// Which dispatch/combine kernels run (DeepEP's two kinds). Decode defaults to low-latency,
// prefill to high-throughput.
enum class KernelMode { low_latency, high_throughput };

// E[max of n independent standard normal variables] (0 for n = 1; 1/sqrt(pi) for 2), by
// quadrature of n x phi(x) Phi(x)^(n-1); n from 1 to a million.
double expectedMaxOfNormals(int n);

class Simulator {
public:
    Simulator(const Scenario& scenario, const Placement& placement, const Calibration& calibration);

    void setPlacement(const Placement& placement);
    void setSpeeds(const GpuSpeeds& speeds);
    void setKernelMode(KernelMode mode) { m_mode = mode; }
    // One NVLink domain whose GPUs own their NVLink ports takes a shorter path through route steps
    // 2-3 (no per-port arrays); false forces the general path, which gives the same results (tests
    // compare the two). Returns whether the fast path applies to this topology.
    bool setNvlinkFastPath(bool enabled);
    // The routing kernel this CPU runs ("avx2" or "portable"; core/sim/route_kernel.h).
    [[nodiscard]] static const char* routeKernelName();

    [[nodiscard]] const Scenario& scenario() const { return m_scenario; }
    [[nodiscard]] const Placement& placement() const { return m_placement; }
    [[nodiscard]] const Fabric& fabric() const { return m_fabric; }
    [[nodiscard]] const Calibration& calibration() const { return m_cal; }
    [[nodiscard]] const ComputeModel& computeModel() const { return m_compute; }
    [[nodiscard]] KernelMode kernelMode() const { return m_mode; }
    // True where every (token, expert) pair is its own message (DeepEP's low-latency kernels, the
    // scenario's a2a_kernel deepep in low-latency mode); false where a token goes once per GPU.
    [[nodiscard]] bool perPairMessages() const
    {
        return m_mode == KernelMode::low_latency && m_scenario.a2a_kernel == A2AKernel::deepep;
    }

    // The step's small kernels at `tokensPerGpu` (ComputeModel::overheadTimes): a low-precision
    // dispatch needs a quantisation kernel of its own unless DeepEP's low-latency dispatch
    // (perPairMessages) quantises as it sends.
    [[nodiscard]] OverheadTimes overheads(double tokensPerGpu) const;
    // Data-parallel attention synchronisation (docs/MODEL.md section 9): in decode, each of the G ranks
    // runs `sequencesPerGpu` sequences whose contexts vary with the workload's context_cv, so a
    // rank's full-attention time varies with its batch's total context (relative deviation
    // cv / sqrt(B)) and the synchronous layer waits for the slowest: the expected excess over the
    // mean is cv / sqrt(B) x E[max of G standard normals] of the attention time. 0 in prefill
    // (chunked prefill balances tokens), with one GPU or cv 0.
    [[nodiscard]] double dpSyncShare(double sequencesPerGpu) const;

    // Bytes one token occupies on the wire for dispatch (weights' format and block scales) and combine.
    [[nodiscard]] double dispatchBytesPerToken() const;
    [[nodiscard]] double combineBytesPerToken() const;

    // Time of one all-to-all phase moving `pairBytes` ([src * G + dst], bytes) with this
    // simulator's kernel mode and calibration, at least `floorUs`. Used by the fidelity bench
    // (NCCL all-to-all) and by physics tests.
    [[nodiscard]] double allToAllUs(const std::vector<double>& pairBytes, double floorUs);
    // Port loads of the last simulated layer (bytes), for the fidelity bench's bandwidth figures.
    [[nodiscard]] const std::vector<double>& lastDispatchPortBytes() const;
    [[nodiscard]] const std::vector<double>& lastCombinePortBytes() const;

    // Simulates one step. The sample must have the scenario's MoE layers, GPUs and experts.
    void step(const RoutingSample& routing, StepMetrics& out);

    // For placement search (sim_objective.h): replace one MoE layer of the placement and rebuild
    // only that layer's routing plan; no allocation once the buffers have grown, as long as the
    // layers it is given keep one shape (slots per GPU; shares or none). Throws
    // std::invalid_argument for a malformed layer and then leaves the placement as it was.
    void setLayerPlacement(int layer, const LayerPlacement& placement);
    // Time of one MoE layer for this sample with the current placement: exactly what step() puts
    // in StepMetrics::layers[layer].time_us (dispatch + slowest GPU + combine, or the two-batch
    // overlap), without the rest of the step. About 1/L of a step; allocation-free after the first
    // call. Leaves the layer's port bytes in lastDispatchPortBytes()/lastCombinePortBytes().
    [[nodiscard]] double layerTimeUs(const RoutingSample& routing, int layer);
    // A layer under two-batch overlap (docs/MODEL.md section 5) from the half-batch times of the
    // slowest GPU's attention and expert compute and of the two phases: the compute stream runs
    // attention A, attention B, experts A, experts B while the communication stream runs
    // combine B (of the layer before), dispatch A, dispatch B, combine A; each stage lasts as long
    // as the longer of its pair.
    // `hidden`: the share of the shorter side of each stage that overlaps (the calibration's
    // ll_overlap_efficiency with low-latency kernels, overlapHidden()); the rest adds to the stage.
    [[nodiscard]] static double twoBatchLayerUs(double attentionHalf, double expertsHalf, double dispatchHalf,
                                                double combineHalf, double hidden = 1.0);
    // Compute's share of the SMs while the phases run under two-batch overlap: the calibration's
    // overlap_sm_share with normal (high-throughput) kernels, 1 with low-latency ones, which
    // overlap through receive hooks without holding SMs (DeepEP docs/legacy.md).
    [[nodiscard]] double overlapComputeShare() const
    {
        return m_mode == KernelMode::high_throughput ? m_cal.overlap_sm_share : 1.0;
    }
    // The share of each stage's shorter side that two-batch overlap hides: the calibration's
    // ll_overlap_efficiency with low-latency kernels; 1 with normal ones, whose cost is the SMs
    // they hold (overlapComputeShare).
    [[nodiscard]] double overlapHidden() const
    {
        return m_mode == KernelMode::low_latency ? m_cal.ll_overlap_efficiency : 1.0;
    }

private:
    struct LayerPlan {
        std::vector<int> slot_gpu;       // [slot] -> GPU (slots in GPU order, as phy2log)
        std::vector<int> slot_expert;    // [slot] -> expert
        std::vector<float> slot_share;   // explicit share, or -1 for the nearest-replica rule
        std::vector<int> expert_first;   // [expert] -> index into replica_slots
        std::vector<int> expert_count;   // replicas per expert
        std::vector<int> replica_slots;  // slots of each expert, contiguous per expert
        std::vector<int> gpu_slot_begin; // [G + 1]
        // The hot loop of routeLayer walks every slot of a GPU and multiplies one "keep" vector
        // per slot: the expert's own for experts with one replica (slot_keep = expert), a
        // replica's own for replicated experts (slot_keep = E + replica index r).
        std::vector<int> slot_keep;      // [slot]
        std::vector<int> single_expert;  // experts with one replica (whole load on one slot)...
        std::vector<int> single_slot;    // ...and that slot
        std::vector<int> rep_slot;       // [r] slot of replica r of a replicated expert
        std::vector<int> rep_expert;     // [r] its expert
        // [(src / 8) * R + r][src % 8] fraction of source src's tokens for the expert that replica r takes:
        // explicit shares, else the nearest-replica rule (same GPU, else same NVLink domain, else
        // all evenly; DESIGN.md 5.1). Compact where the layer has at most 8 distinct fractions
        // (fraction_table[fraction_index[i]], route_kernel.h; rep_fraction empty), dense otherwise
        // (rep_fraction; fraction_index empty): a step streams every layer's.
        std::vector<float> rep_fraction;
        std::array<float, 8> fraction_table{};
        std::vector<std::uint8_t> fraction_index;
    };
    struct PhaseResult {
        double time_us = 0;       // whole phase (slowest port + latency, at least the floor)
        double half_time_us = 0;  // the same phase for half the batch (two-batch overlap)
    };

    void buildPlans();
    void buildLayerPlan(int layer);
    // DESIGN.md 5.7: weights of each GPU's slots + non-expert weights + reserve; the rest holds KV
    // cache, which bounds the concurrent sequences and so the decode batch. A model without KV
    // cache (no attention) is not bounded by it.
    struct MemoryBudget {
        std::int64_t users_per_gpu = 0;  // concurrent sequences the tightest GPU can hold
        double tokens = 0;               // tokens per GPU actually run
        bool limited = false;            // memory cut the decode batch below the workload's
        double kv_per_sequence = 0;      // bytes
    };
    [[nodiscard]] MemoryBudget memoryBudget(std::vector<double>* weightsPerGpu = nullptr) const;
    void routeLayer(const RoutingSample& r, int layer, double tokensPerGpu);
    // Route steps 2-3 of one layer after routeLayer: the dispatch and combine phase times, each
    // GPU's own port time (m_gpuDispatch, m_gpuCombine) and, with addStepBytes, the layer's bytes
    // per port added to m_stepPortBytes. One NVLink domain whose GPUs own their NVLink ports
    // (m_nvlinkOnly) takes a path without per-port arrays; its results are the same, bit for bit.
    struct LayerComm {
        PhaseResult dispatch, combine;
    };
    LayerComm communicate(double tokensPerGpu, bool addStepBytes);
    LayerComm communicateNvlinkOnly(double tokensPerGpu, bool addStepBytes);
    // The CPU engine's exchange on host-cpu (GpuArch::cpu): phase times from the bytes each rank
    // copies; needs m_gpuPairs of the layer.
    LayerComm hostExchange(double tokensPerGpu);
    // One MoE layer's expert compute on every GPU after routeLayer (docs/MODEL.md section 4): each
    // slot by roofline, plus the shared experts and router for the GPU's own tokens and the
    // activation over its pairs, over its speed (CPU ranks: their workers, and cores shared where
    // ranks outnumber them). `sharedUs` / `sharedHalfUs`: sharedAndRouterUs of the batch and of
    // half of it (the caller's, once per step). Fills m_gpuCompute, m_gpuComputeHalf (with
    // `halves`) and m_gpuPairs.
    struct LayerCompute {
        double slowest = 0, slowest_half = 0;  // the slowest GPU, after its speed
        int slowest_gpu = 0;
        double work = 0, work_half = 0;        // every GPU's expert work at speed 1 (the balanced floor's)
        double load_sum = 0, load_max = 0;     // token-expert pairs
    };
    LayerCompute computeLayer(int layer, bool halves, double sharedUs, double sharedHalfUs);
    // The phases of step(): what every layer shares, what the layers add up.
    struct StepInputs {
        double tokens = 0;  // per GPU
        bool tbo = false;
        MixerTimes mixers;
        OverheadTimes ov, ov_half;                  // of the batch, of half of it
        double sync_share = 0, sync_share_half = 0;  // dpSyncShare of the batch, of half of it
        double shared_us = 0, shared_half_us = 0;    // sharedAndRouterUs of the batch, of half of it
    };
    struct StepSums {
        double moe_attention = 0;  // the MoE layers' mixers, at full speed
        double overhead_us = 0, sync_us = 0;  // at full speed
        double moe_time = 0, balanced_time = 0, imbalance = 0;
        double comm_exposed = 0;  // layer time beyond what it would be without communication
    };
    void beginStep(StepMetrics& out);
    void stepLayer(const RoutingSample& r, int layer, const StepInputs& in, StepMetrics& out, StepSums& sums);
    void finishStep(const StepInputs& in, const StepSums& sums, StepMetrics& out);
    // The layer's time and its balanced floor (docs/MODEL.md section 5): without overlap dispatch +
    // slowest GPU + combine + `routingUs`; under two-batch overlap its four stages, with the
    // compute stream's attention stage `attentionHalfUs` (over speed and SM share already).
    struct LayerTimes {
        double time = 0, balanced = 0;
    };
    [[nodiscard]] LayerTimes layerTimes(const LayerCompute& c, const LayerComm& comm, bool tbo, double attentionHalfUs,
                                        double routingUs) const;
    // The layer's loads into `lm` (gpu_load, and expert_load scaled to the batch run; rounded with
    // their sums kept) and each GPU's pairs into `out`.
    void recordLoads(const RoutingSample& r, double tokensPerGpu, LayerMetrics& lm, StepMetrics& out);
    // After the layers: the GPU x GPU traffic of the step; each GPU's idle time and power, the
    // system's; the per-link view.
    void addTraffic(StepMetrics& out) const;
    void addPowerAndLinks(StepMetrics& out, double aroundFullSpeedUs);
    // One NVLink domain: GPU g's bytes this layer on its two NVLink ports. Dispatch puts the
    // tokens it sends on nvOut(g) and those it receives on nvIn(g); combine the reverse.
    struct NvlinkBytes {
        double dispatch_out, dispatch_in, combine_out, combine_in;
    };
    [[nodiscard]] NvlinkBytes nvlinkBytes(int g, double dispatchPerToken, double combinePerToken) const;
    void accumulatePorts(double tokensPerGpu);
    // Tokens each GPU sends and receives within one NVLink domain (m_blockOut, m_inTokens), added
    // to m_sentSum, from m_notSent.
    void sendTotalsOneDomain(double tokensPerGpu);
    PhaseResult phaseTime(const std::vector<double>& portBytes, double floorUs, bool crossDomain) const;
    // A phase from its slowest port's time and the most messages one GPU sends.
    PhaseResult phaseTimeOf(double slowestPortUs, std::int64_t maxMessages, double floorUs, bool crossDomain) const;
    void portTimesPerGpu(const std::vector<double>& portBytes, std::vector<double>& out) const;
    // Effective bytes per microsecond of a port: capacity x the calibration's efficiency of its kind
    // (NIC ports: the smaller of PCIe x pcie_efficiency and network x network_efficiency).
    [[nodiscard]] double portRate(const Port& port) const;

    Scenario m_scenario;
    Placement m_placement;
    Calibration m_cal;
    Fabric m_fabric;
    ComputeModel m_compute;
    KernelMode m_mode = KernelMode::low_latency;
    std::vector<LayerPlan> m_plans;
    std::vector<double> m_speed;       // [gpu] m_scenario.speeds.of(gpu), read in every layer
    std::vector<double> m_invSpeed;    // [gpu] 1 / m_speed: a layer's times scale by it (no division per GPU per layer)
    double m_minSpeed = 1;             // the slowest GPU's speed: it sets the pace of attention
    double m_speedSum = 1;             // the balanced floor spreads work over all speeds
    std::vector<double> m_invPortRate;  // [port] microseconds per byte (1 / portRate), 0 if it cannot carry any
    std::vector<std::pair<int, int>> m_gpuPorts;  // (port, owner GPU) of the ports in a GPU's own phase time

    // Scratch reused every layer and step (no allocation after warm-up).
    // Probability a token of src has no expert on dst, in route_kernel.h's block layout
    // (detail::notSentIndex(src, dst, G)).
    std::vector<float> m_notSent;
    std::vector<float> m_notSentDom;   // [src * D + domain]
    std::vector<double> m_slotTokens;  // [slot]
    std::vector<double> m_slotUs, m_slotUsHalf;  // [slot] expert time for the batch, and for half of it (two-batch overlap)
    // [keep row][8] for eight sources: 1 - c / T, the chance a token avoids an expert (row < E)
    // or a replica (row E + r) that took c of its T tokens; then the replicas' per-lane sums.
    std::vector<float> m_keep;
    std::vector<float> m_repTaken;            // [replica] share of the layer's tokens / T
    std::vector<RoutingSample::Count> m_zeroRow;  // [expert] counts of an absent source
    std::vector<std::int32_t> m_expertTotals;  // [expert] pairs this layer (all sources)
    std::vector<double> m_expertScaled;        // [expert] pairs scaled to a memory-limited batch
    std::vector<std::uint64_t> m_roundScratch;  // scratch of the largest-remainder rounding
    std::vector<float> m_sentSum;      // tokens src sent dst this step (summed over layers), layout of m_notSent
    // [port] bytes this layer; after communicateNvlinkOnly, made from m_blockOut and m_inTokens
    // only when asked for (lastDispatchPortBytes).
    mutable std::vector<double> m_dispatchPort, m_combinePort;
    mutable bool m_portBytesStale = false;
    std::vector<double> m_stepPortBytes;                // [port] bytes this step
    std::vector<double> m_gpuDispatch, m_gpuCombine;    // [gpu] own port time this layer
    std::vector<double> m_gpuCompute, m_gpuComputeHalf;
    std::vector<double> m_gpuBusy;
    std::vector<double> m_gpuPairs;       // [gpu] token-expert pairs this layer (fractional with shares)
    std::vector<int> m_stragglerCount;
    std::vector<float> m_inTokens;         // [gpu] tokens arriving over NVLink this layer
    std::vector<float> m_blockOut;         // [src] tokens leaving src this layer (one NVLink domain)
    std::vector<std::int64_t> m_messages;  // [gpu] token messages sent off-GPU this layer
    bool m_crossTraffic = false;
    bool m_nvlinkOnly = false;     // one NVLink domain, GPU g owns ports nvOut(g) and nvIn(g): communicateNvlinkOnly
    bool m_nvlinkFastPath = true;  // setNvlinkFastPath
    std::vector<int> m_fill;       // [expert] scratch of buildLayerPlan
    std::vector<float> m_repFractions, m_expertFractions;  // scratch of buildLayerPlan
    // memoryBudget() of the current placement (it depends on the slots per GPU only) and the
    // weight bytes per GPU behind it; kept up to date by buildPlans and setLayerPlacement.
    MemoryBudget m_memory;
    std::vector<double> m_weightsPerGpu;
    // The stack around the experts: each MoE layer's mixer, and the other layers' mixers and dense
    // FFNs by kind (ModelSpec::layerKind), counted once.
    double m_maxOfNormals = 0;             // expectedMaxOfNormals(G)
    std::vector<MixerKind> m_moeMixer;    // [MoE layer]
    int m_aroundMixers[kMixerKinds] = {};  // non-MoE layers per mixer kind
    int m_aroundDense = 0;                 // non-MoE layers with a dense FFN
};

}  // namespace moex
