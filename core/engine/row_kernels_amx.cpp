// The AMX-BF16 kernel: rows of bf16, fp8-e4m3 or MXFP4 weights against tokens rounded to bf16, on
// the tile unit (Intel Sapphire Rapids and later). One TDPBF16PS multiplies a tile of 16 rows x 32
// columns of weights by 32 columns x up to 16 tokens and adds into 16 x 16 float32 sums: 8,192
// multiply-adds (2.9 TFLOP/s on one core of the Xeon measured, in cache; VDPBF16PS gives 0.1).
// Decode at 8 tokens and prefill, compute-bound on 512-bit vectors (docs/PERFORMANCE.md, CPU
// engine), become bound by memory and by the widening of fp8 and MXFP4 weights to bf16.
//
// Tiles: tmm0-3 the sums of up to four tiles of rows, tmm4-5 the weights, tmm6-7 the tokens. Rows
// go in tiles of 16 with one token block (decode) and in groups of 64 with several (a token tile
// then feeds four row tiles). A tile or group walks the columns in chunks (kChunkOf): fp8 and MXFP4
// rows (and bf16 rows for several token blocks) are widened into a chunk buffer first
// (bf16_weights.h, the avx512-bf16 kernel's conversions: the same bf16 values); with one token
// block bf16 rows are read by the tile loads where they lie. Every token block then multiplies the
// chunk, its sums kept in the tiles (one block) or loaded and stored around the chunk (several).
//
// Each (row, token) sum adds its products in column order, 32 at a time, whatever the numbers of
// rows and tokens in the call, so a token's result does not depend on the others of its batch.
#include "engine/row_kernels_amx.h"

#include "engine/bf16_weights.h"
#include "engine/vector_ceiling.h"

#include <algorithm>
#include <utility>
#include <vector>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace moex::engine::detail {

namespace {

// The tile instructions as inline assembly. GCC's _tile_loadd and _tile_stored name no memory
// operand, so the compiler may move the stores that fill a buffer past the tile load that reads it;
// these declare "memory". The assembler knows the instructions whatever the target flags.
template <int T>
inline void tileLoad(const void* p, std::size_t strideBytes)
{
    asm volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(p), "r"(strideBytes), "i"(T) : "memory");
}

template <int T>
inline void tileStore(void* p, std::size_t strideBytes)
{
    asm volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(p), "r"(strideBytes), "i"(T) : "memory");
}

template <int T>
inline void tileZero()
{
    asm volatile("tilezero %%tmm%c0" : : "i"(T));
}

// tmm[Acc] += tmm[A] . tmm[B] (AT&T order: B, A, Acc).
template <int Acc, int A, int B>
inline void tileDot()
{
    asm volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(Acc), "i"(A), "i"(B));
}

