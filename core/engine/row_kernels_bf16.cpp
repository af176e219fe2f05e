// The AVX-512-BF16 kernel: rows of bf16, fp8-e4m3 or MXFP4 weights against tokens rounded to bf16,
// with VDPBF16PS (32 products a instruction, pairs summed into float32 lanes). It does twice the
// multiply-adds of an FMA a cycle, which is what decode at 8 tokens and prefill need on a CPU whose
// memory outruns its float32 FMAs (docs/PERFORMANCE.md, CPU engine). Serving systems run these
// models' activations in bf16 (or coarser: DeepSeek's fp8 GEMMs quantise them to e4m3), so the
// tokens' rounding to bf16 is the arithmetic a deployment does, not a shortcut of moex's.
//
// Weights are widened to bf16 in registers as they stream (bf16_weights.h); the fp8 tables of a
// call's row block are made at its start (256 bytes per block of 16384 weights).
// Each (row, token) pair keeps its own accumulator and adds in the same order whatever the tile, so
// a token's result does not depend on the rows or tokens around it in a call.
#include "engine/row_kernels_bf16.h"

#include "engine/bf16_weights.h"

#include <algorithm>
#include <array>
#include <vector>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace moex::engine::detail {

namespace {

// e4m3's 128 magnitudes (codes 0..127) as floats.
const float* e4m3Magnitudes()
{
    static const auto table = [] {
        std::array<float, 128> t{};
        for (int m = 0; m < 128; ++m)
            t[static_cast<std::size_t>(m)] = e4m3ToFloat(static_cast<std::uint8_t>(m));
        return t;
    }();
    return table.data();
}


constexpr int kMaxTokens = 8;
// Columns per pass. A row tile reads its tokens' columns once per 32 weights of each row: over a
// whole row, 8 tokens of hidden 4096 (64 KiB of bf16) or expert 14336 (224 KiB) live in L2, and the
// tile then moved 2.7 token bytes from L2 per weight byte (8 tokens, 3 rows). In passes of 1024
// columns the 8 tokens' chunk (16 KiB) stays in L1 across every row of the call. Fixed, not chosen
// by the token count, so a token's sum has the same order whatever the call: the partial sum of
// each pass is added to the row's result in column order.
constexpr int kChunk = 1024;

// Rows per tile for NT tokens: NR x NT accumulators, NR weight vectors and one token vector stay
// in the 32 vector registers, with room for the conversion's temporaries.
constexpr int rowsFor(int nt)
{
    return nt >= 5 ? 3 : nt >= 3 ? 4 : nt == 2 ? 6 : 8;
}

struct Rows {
    const std::uint8_t* data;
    const float* scales;
};

// What a tile prefetches while it runs: the rows the next tile reads, at the columns it reads them
// (the same pass's columns for the next rows; the first rows at the next pass's columns after the
// last tile of a pass; the rows after the call's from their first column after the last pass).
// Each tile's rows then start in cache instead of waiting for the hardware prefetchers to learn
// each new 1-2 KiB stretch: medians of 5 alternating runs, two experts on two threads, bf16 at one
// token 23.8 -> 18.9 ms, fp8 at one token 10.8 -> 8.7 ms, fp8 at eight 26.4 -> 23.5 ms, bf16 at
// eight unchanged (against prefetching each row 4 KiB ahead of itself). Rows past the matrix are
// skipped. MXFP4's scales are prefetched the same way: without them each tile of a column pass
// waited on its rows' scales from memory, and MXFP4 cost more per weight the longer its rows
// (Zen 5, two threads, 2 tokens: 64 µs per million weights at 2048 x 1024, 99 at 8192 x 4096;
// with them 65 and 70; docs/PERFORMANCE.md, "MXFP4 decode: scales prefetched").
struct Ahead {
    int row = -1;              // the next tile's first row; -1: nothing
    std::ptrdiff_t shift = 0;  // its columns minus this tile's
};

template <int NR>
struct AheadRows {
    const std::uint8_t* rows[NR];
    const float* scales[NR];  // MXFP4's (null for the other formats)
    std::ptrdiff_t shift;
    AheadRows(const QuantMatrix& w, Ahead a) : shift(a.shift)
    {
        for (int i = 0; i < NR; ++i) {
            const bool inside = a.row >= 0 && a.row + i < w.rows();
            rows[i] = inside ? w.rowData(a.row + i) : nullptr;
            scales[i] = inside && w.format() == WeightFormat::mxfp4 ? w.rowScales(a.row + i) : nullptr;
        }
    }
};

// Whether a tile prefetches the next tile's rows. Not bf16 at one token: its tiles of 8 rows are
// bound by the stream alone, and without the prefetches they ran 10-11% faster on a Zen 5 EPYC (in
// 64-row calls and whole matrices, 9 alternating rounds each); every other case is slower without
// them, by 25% for bf16 at 8 tokens, 12% for MXFP4 and 38-62% for fp8 (docs/PERFORMANCE.md, "Tile
// sums transposed").
template <WeightFormat F, int NT>
constexpr bool kRowsAhead = !(F == WeightFormat::bf16 && NT == 1);

template <WeightFormat F, int NT>
MOEX_BF16_TARGET inline __m512bh load32(const Rows& r, int c)
{
    if constexpr (F == WeightFormat::bf16)
        return reinterpret_cast<__m512bh>(_mm512_loadu_si512(r.data + 2 * static_cast<std::size_t>(c)));
    else if constexpr (NT <= 4)
        return mxfp4x32Permuted(r.data + c / 2, r.scales[c / 32]);
    else
        return mxfp4x32(r.data + c / 2, r.scales[c / 32]);
}

// One pass of a call: columns [c0, c1) of the matrix against the tokens (rows of w.cols() bf16
// at x); the partial sums are stored into y (the first pass) or added to it. fp8 matrices bring the
// lookup tables of the row block the pass's rows are in.
struct Pass {
    const QuantMatrix& w;
    const std::uint16_t* x;
    const std::uint8_t* tables;  // fp8 only
    int c0, c1;
    std::size_t ldy;
};

// The sums of 16 vectors' lanes, in order, each by the same tree as _mm512_reduce_add_ps (lane i
// with i + 8, then i + 4, i + 2, i + 1), so a sum's bits do not depend on the vectors beside it and
// equal the one-vector reduction's. Transposed, the tree costs about 3 instructions a vector where
// 16 separate reductions cost 8: a tile's reductions, once per 1024-column pass, were a sixth of
// its instructions at 8 tokens (docs/PERFORMANCE.md, "Tile sums transposed").
MOEX_BF16_TARGET inline __m512 sums16(const __m512* v)
{
    __m512 s[8], u[4], w[2];
    for (int k = 0; k < 8; ++k)
        s[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44), _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xEE));
    for (int k = 0; k < 4; ++k)
        u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0x88), _mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; ++k)
        w[k] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0x44), _mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0xEE));
    const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
    // Lane 4r + j now holds vector 4j + r's sum.
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), t);
}

