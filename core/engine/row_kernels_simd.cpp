// The float32-product kernels behind rowsDots (row_kernels.h chooses among them): AVX-512 (16
// floats a step) and AVX2 + FMA (8), each with its one-row kernel, its tiles and, from 32 tokens
// on, the blocked tiles over the panel's packed tokens. Every (row, token) sums in the one-row
// kernel's order whatever the call, so results agree bit for bit.
#include "engine/row_kernels_simd.h"

#include "engine/row_kernels.h"

#include <vector>

#include <immintrin.h>

// GCC 12's AVX-512 headers build their zero-masked results from _mm512_undefined_*, which
// -Wmaybe-uninitialized reports at every inlined use; nothing here reads an undefined lane.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace moex::engine::detail {

namespace {

constexpr int kTokenBlock = 8;  // accumulators held in registers per pass over the row

// Decode streams each row from memory: the one-row kernel one row after another (one sequential
// stream a thread), the tiles 6 rows side by side. Each row is also prefetched into L2 this many
// bytes ahead of its loads, once per cache line. Measured, a Mixtral expert pair of float32
// weights on two threads (docs/PERFORMANCE.md, "Float32 decode: each row prefetched 2 KiB
// ahead"): 1 token 51 -> 45 ms, 8 tokens 66.6 -> 60 ms; 1 KiB and 4-8 KiB ahead within the noise
// of 2 KiB at one token, 8 KiB back to 66 ms at eight.
constexpr std::size_t kAheadBytes = 2048;

// Where column c (a multiple of the step) starts a cache line of the row (offset from the row's
// start): prefetch the line kAheadBytes further.
template <WeightFormat F>
inline void prefetchAhead(const std::uint8_t* row, int c)
{
    const std::size_t at = F == WeightFormat::f32    ? 4 * static_cast<std::size_t>(c)
                           : F == WeightFormat::bf16 ? 2 * static_cast<std::size_t>(c)
                           : F == WeightFormat::fp8_block ? static_cast<std::size_t>(c)
                                                          : static_cast<std::size_t>(c) / 2;
    if (at % 64 == 0)
        _mm_prefetch(reinterpret_cast<const char*>(row + at + kAheadBytes), _MM_HINT_T1);
}

}  // namespace

namespace {

// ---------------------------------------------------------------------------------------------
// AVX-512

// e4m3 as fp16 bits: sign to bit 15, the 7 exponent+mantissa bits to bits 13..7. As an fp16 the
// value is exactly the e4m3 value times 2^-8, subnormals included (both formats keep the implicit
// bit the same way), so one hardware conversion and the block scale times 256 finish it.
__attribute__((target("avx512f,avx512bw"))) inline __m512 e4m3x16(const std::uint8_t* p, float scale)
{
    const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7f)), 7),
                                      _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8));
    return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(scale * 256.0f));
}

__attribute__((target("avx512f,avx512bw"))) inline __m512 e2m1x16(const std::uint8_t* p, __m512 table)
{
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i lo = _mm_and_si128(bytes, _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0f));
    const __m512i idx = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));  // element 2i = low nibble of byte i
    return _mm512_permutexvar_ps(idx, table);
}

template <WeightFormat F>
__attribute__((target("avx512f,avx512bw"))) inline __m512 load16(const std::uint8_t* row, const float* scales, int c, __m512 table)
{
    if constexpr (F == WeightFormat::f32)
        return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + c);
    else if constexpr (F == WeightFormat::bf16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * static_cast<std::size_t>(c)))), 16));
    else if constexpr (F == WeightFormat::fp8_block)
        return e4m3x16(row + c, scales[c / 128]);
    else
        return _mm512_mul_ps(e2m1x16(row + c / 2, table), _mm512_set1_ps(scales[c / 32]));
}

