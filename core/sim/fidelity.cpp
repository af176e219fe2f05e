// Each measurement is reproduced as it was run: the same model shape (DeepSeek-V3: hidden 7168,
// 256 experts, top-8), the same tokens per GPU and precision, uniformly random routing as the
// benchmarks use, on the built-in topology of the hardware. Bandwidths are computed the way the
// publication defines them. No per-point tuning: one calibration per GPU generation.
#include "sim/fidelity.h"

#include "placement/placement.h"
#include "sim/calibration.h"
#include "sim/simulator.h"
#include "topology/builtin_topologies.h"
#include "workload/synthetic_routing.h"

#include <algorithm>

namespace moex {

namespace {

ModelSpec deepseekV3Shape()
{
    ModelSpec m;
    m.name = "DeepSeek-V3 shape";
    m.hidden_size = 7168;
    m.num_layers = 1;
    m.moe_layers = {0};
    m.routed_experts = 256;
    m.experts_per_token = 8;
    m.moe_intermediate_size = 2048;
    m.weight_dtype = DType::fp8;
    m.non_expert_dtype = DType::bf16;
    m.attention.kind = AttentionKind::mla;
    m.attention.num_heads = 128;
    m.attention.kv_lora_rank = 512;
    m.attention.qk_rope_head_dim = 64;
    return m;
}

// An NVLink domain of `gpus` GB200 GPUs wired like NVL72 (every GPU to all 18 switch chips):
// the EP8 and EP64 runs of TensorRT-LLM's one-sided all-to-all use part of one rack.
Topology nvlDomain(int gpus)
{
    const Topology rack = buildTopology({.builtin = "gb200-nvl72"});
    Topology t;
    t.name = "gb200 NVLink domain of " + std::to_string(gpus);
    t.gpu = rack.gpu;
    std::vector<NodeId> chips;
    for (const auto& n : rack.nodes())
        if (n.kind == NodeKind::nvswitch)
            chips.push_back(t.addNode(n));
    const double perLink = rack.gpu.nvlink_gbs_per_dir / static_cast<double>(chips.size());
    double latency = 0;
    for (const auto& l : rack.links())
        if (l.kind == LinkKind::nvlink)
            latency = l.latency_us;
    for (int g = 0; g < gpus; ++g) {
        TopoNode n;
        n.kind = NodeKind::gpu;
        n.name = "gpu" + std::to_string(g);
        n.domain = 0;
        n.gpu = GpuId(g);
        n.pos.slot = g;
        const NodeId id = t.addNode(n);
        for (NodeId c : chips)
            t.addBidirectional(id, c, LinkKind::nvlink, perLink, latency);
    }
    t.finalize();
    return t;
}

struct Setup {
    Topology topology;
    int groups = 1;            // expert groups = nodes, as DeepEP's test groups experts by node
    int groups_per_token = 1;  // min(nodes, 4) in DeepEP's internode test
    int tokens = 0;
    DType dispatch = DType::fp8;
    DType combine = DType::bf16;
    KernelMode mode = KernelMode::high_throughput;
    A2AKernel kernel = A2AKernel::deepep;  // low-latency mode: DeepEP's (per pair) or one-sided (per GPU)
};

struct Phases {
    double dispatch_us = 0, combine_us = 0;
    double nvlink_bytes_per_gpu = 0;  // dispatch bytes received over NVLink, mean per GPU
    double rdma_bytes_per_gpu = 0;    // dispatch bytes sent over the NIC, mean per GPU
    double nvlink_combine_bytes = 0, rdma_combine_bytes = 0;
    // DeepEP's own byte counts (tests/test_intranode.py, test_internode.py): tokens received per
    // GPU including its own (NVLink figure), and (token, node) pairs including the own node (RDMA).
    double deepep_nvl_tokens_per_gpu = 0;
    double deepep_rdma_tokens_per_gpu = 0;
};

// Tokens of `src` that reach at least one expert in each set of GPUs, from the counts (the same
// independence estimate the simulator uses).
double hitTokens(const RoutingSample& r, int src, int firstGpu, int numGpus, int expertsPerGpu)
{
    const int T = r.tokens_per_gpu;
    double notHit = 1.0;
    const auto row = r.row(0, src);
    for (int e = firstGpu * expertsPerGpu; e < (firstGpu + numGpus) * expertsPerGpu; ++e)
        notHit *= 1.0 - static_cast<double>(row[static_cast<std::size_t>(e)]) / T;
    return T * (1.0 - notHit);
}

Phases simulate(const Setup& setup, const FidelityCalibrations& cals)
{
    Scenario s;
    s.name = "fidelity";
    s.model = deepseekV3Shape();
    s.model.expert_groups = setup.groups;
    s.model.groups_per_token = setup.groups_per_token;
    s.topology = setup.topology;
    s.workload.phase = setup.mode == KernelMode::low_latency ? Phase::decode : Phase::prefill;
    s.workload.tokens_per_gpu = setup.tokens;
    s.workload.context_tokens = 1;
    s.workload.routing.skew = 0;
    s.workload.routing.hot_experts = 0;
    s.workload.routing.coactivation_groups = 0;
    s.workload.routing.seed = 11;
    s.precision.weights = DType::fp8;
    s.precision.dispatch = setup.dispatch;
    s.precision.combine = setup.combine;
    s.a2a_kernel = setup.kernel;
    const int G = s.topology.numGpus();
    const Placement p = contiguousPlacement(s.model.routed_experts, G, 1);
    Calibration cal = cals.of(s.topology.gpu.arch);
    cal.activation_reserve_gb = 0;
    Simulator sim(s, p, cal);
    sim.setKernelMode(setup.mode);
    // DeepEP's test picks the nodes of every token independently.
    SyntheticRoutingOptions options;
    options.group_subbatches = std::min(setup.tokens, 256);
    SyntheticRouting gen(s.model, s.workload, G, options);
    RoutingSample sample;
    StepMetrics m;
    Phases out;
    constexpr int kSteps = 3;  // a few random batches, averaged
    for (int i = 0; i < kSteps; ++i) {
        gen.next(sample);
        sim.step(sample, m);
        const int perGpu = s.model.routed_experts / G;
        const int perNode = G / s.topology.numDomains();
        for (int src = 0; src < G; ++src) {
            for (int g = 0; g < G; ++g)
                out.deepep_nvl_tokens_per_gpu += hitTokens(sample, src, g, 1, perGpu) / G / kSteps;
            for (int n = 0; n < s.topology.numDomains(); ++n)
                out.deepep_rdma_tokens_per_gpu += hitTokens(sample, src, n * perNode, perNode, perGpu) / G / kSteps;
        }
        out.dispatch_us += m.layers[0].dispatch_us / kSteps;
        out.combine_us += m.layers[0].combine_us / kSteps;
        const auto& ports = sim.fabric().ports();
        for (std::size_t k = 0; k < ports.size(); ++k) {
            const double d = sim.lastDispatchPortBytes()[k] / G / kSteps;
            const double c = sim.lastCombinePortBytes()[k] / G / kSteps;
            if (ports[k].kind == PortKind::nvIn) {
                out.nvlink_bytes_per_gpu += d;
                out.nvlink_combine_bytes += c;
            } else if (ports[k].kind == PortKind::nicOut) {
                out.rdma_bytes_per_gpu += d;
                out.rdma_combine_bytes += c;
            }
        }
    }
    return out;
}

Topology hgx(const char* key, int nodes)
{
    TopologyParams p;
    p.builtin = key;
    p.nodes = nodes;
    return buildTopology(p);
}

}  // namespace

std::vector<FidelityPoint> runFidelity(const FidelityCalibrations& cals)
{
    std::vector<FidelityPoint> points;
    const std::string deepep = "DeepEP docs/legacy.md (H800 + CX7, 4096 tokens, FP8 dispatch, BF16 combine)";
    const std::string trtllm = "TensorRT-LLM tech blog 18 (GB200 one-sided all-to-all, BF16)";

    // DeepEP normal kernels, intranode EP8: NVLink bandwidth as DeepEP reports it (bytes received
    // over NVLink per GPU / kernel time).
    {
        const Phases ph = simulate({hgx("hgx-h800", 1), 1, 1, 4096, DType::fp8, DType::bf16, KernelMode::high_throughput}, cals);
        // DeepEP counts FP8 dispatch at 1 + 4/128 bytes per element and BF16 combine at 2.
        const double dispatchBytes = ph.deepep_nvl_tokens_per_gpu * 7168 * (1.0 + 4.0 / 128.0);
        const double combineBytes = ph.deepep_nvl_tokens_per_gpu * 7168 * 2.0;
        points.push_back({"deepep-intranode-ep8-dispatch", 153, dispatchBytes / (ph.dispatch_us * 1e3), "GB/s", deepep});
        points.push_back({"deepep-intranode-ep8-combine", 158, combineBytes / (ph.combine_us * 1e3), "GB/s", deepep});
    }
    // DeepEP normal kernels, internode: RDMA bandwidth (bytes sent over the NIC per GPU / time).
    const struct {
        int ep;
        double dispatch, combine;
    } internode[] = {{16, 43, 43}, {32, 58, 57}, {64, 51, 50}};
    for (const auto& x : internode) {
        const int nodes = x.ep / 8;
        const Phases ph = simulate({hgx("hgx-h800", nodes), nodes, std::min(nodes, 4), 4096, DType::fp8, DType::bf16,
                                    KernelMode::high_throughput}, cals);
        const std::string ep = "ep" + std::to_string(x.ep);
        const double dispatchBytes = ph.deepep_rdma_tokens_per_gpu * 7168 * (1.0 + 4.0 / 128.0);
        const double combineBytes = ph.deepep_rdma_tokens_per_gpu * 7168 * 2.0;
        points.push_back({"deepep-internode-" + ep + "-dispatch", x.dispatch, dispatchBytes / (ph.dispatch_us * 1e3),
                          "GB/s", deepep});
        points.push_back({"deepep-internode-" + ep + "-combine", x.combine, combineBytes / (ph.combine_us * 1e3),
                          "GB/s", deepep});
    }
    // GB200 one-sided all-to-all at 2048 tokens per GPU, EP8 and EP64, and the small-batch floor.
    {
        // TensorRT-LLM's one-sided kernels send a token once per destination rank
        // (moeAlltoAllKernels.cu, moeA2ADispatchKernel's already_copied mask).
        const auto oneSided = [](int gpus, int tokens) {
            return Setup{nvlDomain(gpus), 1, 1, tokens, DType::bf16, DType::bf16, KernelMode::low_latency, A2AKernel::one_sided};
        };
        const Phases ep8 = simulate(oneSided(8, 2048), cals);
        const Phases ep64 = simulate(oneSided(64, 2048), cals);
        const Phases small = simulate(oneSided(8, 32), cals);
        points.push_back({"gb200-a2a-ep8-2048-dispatch", 312, ep8.dispatch_us, "us", trtllm});
        points.push_back({"gb200-a2a-ep8-2048-combine", 323, ep8.combine_us, "us", trtllm});
        points.push_back({"gb200-a2a-ep64-2048-dispatch", 399, ep64.dispatch_us, "us", trtllm});
        points.push_back({"gb200-a2a-ep64-2048-combine", 372, ep64.combine_us, "us", trtllm});
        points.push_back({"gb200-a2a-ep8-32-dispatch-floor", 19, small.dispatch_us, "us", trtllm});
        points.push_back({"gb200-a2a-ep8-32-combine-floor", 31, small.combine_us, "us", trtllm});
    }
    // DeepEP low-latency kernels on H800 + CX7, 128 tokens per GPU, top-8 of 256 experts drawn
    // uniformly (tests/legacy/test_low_latency.py: top-k of |randn| + 1 scores), FP8 dispatch, BF16
    // combine: latency as published. EP8 is one HGX node, EP16-256 are EP/8 nodes. Dispatch was
    // used to fit ll_message_us (fit); combine was not (check).
    {
        const std::string ll = "DeepEP docs/legacy.md (low-latency kernels, H800 + CX7, 128 tokens, FP8 dispatch, BF16 combine)";
        const struct {
            int ep;
            double dispatch, combine;
        } lowLatency[] = {{8, 77, 114}, {16, 118, 195}, {32, 155, 273}, {64, 173, 314}, {128, 192, 369}, {256, 194, 360}};
        for (const auto& x : lowLatency) {
            const int nodes = x.ep / 8;
            const Phases ph = simulate({hgx("hgx-h800", nodes), 1, 1, 128, DType::fp8, DType::bf16, KernelMode::low_latency,
                                        A2AKernel::deepep}, cals);
            const std::string ep = "deepep-ll-ep" + std::to_string(x.ep);
            points.push_back({ep + "-dispatch", x.dispatch, ph.dispatch_us, "us", ll, "fit"});
            points.push_back({ep + "-combine", x.combine, ph.combine_us, "us", ll, "check"});
        }
    }
    // NCCL all-to-all inside one HGX-H100: busbw = algbw * (n-1)/n at a large message size.
    {
        Scenario s;
        s.model = deepseekV3Shape();
        s.topology = hgx("hgx-h100", 1);
        const int G = s.topology.numGpus();
        const Placement p = contiguousPlacement(s.model.routed_experts, G, 1);
        Simulator sim(s, p, cals.of(s.topology.gpu.arch));
        sim.setKernelMode(KernelMode::low_latency);
        const double perGpu = 1024.0 * 1024 * 1024;  // 1 GiB per rank, as nccl-tests' large sizes
        std::vector<double> pairs(static_cast<std::size_t>(G) * G, perGpu / G);
        for (int g = 0; g < G; ++g)
            pairs[static_cast<std::size_t>(g) * G + g] = 0;
        const double us = sim.allToAllUs(pairs, 0.0);
        const double algbw = perGpu / (us * 1e3);
        points.push_back({"nccl-alltoall-h100-busbw", 370, algbw * (G - 1) / G, "GB/s",
                          "NVIDIA/nccl-tests#212 (H100 intranode all-to-all)"});
    }
    return points;
}

}  // namespace moex
