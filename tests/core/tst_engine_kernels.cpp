// The CPU engine's kernels (issue 15): the vector kernels against the portable one, blocked tiles
// against the one-row kernel, kernel names, the GEMM choice and OpenBLAS's blocks. The number
// formats they read are tst_weight_formats'.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "engine/ep_engine.h"
#include "engine/moe_layer.h"
#include "engine/openblas.h"
#include "engine/quant_matrix.h"
#include "engine/row_kernels.h"
#include "engine/vector_ceiling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#endif

#include "engine_fixtures.h"

#include <QtTest>

using namespace moex;
using namespace moex::engine;
using moex::test::smallModel;

class TestEngineKernels : public QObject {
    Q_OBJECT
private slots:
    void vectorKernelsAgreeWithPortable();
    void kernelNamesAreRead();
    void blockedTilesEqualTheOneRowKernel();
    void bf16KernelIsExactOnBf16Values();
    void bf16TilesGiveEachTokenItsOwnSum_data();
    void bf16TilesGiveEachTokenItsOwnSum();
    void gemmChoiceFollowsTheBf16DotRate();
    void panelDequantEqualsTheRowDequant();
    void openBlasBlocksCoverEveryWeight();
};

void TestEngineKernels::vectorKernelsAgreeWithPortable()
{
    // Every kernel this CPU runs against the portable one, every format, token counts around the
    // register blocks (8 tokens; 3, 4, 6 or 8 rows), columns with several fp8 and MX blocks.
    // Float32 kernels differ from the portable one only in float32 rounding: 1e-6 of the sum of
    // |products|. avx512-bf16 rounds each token (and an fp8 weight times its scale) to bf16, 2^-9
    // relative at most, so a product is off by at most 2 * 2^-9 + 2^-18 of itself: 2^-8 of the sum
    // of |products| bounds the whole dot (the float32 part stays under 1e-6 of it).
    const int R = 5, C = 384;
    std::vector<float> x(static_cast<std::size_t>(11 * C));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = hashUniform(5, i);
    int checked = 0;
    for (Kernel k : {Kernel::avx2, Kernel::avx512, Kernel::avx512bf16, Kernel::amx}) {
        if (!kernelSupported(k)) {
            qInfo("%s: not on this CPU", toString(k));
            continue;
        }
        for (WeightFormat f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::fp8_block, WeightFormat::mxfp4}) {
            const QuantMatrix w = QuantMatrix::seeded(f, R, C, 9, 0.3f);
            const double bound = roundsToBf16(k, w) ? std::ldexp(1.0, -8) + 1e-6 : 1e-6;
            QCOMPARE(roundsToBf16(k, w), (k == Kernel::avx512bf16 || k == Kernel::amx) && f != WeightFormat::f32);
            // What reports name as the kernel that ran: float32 weights under the bf16 kernels go to avx512.
            QCOMPARE(kernelFor(k, w), (k == Kernel::avx512bf16 || k == Kernel::amx) && f == WeightFormat::f32 ? Kernel::avx512 : k);
            const auto dense = w.dequantAll();
            std::vector<float> scratch;
            for (int n : {1, 3, 8, 11}) {
                std::vector<float> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
                double worst = 0;
                for (int r = 0; r < R; ++r) {
                    rowDotsWith(Kernel::portable, w, r, x.data(), n, C, a.data(), scratch);
                    rowDotsWith(k, w, r, x.data(), n, C, b.data(), scratch);
                    for (int t = 0; t < n; ++t) {
                        double mag = 0;
                        for (int c = 0; c < C; ++c)
                            mag += std::fabs(dense[static_cast<std::size_t>(r * C + c)] * x[static_cast<std::size_t>(t * C + c)]);
                        const double err = std::fabs(a[static_cast<std::size_t>(t)] - b[static_cast<std::size_t>(t)]);
                        worst = std::max(worst, err / mag);
                        QVERIFY2(err <= bound * mag,
                                 qPrintable(QStringLiteral("%1 %2 n=%3 row %4 token %5: %6 vs %7")
                                                .arg(QLatin1String(toString(k)), QLatin1String(toString(f))).arg(n).arg(r).arg(t)
                                                .arg(a[static_cast<std::size_t>(t)]).arg(b[static_cast<std::size_t>(t)])));
                    }
                    ++checked;
                }
                if (n == 8)
                    qInfo("%s %s: worst error %.2e of the sum of |products| (bound %.2e)", toString(k), toString(f), worst, bound);
            }
        }
    }
    // Several rows at once (the tiles): each row's results equal the one-row kernel's bit for bit,
    // whatever the numbers of rows and tokens per call.
    for (Kernel k : {Kernel::portable, Kernel::avx2, Kernel::avx512, Kernel::avx512bf16, Kernel::amx}) {
        if (!kernelSupported(k))
            continue;
        for (WeightFormat f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::fp8_block, WeightFormat::mxfp4}) {
            const QuantMatrix w = QuantMatrix::seeded(f, 9, C, 4, 0.3f);
            std::vector<float> scratch;
            for (int nrows : {1, 2, 3, 4, 5, 7, 9})
                for (int n : {1, 2, 3, 4, 5, 8, 11, 17}) {
                    std::vector<float> tile(static_cast<std::size_t>(nrows * n)), one(static_cast<std::size_t>(n));
                    rowsDotsWith(k, w, 9 - nrows, nrows, x.data(), std::min(n, 11), C, tile.data(), static_cast<std::size_t>(n), scratch);
                    for (int i = 0; i < nrows; ++i) {
                        rowDotsWith(k, w, 9 - nrows + i, x.data(), std::min(n, 11), C, one.data(), scratch);
                        for (int t = 0; t < std::min(n, 11); ++t)
                            QCOMPARE(tile[static_cast<std::size_t>(i * n + t)], one[static_cast<std::size_t>(t)]);
                    }
                    ++checked;
                }
        }
    }
    // Calls whose rows cross a 128-row fp8 block (each block has its own scales, and the bf16
    // kernel its own lookup tables): every row equals the one-row kernel's, within the bound of the
    // portable one.
    for (Kernel k : {Kernel::avx512, Kernel::avx512bf16, Kernel::amx}) {
        if (!kernelSupported(k))
            continue;
        const QuantMatrix tall = QuantMatrix::seeded(WeightFormat::fp8_block, 300, C, 8, 0.3f);
        const auto dense = tall.dequantAll();
        const int first = 100, nrows = 170, n = 5;  // rows 100 .. 269: three row blocks
        std::vector<float> many(static_cast<std::size_t>(nrows * n)), one(static_cast<std::size_t>(n)), exact(static_cast<std::size_t>(n));
        std::vector<float> scratch;
        rowsDotsWith(k, tall, first, nrows, x.data(), n, C, many.data(), static_cast<std::size_t>(n), scratch);
        for (int i = 0; i < nrows; ++i) {
            rowDotsWith(k, tall, first + i, x.data(), n, C, one.data(), scratch);
            rowDotsWith(Kernel::portable, tall, first + i, x.data(), n, C, exact.data(), scratch);
            for (int t = 0; t < n; ++t) {
                QCOMPARE(many[static_cast<std::size_t>(i * n + t)], one[static_cast<std::size_t>(t)]);
                double mag = 0;
                for (int c = 0; c < C; ++c)
                    mag += std::fabs(dense[static_cast<std::size_t>((first + i) * C + c)] * x[static_cast<std::size_t>(t * C + c)]);
                QVERIFY(std::fabs(one[static_cast<std::size_t>(t)] - exact[static_cast<std::size_t>(t)]) <= (std::ldexp(1.0, -8) + 1e-6) * mag);
            }
        }
        ++checked;
    }
    qInfo("%d row sets checked; active kernel %s", checked, toString(activeKernel()));
}