template <int NR, int NT>
MOEX_BF16_TARGET inline void storePartials(__m512 (&acc)[NR][NT], const Pass& p, float* y)
{
    constexpr int K = NR * NT;
    const bool dense = p.ldy == static_cast<std::size_t>(NT);
    for (int k0 = 0; k0 < K; k0 += 16) {
        __m512 v[16];
        for (int k = 0; k < 16; ++k)
            v[k] = k0 + k < K ? acc[(k0 + k) / NT][(k0 + k) % NT] : _mm512_setzero_ps();
        const __m512 part = sums16(v);
        const int n = K - k0 < 16 ? K - k0 : 16;
        if (dense) {
            const auto m = static_cast<__mmask16>((1u << n) - 1u);
            float* out = y + k0;
            _mm512_mask_storeu_ps(out, m, p.c0 == 0 ? part : _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), part));
        } else {
            alignas(64) float parts[16];
            _mm512_store_ps(parts, part);
            for (int k = 0; k < n; ++k) {
                float& out = y[static_cast<std::size_t>((k0 + k) / NT) * p.ldy + static_cast<std::size_t>((k0 + k) % NT)];
                out = p.c0 == 0 ? parts[k] : out + parts[k];
            }
        }
    }
}

// Rows r0 .. r0 + NR - 1 of a bf16 or MXFP4 matrix against NT tokens, 32 columns a step.
template <WeightFormat F, int NR, int NT>
MOEX_BF16_TARGET void tile(const Pass& p, int r0, float* y, Ahead ahead)
{
    const auto C = static_cast<std::size_t>(p.w.cols());
    Rows rows[NR];
    for (int i = 0; i < NR; ++i)
        rows[i] = {p.w.rowData(r0 + i), p.w.rowScales(r0 + i)};
    const AheadRows<NR> next(p.w, ahead);
    __m512 acc[NR][NT];
    for (int i = 0; i < NR; ++i)
        for (int t = 0; t < NT; ++t)
            acc[i][t] = _mm512_setzero_ps();
    for (int c = p.c0; c < p.c1; c += 32) {
        __m512bh v[NR];
        for (int i = 0; i < NR; ++i) {
            if (kRowsAhead<F, NT> && next.rows[i])
                _mm_prefetch(reinterpret_cast<const char*>(next.rows[i] + static_cast<std::ptrdiff_t>(kHalfBytesPerColumn<F>) * (c + next.shift) / 2),
                             _MM_HINT_T0);
            // MXFP4's scales (a float per 32 columns, 128 bytes a row per pass) are a stream of
            // their own: once per 256 columns, so that a line is fetched wherever a row's scales
            // start in it.
            if constexpr (F == WeightFormat::mxfp4)
                if (next.scales[i] && ((c >> 5) & 7) == 0)
                    _mm_prefetch(reinterpret_cast<const char*>(next.scales[i] + (c + next.shift) / 32), _MM_HINT_T0);
            v[i] = load32<F, NT>(rows[i], c);
        }
        for (int t = 0; t < NT; ++t) {
            const auto xt = reinterpret_cast<__m512bh>(_mm512_loadu_si512(p.x + static_cast<std::size_t>(t) * C + static_cast<std::size_t>(c)));
            for (int i = 0; i < NR; ++i)
                acc[i][t] = _mm512_dpbf16_ps(acc[i][t], v[i], xt);
        }
    }
    storePartials(acc, p, y);
}