template <WeightFormat F, int N>
__attribute__((target("avx512f,avx512bw"))) void blockAvx512(const QuantMatrix& w, int r, const float* x, std::size_t ldx,
                                                             float* y)
{
    const std::uint8_t* row = w.rowData(r);
    const float* scales = w.rowScales(r);
    const __m512 table = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f,
                                        -3.0f, -4.0f, -6.0f);
    __m512 acc[N];
    for (int t = 0; t < N; ++t)
        acc[t] = _mm512_setzero_ps();
    const int C = w.cols();
    for (int c = 0; c < C; c += 16) {
        prefetchAhead<F>(row, c);
        const __m512 v = load16<F>(row, scales, c, table);
        for (int t = 0; t < N; ++t)
            acc[t] = _mm512_fmadd_ps(v, _mm512_loadu_ps(x + static_cast<std::size_t>(t) * ldx + static_cast<std::size_t>(c)), acc[t]);
    }
    for (int t = 0; t < N; ++t)
        y[t] = _mm512_reduce_add_ps(acc[t]);
}

template <WeightFormat F, int N>
__attribute__((target("avx512f,avx512bw"))) void dispatchAvx512(const QuantMatrix& w, int r, const float* x, int n,
                                                                std::size_t ldx, float* y)
{
    if constexpr (N == 0) {
        (void)w, (void)r, (void)x, (void)n, (void)ldx, (void)y;
    } else if (n == N) {
        blockAvx512<F, N>(w, r, x, ldx, y);
    } else {
        dispatchAvx512<F, N - 1>(w, r, x, n, ldx, y);
    }
}

template <WeightFormat F>
__attribute__((target("avx512f,avx512bw"))) void rowsAvx512(const QuantMatrix& w, int r, const float* x, int n,
                                                            std::size_t ldx, float* y)
{
    for (int t0 = 0; t0 < n; t0 += kTokenBlock) {
        const int m = n - t0 < kTokenBlock ? n - t0 : kTokenBlock;
        dispatchAvx512<F, kTokenBlock>(w, r, x + static_cast<std::size_t>(t0) * ldx, m, ldx, y + t0);
    }
}

// NR rows x NT tokens, columns c0 .. c1 - 1 added into acc: each token chunk loaded once feeds NR
// rows. Every (row, token) keeps its own accumulator and order, so results equal the one-row
// kernel's bit for bit. token(t, c) is where token t's columns c .. c + 15 lie.
template <WeightFormat F, int NR, int NT, bool Ahead, class TokenAt>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void accumulateAvx512(const QuantMatrix& w, int r0, int c0, int c1,
                                                                                       TokenAt token, __m512 (&acc)[NR][NT])
{
    const __m512 table = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f,
                                        -3.0f, -4.0f, -6.0f);
    const std::uint8_t* rows[NR];
    const float* scales[NR];
    for (int i = 0; i < NR; ++i) {
        rows[i] = w.rowData(r0 + i);
        scales[i] = w.rowScales(r0 + i);
    }
    for (int c = c0; c < c1; c += 16) {
        __m512 v[NR];
        for (int i = 0; i < NR; ++i) {
            if constexpr (Ahead)
                prefetchAhead<F>(rows[i], c);
            v[i] = load16<F>(rows[i], scales[i], c, table);
        }
        for (int t = 0; t < NT; ++t) {
            const __m512 xt = _mm512_loadu_ps(token(t, c));
            for (int i = 0; i < NR; ++i)
                acc[i][t] = _mm512_fmadd_ps(v[i], xt, acc[i][t]);
        }
    }
}

// A whole row's columns at once, the tokens where they lie.
template <WeightFormat F, int NR, int NT>
__attribute__((target("avx512f,avx512bw"))) void tileAvx512(const QuantMatrix& w, int r0, const float* x, std::size_t ldx,
                                                            float* y, std::size_t ldy)
{
    __m512 acc[NR][NT];
    for (int i = 0; i < NR; ++i)
        for (int t = 0; t < NT; ++t)
            acc[i][t] = _mm512_setzero_ps();
    accumulateAvx512<F, NR, NT, true>(w, r0, 0, w.cols(),
                                [x, ldx](int t, int c) { return x + static_cast<std::size_t>(t) * ldx + static_cast<std::size_t>(c); },
                                acc);
    for (int i = 0; i < NR; ++i)
        for (int t = 0; t < NT; ++t)
            y[static_cast<std::size_t>(i) * ldy + static_cast<std::size_t>(t)] = _mm512_reduce_add_ps(acc[i][t]);
}