void TestEngineKernels::kernelNamesAreRead()
{
    // The names MOEX_KERNEL and bench engine --kernel document, and the ones reports print.
    const std::pair<const char*, Kernel> named[] = {{"portable", Kernel::portable},
                                                    {"avx2", Kernel::avx2},
                                                    {"avx2+fma", Kernel::avx2},
                                                    {"avx512", Kernel::avx512},
                                                    {"avx512-bf16", Kernel::avx512bf16},
                                                    {"amx-bf16", Kernel::amx}};
    for (const auto& [name, kernel] : named) {
        Kernel k = name == std::string("portable") ? Kernel::avx512 : Kernel::portable;
        QVERIFY2(kernelFromString(name, k), name);
        QCOMPARE(k, kernel);
        Kernel back = Kernel::portable;
        QVERIFY(kernelFromString(toString(kernel), back));
        QCOMPARE(back, kernel);
    }
    Kernel k = Kernel::portable;
    for (const char* wrong : {"avx", "AVX2", "avx512bf16", "amx", ""})
        QVERIFY2(!kernelFromString(wrong, k), wrong);
}

void TestEngineKernels::blockedTilesEqualTheOneRowKernel()
{
    // From 32 tokens on, the AVX-512 and AVX2 kernels take rows in blocks of columns and tokens
    // over the panel's packed copy. Each (row, token) must still be the one-row kernel's bit for bit, or a
    // token's result would depend on how many others its expert received (and ranks would
    // disagree). Columns span three column blocks (the last a part one), token counts cross the
    // 64-token groups with a part tile, row counts leave a part tile of rows, and the call starts
    // mid-matrix.
    if (!kernelSupported(Kernel::avx2))
        QSKIP("this CPU has neither AVX2 nor AVX-512: the blocked tiles cannot run here");
    const int R = 17, C = 2 * 1024 + 128;
    std::vector<float> x(static_cast<std::size_t>(131 * C));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = hashUniform(13, i);
    int checked = 0;
    int kernels = 0;
    for (Kernel kernel : {Kernel::avx2, Kernel::avx512}) {
        if (!kernelSupported(kernel)) {
            qInfo("%s: not on this CPU", toString(kernel));
            continue;
        }
        ++kernels;
        for (WeightFormat f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::fp8_block, WeightFormat::mxfp4}) {
            const QuantMatrix w = QuantMatrix::seeded(f, R, C, 31, 0.3f);
            std::vector<float> scratch;
            for (int n : {32, 35, 64, 71, 131})
                for (auto [r0, nrows] : {std::pair{0, 17}, std::pair{4, 6}, std::pair{3, 13}, std::pair{16, 1}}) {
                    std::vector<float> many(static_cast<std::size_t>(nrows * n)), one(static_cast<std::size_t>(n));
                    rowsDotsWith(kernel, w, r0, nrows, x.data(), n, C, many.data(), static_cast<std::size_t>(n),
                                 scratch);
                    for (int i = 0; i < nrows; ++i) {
                        rowDotsWith(kernel, w, r0 + i, x.data(), n, C, one.data(), scratch);
                        for (int t = 0; t < n; ++t)
                            QVERIFY2(many[static_cast<std::size_t>(i * n + t)] == one[static_cast<std::size_t>(t)],
                                     qPrintable(QStringLiteral("%1 %2 n=%3 rows %4+%5: row %6 token %7: %8 vs %9")
                                                    .arg(QLatin1String(toString(kernel)), QLatin1String(toString(f)))
                                                    .arg(n)
                                                    .arg(r0)
                                                    .arg(nrows)
                                                    .arg(i)
                                                    .arg(t)
                                                    .arg(many[static_cast<std::size_t>(i * n + t)])
                                                    .arg(one[static_cast<std::size_t>(t)])));
                    }
                    ++checked;
                }
        }
    }
    QCOMPARE(checked, kernels * 4 * 5 * 4);
    if (!kernelSupported(Kernel::avx512))
        return;
    // Two matrices over one panel (an expert's gate and up) read the same packed copy.
    const QuantMatrix a = QuantMatrix::seeded(WeightFormat::f32, 6, C, 41, 0.3f),
                      b = QuantMatrix::seeded(WeightFormat::f32, 6, C, 43, 0.3f);
    TokenPanel panel(x.data(), 40, C, C);
    std::vector<float> ya(6 * 40), yb(6 * 40), ref(40), scratch;
    rowsDotsWith(Kernel::avx512, a, 0, 6, panel, ya.data(), 40, scratch);
    rowsDotsWith(Kernel::avx512, b, 0, 6, panel, yb.data(), 40, scratch);
    for (int i = 0; i < 6; ++i) {
        rowDotsWith(Kernel::avx512, b, i, x.data(), 40, C, ref.data(), scratch);
        QVERIFY(std::equal(ref.begin(), ref.end(), yb.begin() + i * 40));
    }
    QVERIFY(ya != yb);
}