// ---------------------------------------------------------------------------------------------
// fp8-e4m3 through lookup tables

// Rows per tile for NT tokens: two weight vectors a row, four table vectors.
constexpr int fp8RowsFor(int nt)
{
    return nt >= 5 ? 2 : nt >= 3 ? 3 : nt == 2 ? 4 : 6;
}

// Rows r0 .. r0 + NR - 1 of an fp8 matrix, all in the row block whose tables the pass holds,
// against NT tokens, 64 columns a step.
template <int NR, int NT>
MOEX_BF16_TARGET void tileFp8(const Pass& p, int r0, float* y, Ahead ahead)
{
    const auto C = static_cast<std::size_t>(p.w.cols());
    const __m512i order = fp8Order();
    const std::uint8_t* rows[NR];
    for (int i = 0; i < NR; ++i)
        rows[i] = p.w.rowData(r0 + i);
    const AheadRows<NR> next(p.w, ahead);
    __m512 acc[NR][NT];
    for (int i = 0; i < NR; ++i)
        for (int t = 0; t < NT; ++t)
            acc[i][t] = _mm512_setzero_ps();
    Fp8Table table = loadTable(p.tables + static_cast<std::size_t>(p.c0 / kFp8Block) * kTableBytes);
    for (int c = p.c0; c < p.c1; c += 64) {
        if (c % kFp8Block == 0)
            table = loadTable(p.tables + static_cast<std::size_t>(c / kFp8Block) * kTableBytes);
        __m512bh v0[NR], v1[NR];
        for (int i = 0; i < NR; ++i) {
            if (next.rows[i])
                _mm_prefetch(reinterpret_cast<const char*>(next.rows[i] + c + next.shift), _MM_HINT_T0);
            fp8x64(rows[i] + c, table, order, v0[i], v1[i]);
        }
        for (int t = 0; t < NT; ++t) {
            const std::uint16_t* xt = p.x + static_cast<std::size_t>(t) * C + static_cast<std::size_t>(c);
            const auto x0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(xt));
            const auto x1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(xt + 32));
            for (int i = 0; i < NR; ++i)
                acc[i][t] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc[i][t], v0[i], x0), v1[i], x1);
        }
    }
    storePartials(acc, p, y);
}