template <WeightFormat F, int NR, int NT>
__attribute__((target("avx512f,avx512bw"))) void tileDispatchAvx512(const QuantMatrix& w, int r0, int nr, const float* x, int nt,
                                                                    std::size_t ldx, float* y, std::size_t ldy)
{
    if constexpr (NR == 0 || NT == 0) {
        (void)w, (void)r0, (void)nr, (void)x, (void)nt, (void)ldx, (void)y, (void)ldy;
    } else if (nr < NR) {
        tileDispatchAvx512<F, NR - 1, NT>(w, r0, nr, x, nt, ldx, y, ldy);
    } else if (nt < NT) {
        tileDispatchAvx512<F, NR, NT - 1>(w, r0, nr, x, nt, ldx, y, ldy);
    } else {
        tileAvx512<F, NR, NT>(w, r0, x, ldx, y, ldy);
    }
}

template <WeightFormat F>
__attribute__((target("avx512f,avx512bw"))) void rowsTiledAvx512(const QuantMatrix& w, int r0, int nrows, const float* x, int n,
                                                                 std::size_t ldx, float* y, std::size_t ldy)
{
    // 6 rows x 4 tokens: 24 accumulators, 6 weight vectors and a token chunk in the 32 registers.
    // The token rows are re-read from L2 for every tile of rows, so more rows a tile means less of
    // that traffic per weight: two experts on two threads, fp32 weights at 256 tokens 1,218-1,316 ms
    // against 1,586-1,610 (4 x 4) and 2,085-2,161 (3 x 8); at 32 tokens 113-131 against 139-166 ms;
    // 4 and 8 tokens unchanged or better, fp8 at 8 tokens (this kernel) 37 against 44 ms.
    constexpr int kRows = 6, kTokens = 4;
    for (int r = 0; r < nrows; r += kRows)
        for (int t0 = 0; t0 < n; t0 += kTokens)
            tileDispatchAvx512<F, kRows, kTokens>(w, r0 + r, nrows - r < kRows ? nrows - r : kRows,
                                                  x + static_cast<std::size_t>(t0) * ldx, n - t0 < kTokens ? n - t0 : kTokens,
                                                  ldx, y + static_cast<std::size_t>(r) * ldy + static_cast<std::size_t>(t0), ldy);
}

// Many tokens: the same tiles and the same per-(row, token) order, taken in blocks of columns
// (kColumnBlock) and of tokens (kTokenGroup) so that a block of tokens is reused from L2 by every
// row tile of the call, and each tile's rows from L1 by every token tile, where the full-width
// tiles above re-read all n tokens from L3 for every 6 rows. The tokens come from the panel's
// packed copy (one sequential stream per tile instead of four); each tile's 24 accumulators are
// stored between column blocks and reloaded exactly, so the sums are the one-row kernel's bit for
// bit. Float32 weights, 256 tokens, hidden 4096: 1.3-1.4x the full-width tiles on one core
// (docs/PERFORMANCE.md, CPU engine: float32 prefill).
constexpr int kColumnBlock = 1024;
constexpr int kTokenGroup = 64;