void TestEngineKernels::bf16KernelIsExactOnBf16Values()
{
    // Where every number is already a bf16 (bf16 weights, MXFP4's power-of-two-scaled values, tokens
    // rounded beforehand), the bf16 kernel rounds nothing: only its float32 sums differ from the
    // portable kernel's. A column out of place, a lost block scale or a wrong nibble order moves a
    // result by far more than 1e-6 of the sum of |products|.
    if (!kernelSupported(Kernel::avx512bf16))
        QSKIP("this CPU has no AVX-512-BF16: the kernel cannot run here (avx512 and avx2 are tested above)");
    const int R = 7, C = 12 * 128;  // two column passes of the bf16 kernel (1024 columns each)
    std::vector<float> x(static_cast<std::size_t>(9 * C));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = bf16ToFloat(floatToBf16(hashUniform(11, i)));
    for (Kernel k : {Kernel::avx512bf16, Kernel::amx})
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::mxfp4}) {
        if (!kernelSupported(k))
            continue;
        const QuantMatrix w = QuantMatrix::seeded(f, R, C, 21, 0.5f);
        const auto dense = w.dequantAll();
        std::vector<float> scratch, a(9), b(9);
        for (int r = 0; r < R; ++r) {
            rowDotsWith(Kernel::portable, w, r, x.data(), 9, C, a.data(), scratch);
            rowDotsWith(k, w, r, x.data(), 9, C, b.data(), scratch);
            for (int t = 0; t < 9; ++t) {
                double mag = 0;
                for (int c = 0; c < C; ++c)
                    mag += std::fabs(dense[static_cast<std::size_t>(r * C + c)] * x[static_cast<std::size_t>(t * C + c)]);
                QVERIFY2(std::fabs(a[static_cast<std::size_t>(t)] - b[static_cast<std::size_t>(t)]) <= 1e-6 * mag,
                         qPrintable(QStringLiteral("%1 %2 row %3 token %4: %5 vs %6").arg(QLatin1String(toString(k)), QLatin1String(toString(f))).arg(r).arg(t)
                                        .arg(a[static_cast<std::size_t>(t)]).arg(b[static_cast<std::size_t>(t)])));
                // Alone, the token is summed in the same order, bit for bit: tiles of 1-4 tokens
                // widen MXFP4 with VPERMB, tiles of 5-8 with unpacks (bf16_weights.h).
                float alone = 0;
                rowDotsWith(k, w, r, x.data() + static_cast<std::size_t>(t * C), 1, C, &alone, scratch);
                QCOMPARE(std::bit_cast<std::uint32_t>(alone), std::bit_cast<std::uint32_t>(b[static_cast<std::size_t>(t)]));
            }
        }
    }
}

