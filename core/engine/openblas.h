// OpenBLAS's sgemm, for the engine's experts with many tokens (prefill) and bench engine's
// ceiling. Loaded on first use with dlopen from Debian's libopenblas0, never linked: a linked
// OpenBLAS starts its thread pool in every process that loads moex_core, and those threads spin
// for a while after each call, taking the cores simulate's routing generator runs on. A build
// machine without OpenBLAS builds the same; a run without it uses the engine's own kernels.
#pragma once

#include "engine/quant_matrix.h"
#include "engine/row_kernels.h"

#include <string>

namespace moex::engine::openblas {

struct Library {
    using Sgemm = void (*)(int order, int transA, int transB, int m, int n, int k, float alpha, const float* a, int lda,
                           const float* b, int ldb, float beta, float* c, int ldc);
    Sgemm sgemm = nullptr;
    void (*setThreads)(int) = nullptr;
    char* (*corename)() = nullptr;
    std::string error;  // why it is not loaded; empty when loaded
    bool avx512 = false;  // the kernel OpenBLAS picked (corename) is one of its AVX-512 ones
    [[nodiscard]] bool loaded() const { return error.empty(); }
};

// Loads the library once (thread-safe) and sets it to one thread: the engine runs one expert per
// thread itself. MOEX_OPENBLAS=PATH loads that file instead of the loader's libopenblas.so.0 (a
// build of one's own, a path outside the loader's); a PATH that does not load is the error. Callers that want OpenBLAS's own threads (bench engine's ceiling) set them and
// put back one.
const Library& library();

// The CBLAS constants (the CBLAS standard's values, which every implementation shares).
inline constexpr int kRowMajor = 101;
inline constexpr int kNoTrans = 111;
inline constexpr int kTrans = 112;

// c[m][n] (ldc) = a[m][k] (lda) x b[n][k]^T (ldb) + beta c: rows of b are output columns, as the
// engine stores weights ([out][in]). The library must be loaded.
void sgemmNT(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc, float beta = 0.0f);

// Which multiplies an expert's tokens (the scenario's engine.gemm): automatic, the faster of the
// two as measured for this CPU's kernel and the weight format (fromTokens); the engine's kernels
// always; OpenBLAS always.
enum class GemmChoice { automatic, engine, openblas };

// Measured on a 2-vCPU AMD EPYC VM (AVX-512, AVX-512-BF16), 2026-12-05, each kernel forced with
// MOEX_KERNEL, OpenBLAS 0.3.21 on its own pick for this CPU (Cooperlake, an AVX-512 sgemm) and on
// Haswell's (AVX2, what OPENBLAS_CORETYPE=Haswell or an AVX2 CPU gives); docs/PERFORMANCE.md, "The
// engine's kernels or OpenBLAS": the fewest tokens per expert from which OpenBLAS's sgemm on
// float32 panels beats kernel `k` for weights in format `f`; 0 = it never does (the avx512-bf16
// kernel's bf16 and fp8 dot products run at 1.4-1.6x the sgemm, and mxfp4's panels cost more to
// dequantise than the sgemm saves). `avx512Sgemm`: OpenBLAS runs an AVX-512 kernel. `fastBf16Dot`:
// VDPBF16PS gives at least kFastBf16Dot times the FLOPs of 512-bit FMAs on this CPU
// (bf16DotSpeedup(), vector_ceiling.h): 2 on the AMD EPYC above; on an Intel Xeon with half (0.5,
// 2026-12-05) the avx512-bf16 kernel's bf16 and fp8 rows ran at 0.54-0.63 of OpenBLAS's AVX-512
// sgemm at 256 tokens, so there they take OpenBLAS from 128 tokens, as the avx512 kernel does.
inline constexpr double kFastBf16Dot = 1.5;
int fromTokens(Kernel k, WeightFormat f, bool avx512Sgemm, bool fastBf16Dot = true);

// LayerShape::openblas_from_tokens for choice `c`: automatic, fromTokens(k, f, the loaded library's
// avx512, bf16DotSpeedup() >= kFastBf16Dot where k is avx512bf16) where OpenBLAS loads
// and 0 where it does not; engine, 0; openblas, 1, and std::runtime_error saying why where OpenBLAS
// does not load.
int fromTokens(GemmChoice c, Kernel k, WeightFormat f);

const char* toString(GemmChoice c);

}  // namespace moex::engine::openblas
