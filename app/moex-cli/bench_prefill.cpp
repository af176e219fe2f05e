#include "bench_prefill.h"

#include "engine/moe_layer.h"
#include "engine/openblas.h"
#include "engine/row_kernels.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace moex::cli {

namespace {

using Clock = std::chrono::steady_clock;

double medianOf(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

constexpr int kHidden = 4096;
constexpr int kInter = 14336;

}  // namespace

PrefillResult benchPrefill(int runs, int threads)
{
    using namespace engine;
    PrefillResult result;
    const openblas::Library& lib = openblas::library();
    if (!lib.loaded()) {
        result.why = lib.error;
        return result;
    }
    result.measured = true;
    ModelSpec mixtral;
    mixtral.hidden_size = kHidden;
    mixtral.moe_intermediate_size = kInter;
    mixtral.routed_experts = 8;
    mixtral.experts_per_token = 2;
    const std::vector<int> tokenCounts{32, 256};
    const int maxTokens = tokenCounts.back();
    std::vector<float> x(static_cast<std::size_t>(maxTokens) * kHidden);
    for (int i = 0; i < maxTokens; ++i)
        makeTokenHidden(1, 0, i, kHidden, x.data() + static_cast<std::size_t>(i) * kHidden);

    // The ceiling: C[T x N] = X[T x H] B[H x N] with N = threads x 3 x I, the FLOPs of `threads`
    // experts' gate, up and down at T tokens, on OpenBLAS's own `threads` threads.
    const std::size_t N = static_cast<std::size_t>(threads) * 3 * kInter;
    std::vector<float> b(static_cast<std::size_t>(kHidden) * N);
    for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = hashUniform(11, i) * 0.01f;
    std::vector<float> c(static_cast<std::size_t>(maxTokens) * N);
    lib.setThreads(threads);
    result.blas_core = lib.corename();
    result.blas_core_forced = std::getenv("OPENBLAS_CORETYPE") != nullptr;
    std::vector<double> sgemm;
    for (int t : tokenCounts) {
        std::vector<double> ms;
        for (int k = 0; k < runs + 1; ++k) {
            const auto t0 = Clock::now();
            lib.sgemm(openblas::kRowMajor, openblas::kNoTrans, openblas::kNoTrans, t, static_cast<int>(N), kHidden, 1.0f, x.data(), kHidden,
                        b.data(), static_cast<int>(N), 0.0f, c.data(), static_cast<int>(N));
            if (k > 0)
                ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        sgemm.push_back(2.0 * t * kHidden * static_cast<double>(N) / (medianOf(ms) * 1e-3) / 1e9);
    }
    lib.setThreads(1);  // the engine runs one expert per thread, each sgemm on its caller's thread
    b.clear();
    b.shrink_to_fit();

    result.ratio = 1e9;
    for (DType d : {DType::bf16, DType::fp8, DType::fp32}) {
        LayerShape s = layerShape(mixtral, d);
        s.openblas_from_tokens = openblas::fromTokens(openblas::GemmChoice::automatic, activeKernel(), s.format);
        std::vector<FfnWeights> experts;
        for (int e = 0; e < threads; ++e)
            experts.push_back(makeExpertWeights(s, 1, 0, e));
        for (std::size_t ti = 0; ti < tokenCounts.size(); ++ti) {
            const int n = tokenCounts[ti];
            std::vector<std::vector<float>> y(static_cast<std::size_t>(threads), std::vector<float>(static_cast<std::size_t>(n) * kHidden));
            std::vector<double> ms;
            // Each thread's FFN buffers kept between runs, as the engine keeps them between steps
            // (the first run, which makes them, is not timed).
            std::vector<std::vector<float>> scratch(static_cast<std::size_t>(threads));
            for (int k = 0; k < runs + 1; ++k) {
                std::barrier<> go(threads + 1);
                std::vector<std::thread> pool;
                for (int e = 0; e < threads; ++e)
                    pool.emplace_back([&, e] {
                        go.arrive_and_wait();
                        ffnForward(s, s.inter, experts[static_cast<std::size_t>(e)], x.data(), n,
                                   y[static_cast<std::size_t>(e)].data(), scratch[static_cast<std::size_t>(e)]);
                    });
                go.arrive_and_wait();
                const auto t0 = Clock::now();
                for (auto& th : pool)
                    th.join();
                if (k > 0)
                    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            }
            PrefillFigure f;
            f.format = d == DType::bf16 ? "bf16" : d == DType::fp8 ? "fp8" : "fp32";
            f.tokens = n;
            f.gemm = viaOpenBlas(s, n) ? "openblas" : toString(kernelFor(activeKernel(), experts.front().up));
            f.ms = medianOf(ms);
            f.gflops = threads * 6.0 * kHidden * static_cast<double>(kInter) * n / (f.ms * 1e-3) / 1e9;
            f.sgemm_gflops = sgemm[ti];
            f.ratio = f.gflops / f.sgemm_gflops;
            result.ratio = std::min(result.ratio, f.ratio);
            result.figures.push_back(f);
        }
    }
    return result;
}

}  // namespace moex::cli