void TestEngineKernels::bf16TilesGiveEachTokenItsOwnSum_data()
{
    QTest::addColumn<int>("kernel");
    QTest::newRow("amx") << static_cast<int>(Kernel::amx);
    QTest::newRow("avx512-bf16") << static_cast<int>(Kernel::avx512bf16);
}

void TestEngineKernels::bf16TilesGiveEachTokenItsOwnSum()
{
    // The AMX kernel takes rows in groups of 64 (several token blocks) or tiles of 16 (one), a last
    // tile of fewer rows, columns in chunks of 256 (512 for fp8's tiles of 16 rows) and tokens in
    // blocks of 16, its sums kept in the tiles or loaded and stored around each chunk. The
    // avx512-bf16 kernel takes tiles of 3-8 rows by 1-8 tokens and passes of 1024 columns, and sums
    // a tile's accumulators 16 at a time in one transposed tree (a vector store where y holds just
    // the tile's tokens, one float at a time where its rows are wider). None of that may reach a
    // result: every (row, token) must equal the token multiplied alone, bit for bit, or a token's
    // result would depend on how many others its expert received (and N ranks would not give one
    // rank's output). Shapes: 150 rows (two fp8 row blocks), columns of two whole chunks of 512 and
    // a quarter of one (four and a half of 256; one pass of 1024 and a part one), token counts of
    // one block, a whole block, a block and one, and three blocks with a part one; y rows as wide as
    // the tokens, and wider, whose gap must stay untouched. Each result also within the bf16 bound
    // of the portable kernel's.
    QFETCH(int, kernel);
    const auto k = static_cast<Kernel>(kernel);
    if (!kernelSupported(k))
        QSKIP("this CPU (or its kernel) does not run this kernel");
    const int R = 150, C = 2 * 512 + 128;
    std::vector<float> x(static_cast<std::size_t>(40 * C));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = hashUniform(17, i);
    int checked = 0;
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::fp8_block, WeightFormat::mxfp4}) {
        const QuantMatrix w = QuantMatrix::seeded(f, R, C, 23, 0.3f);
        const auto dense = w.dequantAll();
        std::vector<float> scratch, alone(1), exact(1);
        for (int n : {1, 8, 16, 17, 40})
            for (auto [r0, nrows] : {std::pair{0, 150}, std::pair{5, 70}, std::pair{130, 20}, std::pair{64, 3}})
            for (int gap : {0, 3}) {
                const std::size_t ldy = static_cast<std::size_t>(n + gap);
                std::vector<float> y(static_cast<std::size_t>(nrows) * ldy, -9.0f);
                rowsDotsWith(k, w, r0, nrows, x.data(), n, C, y.data(), ldy, scratch);
                for (int i = 0; i < nrows; ++i)
                    for (int t = 0; t < static_cast<int>(ldy); ++t) {
                        const float got = y[static_cast<std::size_t>(i) * ldy + static_cast<std::size_t>(t)];
                        if (t >= n) {
                            QCOMPARE(got, -9.0f);
                            continue;
                        }
                        const float* xt = x.data() + static_cast<std::size_t>(t) * C;
                        rowDotsWith(k, w, r0 + i, xt, 1, C, alone.data(), scratch);
                        QVERIFY2(got == alone[0], qPrintable(QStringLiteral("%1 n=%2 rows %3+%4: row %5 token %6: %7 alone %8")
                                                                 .arg(QLatin1String(toString(f))).arg(n).arg(r0).arg(nrows).arg(i).arg(t)
                                                                 .arg(got).arg(alone[0])));
                        if (n != 17)
                            continue;
                        rowDotsWith(Kernel::portable, w, r0 + i, xt, 1, C, exact.data(), scratch);
                        double mag = 0;
                        for (int c = 0; c < C; ++c)
                            mag += std::fabs(dense[static_cast<std::size_t>((r0 + i) * C + c)] * xt[c]);
                        QVERIFY(std::fabs(got - exact[0]) <= (std::ldexp(1.0, -8) + 1e-6) * mag);
                    }
                ++checked;
            }
    }
    QCOMPARE(checked, 3 * 5 * 4 * 2);
}

