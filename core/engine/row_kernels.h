// The engine's inner kernel: dot products of one weight row with n token vectors, the row
// dequantised in registers as it streams (never written out as a tensor). Four implementations,
// chosen once at run time by what the CPU has (or by MOEX_KERNEL=portable|avx2|avx512|avx512-bf16|amx-bf16):
//   amx-bf16     bf16, fp8 and MXFP4 weights against the tokens rounded to bf16, on the AMX tiles
//                (Sapphire Rapids on; row_kernels_amx.cpp): the same bf16 values as avx512-bf16,
//                16 rows x 32 columns x 16 tokens an instruction; float32 weights as avx512
//   avx512-bf16  bf16, fp8 and MXFP4 weights against the tokens rounded to bf16, with VDPBF16PS
//                (twice the multiply-adds of float32 FMAs; row_kernels_bf16.cpp); float32 weights
//                as avx512
//   avx512       16 floats per step (AVX-512F/BW; row_kernels_simd.cpp, as avx2): bf16 widened
//                by a shift, fp8-e4m3 moved into fp16 bits and converted by the hardware (exact, subnormals included), MXFP4
//                nibbles through a 16-entry permute; tiles of 6 rows x 4 tokens from 4 tokens on,
//                from 32 tokens on taken in blocks of 1024 columns x 64 tokens over a packed
//                copy of the tokens (TokenPanel::packed)
//   avx2         8 floats per step (AVX2 + FMA + F16C), the same conversions (MXFP4 via an 8-entry
//                permute and a sign flip); from 32 tokens on, tiles of 3 rows x 4 tokens in the
//                same blocks over the packed tokens
//   portable     the row dequantised into a buffer, then moe_layer's fixed-order dot
// Each implementation sums in a fixed order, so a token's result does not depend on the other
// tokens of the call: ranks agree bit for bit on one machine. The float32 implementations differ
// from each other only in float32 rounding; avx512-bf16 also rounds the tokens (and fp8 weights
// times their scale) to bf16, 2^-9 relative at most (tests compare each with its bound).
#pragma once

#include "engine/quant_matrix.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moex::engine {

enum class Kernel { portable, avx2, avx512, avx512bf16, amx };

const char* toString(Kernel k);
// The kernel named `name` (as toString writes it, or "avx2"); false when there is none.
bool kernelFromString(const std::string& name, Kernel& out);
// The fastest kernel this CPU runs.
Kernel bestKernel();
// The one rowsDots uses: MOEX_KERNEL when set to a kernel this CPU runs, else bestKernel(); chosen
// once, changed only by useKernel.
Kernel activeKernel();
bool kernelSupported(Kernel k);
// Makes k the active kernel (benchmarks and tests compare kernels in one process). Not while
// another thread runs rowsDots. Throws std::invalid_argument when this CPU lacks k.
void useKernel(Kernel k);
// The kernel that multiplies w when k is chosen: k itself, or for float32 weights under avx512-bf16
// and amx-bf16 (which keep float32 products) the avx512 kernel.
Kernel kernelFor(Kernel k, const QuantMatrix& w);
// Whether kernel k computes w's products in bf16 (avx512-bf16 and amx-bf16 on bf16, fp8 or MXFP4
// weights).
bool roundsToBf16(Kernel k, const QuantMatrix& w);

// The tokens a set of matrices multiplies: n rows of `cols` floats, ldx apart. The bf16 copy the
// avx512-bf16 kernel reads is made on first use and kept for every matrix of these tokens (an
// expert's gate and up read the same tokens; the copy is made once). The floats must not change
// while the panel is in use.
class TokenPanel {
public:
    TokenPanel(const float* x, int n, std::size_t ldx, int cols) : m_x(x), m_n(n), m_ldx(ldx), m_cols(cols) {}
    // The same, its packed copy written into `packStore` (packedSize(n, cols) floats, the caller's
    // buffer kept between calls, so that no call pays for fresh pages).
    TokenPanel(const float* x, int n, std::size_t ldx, int cols, float* packStore)
        : m_x(x), m_n(n), m_ldx(ldx), m_cols(cols), m_packedStore(packStore)
    {
    }
    [[nodiscard]] const float* x() const { return m_x; }
    [[nodiscard]] int n() const { return m_n; }
    [[nodiscard]] std::size_t ldx() const { return m_ldx; }
    [[nodiscard]] int cols() const { return m_cols; }
    // n rows of cols bf16 values; only for a kernel that rounds to bf16.
    const std::uint16_t* bf16();
    // The bf16 values in the order the AMX tiles read them (row_kernels_amx.h); only for amx-bf16.
    const std::uint16_t* vnni();
    // The float32 tokens in groups of kPackedTokens, interleaved 16 columns at a time: group g,
    // columns c .. c+15 of its tokens t0 .. t3 lie at packed()[g * 4 * cols + c * 4 + t * 16 ..];
    // tokens past n are zeros. Made on first use and kept, like the bf16 copy.
    static constexpr int kPackedTokens = 4;
    const float* packed();
    static std::size_t packedSize(int n, int cols);

private:
    const float* m_x;
    int m_n;
    std::size_t m_ldx;
    int m_cols;
    std::vector<std::uint16_t> m_bf16;
    std::vector<std::uint16_t> m_vnni;
    std::vector<float> m_packed;  // the packed copy where no store was given
    float* m_packedStore = nullptr;
    bool m_isPacked = false;
};

// y[t] = sum_c W[r][c] * x[t * ldx + c] for t < n, with kernel k. `scratch` (portable) grows as needed.
void rowDotsWith(Kernel k, const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y,
                 std::vector<float>& scratch);

// Rows r0 .. r0 + nrows - 1 at once: y[i * ldy + t] = row r0 + i . token t. The AVX-512 kernels
// tile rows x tokens so that each token chunk they load feeds several rows; the results are the
// one-row kernel's bit for bit (same accumulator order per row and token).
void rowsDots(const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y, std::size_t ldy,
              std::vector<float>& scratch);
void rowsDotsWith(Kernel k, const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y,
                  std::size_t ldy, std::vector<float>& scratch);
// The same over a panel (x.cols() == w.cols()), its bf16 copy made once for every call on it.
void rowsDots(const QuantMatrix& w, int r0, int nrows, TokenPanel& x, float* y, std::size_t ldy, std::vector<float>& scratch);
void rowsDotsWith(Kernel k, const QuantMatrix& w, int r0, int nrows, TokenPanel& x, float* y, std::size_t ldy,
                  std::vector<float>& scratch);

// Columns c0 .. c1 - 1 of rows r0 .. r0 + nrows - 1 as float32, out[i * ldo + c - c0] (the OpenBLAS
// path's panels): QuantMatrix::dequantCols's values bit for bit (e4m3's NaN codes aside, which no
// weight holds), 16 (AVX-512) or 8 (AVX2) weights a step where c0 and c1 are multiples of that.
void dequantRows(const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo);
void dequantRowsWith(Kernel k, const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo);

}  // namespace moex::engine
