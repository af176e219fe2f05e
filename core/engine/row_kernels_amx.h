// The AMX-BF16 kernel behind rowsDots (row_kernels.h chooses it): internal to the engine.
#pragma once

#include "engine/quant_matrix.h"

#include <cstddef>
#include <cstdint>

namespace moex::engine::detail {

// Whether this process may run AMX tiles: the CPU has AMX-TILE and AMX-BF16 and Linux granted the
// tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once per process).
bool amxUsable();

// Tokens per tile block: a tile's 16 columns of float32 sums.
constexpr int kAmxTokens = 16;

// The layout the tiles read tokens in (VNNI): blocks of 16 tokens (one block of n where n <= 16,
// so that decode's token tiles hold no padding), each the tokens' bf16 columns in steps of 32; a
// step is 16 rows of the block's tokens x 2 adjacent columns. Tokens past n in the last of several
// blocks are zeros. bf16: n rows of `cols` bf16 (cols % 32 == 0).
int vnniWidth(int n);                   // tokens per block in the layout
std::size_t vnniSize(int n, int cols);  // in bf16 values
void tokensToVnni(const std::uint16_t* bf16, int n, int cols, std::uint16_t* out);

// y[i * ldy + t] = row r0 + i . token t for the tokens in VNNI layout (n tokens of w.cols()), with
// the tiles' TDPBF16PS: w bf16, fp8 or MXFP4 as bf16KernelFits takes it. Only where amxUsable().
void rowsDotsAmx(const QuantMatrix& w, int r0, int nrows, const std::uint16_t* vnni, int n, float* y, std::size_t ldy);

}  // namespace moex::engine::detail