void TestEngineKernels::gemmChoiceFollowsTheBf16DotRate()
{
    using openblas::fromTokens;
    // Where VDPBF16PS gives twice the FMA's FLOPs the avx512-bf16 kernel keeps bf16, fp8 and mxfp4
    // at any token count; where it does not, they go to an AVX-512 sgemm from 128 tokens, as on
    // avx512.
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::fp8_block, WeightFormat::mxfp4}) {
        QCOMPARE(fromTokens(Kernel::avx512bf16, f, true, true), 0);
        QCOMPARE(fromTokens(Kernel::avx512bf16, f, true, false), fromTokens(Kernel::avx512, f, true));
        QCOMPARE(fromTokens(Kernel::avx512bf16, f, true, false), 128);
        QCOMPARE(fromTokens(Kernel::avx512bf16, f, false, false), 0);  // an AVX2 sgemm: not measured faster
    }
    // float32 weights keep float32 products: the rate of VDPBF16PS does not enter.
    QCOMPARE(fromTokens(Kernel::avx512bf16, WeightFormat::f32, true, true), 128);
    QCOMPARE(fromTokens(Kernel::avx512bf16, WeightFormat::f32, true, false), 128);
    // AVX2: the quantised formats whose kernel does most per weight go first.
    QCOMPARE(fromTokens(Kernel::avx2, WeightFormat::fp8_block, false), 64);
    QCOMPARE(fromTokens(Kernel::avx2, WeightFormat::mxfp4, false), 64);
    QCOMPARE(fromTokens(Kernel::avx2, WeightFormat::bf16, false), 128);
    QCOMPARE(fromTokens(Kernel::avx2, WeightFormat::f32, false), 128);

    const double speedup = bf16DotSpeedup();
    if (!kernelSupported(Kernel::avx512bf16)) {
        QCOMPARE(speedup, 0.0);
        return;
    }
    // Measured: a timing on a shared machine, so only a sanity range. VDPBF16PS does twice an FMA's
    // work an instruction (about 2x at most where the clock holds), but the probe's two loops run
    // a few milliseconds each and a clock change between them moves the ratio: 2.59 under ASan in
    // CI, right after the AMX tests (perhaps a clock change after the tile unit ran). A broken
    // probe gives 0, or orders of magnitude off.
    QVERIFY2(speedup > 0.1 && speedup < 5.0, qPrintable(QString::number(speedup)));
    QCOMPARE(bf16DotSpeedup(), speedup);  // once per process: every engine makes the same choice
    qInfo("VDPBF16PS over 512-bit FMA FLOPs on this CPU: %.2f", speedup);
    if (openblas::library().loaded())
        QCOMPARE(fromTokens(openblas::GemmChoice::automatic, Kernel::avx512bf16, WeightFormat::bf16),
                 fromTokens(Kernel::avx512bf16, WeightFormat::bf16, openblas::library().avx512, speedup >= openblas::kFastBf16Dot));
}