// ---------------------------------------------------------------------------------------------
// Calls: tiles over rows, passes over columns, blocks of up to 8 tokens (every format)

template <WeightFormat F>
constexpr int rowsOf(int nt)
{
    return F == WeightFormat::fp8_block ? fp8RowsFor(nt) : rowsFor(nt);
}

template <WeightFormat F, int NR, int NT>
MOEX_BF16_TARGET void tileOf(const Pass& p, int r0, float* y, Ahead ahead)
{
    if constexpr (F == WeightFormat::fp8_block)
        tileFp8<NR, NT>(p, r0, y, ahead);
    else
        tile<F, NR, NT>(p, r0, y, ahead);
}

// The last k < NR rows of a run, one tile of exactly k rows.
template <WeightFormat F, int K, int NT>
MOEX_BF16_TARGET void tailRows(const Pass& p, int r0, int k, float* y, Ahead ahead)
{
    if constexpr (K == 0) {
        (void)p, (void)r0, (void)k, (void)y, (void)ahead;
    } else if (k == K) {
        tileOf<F, K, NT>(p, r0, y, ahead);
    } else {
        tailRows<F, K - 1, NT>(p, r0, k, y, ahead);
    }
}

// The next tile of a pass over rows r0 .. r0 + nrows - 1 in tiles of R, after the tile at row r.
inline Ahead aheadOf(int r0, int nrows, int r, int R, int c0, int C)
{
    if (r + R < nrows)
        return {r0 + r + R, 0};
    if (c0 + kChunk < C)
        return {r0, kChunk};
    return {r0 + nrows, -c0};  // the rows after these, from their first column: the next call's
}

// Rows r0 .. r0 + nrows - 1 (for fp8, all in the row block of `tables`) against NT tokens.
template <WeightFormat F, int NT>
MOEX_BF16_TARGET void rowsOfTokens(const QuantMatrix& w, int r0, int nrows, const std::uint8_t* tables, const std::uint16_t* x, float* y,
                                   std::size_t ldy)
{
    constexpr int R = rowsOf<F>(NT);
    const int C = w.cols();
    for (int c0 = 0; c0 < C; c0 += kChunk) {
        const Pass p{w, x, tables, c0, C - c0 < kChunk ? C : c0 + kChunk, ldy};
        int r = 0;
        for (; r + R <= nrows; r += R)
            tileOf<F, R, NT>(p, r0 + r, y + static_cast<std::size_t>(r) * ldy, aheadOf(r0, nrows, r, R, c0, C));
        if (r < nrows)
            tailRows<F, R - 1, NT>(p, r0 + r, nrows - r, y + static_cast<std::size_t>(r) * ldy, aheadOf(r0, nrows, r, R, c0, C));
    }
}

template <WeightFormat F, int NT>
MOEX_BF16_TARGET void tokensDispatch(const QuantMatrix& w, int r0, int nrows, const std::uint8_t* tables, const std::uint16_t* x, int nt,
                                     float* y, std::size_t ldy)
{
    if constexpr (NT == 0) {
        (void)w, (void)r0, (void)nrows, (void)tables, (void)x, (void)nt, (void)y, (void)ldy;
    } else if (nt == NT) {
        rowsOfTokens<F, NT>(w, r0, nrows, tables, x, y, ldy);
    } else {
        tokensDispatch<F, NT - 1>(w, r0, nrows, tables, x, nt, y, ldy);
    }
}