template <WeightFormat F, int NR>
__attribute__((target("avx512f,avx512bw"))) void blockedTileAvx512(const QuantMatrix& w, int r0, int c0, int c1,
                                                                   const float* xp, float* partial, bool first, bool last,
                                                                   int nt, float* y, std::size_t ldy)
{
    constexpr int NT = TokenPanel::kPackedTokens;
    __m512 acc[NR][NT];
    for (int i = 0; i < NR; ++i)
        for (int t = 0; t < NT; ++t)
            acc[i][t] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(partial + (i * NT + t) * 16);
    accumulateAvx512<F, NR, NT, false>(w, r0, c0, c1,
                                [xp](int t, int c) { return xp + static_cast<std::size_t>(c) * NT + static_cast<std::size_t>(t) * 16; },
                                acc);
    if (last) {
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < nt; ++t)
                y[static_cast<std::size_t>(i) * ldy + static_cast<std::size_t>(t)] = _mm512_reduce_add_ps(acc[i][t]);
    } else {
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < NT; ++t)
                _mm512_storeu_ps(partial + (i * NT + t) * 16, acc[i][t]);
    }
}

// The blocked order over a call's rows: token groups, then column blocks, then tiles of kRows rows
// x 4 tokens (tiles[nr] for nr rows, nr <= kRows), each tile's accumulators kept in `partial`
// (kTileFloats floats a tile) between column blocks.
using BlockedTile = void (*)(const QuantMatrix&, int, int, int, const float*, float*, bool, bool, int, float*, std::size_t);

template <int kRows, int kTileFloats>
void rowsBlocked(const BlockedTile (&tiles)[kRows + 1], const QuantMatrix& w, int r0, int nrows, const float* xp, int n,
                 float* y, std::size_t ldy)
{
    constexpr int NT = TokenPanel::kPackedTokens;
    const int C = w.cols();
    const int rowTiles = (nrows + kRows - 1) / kRows;
    thread_local std::vector<float> partial;
    partial.resize(static_cast<std::size_t>(rowTiles) * (kTokenGroup / NT) * kTileFloats);
    for (int g0 = 0; g0 < n; g0 += kTokenGroup) {
        const int g1 = n - g0 < kTokenGroup ? n : g0 + kTokenGroup;
        for (int c0 = 0; c0 < C; c0 += kColumnBlock) {
            const int c1 = C - c0 < kColumnBlock ? C : c0 + kColumnBlock;
            for (int rt = 0; rt < rowTiles; ++rt) {
                const int r = rt * kRows, nr = nrows - r < kRows ? nrows - r : kRows;
                for (int t = g0; t < g1; t += NT)
                    tiles[nr](w, r0 + r, c0, c1, xp + static_cast<std::size_t>(t) * static_cast<std::size_t>(C),
                              partial.data() + (static_cast<std::size_t>(rt) * (kTokenGroup / NT) + static_cast<std::size_t>((t - g0) / NT)) * kTileFloats,
                              c0 == 0, c1 == C, n - t < NT ? n - t : NT,
                              y + static_cast<std::size_t>(r) * ldy + static_cast<std::size_t>(t), ldy);
            }
        }
    }
}

template <WeightFormat F>
void rowsBlockedAvx512(const QuantMatrix& w, int r0, int nrows, const float* xp, int n, float* y, std::size_t ldy)
{
    static constexpr BlockedTile tiles[7] = {nullptr,
                                             blockedTileAvx512<F, 1>,
                                             blockedTileAvx512<F, 2>,
                                             blockedTileAvx512<F, 3>,
                                             blockedTileAvx512<F, 4>,
                                             blockedTileAvx512<F, 5>,
                                             blockedTileAvx512<F, 6>};
    rowsBlocked<6, 6 * TokenPanel::kPackedTokens * 16>(tiles, w, r0, nrows, xp, n, y, ldy);
}

}  // namespace