// The OpenBLAS path's blocks (moe_layer.cpp projectOpenBlas): rows and a range of columns
// dequantised by each kernel this CPU runs equal QuantMatrix::dequantRow's values bit for bit,
// across fp8's 128 x 128 blocks and MX's 32-column blocks, on the vector steps (16, 8) and off them
// (the scalar loop).
void TestEngineKernels::panelDequantEqualsTheRowDequant()
{
    const int R = 300, C = 384;
    int checked = 0;
    for (WeightFormat f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::fp8_block, WeightFormat::mxfp4}) {
        const QuantMatrix w = QuantMatrix::seeded(f, R, C, 12, 0.3f);
        std::vector<float> row(static_cast<std::size_t>(C));
        for (Kernel k : {Kernel::portable, Kernel::avx2, Kernel::avx512, Kernel::avx512bf16}) {
            if (!kernelSupported(k))
                continue;
            for (auto [c0, c1] : {std::pair{0, C}, {128, 256}, {16, 48}, {8, 24}, {5, 77}, {96, 384}}) {
                const int r0 = 100, nrows = 170;  // three fp8 row blocks
                const std::size_t ld = static_cast<std::size_t>(c1 - c0) + 3;
                std::vector<float> block(static_cast<std::size_t>(nrows) * ld, -7.0f);
                dequantRowsWith(k, w, r0, nrows, c0, c1, block.data(), ld);
                for (int i = 0; i < nrows; ++i) {
                    w.dequantRow(r0 + i, row.data());
                    const float* got = block.data() + static_cast<std::size_t>(i) * ld;
                    QVERIFY2(std::memcmp(got, row.data() + c0, sizeof(float) * static_cast<std::size_t>(c1 - c0)) == 0,
                             qPrintable(QStringLiteral("%1 %2 row %3 columns %4-%5")
                                            .arg(QLatin1String(toString(k)), QLatin1String(toString(f))).arg(r0 + i).arg(c0).arg(c1)));
                    QCOMPARE(got[c1 - c0], -7.0f);  // nothing written past the range
                    std::vector<float> cols(static_cast<std::size_t>(c1 - c0));
                    w.dequantCols(r0 + i, c0, c1, cols.data());
                    QVERIFY(std::memcmp(cols.data(), row.data() + c0, sizeof(float) * cols.size()) == 0);
                }
                ++checked;
            }
        }
    }
    qInfo("%d blocks checked", checked);
}

// ffnForward through OpenBLAS on shapes whose weights take several row blocks (over 1,024 rows)
// and several column chunks (the chunk adds into the output with beta 1): the same result as the
// engine's portable kernel within float32 rounding, so that no block is left out or added twice.
void TestEngineKernels::openBlasBlocksCoverEveryWeight()
{
    if (!openblas::library().loaded())
        QSKIP(qPrintable(QString::fromStdString(openblas::library().error)));
    const Kernel active = activeKernel();
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::fp8_block}) {
        LayerShape s;
        s.hidden = 384;
        s.inter = 1152;  // gate and up: 1,152 rows (two row blocks) x 384 columns (chunks of 256 and 128)
        s.experts = 1;
        s.topk = 1;
        s.format = f;
        const FfnWeights w = makeExpertWeights(s, 3, 0, 0);
        const int n = 9;
        std::vector<float> x(static_cast<std::size_t>(n * s.hidden));
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = hashUniform(21, i);
        std::vector<float> viaBlas(x.size()), viaKernel(x.size()), scratch;
        s.openblas_from_tokens = 1;
        ffnForward(s, s.inter, w, x.data(), n, viaBlas.data(), scratch);
        s.openblas_from_tokens = 0;
        useKernel(Kernel::portable);
        ffnForward(s, s.inter, w, x.data(), n, viaKernel.data(), scratch);
        useKernel(active);
        double worst = 0, scale = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            worst = std::max(worst, std::fabs(static_cast<double>(viaBlas[i]) - viaKernel[i]));
            scale = std::max(scale, std::fabs(static_cast<double>(viaKernel[i])));
        }
        QVERIFY(scale > 0);
        QVERIFY2(worst <= 1e-4 * scale, qPrintable(QStringLiteral("%1: worst %2 of a largest output %3")
                                                       .arg(QLatin1String(toString(f))).arg(worst).arg(scale)));
    }
}

QTEST_GUILESS_MAIN(TestEngineKernels)
#include "tst_engine_kernels.moc"