struct alignas(64) TileConfig {
    std::uint8_t palette = 1;
    std::uint8_t startRow = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Sums of m rows x `width` tokens (tmm0-3), weights of m rows x 32 columns (tmm4-5), tokens 16
// rows of `width` column pairs (tmm6-7).
void loadConfig(int m, int width)
{
    TileConfig c;
    for (int t = 0; t < 6; ++t) {
        c.rows[t] = static_cast<std::uint8_t>(m);
        c.colsb[t] = static_cast<std::uint16_t>(t < 4 ? 4 * width : 64);
    }
    for (int t = 6; t < 8; ++t) {
        c.rows[t] = 16;
        c.colsb[t] = static_cast<std::uint16_t>(4 * width);
    }
    asm volatile("ldtilecfg %0" : : "m"(c) : "memory");
}

void releaseTiles()
{
    asm volatile("tilerelease" ::: "memory");
}

constexpr int kTileRows = 16;
constexpr int kGroupTiles = 4;
constexpr int kChunk = 256;                   // columns a group widens and multiplies at once
// fp8 tiles of 16 rows (decode) widen 512 columns a chunk: 512 bytes of each row, as bf16's 256
// columns are. Measured, decode of a Mixtral expert pair on two threads, five alternating rounds:
// 1 token 14.3 -> 13.5 ms, 8 tokens 15.5 -> 15.0 ms (1024: slower; MXFP4 at 512 or 1024 slower too).
template <WeightFormat F, int G>
constexpr int kChunkOf = F == WeightFormat::fp8_block && G == 1 ? 2 * kChunk : kChunk;
static_assert(kChunkOf<WeightFormat::fp8_block, 1> * kTileRows <= kChunk * kGroupTiles * kTileRows);
// Rows ahead of the one being widened that are prefetched, at its columns, into L2. Measured, decode of a
// Mixtral expert pair on two threads (docs/PERFORMANCE.md, "AMX tiles"): 8 rows against 4, 16 and
// 32; into L2 against L1, fp8 at one token 27 -> 20 ms (medians of four alternating runs).
constexpr int kAheadRows = 8;

template <int G, typename F>
inline void forTiles(F&& f)
{
    [&]<int... I>(std::integer_sequence<int, I...>) { (f.template operator()<I>(), ...); }(std::make_integer_sequence<int, G>{});
}

struct Call {
    const QuantMatrix& w;
    const std::uint16_t* vnni;
    int n;
    int blocks;                  // token blocks of 16
    int width;                   // tokens a block holds in the layout: n up to 16, else 16 (vnniWidth)
    std::size_t ldy;
    const std::uint8_t* tables;  // fp8: the lookup tables of the row block being run
    std::uint16_t* chunk;        // kGroupTiles * 16 rows x kChunk bf16 (16 rows x 2 kChunk for fp8's tiles)
    float* partial;              // kGroupTiles tiles of 16 x 16 sums: a last block of fewer than 16 tokens
    // bf16 weights read by the tile loads where they lie (one token block: each weight is read
    // once), instead of copied into the chunk first (several: the copy is read again from L1).
    bool direct;
};

// Rows r .. r + rows - 1, columns [c0, c1) of the matrix as bf16 into the chunk buffer (Chunk
// values a row), one row at a time (bf16 read directly: only the prefetches). Meanwhile the row
// kAheadRows further in the order rows are read (these rows' next chunk after the last, then the
// rows after these from their first column) is prefetched at the same columns, so that each row's
// stretch starts in cache: the tile loads of 16 rows at once leave the hardware prefetchers too
// many streams to follow (a group of 64 rows read straight by the tiles ran at half the bandwidth).
template <WeightFormat F, int Chunk>
MOEX_BF16_TARGET void widen(const Call& c, int r, int rows, int c0, int c1)
{
    const int C = c.w.cols();
    [[maybe_unused]] const __m512i order = fp8Order();
    for (int i = 0; i < rows; ++i) {
        const std::uint8_t* src = c.w.rowData(r + i);
        std::uint16_t* dst = c.chunk + static_cast<std::size_t>(i) * Chunk - c0;
        const int j = i + kAheadRows;
        int pr = r + j;  // the row to prefetch, at columns shifted by `shift`
        std::ptrdiff_t shift = -c0;
        if (j < rows)
            shift = 0;
        else if (c1 < C)
            pr = r + j - rows, shift = Chunk;
        const std::uint8_t* ahead = pr < c.w.rows() ? c.w.rowData(pr) + static_cast<std::ptrdiff_t>(kHalfBytesPerColumn<F>) * shift / 2 : nullptr;
        if constexpr (F == WeightFormat::fp8_block) {
            for (int b = c0; b < c1; b += kFp8Block) {
                const Fp8Table table = loadTable(c.tables + static_cast<std::size_t>(b / kFp8Block) * kTableBytes);
                for (int k = b; k < std::min(c1, b + kFp8Block); k += 64) {
                    if (ahead)
                        _mm_prefetch(reinterpret_cast<const char*>(ahead + k), _MM_HINT_T1);
                    __m512bh w0, w1;
                    fp8x64(src + k, table, order, w0, w1);
                    _mm512_storeu_si512(dst + k, reinterpret_cast<__m512i>(w0));
                    _mm512_storeu_si512(dst + k + 32, reinterpret_cast<__m512i>(w1));
                }
            }
        } else if constexpr (F == WeightFormat::mxfp4) {
            const float* scales = c.w.rowScales(r + i);
            for (int k = c0; k < c1; k += 32) {
                if (ahead && k % 128 == 0)
                    _mm_prefetch(reinterpret_cast<const char*>(ahead + k / 2), _MM_HINT_T1);
                _mm512_storeu_si512(dst + k, reinterpret_cast<__m512i>(mxfp4x32(src + k / 2, scales[k / 32])));
            }
        } else {
            for (int k = c0; k < c1; k += 32) {
                if (ahead)
                    _mm_prefetch(reinterpret_cast<const char*>(ahead + 2 * k), _MM_HINT_T1);
                if (!c.direct)
                    _mm512_storeu_si512(dst + k, _mm512_loadu_si512(src + 2 * k));
            }
        }
    }
}

// G tiles of m rows each from row r (m < 16 only where G == 1): y holds their sums, [row][token].
template <WeightFormat F, int G>
MOEX_BF16_TARGET void group(const Call& c, int r, int m, float* y)
{
    const int C = c.w.cols();
    const auto Cs = static_cast<std::size_t>(C);
    const std::uint8_t* rows[G];
    for (int i = 0; i < G; ++i)
        rows[i] = c.w.rowData(r + i * m);
    const bool resident = c.blocks == 1;  // one token block: its sums stay in the tiles
    constexpr int Chunk = kChunkOf<F, G>;
    for (int c0 = 0; c0 < C; c0 += Chunk) {
        const int c1 = std::min(C, c0 + Chunk);
        widen<F, Chunk>(c, r, G * m, c0, c1);
        for (int tb = 0; tb < c.blocks; ++tb) {
            const bool whole = c.n - tb * kAmxTokens >= c.width;
            float* out = whole ? y + static_cast<std::size_t>(tb) * kAmxTokens : c.partial;
            const std::size_t ldo = whole ? c.ldy : kAmxTokens;
            if (!resident || c0 == 0)
                forTiles<G>([&]<int I>() {
                    if (c0 == 0)
                        tileZero<I>();
                    else
                        tileLoad<I>(out + static_cast<std::size_t>(I * m) * ldo, ldo * sizeof(float));
                });
            const std::size_t step = 32 * static_cast<std::size_t>(c.width);  // bf16 values of one token tile
            const std::uint16_t* b = c.vnni + static_cast<std::size_t>(tb) * kAmxTokens * Cs + static_cast<std::size_t>(c0 / 32) * step;
            // One step of 32 columns: the tokens into tmm[Bt], each row tile's weights into
            // tmm4 or tmm5, multiplied into its sums. Consecutive steps use the other token and
            // weight tiles, so that a step's loads need not wait for the previous step's products
            // to have read their tiles (one tile of each, the loads waited: 100 cycles a step).
            const auto stepAt = [&]<int Bt>(int k, const std::uint16_t* bk) {
                tileLoad<Bt>(bk, 4 * static_cast<std::size_t>(c.width));
                forTiles<G>([&]<int I>() {
                    constexpr int A = 4 + ((I + Bt) & 1);
                    if (F == WeightFormat::bf16 && c.direct)
                        tileLoad<A>(rows[I] + 2 * static_cast<std::size_t>(k), 2 * Cs);
                    else
                        tileLoad<A>(c.chunk + static_cast<std::size_t>(I * m) * Chunk + static_cast<std::size_t>(k - c0), 2 * Chunk);
                    tileDot<I, A, Bt>();
                });
            };
            int k = c0;
            for (; k + 64 <= c1; k += 64, b += 2 * step) {
                stepAt.template operator()<6>(k, b);
                stepAt.template operator()<7>(k + 32, b + step);
            }
            if (k < c1)
                stepAt.template operator()<6>(k, b);
            if (!resident || c1 == C) {
                forTiles<G>([&]<int I>() { tileStore<I>(out + static_cast<std::size_t>(I * m) * ldo, ldo * sizeof(float)); });
                if (!whole && c1 == C) {
                    const int nt = c.n - tb * kAmxTokens;
                    for (int i = 0; i < G * m; ++i)
                        std::copy_n(c.partial + static_cast<std::size_t>(i) * kAmxTokens, nt,
                                    y + static_cast<std::size_t>(i) * c.ldy + static_cast<std::size_t>(tb) * kAmxTokens);
                }
            }
        }
    }
}

// Rows [b0, b1) (fp8: within one row block, whose tables c holds): with several token blocks in
// groups of 64 rows (each token tile loaded feeds four tiles of rows), then tiles of 16; with one
// (decode) tiles of 16 throughout, whose 16 rows the prefetches keep ahead of (groups of 64 ran
// 1.3-1.5x slower there); then one tile of what is left. `m` is the row count the tiles are
// configured for (0: none yet).
template <WeightFormat F>
void rowsOf(const Call& c, int r0, int b0, int b1, float* y, int& m)
{
    int r = b0;
    const auto at = [&](int row) { return y + static_cast<std::size_t>(row - r0) * c.ldy; };
    if (b1 - r >= kTileRows && m != kTileRows)
        loadConfig(m = kTileRows, c.width);
    if (c.blocks > 1)
        for (; r + kGroupTiles * kTileRows <= b1; r += kGroupTiles * kTileRows)
            group<F, kGroupTiles>(c, r, kTileRows, at(r));
    for (; r + kTileRows <= b1; r += kTileRows)
        group<F, 1>(c, r, kTileRows, at(r));
    if (r < b1) {
        if (m != b1 - r)
            loadConfig(m = b1 - r, c.width);
        group<F, 1>(c, r, m, at(r));
    }
}

}  // namespace