void rowsBlockedDotsAvx512(const QuantMatrix& w, int r0, int nrows, const float* xp, int n, float* y, std::size_t ldy)
{
    switch (w.format()) {
    case WeightFormat::f32: return rowsBlockedAvx512<WeightFormat::f32>(w, r0, nrows, xp, n, y, ldy);
    case WeightFormat::bf16: return rowsBlockedAvx512<WeightFormat::bf16>(w, r0, nrows, xp, n, y, ldy);
    case WeightFormat::fp8_block: return rowsBlockedAvx512<WeightFormat::fp8_block>(w, r0, nrows, xp, n, y, ldy);
    case WeightFormat::mxfp4: return rowsBlockedAvx512<WeightFormat::mxfp4>(w, r0, nrows, xp, n, y, ldy);
    }
}

void rowsDotsAvx512(const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y, std::size_t ldy)
{
    switch (w.format()) {
    case WeightFormat::f32: return rowsTiledAvx512<WeightFormat::f32>(w, r0, nrows, x, n, ldx, y, ldy);
    case WeightFormat::bf16: return rowsTiledAvx512<WeightFormat::bf16>(w, r0, nrows, x, n, ldx, y, ldy);
    case WeightFormat::fp8_block: return rowsTiledAvx512<WeightFormat::fp8_block>(w, r0, nrows, x, n, ldx, y, ldy);
    case WeightFormat::mxfp4: return rowsTiledAvx512<WeightFormat::mxfp4>(w, r0, nrows, x, n, ldx, y, ldy);
    }
}

void rowDotsAvx512(const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y)
{
    switch (w.format()) {
    case WeightFormat::f32: return rowsAvx512<WeightFormat::f32>(w, r, x, n, ldx, y);
    case WeightFormat::bf16: return rowsAvx512<WeightFormat::bf16>(w, r, x, n, ldx, y);
    case WeightFormat::fp8_block: return rowsAvx512<WeightFormat::fp8_block>(w, r, x, n, ldx, y);
    case WeightFormat::mxfp4: return rowsAvx512<WeightFormat::mxfp4>(w, r, x, n, ldx, y);
    }
}

namespace {

template <WeightFormat F>
__attribute__((target("avx512f,avx512bw"))) void dequantAvx512(const QuantMatrix& w, int r0, int nrows, int c0, int c1,
                                                               float* out, std::size_t ldo)
{
    const __m512 table = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f,
                                        -3.0f, -4.0f, -6.0f);
    for (int i = 0; i < nrows; ++i) {
        const std::uint8_t* row = w.rowData(r0 + i);
        const float* scales = w.rowScales(r0 + i);
        float* o = out + static_cast<std::size_t>(i) * ldo - c0;
        for (int c = c0; c < c1; c += 16)
            _mm512_storeu_ps(o + c, load16<F>(row, scales, c, table));
    }
}

}  // namespace

void dequantRowsAvx512(const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo)
{
    switch (w.format()) {
    case WeightFormat::f32: return dequantAvx512<WeightFormat::f32>(w, r0, nrows, c0, c1, out, ldo);
    case WeightFormat::bf16: return dequantAvx512<WeightFormat::bf16>(w, r0, nrows, c0, c1, out, ldo);
    case WeightFormat::fp8_block: return dequantAvx512<WeightFormat::fp8_block>(w, r0, nrows, c0, c1, out, ldo);
    case WeightFormat::mxfp4: return dequantAvx512<WeightFormat::mxfp4>(w, r0, nrows, c0, c1, out, ldo);
    }
}

namespace {

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA

__attribute__((target("avx2,fma,f16c"))) inline __m256 e4m3x8(const std::uint8_t* p, float scale)
{
    const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7f)), 7),
                                   _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8));
    return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(scale * 256.0f));
}

__attribute__((target("avx2,fma,f16c"))) inline __m256 e2m1x8(const std::uint8_t* p)
{
    // 4 bytes = 8 nibbles, low nibble first.
    std::uint32_t word;
    __builtin_memcpy(&word, p, 4);
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shifts), _mm256_set1_epi32(15));
    const __m256 table = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    const __m256 mag = _mm256_permutevar8x32_ps(table, _mm256_and_si256(nib, _mm256_set1_epi32(7)));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(nib, _mm256_set1_epi32(8)), 28);
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(mag), sign));
}