template <WeightFormat F>
void rowsDotsOf(const QuantMatrix& w, int r0, int nrows, const std::uint8_t* tables, const std::uint16_t* x, int n, float* y,
                std::size_t ldy)
{
    const auto C = static_cast<std::size_t>(w.cols());
    for (int t0 = 0; t0 < n; t0 += kMaxTokens) {
        const int nt = std::min(kMaxTokens, n - t0);
        tokensDispatch<F, kMaxTokens>(w, r0, nrows, tables, x + static_cast<std::size_t>(t0) * C, nt, y + t0, ldy);
    }
}

void rowsDotsFp8(const QuantMatrix& w, int r0, int nrows, const std::uint16_t* x, int n, float* y, std::size_t ldy)
{
    const int blocks = (w.cols() + kFp8Block - 1) / kFp8Block;
    thread_local std::vector<std::uint8_t> tables;
    tables.resize(static_cast<std::size_t>(blocks) * kTableBytes);
    // Row blocks one at a time: a tile's rows share their tables.
    for (int b0 = r0; b0 < r0 + nrows;) {
        const int b1 = std::min(r0 + nrows, (b0 / kFp8Block + 1) * kFp8Block);
        fp8Tables(w.rowScales(b0), blocks, tables.data());
        rowsDotsOf<WeightFormat::fp8_block>(w, b0, b1 - b0, tables.data(), x, n, y + static_cast<std::size_t>(b0 - r0) * ldy, ldy);
        b0 = b1;
    }
}

}  // namespace

// The tables of one row block: one per column block, from that block's scale.
MOEX_BF16_TARGET void fp8Tables(const float* scales, int blocks, std::uint8_t* out)
{
    const float* mag = e4m3Magnitudes();
    for (int b = 0; b < blocks; ++b) {
        const __m512 s = _mm512_set1_ps(scales[b]);
        std::uint8_t* hi = out + static_cast<std::size_t>(b) * kTableBytes;
        std::uint8_t* lo = hi + 128;
        for (int m = 0; m < 128; m += 32) {
            const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_mul_ps(_mm512_loadu_ps(mag + m + 16), s), _mm512_mul_ps(_mm512_loadu_ps(mag + m), s));
            const __m512i words = reinterpret_cast<__m512i>(h);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + m), _mm512_cvtepi16_epi8(words));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + m), _mm512_cvtepi16_epi8(_mm512_srli_epi16(words, 8)));
        }
    }
}

bool bf16KernelFits(WeightFormat f, int cols)
{
    // fp8 steps 64 columns at a time (one VPERMI2B per 64 bytes), the others 32.
    return f != WeightFormat::f32 && cols % (f == WeightFormat::fp8_block ? 64 : 32) == 0;
}

MOEX_BF16_TARGET void tokensToBf16(const float* x, int n, std::size_t ldx, int cols, std::uint16_t* out)
{
    for (int t = 0; t < n; ++t) {
        const float* src = x + static_cast<std::size_t>(t) * ldx;
        std::uint16_t* dst = out + static_cast<std::size_t>(t) * static_cast<std::size_t>(cols);
        for (int c = 0; c < cols; c += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_loadu_ps(src + c))));
    }
}

void rowsDotsBf16(const QuantMatrix& w, int r0, int nrows, const std::uint16_t* x, int n, float* y, std::size_t ldy)
{
    switch (w.format()) {
    case WeightFormat::bf16: return rowsDotsOf<WeightFormat::bf16>(w, r0, nrows, nullptr, x, n, y, ldy);
    case WeightFormat::fp8_block: return rowsDotsFp8(w, r0, nrows, x, n, y, ldy);
    case WeightFormat::mxfp4: return rowsDotsOf<WeightFormat::mxfp4>(w, r0, nrows, nullptr, x, n, y, ldy);
    case WeightFormat::f32: break;
    }
}

}  // namespace moex::engine::detail
