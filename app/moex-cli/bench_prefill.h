// bench engine's prefill part: the engine's expert FFN at 32 and 256 tokens, multiplied as the
// engine's default (engine.gemm: auto) chooses, against one dense OpenBLAS sgemm of the same FLOPs
// measured in the same run (issue 15's prefill_ratio).
#pragma once

#include <string>
#include <vector>

namespace moex::cli {

struct PrefillFigure {
    std::string format;     // the engine's weight format
    std::string gemm;       // what multiplied, as engine.gemm: auto chooses: "openblas" or the engine's kernel
    int tokens = 0;
    double ms = 0;          // two experts, one per thread
    double gflops = 0;
    double sgemm_gflops = 0;  // the ceiling at the same tokens
    double ratio = 0;
};

struct PrefillResult {
    bool measured = false;  // false: this build has no OpenBLAS
    std::string why;        // when not measured
    std::string blas_core;  // the kernel OpenBLAS picked for this CPU (OPENBLAS_CORETYPE overrides it)
    bool blas_core_forced = false;  // OPENBLAS_CORETYPE was set: the kernel is the environment's choice
    std::vector<PrefillFigure> figures;
    double ratio = 0;       // the smallest
};

PrefillResult benchPrefill(int runs, int threads);

}  // namespace moex::cli
