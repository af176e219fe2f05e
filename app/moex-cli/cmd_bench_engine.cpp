// moex-cli bench engine [--runs N] [--kernel K] [--json OUT|-]: the CPU engine's kernels (the best this
// CPU runs, or K) against ceilings measured in the same run (these shared machines' memory bandwidth moves, so the read ceiling is measured
// right before and right after the figures, and both are printed).
//
//   decode   a Mixtral-8x7B layer slice: 2 of 8 experts (hidden 4096, expert 14336), 1 and 8
//            tokens each, weights bf16 / fp8 / fp32, one expert per thread on two threads: weight
//            bytes streamed per second (median of N runs) over the read ceiling measured right
//            before and right after that row (the bandwidth of these VMs switches within seconds);
//            decode_ratio is the smallest of the rows whose two ceilings agree within 20%; each
//            row's reach (JSON `reach`) is the ratio it would stream at the ceiling of the
//            instructions its kernel multiplies with, nothing else counted
//   ceiling  STREAM-style read: a 1 GiB buffer summed with wide integer adds by the same number
//            of threads in two patterns (eight streams a thread; one stream prefetched 2 KiB
//            ahead), each the median of N passes, the better one (read_ceiling.h)
//   r1       a decode layer of DeepSeek-R1 shape (hidden 7168, expert 2048, top-8, fp8, 32 routed
//            experts and the shared expert, 64 tokens) on 4 ranks of the threads transport: ms per
//            layer, median of N steps
//   a2a      the same layer's exchange on as many ranks as hardware threads (2 to 4, so that no
//            rank waits for a core): the rows the transport copies (both ways, a rank's rows to
//            itself included) over the slowest rank's copying time (the pull after the counts
//            barrier and the combine; no barrier wait), against a memcpy ceiling (the same bytes
//            copied by as many threads from one buffer to another, before and after); also, on the
//            4 ranks above, the bytes between ranks over the dispatch + combine phases, waits included
//   prefill  the same slice's expert FFN at 32 and 256 tokens against one OpenBLAS sgemm of the same
//            FLOPs (bench_prefill.cpp; OpenBLAS is loaded at run time: without it the JSON says
//            prefill_ratio null rather than inventing a ceiling)
#include "bench_prefill.h"
#include "cli_args.h"
#include "commands.h"
#include "format.h"
#include "read_ceiling.h"
#include "sim_run.h"

#include "common/diagnostics.h"
#include "common/host_info.h"
#include "engine/ep_engine.h"
#include "engine/moe_layer.h"
#include "engine/row_kernels.h"
#include "engine/vector_ceiling.h"
#include "placement/placement.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

