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
// out[i * ldo + c - c0] = weight (r0 + i, c) as float32 for c0 <= c < c1 (multiples of 16 for
// AVX-512, of 8 for AVX2): QuantMatrix::dequantCols's values bit for bit.
void dequantRowsAvx512(const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo);
void dequantRowsAvx2(const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo);

}  // namespace moex::engine::detail
