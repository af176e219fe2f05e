// Weights widened to bf16 in AVX-512 registers as they stream: what the avx512-bf16 and amx-bf16
// kernels share (row_kernels_bf16.cpp, row_kernels_amx.cpp). Internal to the engine; only for a CPU
// with AVX-512-BF16 and VBMI (kernelSupported(Kernel::avx512bf16)).
//   bf16   loaded as they are
//   fp8    through a 128-entry table per 128 x 128 block: each e4m3 magnitude times the block's
//          scale, rounded once to bf16 (4 significant bits times a float32 scale do not always fit
//          bf16's 8: 2^-9 relative at most), looked up 64 weights at a time with two VPERMI2B (high
//          and low bytes) and the sign put back
//   mxfp4  nibbles through a 16-entry bf16 table already multiplied by the block's power-of-two
//          scale (exact: one table per 32 weights, the MX block)
#pragma once

#include "engine/quant_matrix.h"

#include <cstddef>
#include <cstdint>
#include <immintrin.h>

#define MOEX_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx512vbmi")))

namespace moex::engine::detail {

// An MX block's table: e2m1's 16 values times its power-of-two scale, as bf16 (exact).
MOEX_BF16_TARGET inline __m256i mxfp4Table(float scale)
{
    const __m512 values = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f,
                                         -3.0f, -4.0f, -6.0f);
    return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_mul_ps(values, _mm512_set1_ps(scale))));
}

// 32 MXFP4 weights (16 bytes, low nibble first) times their block's scale, as bf16.
MOEX_BF16_TARGET inline __m512bh mxfp4x32(const std::uint8_t* p, float scale)
{
    const __m512i table = _mm512_castsi256_si512(mxfp4Table(scale));
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));  // 32 nibbles, low first
    const __m128i lo = _mm_and_si128(bytes, _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0f));
    const __m256i nibbles = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
    return reinterpret_cast<__m512bh>(_mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(nibbles), table));
}

// The same 32 weights, bit for bit, in fewer instructions: VPERMB puts byte j / 2 in word j, a
// variable shift brings odd words' high nibble down, and VPERMW looks the nibbles up in the table
// repeated in both halves (VPERMW reads an index's low 5 bits, so an even word's high nibble in
// bits 4..7 only picks the repeat). Faster where the widening sets the pace, 1-4 tokens (Zen 5, two
// threads: 1-11% less time per weight), slower where VDPBF16PS does, 8 tokens (2-5% more): the
// avx512-bf16 tiles take it up to 4 tokens (docs/PERFORMANCE.md, "MXFP4 decode: scales prefetched").
MOEX_BF16_TARGET inline __m512bh mxfp4x32Permuted(const std::uint8_t* p, float scale)
{
    const __m512i table = _mm512_broadcast_i64x4(mxfp4Table(scale));
    const __m512i spread = _mm512_set_epi8(0, 15, 0, 15, 0, 14, 0, 14, 0, 13, 0, 13, 0, 12, 0, 12, 0, 11, 0, 11, 0, 10, 0, 10, 0, 9, 0, 9, 0,
                                           8, 0, 8, 0, 7, 0, 7, 0, 6, 0, 6, 0, 5, 0, 5, 0, 4, 0, 4, 0, 3, 0, 3, 0, 2, 0, 2, 0, 1, 0, 1, 0, 0,
                                           0, 0);
    const __m512i shifts = _mm512_set1_epi32(4 << 16);  // even words 0, odd words 4
    const __m512i bytes = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512i words = _mm512_srlv_epi16(_mm512_maskz_permutexvar_epi8(0x5555555555555555ull, spread, bytes), shifts);
    return reinterpret_cast<__m512bh>(_mm512_permutexvar_epi16(words, table));
}

// Bytes of storage per column, times 2 (MXFP4 has two columns a byte).
template <WeightFormat F>
constexpr std::size_t kHalfBytesPerColumn = F == WeightFormat::bf16 ? 4 : F == WeightFormat::fp8_block ? 2 : 1;

constexpr int kFp8Block = 128;
constexpr std::size_t kTableBytes = 256;  // 128 high bytes, then 128 low bytes, of bf16(magnitude * scale)

// The tables of one fp8 row block (kTableBytes each): one per column block, from that block's
// scale (scales: the row block's `blocks` scales).
void fp8Tables(const float* scales, int blocks, std::uint8_t* out);

// Byte order that makes the in-lane unpacks come out in column order: after it, unpacklo(lo, hi)
// is columns 0..31 of the 64 and unpackhi(lo, hi) columns 32..63.
MOEX_BF16_TARGET inline __m512i fp8Order()
{
    alignas(64) std::uint8_t idx[64];
    for (int p = 0; p < 64; ++p) {
        const int lane = p / 16, k = p % 16;
        idx[p] = static_cast<std::uint8_t>(k < 8 ? 8 * lane + k : 32 + 8 * lane + (k - 8));
    }
    return _mm512_load_si512(idx);
}

struct Fp8Table {
    __m512i hi0, hi1, lo0, lo1;
};

MOEX_BF16_TARGET inline Fp8Table loadTable(const std::uint8_t* t)
{
    return {_mm512_loadu_si512(t), _mm512_loadu_si512(t + 64), _mm512_loadu_si512(t + 128), _mm512_loadu_si512(t + 192)};
}

// 64 e4m3 bytes as two vectors of 32 bf16, columns 0..31 and 32..63.
MOEX_BF16_TARGET inline void fp8x64(const std::uint8_t* p, const Fp8Table& t, __m512i order, __m512bh& w0, __m512bh& w1)
{
    const __m512i b = _mm512_permutexvar_epi8(order, _mm512_loadu_si512(p));
    const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(t.hi0, b, t.hi1), b, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);
    const __m512i lo = _mm512_permutex2var_epi8(t.lo0, b, t.lo1);
    w0 = reinterpret_cast<__m512bh>(_mm512_unpacklo_epi8(lo, hi));
    w1 = reinterpret_cast<__m512bh>(_mm512_unpackhi_epi8(lo, hi));
}

}  // namespace moex::engine::detail