namespace moex::cli {

namespace {

using Clock = std::chrono::steady_clock;
using namespace moex::engine;

double seconds(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

// GFLOP/s of `threads` threads running FMA chains (dpbf16: VDPBF16PS chains instead; tiles: AMX
// TDPBF16PS); 0 where the CPU has neither vector unit.
enum class Chains { fma, dpbf16, tiles };
double fmaCeiling(int threads, int runs, double& sink, Chains chains = Chains::fma)
{
    const bool dpbf16 = chains == Chains::dpbf16;
    // The ceiling of the vectors the kernel uses: 512-bit FMAs for the AVX-512 kernels, 256-bit for
    // avx2 (also on a CPU with AVX-512, when --kernel avx2 chose it).
    const Kernel active = activeKernel();
    const bool wide = (active == Kernel::avx512 || active == Kernel::avx512bf16 || active == Kernel::amx) && kernelSupported(Kernel::avx512);
    if (!wide && !kernelSupported(Kernel::avx2))
        return 0;
    if (dpbf16 && !kernelSupported(Kernel::avx512bf16))
        return 0;
    if (chains == Chains::tiles && !kernelSupported(Kernel::amx))
        return 0;
    const long iters = chains == Chains::tiles ? 1'000'000 : 20'000'000;
    const double flopsPerThread = static_cast<double>(iters)
        * (chains == Chains::tiles ? 4 * 16.0 * 16 * 32 * 2 : dpbf16 ? 16.0 * 32 * 2 : wide ? 16.0 * 16 * 2 : 12.0 * 8 * 2);
    std::vector<double> gflops;
    for (int k = 0; k < runs; ++k) {
        std::vector<std::thread> pool;
        std::vector<double> out(static_cast<std::size_t>(threads));
        const auto t0 = Clock::now();
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                out[static_cast<std::size_t>(t)] = chains == Chains::tiles ? tileDotLoop(iters)
                    : dpbf16                                             ? dpbf16Loop512(iters)
                    : wide                                               ? fmaLoop512(iters)
                                                                         : fmaLoop256(iters);
            });
        for (auto& th : pool)
            th.join();
        gflops.push_back(flopsPerThread * threads / seconds(t0, Clock::now()) / 1e9);
        sink += out[0];
    }
    return median(gflops);
}

struct DecodeFigure {
    std::string format;
    int tokens = 0;
    double ms = 0;
    double gbs = 0;
    double ceiling_before = 0;  // the read ceiling right before and right after this figure
    double ceiling_after = 0;
    double ratio = 0;           // gbs over the mean of those two
    // The two ceilings differ by more than 20%: the machine's bandwidth switched during the figure,
    // and its ratio means little (printed, and left out of decode_ratio unless every row moved).
    [[nodiscard]] bool ceilingMoved() const
    {
        return std::max(ceiling_before, ceiling_after) > 1.2 * std::min(ceiling_before, ceiling_after);
    }
};

}  // namespace

