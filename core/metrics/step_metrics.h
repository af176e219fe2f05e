// StepMetrics: the one result type of the simulator, the engine and remote workers
// (DESIGN.md section 2). Views and exports read only this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moex {

struct GpuMetrics {
    double compute_us = 0;    // routed + shared expert GEMMs over all MoE layers (after the speed factor)
    double attention_us = 0;  // attention, dense FFN layers, router, embedding/head
    double dispatch_us = 0;   // this GPU's share of dispatch phases (its own port time)
    double combine_us = 0;
    double idle_us = 0;       // step time minus this GPU's busy time: waiting on the slowest GPU
    std::int64_t tokens = 0;          // tokens this GPU serves per step (attention-DP rank)
    std::int64_t expert_pairs = 0;    // token-expert pairs its experts computed this step
    double hbm_used_gb = 0;
    double power_w = 0;
    double speed = 1.0;
};

struct LinkMetrics {
    int from = 0;  // topology node index
    int to = 0;
    double bytes = 0;          // over the whole step
    double capacity_gbs = 0;   // GB/s
    double utilization = 0;    // busy fraction of the step's communication time, 0..1
};

struct LayerMetrics {
    int decoder_layer = 0;                  // decoder-layer index (not the MoE ordinal)
    std::vector<std::int64_t> expert_load;  // token-expert pairs per expert
    std::vector<std::int64_t> gpu_load;     // token-expert pairs computed per GPU
    double time_us = 0;                     // the MoE layer (dispatch + slowest compute + combine, or overlapped)
    double dispatch_us = 0;
    double combine_us = 0;
    double compute_us = 0;                  // slowest GPU's expert compute
    int slowest_gpu = 0;
    double imbalance = 1.0;                 // max / mean GPU load
};

struct StepTotals {
    double step_time_us = 0;
    double tokens_per_s = 0;
    double tokens_per_s_per_gpu = 0;
    double tokens_per_s_per_kw = 0;
    double imbalance = 1.0;         // mean over layers of max/mean GPU load
    double dispatch_us = 0;         // summed over MoE layers
    double combine_us = 0;
    double expert_compute_us = 0;   // slowest GPU per layer, summed
    double attention_us = 0;        // attention, dense layers, embedding/head
    // Small kernels on the compute stream: norms, top-k, activation quantisation, sampling
    // (docs/MODEL.md section 9; under two-batch overlap partly hidden behind communication).
    double overhead_us = 0;
    // Data-parallel attention synchronisation: what the slowest rank's attention adds over the
    // mean where ranks' decode batches differ in context (workload context_cv; 0 when equal).
    double dp_sync_us = 0;
    double moe_time_us = 0;         // MoE layers only
    // MoE time had every layer's expert work (as placed) been spread so that all GPUs finish it
    // together (in proportion to speed), communication as simulated: the floor that balancing this
    // placement's work can reach; moe_time_us - this is what imbalance costs the step.
    double moe_time_balanced_us = 0;
    // The part of the MoE time the layers spend in communication not hidden behind compute: each
    // layer's time less its time had dispatch and combine taken none (under two-batch overlap the
    // stages the other micro-batch cannot cover, and the compute slowed by the SM share the
    // communication kernels take). Every GPU waits for it, whatever its own traffic.
    // The simulator's; engines leave it 0 (their ranks measure their own waits as idle).
    double comm_exposed_us = 0;
    double hbm_used_gb_max = 0;
    std::int64_t max_concurrent_users = 0;  // whole system, at the context length
    std::int64_t batch_per_gpu = 0;         // tokens per GPU actually run (memory may limit it)
    bool memory_limited = false;
    double power_kw = 0;
    int straggler_gpu = 0;                  // slowest GPU most often
};

struct StepMetrics {
    std::string source = "sim";  // sim | cpu | cuda | remote:HOST
    int step = 0;
    int num_gpus = 0;
    StepTotals summary;
    std::vector<GpuMetrics> gpus;
    std::vector<LinkMetrics> links;   // links that carried traffic
    std::vector<double> traffic;      // [src * G + dst] dispatch + combine bytes
    std::vector<LayerMetrics> layers;
    double sim_wall_us = 0;           // wall time the simulator took for this step
};

}  // namespace moex
