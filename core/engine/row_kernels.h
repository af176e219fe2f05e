// The engine's inner kernel: dot products of one weight row with n token vectors, the row
// dequantised in registers as it streams (never written out as a tensor). Three implementations,
// chosen once at run time by what the CPU has:
//   avx512    16 floats per step (AVX-512F/BW): bf16 widened by a shift, fp8-e4m3 moved into fp16
//             bits and converted by the hardware (exact, subnormals included), MXFP4 nibbles
//             through a 16-entry permute; 4 rows x 4 tokens per pass from 4 tokens on
//   avx2      8 floats per step (AVX2 + FMA + F16C), the same conversions (MXFP4 via an 8-entry
//             permute and a sign flip)
//   portable  the row dequantised into a buffer, then moe_layer's fixed-order dot
// Each implementation sums in a fixed order, so a token's result does not depend on the other
// tokens of the call: ranks agree bit for bit on one machine. Implementations differ from each
// other only in rounding (tests compare them within float32 tolerance).
#pragma once

#include "engine/quant_matrix.h"

#include <cstddef>
#include <vector>

namespace moex::engine {

enum class Kernel { portable, avx2, avx512 };

const char* toString(Kernel k);
// The fastest kernel this CPU runs, and the one rowsDots uses (chosen once).
Kernel bestKernel();
Kernel activeKernel();
bool kernelSupported(Kernel k);

// y[t] = sum_c W[r][c] * x[t * ldx + c] for t < n, with kernel k. `scratch` (portable) grows as needed.
void rowDotsWith(Kernel k, const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y,
                 std::vector<float>& scratch);

// Rows r0 .. r0 + nrows - 1 at once: y[i * ldy + t] = row r0 + i . token t. The AVX-512 kernel
// tiles 4 rows x 4 tokens so that each token chunk it loads feeds four rows; the results are the
// one-row kernel's bit for bit (same accumulator order per row and token).
void rowsDots(const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y, std::size_t ldy,
              std::vector<float>& scratch);
void rowsDotsWith(Kernel k, const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y,
                  std::size_t ldy, std::vector<float>& scratch);

}  // namespace moex::engine