bool amxUsable()
{
    static const bool usable = [] {
#if defined(__linux__) && defined(__x86_64__)
        if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16"))
            return false;
        // Linux keeps the 8 KiB of tile data out of a process until it asks (kernel 5.16 on).
        constexpr long kArchReqXcompPerm = 0x1023;
        constexpr long kXfeatureXtileData = 18;
        return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
#else
        return false;
#endif
    }();
    return usable;
}

int vnniWidth(int n)
{
    return std::min(n, kAmxTokens);
}

std::size_t vnniSize(int n, int cols)
{
    return static_cast<std::size_t>(n <= kAmxTokens ? n : (n + kAmxTokens - 1) / kAmxTokens * kAmxTokens) * static_cast<std::size_t>(cols);
}

void tokensToVnni(const std::uint16_t* bf16, int n, int cols, std::uint16_t* out)
{
    const auto C = static_cast<std::size_t>(cols);
    const auto width = static_cast<std::size_t>(vnniWidth(n));
    std::fill_n(out, vnniSize(n, cols), std::uint16_t{0});
    for (int token = 0; token < n; ++token) {
        const std::uint16_t* src = bf16 + static_cast<std::size_t>(token) * C;
        // Its block, then its pair of columns in each row of every step.
        std::uint16_t* dst = out + static_cast<std::size_t>(token / kAmxTokens) * kAmxTokens * C + static_cast<std::size_t>(token % kAmxTokens) * 2;
        for (std::size_t s = 0; s < C / 32; ++s)
            for (std::size_t j = 0; j < 16; ++j) {
                std::uint16_t* d = dst + (s * 16 + j) * 2 * width;
                d[0] = src[s * 32 + 2 * j];
                d[1] = src[s * 32 + 2 * j + 1];
            }
    }
}

