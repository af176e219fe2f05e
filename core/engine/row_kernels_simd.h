// The AVX-512 and AVX2 float32-product kernels behind rowsDots (row_kernels.h chooses among them):
// internal to the engine. Callers check that the CPU runs the kernel and that w.cols() is a
// multiple of the kernel's step (16 for AVX-512 and for the blocked tiles, 8 for AVX2).
#pragma once

#include "engine/quant_matrix.h"

#include <cstddef>

namespace moex::engine::detail {

// y[t] = row r . token t (x: n tokens, ldx apart).
void rowDotsAvx512(const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y);
void rowDotsAvx2(const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y);
// y[i * ldy + t] = row r0 + i . token t, in tiles of 6 rows x 4 tokens (n >= 4 pays off).
void rowsDotsAvx512(const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y,
                    std::size_t ldy);
// The same over TokenPanel::packed() tokens xp, in blocks of columns and tokens (many tokens).
void rowsBlockedDotsAvx512(const QuantMatrix& w, int r0, int nrows, const float* xp, int n, float* y, std::size_t ldy);
void rowsBlockedDotsAvx2(const QuantMatrix& w, int r0, int nrows, const float* xp, int n, float* y, std::size_t ldy);

}  // namespace moex::engine::detail