int benchEngine(const Args& args)
{
    const int runs = args.intValue("runs", 5, 1, 1000);
    if (auto name = args.value("kernel")) {
        Kernel k;
        if (!kernelFromString(*name, k))
            throw InputError(Location{"moex-cli bench", 0, 0}, "--kernel: '" + *name + "' is none of portable, avx2, avx512, avx512-bf16, amx-bf16");
        if (!kernelSupported(k))
            throw InputError(Location{"moex-cli bench", 0, 0}, "--kernel: " + *name + " does not run on this CPU (" + cpuModelName() + ")");
        useKernel(k);
    }
    const int threads = 2;
    const std::string cpu = cpuModelName();
    const Kernel kernel = activeKernel();
    std::cout << "bench engine: " << cpu << ", kernel " << toString(kernel) << ", " << threads << " threads, median of "
              << runs << " runs\n";

    ReadCeiling ceiling(threads);
    ceiling.measure(1);  // touch
    const double before = ceiling.measure(runs);

    // Decode: a Mixtral layer slice, 2 of 8 experts, one per thread.
    ModelSpec mixtral;
    mixtral.name = "Mixtral-8x7B slice";
    mixtral.hidden_size = 4096;
    mixtral.moe_intermediate_size = 14336;
    mixtral.routed_experts = 8;
    mixtral.experts_per_token = 2;
    std::vector<DecodeFigure> decode;
    for (DType t : {DType::bf16, DType::fp8, DType::fp32}) {
        const LayerShape s = layerShape(mixtral, t);
        FfnWeights experts[2] = {makeExpertWeights(s, 1, 0, 0), makeExpertWeights(s, 1, 0, 1)};
        const double bytes = static_cast<double>(experts[0].bytes() + experts[1].bytes());
        for (int n : {1, 8}) {
            std::vector<float> x(static_cast<std::size_t>(n) * 4096), y[2];
            for (int i = 0; i < n; ++i)
                makeTokenHidden(1, 0, i, 4096, x.data() + static_cast<std::size_t>(i) * 4096);
            std::vector<double> ms;
            DecodeFigure f;
            f.ceiling_before = ceiling.measure(2);
            std::vector<float> scratch[2];  // kept between runs, as the engine keeps them
            for (int k = 0; k < runs + 1; ++k) {
                std::barrier<> go(threads + 1);
                std::vector<std::thread> pool;
                for (int e = 0; e < 2; ++e)
                    pool.emplace_back([&, e] {
                        y[e].resize(x.size());
                        go.arrive_and_wait();
                        ffnForward(s, s.inter, experts[e], x.data(), n, y[e].data(), scratch[e]);
                    });
                go.arrive_and_wait();
                const auto t0 = Clock::now();
                for (auto& th : pool)
                    th.join();
                if (k > 0)  // the first pass warms caches and pages
                    ms.push_back(seconds(t0, Clock::now()) * 1e3);
            }
            f.ceiling_after = ceiling.measure(2);
            f.format = std::string(toString(t));
            f.tokens = n;
            f.ms = median(ms);
            f.gbs = bytes / (f.ms * 1e-3) / 1e9;
            f.ratio = f.gbs / (0.5 * (f.ceiling_before + f.ceiling_after));
            decode.push_back(f);
        }
    }

    // DeepSeek-R1-shaped decode layer on 4 ranks.
    ModelSpec r1;
    r1.name = "DeepSeek-R1 shape, 32 experts";
    r1.hidden_size = 7168;
    r1.num_layers = 1;
    r1.moe_layers = {0};
    r1.routed_experts = 32;
    r1.experts_per_token = 8;
    r1.moe_intermediate_size = 2048;
    r1.shared_experts = 1;
    r1.shared_intermediate_size = 2048;
    r1.scoring = Scoring::sigmoid;
    r1.expert_groups = 8;
    r1.groups_per_token = 4;
    r1.routed_scaling_factor = 2.5;
    // The experts split evenly over the ranks (rank r holds experts 32r/R .. 32(r+1)/R - 1).
    auto r1Placement = [](int ranks) {
        Placement p;
        p.num_experts = 32;
        LayerPlacement layer;
        layer.gpu_slots.resize(static_cast<std::size_t>(ranks));
        for (int e = 0; e < 32; ++e)
            layer.gpu_slots[static_cast<std::size_t>(e * ranks / 32)].push_back(ExpertId{e});
        p.layers.push_back(layer);
        return p;
    };
    EngineConfig cfg;
    cfg.tokens = 64;
    cfg.layers = {0};
    std::vector<double> r1ms, a2aPhaseGbs;
    StepMetrics m;
    // Bytes of the rows in m.traffic (each row both ways: dispatch out, combine back) between
    // different ranks, and in all (a rank's rows to itself are copied too: into its receive buffer,
    // then read by its combine).
    auto trafficBytes = [](const StepMetrics& s, bool betweenOnly) {
        const auto R = static_cast<std::size_t>(s.num_gpus);
        double bytes = 0;
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t d = 0; d < R; ++d)
                if (!betweenOnly || r != d)
                    bytes += s.traffic[r * R + d];
        return bytes;
    };
    double a2aBytes = 0;
    {
        EpEngine engine(r1, DType::fp8, r1Placement(4), cfg);
        engine.step(0, m);
        for (int k = 0; k < runs; ++k) {
            engine.step(k + 1, m);
            r1ms.push_back(m.summary.moe_time_us / 1000.0);
            double phaseUs = 0;
            for (const auto& g : m.gpus)
                phaseUs = std::max(phaseUs, g.dispatch_us + g.combine_us);
            a2aBytes = trafficBytes(m, true);
            a2aPhaseGbs.push_back(phaseUs > 0 ? a2aBytes / (phaseUs * 1e-6) / 1e9 : 0);
        }
    }
    const double r1Median = median(r1ms);
    const double a2aPhaseMedian = median(a2aPhaseGbs);
    // The transport itself: the same layer on as many ranks as hardware threads (2 to 4), so that
    // no rank waits for a core while it copies; the rows it copies over the slowest rank's copying
    // time (the pull after the counts barrier and the combine, barrier waits excluded).
    const int a2aRanks = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 2, 4);
    // At least 5 steps whatever --runs: one step's copy is one sample, and a step whose rows outgrow
    // the buffers of the steps before it pays for fresh pages (a `--runs 1` run read 0.087 of
    // the memcpy where runs of 3 read 0.9-1.1).
    const int a2aSamples = std::max(runs, 5);
    std::vector<double> a2aGbs;
    double movedBytes = 0;
    {
        EpEngine engine(r1, DType::fp8, r1Placement(a2aRanks), cfg);
        engine.step(0, m);
        for (int k = 0; k < a2aSamples; ++k) {
            engine.step(k + 1, m);
            double exchangeUs = 0;
            for (double us : engine.lastExchangeUs())
                exchangeUs = std::max(exchangeUs, us);
            movedBytes = trafficBytes(m, false);
            a2aGbs.push_back(exchangeUs > 0 ? movedBytes / (exchangeUs * 1e-6) / 1e9 : 0);
        }
    }
    const double a2aMedian = median(a2aGbs);
    // memcpy ceiling: the bytes the exchange copies, copied by as many threads as it has ranks, each
    // its share, between buffers of that size. The same size on both sides: the exchange's buffers
    // (the sources' token rows, each sent up to top-k times, the receive and result buffers) partly
    // sit in the last-level cache, and so do these; a larger copy from memory would read as a
    // ceiling the exchange beats.
    auto memcpyGbs = [&] {
        const std::size_t total = std::max<std::size_t>(static_cast<std::size_t>(movedBytes), std::size_t{1} << 20);
        const auto part = total / static_cast<std::size_t>(a2aRanks);
        std::vector<char> from(total, 1), to(total, 0);
        std::vector<double> gbs;
        for (int k = 0; k < a2aSamples; ++k) {
            std::vector<std::thread> pool;
            const auto t0 = Clock::now();
            for (int q = 0; q < a2aRanks; ++q)
                pool.emplace_back([&, q] {
                    std::memcpy(to.data() + static_cast<std::size_t>(q) * part, from.data() + static_cast<std::size_t>(q) * part, part);
                });
            for (auto& th : pool)
                th.join();
            gbs.push_back(static_cast<double>(part * static_cast<std::size_t>(a2aRanks)) / seconds(t0, Clock::now()) / 1e9);
        }
        ceiling.sink += static_cast<std::uint64_t>(to[total / 2]);
        return median(gbs);
    };
    const double copyBefore = memcpyGbs();
    const double copyAfter = memcpyGbs();

    // Prefill: the expert FFN at 32 and 256 tokens against an OpenBLAS sgemm of the same FLOPs.
    const PrefillResult prefill = benchPrefill(runs, threads);

    const double after = ceiling.measure(runs);
    double fmaSink = 0;
    const double fmaGflops = fmaCeiling(threads, runs, fmaSink);
    const double dpbf16Gflops = fmaCeiling(threads, runs, fmaSink, Chains::dpbf16);
    const double tileGflops = fmaCeiling(threads, runs, fmaSink, Chains::tiles);
    // decode_ratio: the smallest ratio among the rows whose ceiling held still.
    double worst = 1e9, worstAny = 1e9;
    for (const auto& f : decode) {
        worstAny = std::min(worstAny, f.ratio);
        if (!f.ceilingMoved())
            worst = std::min(worst, f.ratio);
    }
    if (worst > 1e8)
        worst = worstAny;

    std::cout << "read ceiling     " << fixed(before, 1) << " GB/s before, " << fixed(after, 1) << " GB/s after the whole run (1 GiB, "
              << threads << " threads, 2 MiB pages; the better of 8 streams a thread and 1 stream prefetched 2 KiB ahead)\n";
    std::cout << "decode, Mixtral-8x7B slice (2 experts of 4096 x 14336, one per thread); each row against the read ceiling\n"
                 "measured right before and after it\n";
    std::cout << "  weights  tokens       ms    GB/s  ceiling GB/s   ratio\n";
    for (const auto& f : decode) {
        char line[128];
        std::snprintf(line, sizeof line, "  %-7s  %6d  %7.2f  %6.1f   %5.1f/%5.1f  %6.3f%s\n", f.format.c_str(), f.tokens, f.ms, f.gbs,
                      f.ceiling_before, f.ceiling_after, f.ratio, f.ceilingMoved() ? "  (ceiling moved > 20%)" : "");
        std::cout << line;
    }
    std::cout << "decode_ratio     " << fixed(worst, 3) << " (smallest of the rows whose ceiling held; target >= 0.85)\n";
    // Eight tokens do 16 FLOPs per weight: at the read ceiling that can need more than the vector
    // units give on a small machine, so say what the row needed, what it ran at, and the ceiling
    // of the instructions it ran (float32 FMAs, or VDPBF16PS where the kernel rounds to bf16). Its
    // reach is the ratio it would stream at that ceiling with nothing else to do: below 0.85, no
    // kernel with these products meets the target on this CPU (fp8 at 8 tokens on a Zen 5 EPYC).
    const auto instructions = [&](const DecodeFigure& f) {
        const bool bf16Products = (kernel == Kernel::avx512bf16 || kernel == Kernel::amx) && f.format != "fp32";
        const bool tiles = kernel == Kernel::amx && f.format != "fp32";
        const char* name = tiles ? "AMX TDPBF16PS" : bf16Products ? "VDPBF16PS" : kernel == Kernel::avx2 ? "256-bit FMA" : "FMA";
        return std::pair{name, tiles ? tileGflops : bf16Products ? dpbf16Gflops : fmaGflops};
    };
    const auto reachOf = [&](const DecodeFigure& f) {
        const double bytesPerWeight = f.format == "fp32" ? 4.0 : f.format == "bf16" ? 2.0 : 1.0;
        return instructions(f).second * bytesPerWeight / (2.0 * f.tokens * 0.5 * (f.ceiling_before + f.ceiling_after));
    };
    for (const auto& f : decode)
        if (f.tokens == 8) {
            const double gflops = 2.0 * 2 * 3 * 4096.0 * 14336.0 * f.tokens / (f.ms * 1e-3) / 1e9;
            const auto [name, ceilingGflops] = instructions(f);
            const double reach = reachOf(f);
            std::cout << "  " << f.format << " x8: " << fixed(gflops, 1) << " GFLOP/s = " << fixed(gflops / ceilingGflops, 2) << " of the "
                      << name << " ceiling (" << fixed(ceilingGflops, 1) << " GFLOP/s, " << threads
                      << " threads); 0.85 of its read ceiling needs " << fixed(0.85 * ceilingGflops / reach, 1) << " GFLOP/s";
            if (reach < 0.85)
                std::cout << ": out of reach, at the " << name << " ceiling it would stream " << fixed(reach, 2) << " of the read ceiling";
            std::cout << '\n';
        }
    std::cout << "R1-shaped layer  " << fixed(r1Median, 2) << " ms (4 ranks, 64 tokens, fp8, 32 experts + shared)\n";
    const double copyMean = 0.5 * (copyBefore + copyAfter);
    std::cout << "a2a (threads)    " << fixed(a2aMedian, 2) << " GB/s: the same layer on " << a2aRanks << " ranks, "
              << fixed(movedBytes / 1e6, 1) << " MB of rows copied per step (both ways) over the slowest rank's copying time "
              << "(barrier waits excluded); memcpy by " << a2aRanks << " threads " << fixed(copyBefore, 1) << " / "
              << fixed(copyAfter, 1) << " GB/s, ratio " << fixed(a2aMedian / copyMean, 3) << '\n';
    std::cout << "                 " << fixed(a2aPhaseMedian, 2) << " GB/s on 4 ranks: " << fixed(a2aBytes / 1e6, 1)
              << " MB between ranks over the slowest rank's dispatch + combine phases (waits for the slowest router included"
              << (std::thread::hardware_concurrency() < 4 ? "; 4 ranks share " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads" : std::string())
              << ")\n";
    if (!prefill.measured) {
        std::cout << "prefill_ratio    not measured: " << prefill.why << '\n';
    } else {
        std::cout << "prefill, the same slice: expert FFN GFLOP/s over one OpenBLAS sgemm of the same FLOPs (" << threads
                  << " threads, OpenBLAS core " << prefill.blas_core
                  << (prefill.blas_core_forced ? ", as OPENBLAS_CORETYPE in the environment asks" : "") << ")\n";
        std::cout << "  weights  tokens  gemm            ms  GFLOP/s   sgemm   ratio\n";
        for (const auto& f : prefill.figures) {
            char line[128];
            std::snprintf(line, sizeof line, "  %-7s  %6d  %-11s  %7.2f  %7.1f  %6.1f  %6.3f\n", f.format.c_str(), f.tokens,
                          f.gemm.c_str(), f.ms, f.gflops, f.sgemm_gflops, f.ratio);
            std::cout << line;
        }
        std::cout << "prefill_ratio    " << fixed(prefill.ratio, 3) << " (smallest; target >= 0.80, goal 1.2)\n";
    }

    if (auto json = args.value("json")) {
        nlohmann::json j;
        j["cpu"] = cpu;
        j["kernel"] = toString(kernel);
        j["threads"] = threads;
        j["runs"] = runs;
        j["ceiling_gbs_before"] = before;
        j["ceiling_gbs_after"] = after;
        j["decode_ratio"] = worst;
        j["fma_ceiling_gflops"] = fmaGflops;
        j["dpbf16_ceiling_gflops"] = dpbf16Gflops;
        j["amx_ceiling_gflops"] = tileGflops;
        if (prefill.measured) {
            j["prefill_ratio"] = prefill.ratio;
            j["openblas_core"] = prefill.blas_core;
            j["openblas_core_forced"] = prefill.blas_core_forced;
            nlohmann::json rows = nlohmann::json::array();
            for (const auto& f : prefill.figures)
                rows.push_back({{"weights", f.format}, {"tokens", f.tokens}, {"gemm", f.gemm}, {"ms", f.ms}, {"gflops", f.gflops},
                                {"sgemm_gflops", f.sgemm_gflops}, {"ratio", f.ratio}});
            j["prefill"] = rows;
        } else {
            j["prefill_ratio"] = nullptr;
        }
        j["r1_layer_ms_4_ranks"] = r1Median;
        j["a2a_gbs"] = a2aMedian;
        j["a2a_memcpy_gbs_before"] = copyBefore;
        j["a2a_memcpy_gbs_after"] = copyAfter;
        j["a2a_ratio"] = a2aMedian / (0.5 * (copyBefore + copyAfter));
        j["a2a_ranks"] = a2aRanks;
        j["a2a_bytes_per_step"] = movedBytes;
        j["a2a_bytes_between_ranks_per_step"] = a2aBytes;
        j["a2a_phases_gbs"] = a2aPhaseMedian;
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& f : decode)
            rows.push_back({{"weights", f.format}, {"tokens", f.tokens}, {"ms", f.ms}, {"gbs", f.gbs}, {"ratio", f.ratio},
                            {"ceiling_gbs_before", f.ceiling_before}, {"ceiling_gbs_after", f.ceiling_after},
                            {"ceiling_moved", f.ceilingMoved()}, {"reach", reachOf(f)}});
        j["decode"] = rows;
        j["sink"] = static_cast<double>(ceiling.sink % 2) + (fmaSink > 1e300 ? 1 : 0);  // keeps the ceilings' work
        writeJson(*json, j.dump(1));
    }
    return 0;
}

}  // namespace moex::cli
