#include "run/host_calibration.h"

#include "common/host_info.h"
#include "engine/moe_layer.h"
#include "engine/openblas.h"
#include "engine/row_kernels.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

namespace moex {

namespace {

using Clock = std::chrono::steady_clock;

// The expert shapes the curves are measured at (CpuCalibration): short rows, then longer ones,
// the longest past the samples' longest rows (Mixtral-8x7B's 4096 x 14336: rho 1.86e-4) so that
// no model's curve is extrapolated: bf16 and mxfp4 stop getting faster per weight where their rows
// grow long enough to be memory-bound, fp8 keeps falling (docs/PERFORMANCE.md). None is a shape the
// predictions are checked on (tests/bench/predicted_vs_measured.sh).
constexpr CpuExpertShape kShortShape{2048, 1024};
constexpr CpuExpertShape kLongerShapes[] = {{6144, 2048}, {8192, 4096}};
// Per thread: far beyond any last-level cache share. A cycle only a few times the cache still
// hits in a victim L3 and read 10-25% faster than the engine's gigabytes of weights.
constexpr double kStreamBytes = 192e6;

// Runs body(thread, rep) on `threads` threads started together, repeating until `seconds` have
// passed on thread 0 (every thread runs the same number of repetitions); returns the mean over
// threads of microseconds per repetition.
template <typename Body>
double timeOnAll(int threads, double seconds, Body body)
{
    std::vector<double> perRep(static_cast<std::size_t>(threads), 0.0);
    std::barrier<> start(threads);
    // Thread 0 decides the repetitions in a short probe; then every thread runs that many.
    const auto probe = Clock::now();
    body(0, 0);
    const double once = std::chrono::duration<double>(Clock::now() - probe).count();
    const int reps = std::max(2, static_cast<int>(seconds / std::max(once, 1e-7)));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            body(t, 0);  // warm
            start.arrive_and_wait();
            const auto t0 = Clock::now();
            for (int r = 0; r < reps; ++r)
                body(t, r + 1);
            perRep[static_cast<std::size_t>(t)] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
        });
    for (auto& p : pool)
        p.join();
    double sum = 0;
    for (double v : perRep)
        sum += v;
    return sum / threads;
}

struct FormatCase {
    const char* name;
    DType dtype;
};

struct ExpertTiming {
    int threads;
    double seconds;       // per timing
    double streamBytes;   // weights cycled per thread
    int sweeps;
    int minExperts;       // per thread: 2 so that a cycle streams, 1 for a quick look (tests)
    const std::function<void(const std::string&)>& say;
};