template <WeightFormat F>
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const std::uint8_t* row, const float* scales, int c)
{
    if constexpr (F == WeightFormat::f32)
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
    else if constexpr (F == WeightFormat::bf16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * static_cast<std::size_t>(c)))), 16));
    else if constexpr (F == WeightFormat::fp8_block)
        return e4m3x8(row + c, scales[c / 128]);
    else
        return _mm256_mul_ps(e2m1x8(row + c / 2), _mm256_set1_ps(scales[c / 32]));
}

__attribute__((target("avx2,fma,f16c"))) inline float hsum8(__m256 v)
{
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

template <WeightFormat F, int N>
__attribute__((target("avx2,fma,f16c"))) void blockAvx2(const QuantMatrix& w, int r, const float* x, std::size_t ldx, float* y)
{
    const std::uint8_t* row = w.rowData(r);
    const float* scales = w.rowScales(r);
    __m256 acc[N];
    for (int t = 0; t < N; ++t)
        acc[t] = _mm256_setzero_ps();
    const int C = w.cols();
    for (int c = 0; c < C; c += 8) {
        prefetchAhead<F>(row, c);
        const __m256 v = load8<F>(row, scales, c);
        for (int t = 0; t < N; ++t)
            acc[t] = _mm256_fmadd_ps(v, _mm256_loadu_ps(x + static_cast<std::size_t>(t) * ldx + static_cast<std::size_t>(c)), acc[t]);
    }
    for (int t = 0; t < N; ++t)
        y[t] = hsum8(acc[t]);
}

template <WeightFormat F, int N>
__attribute__((target("avx2,fma,f16c"))) void dispatchAvx2(const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx,
                                                      float* y)
{
    if constexpr (N == 0) {
        (void)w, (void)r, (void)x, (void)n, (void)ldx, (void)y;
    } else if (n == N) {
        blockAvx2<F, N>(w, r, x, ldx, y);
    } else {
        dispatchAvx2<F, N - 1>(w, r, x, n, ldx, y);
    }
}

template <WeightFormat F>
__attribute__((target("avx2,fma,f16c"))) void rowsAvx2(const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y)
{
    for (int t0 = 0; t0 < n; t0 += kTokenBlock) {
        const int m = n - t0 < kTokenBlock ? n - t0 : kTokenBlock;
        dispatchAvx2<F, kTokenBlock>(w, r, x + static_cast<std::size_t>(t0) * ldx, m, ldx, y + t0);
    }
}

// The blocked order of the AVX-512 kernel (rowsBlocked) with 8-column steps: 3 rows x 4 tokens,
// 12 accumulators, 3 weight vectors and a token vector in the 16 registers. A token's columns
// c .. c + 7 lie in the packed copy's 16-column chunk of c. Every (row, token) adds in blockAvx2's
// order, so results equal the one-row kernel's bit for bit.
template <WeightFormat F, int NR>
__attribute__((target("avx2,fma,f16c"))) void blockedTileAvx2(const QuantMatrix& w, int r0, int c0, int c1, const float* xp,
                                                             float* partial, bool first, bool last, int nt, float* y,
                                                             std::size_t ldy)
{
    constexpr int NT = TokenPanel::kPackedTokens;
    const std::uint8_t* rows[NR];
    const float* scales[NR];
    for (int i = 0; i < NR; ++i) {
        rows[i] = w.rowData(r0 + i);
        scales[i] = w.rowScales(r0 + i);
    }
    __m256 acc[NR][NT];
    for (int i = 0; i < NR; ++i)
        for (int t = 0; t < NT; ++t)
            acc[i][t] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(partial + (i * NT + t) * 8);
    for (int c = c0; c < c1; c += 8) {
        const float* xc = xp + static_cast<std::size_t>(c & ~15) * NT + (c & 15);
        __m256 v[NR];
        for (int i = 0; i < NR; ++i)
            v[i] = load8<F>(rows[i], scales[i], c);
        for (int t = 0; t < NT; ++t) {
            const __m256 xt = _mm256_loadu_ps(xc + t * 16);
            for (int i = 0; i < NR; ++i)
                acc[i][t] = _mm256_fmadd_ps(v[i], xt, acc[i][t]);
        }
    }
    if (last) {
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < nt; ++t)
                y[static_cast<std::size_t>(i) * ldy + static_cast<std::size_t>(t)] = hsum8(acc[i][t]);
    } else {
        for (int i = 0; i < NR; ++i)
            for (int t = 0; t < NT; ++t)
                _mm256_storeu_ps(partial + (i * NT + t) * 8, acc[i][t]);
    }
}