void rowsDotsAmx(const QuantMatrix& w, int r0, int nrows, const std::uint16_t* vnni, int n, float* y, std::size_t ldy)
{
    if (nrows <= 0 || n <= 0)
        return;
    struct alignas(64) Buffers {
        std::uint16_t chunk[kGroupTiles * kTileRows * kChunk];
        float partial[kGroupTiles * kTileRows * kAmxTokens];
    };
    thread_local std::vector<Buffers> buffers(1);
    thread_local std::vector<std::uint8_t> tables;
    const int blocks = (n + kAmxTokens - 1) / kAmxTokens;
    Call c{w, vnni, n, blocks, vnniWidth(n), ldy, nullptr, buffers[0].chunk, buffers[0].partial, blocks == 1};
    int m = 0;
    switch (w.format()) {
    case WeightFormat::bf16: rowsOf<WeightFormat::bf16>(c, r0, r0, r0 + nrows, y, m); break;
    case WeightFormat::mxfp4: rowsOf<WeightFormat::mxfp4>(c, r0, r0, r0 + nrows, y, m); break;
    case WeightFormat::fp8_block: {
        const int colBlocks = (w.cols() + kFp8Block - 1) / kFp8Block;
        tables.resize(static_cast<std::size_t>(colBlocks) * kTableBytes);
        c.tables = tables.data();
        for (int b0 = r0; b0 < r0 + nrows;) {  // row blocks one at a time: a group's rows share their tables
            const int b1 = std::min(r0 + nrows, (b0 / kFp8Block + 1) * kFp8Block);
            fp8Tables(w.rowScales(b0), colBlocks, tables.data());
            rowsOf<WeightFormat::fp8_block>(c, r0, b0, b1, y, m);
            b0 = b1;
        }
        break;
    }
    case WeightFormat::f32: break;
    }
    releaseTiles();
}

}  // namespace moex::engine::detail

namespace moex::engine {

double tileDotLoop(long iters)
{
    using namespace detail;
    alignas(64) std::uint16_t a[16 * 32], b[16 * 32];
    std::fill_n(a, 16 * 32, floatToBf16(1.0f / 1024));
    std::fill_n(b, 16 * 32, floatToBf16(1.0f / 1024));
    alignas(64) float sums[16 * 16];
    loadConfig(kTileRows, kAmxTokens);
    tileZero<0>();
    tileZero<1>();
    tileZero<2>();
    tileZero<3>();
    tileLoad<4>(a, 64);
    tileLoad<5>(a, 64);
    tileLoad<6>(b, 64);
    for (long i = 0; i < iters; ++i) {
        tileDot<0, 4, 6>();
        tileDot<1, 5, 6>();
        tileDot<2, 4, 6>();
        tileDot<3, 5, 6>();
    }
    tileStore<0>(sums, 64);
    double v = sums[0];
    tileStore<3>(sums, 64);
    v += sums[255];
    releaseTiles();
    return v;
}

}  // namespace moex::engine