// Per format, microseconds per million weights against tokens for an expert of `shape`, run as the
// engine runs it, on every thread at once.
CpuCurves measureExpertCurves(CpuExpertShape shape, const std::vector<double>& tokenCounts, const ExpertTiming& timing)
{
    const int threads = timing.threads;
    const int maxTokens = static_cast<int>(tokenCounts.back());
    const FormatCase formats[] = {{"f32", DType::fp32}, {"bf16", DType::bf16}, {"fp8", DType::fp8}, {"mxfp4", DType::mxfp4}};
    const double mweights = 3.0 * shape.hidden * shape.inter / 1e6;
    CpuCurves out;
    for (const FormatCase& f : formats) {
        ModelSpec m;
        m.hidden_size = shape.hidden;
        m.moe_intermediate_size = shape.inter;
        m.routed_experts = 64;
        m.experts_per_token = 1;
        engine::LayerShape layer = engine::layerShape(m, f.dtype);
        // The experts multiplied as the engine's default (engine.gemm: auto) multiplies them.
        layer.openblas_from_tokens = engine::openblas::fromTokens(engine::openblas::GemmChoice::automatic,
                                                                  engine::activeKernel(), layer.format);
        // Each thread owns enough experts to stream from memory.
        const engine::FfnWeights probe = engine::makeExpertWeights(layer, 1, 0, 0);
        const int perThread = std::max(timing.minExperts, static_cast<int>(timing.streamBytes / static_cast<double>(probe.bytes()) + 0.999));
        std::vector<std::vector<engine::FfnWeights>> experts(static_cast<std::size_t>(threads));
        {
            std::vector<std::thread> builders;
            for (int t = 0; t < threads; ++t)
                builders.emplace_back([&, t] {
                    for (int e = 0; e < perThread; ++e)
                        experts[static_cast<std::size_t>(t)].push_back(engine::makeExpertWeights(layer, 7, t, e));
                });
            for (auto& b : builders)
                b.join();
        }
        std::vector<float> x(static_cast<std::size_t>(maxTokens) * static_cast<std::size_t>(shape.hidden));
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = engine::hashUniform(3, i);
        // Sweeps over the token counts, each count's median taken across the sweeps: these
        // machines' memory bandwidth moves every few tens of seconds, and sweeping spreads each
        // count's timings over the whole measurement instead of one moment.
        std::vector<std::vector<double>> runs(tokenCounts.size());
        std::vector<std::vector<float>> scratch(static_cast<std::size_t>(threads));
        for (int sweep = 0; sweep < timing.sweeps; ++sweep)
            for (std::size_t i = 0; i < tokenCounts.size(); ++i) {
                const int n = static_cast<int>(tokenCounts[i]);
                std::vector<std::vector<float>> y(static_cast<std::size_t>(threads),
                                                  std::vector<float>(static_cast<std::size_t>(n) * static_cast<std::size_t>(shape.hidden)));
                runs[i].push_back(timeOnAll(threads, timing.seconds, [&](int t, int rep) {
                    const auto& mine = experts[static_cast<std::size_t>(t)];
                    engine::ffnForward(layer, shape.inter, mine[static_cast<std::size_t>(rep) % mine.size()], x.data(), n,
                                       y[static_cast<std::size_t>(t)].data(), scratch[static_cast<std::size_t>(t)]);
                }));
            }
        CpuCurve curve;
        for (std::size_t i = 0; i < tokenCounts.size(); ++i) {
            std::sort(runs[i].begin(), runs[i].end());
            const double us = runs[i][runs[i].size() / 2];
            curve.emplace_back(tokenCounts[i], us / mweights);
            char line[160];
            std::snprintf(line, sizeof line, "expert %-5s %4d x %-4d %4d tokens: %9.1f us per million weights per thread", f.name,
                          shape.hidden, shape.inter, static_cast<int>(tokenCounts[i]), us / mweights);
            timing.say(line);
        }
        out.emplace_back(f.name, std::move(curve));
    }
    return out;
}

}  // namespace