template <WeightFormat F>
void rowsBlockedAvx2(const QuantMatrix& w, int r0, int nrows, const float* xp, int n, float* y, std::size_t ldy)
{
    static constexpr BlockedTile tiles[4] = {nullptr, blockedTileAvx2<F, 1>, blockedTileAvx2<F, 2>, blockedTileAvx2<F, 3>};
    rowsBlocked<3, 3 * TokenPanel::kPackedTokens * 8>(tiles, w, r0, nrows, xp, n, y, ldy);
}

}  // namespace

void rowsBlockedDotsAvx2(const QuantMatrix& w, int r0, int nrows, const float* xp, int n, float* y, std::size_t ldy)
{
    switch (w.format()) {
    case WeightFormat::f32: return rowsBlockedAvx2<WeightFormat::f32>(w, r0, nrows, xp, n, y, ldy);
    case WeightFormat::bf16: return rowsBlockedAvx2<WeightFormat::bf16>(w, r0, nrows, xp, n, y, ldy);
    case WeightFormat::fp8_block: return rowsBlockedAvx2<WeightFormat::fp8_block>(w, r0, nrows, xp, n, y, ldy);
    case WeightFormat::mxfp4: return rowsBlockedAvx2<WeightFormat::mxfp4>(w, r0, nrows, xp, n, y, ldy);
    }
}

void rowDotsAvx2(const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y)
{
    switch (w.format()) {
    case WeightFormat::f32: return rowsAvx2<WeightFormat::f32>(w, r, x, n, ldx, y);
    case WeightFormat::bf16: return rowsAvx2<WeightFormat::bf16>(w, r, x, n, ldx, y);
    case WeightFormat::fp8_block: return rowsAvx2<WeightFormat::fp8_block>(w, r, x, n, ldx, y);
    case WeightFormat::mxfp4: return rowsAvx2<WeightFormat::mxfp4>(w, r, x, n, ldx, y);
    }
}

namespace {

template <WeightFormat F>
__attribute__((target("avx2,fma,f16c"))) void dequantAvx2(const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out,
                                                          std::size_t ldo)
{
    for (int i = 0; i < nrows; ++i) {
        const std::uint8_t* row = w.rowData(r0 + i);
        const float* scales = w.rowScales(r0 + i);
        float* o = out + static_cast<std::size_t>(i) * ldo - c0;
        for (int c = c0; c < c1; c += 8)
            _mm256_storeu_ps(o + c, load8<F>(row, scales, c));
    }
}

}  // namespace

void dequantRowsAvx2(const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo)
{
    switch (w.format()) {
    case WeightFormat::f32: return dequantAvx2<WeightFormat::f32>(w, r0, nrows, c0, c1, out, ldo);
    case WeightFormat::bf16: return dequantAvx2<WeightFormat::bf16>(w, r0, nrows, c0, c1, out, ldo);
    case WeightFormat::fp8_block: return dequantAvx2<WeightFormat::fp8_block>(w, r0, nrows, c0, c1, out, ldo);
    case WeightFormat::mxfp4: return dequantAvx2<WeightFormat::mxfp4>(w, r0, nrows, c0, c1, out, ldo);
    }
}

}  // namespace moex::engine::detail
