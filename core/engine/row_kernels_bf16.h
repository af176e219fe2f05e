// The AVX-512-BF16 kernel behind rowsDots (row_kernels.h chooses it): internal to the engine.
#pragma once

#include "engine/quant_matrix.h"

#include <cstddef>
#include <cstdint>

namespace moex::engine::detail {

// Whether the bf16 kernel takes a matrix of `f` with `cols` columns: bf16, fp8 and MXFP4 weights
// whose rows are whole 32-column steps (float32 weights keep float32 products).
bool bf16KernelFits(WeightFormat f, int cols);

// n token rows of `cols` floats (ldx apart) rounded to nearest-even bf16 into out (rows of cols).
// cols % 16 == 0; only on a CPU with AVX-512-BF16.
void tokensToBf16(const float* x, int n, std::size_t ldx, int cols, std::uint16_t* out);

// y[i * ldy + t] = row r0 + i . token t for the bf16 tokens x (n rows of w.cols()).
void rowsDotsBf16(const QuantMatrix& w, int r0, int nrows, const std::uint16_t* x, int n, float* y, std::size_t ldy);

}  // namespace moex::engine::detail