Calibration measureHostCalibration(const HostCalibrationOptions& options)
{
    const int threads = options.threads > 0 ? options.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const double seconds = options.quick ? 0.02 : 0.2;
    const double streamBytes = options.quick ? kStreamBytes / 12 : kStreamBytes;  // weights cycled per thread
    const std::function<void(const std::string&)> say = [&](const std::string& line) {
        if (options.progress)
            options.progress(line);
    };
    Calibration c = defaultCalibration(GpuArch::cpu);
    CpuCalibration& cpu = c.cpu;
    cpu.cpu = cpuModelName();
    cpu.kernel = engine::toString(engine::activeKernel());
    cpu.cores = threads;
    c.name = "host-cpu measured (" + std::to_string(threads) + " threads, " + cpu.kernel + ")";

    // Every count to 16: the kernels' tiles (up to 8 tokens, engine/row_kernels_bf16.h) make the
    // curve a staircase there, and decode's experts get a few tokens each; beyond, the curve is
    // close to linear (compute-bound). The longer shapes, which only correct the short one's level
    // for longer rows, at fewer counts.
    std::vector<double> tokenCounts, longCounts;
    if (options.quick) {
        tokenCounts = longCounts = {1, 4, 16, 64};
    } else {
        for (int t = 1; t <= 16; ++t)
            tokenCounts.push_back(t);
        tokenCounts.insert(tokenCounts.end(), {24, 32, 48, 64, 96, 128});
        longCounts = {1, 2, 4, 8, 12, 16, 32, 64, 128};
    }
    const ExpertTiming timing{threads, seconds, streamBytes, options.quick ? 1 : 3, options.quick ? 1 : 2, say};
    cpu.expert_shape = kShortShape;
    cpu.expert = measureExpertCurves(kShortShape, tokenCounts, timing);
    cpu.longer.clear();
    for (const CpuExpertShape& shape : kLongerShapes) {
        if (options.quick && !cpu.longer.empty())
            break;  // a quick look (tests): one longer shape; the longest's weights take seconds to make
        cpu.longer.push_back({shape, measureExpertCurves(shape, longCounts, timing)});
    }

    {  // Router: the fp32 gate of a 256-expert, 4096-hidden layer on one block of 8 tokens (the
       // engine's routerLogits takes 8 tokens per pass over the matrix), the matrices cycled so
       // that they stream from memory as they do between a layer's experts.
        engine::LayerShape s;
        s.hidden = 4096;
        s.experts = 256;
        s.topk = 8;
        s.router = engine::RouterKind::softmax;
        const double matrixBytes = 4.0 * s.hidden * s.experts;
        const int perThread = std::max(2, static_cast<int>(streamBytes / matrixBytes + 0.999));
        std::vector<std::vector<engine::RouterWeights>> routers(static_cast<std::size_t>(threads));
        for (int t = 0; t < threads; ++t)
            for (int k = 0; k < perThread; ++k)
                routers[static_cast<std::size_t>(t)].push_back(engine::makeRouterWeights(s, 5 + k, t));
        constexpr int n = 8;
        std::vector<float> x(static_cast<std::size_t>(n) * s.hidden);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = engine::hashUniform(9, i);
        std::vector<std::vector<int>> ids(static_cast<std::size_t>(threads), std::vector<int>(n * s.topk));
        std::vector<std::vector<float>> wt(static_cast<std::size_t>(threads), std::vector<float>(n * s.topk));
        const double us = timeOnAll(threads, seconds, [&](int t, int rep) {
            const auto& mine = routers[static_cast<std::size_t>(t)];
            engine::route(s, mine[static_cast<std::size_t>(rep) % mine.size()], x.data(), n, ids[static_cast<std::size_t>(t)].data(),
                          wt[static_cast<std::size_t>(t)].data());
        });
        cpu.router_gflops = 2.0 * n * s.hidden * s.experts / (us * 1e3);
        char line[120];
        std::snprintf(line, sizeof line, "router: %.2f GFLOP/s per thread (8-token blocks, matrix from memory)", cpu.router_gflops);
        say(line);
    }
    {  // Copies of rows, 16 MB per thread.
        const std::size_t floats = 4u << 20;
        std::vector<std::vector<float>> from(static_cast<std::size_t>(threads), std::vector<float>(floats, 1.0f));
        std::vector<std::vector<float>> to(static_cast<std::size_t>(threads), std::vector<float>(floats, 0.0f));
        const double us = timeOnAll(threads, seconds, [&](int t, int) {
            std::copy(from[static_cast<std::size_t>(t)].begin(), from[static_cast<std::size_t>(t)].end(), to[static_cast<std::size_t>(t)].begin());
        });
        cpu.copy_gbs = static_cast<double>(floats * sizeof(float)) / (us * 1e3);
        char line[120];
        std::snprintf(line, sizeof line, "copy: %.2f GB/s per thread", cpu.copy_gbs);
        say(line);
    }
    {  // One barrier across the threads.
        constexpr int rounds = 2000;
        std::barrier<> sync(threads);
        std::vector<std::thread> pool;
        const auto t0 = Clock::now();
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                for (int r = 0; r < rounds; ++r)
                    sync.arrive_and_wait();
            });
        for (auto& p : pool)
            p.join();
        cpu.sync_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / rounds;
        char line[120];
        std::snprintf(line, sizeof line, "barrier: %.2f us", cpu.sync_us);
        say(line);
    }
    return c;
}

}  // namespace moex
