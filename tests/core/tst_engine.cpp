// The CPU engine (issue 15): number formats, the routers of each family, expert-parallel ranks that
// give the one-rank output bit for bit, and the layer against the independent NumPy reference
// (tests/reference/moe_reference.py) for every family.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "engine/ep_engine.h"
#include "engine/moe_layer.h"
#include "engine/quant_matrix.h"
#include "engine/row_kernels.h"
#include "placement/strategies.h"
#include "run/run_loop.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#endif

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace moex;
using namespace moex::engine;

namespace {

// A small model of each family, at shapes a test runs in milliseconds.
ModelSpec smallModel(const std::string& family)
{
    ModelSpec m;
    m.name = "small-" + family;
    m.hidden_size = 64;
    m.num_layers = 3;
    m.moe_layers = {1, 2};
    m.routed_experts = 16;
    m.experts_per_token = 4;
    m.moe_intermediate_size = 32;
    if (family == "deepseek") {
        m.scoring = Scoring::sigmoid;
        m.expert_groups = 4;
        m.groups_per_token = 2;
        m.routed_scaling_factor = 2.5;
        m.shared_experts = 1;
        m.shared_intermediate_size = 32;
    } else if (family == "qwen-no-renorm") {
        m.norm_topk_prob = false;
    } else if (family == "gpt-oss") {
        m.swiglu_limit = 7.0;
    } else if (family == "nemotron") {  // Nemotron-H: ReLU^2 experts (no gate matrix), sigmoid router
        m.activation = Activation::relu2;
        m.scoring = Scoring::sigmoid;
        m.routed_scaling_factor = 2.5;
        m.shared_experts = 1;
        m.shared_intermediate_size = 64;
    } else if (family == "gemma") {  // Gemma 4: GEGLU experts, its dense MLP as a shared expert
        m.activation = Activation::geglu;
        m.shared_experts = 1;
        m.shared_intermediate_size = 96;
    }
    return m;
}

Placement placementFor(const ModelSpec& m, int ranks, const std::string& strategy = "contiguous", int redundant = 0)
{
    PlacementRequest rq;
    rq.strategy = strategy;
    rq.num_experts = m.routed_experts;
    rq.num_gpus = ranks;
    rq.num_layers = m.numMoeLayers();
    rq.num_slots = m.routed_experts + redundant;
    std::vector<std::vector<double>> skew(static_cast<std::size_t>(m.numMoeLayers()));
    for (auto& row : skew)
        for (int e = 0; e < m.routed_experts; ++e)
            row.push_back(1.0 + 3.0 * (e % 5 == 0));
    if (strategy != "contiguous")
        rq.load = skew;
    return makePlacement(rq);
}

EngineConfig smallConfig(const ModelSpec& m, int tokens = 21)
{
    EngineConfig c;
    c.tokens = tokens;
    c.layers = m.moe_layers;
    c.seed = 7;
    return c;
}

void writeF32(const QString& dir, const std::string& name, const std::vector<float>& v)
{
    std::ofstream out((dir.toStdString() + "/" + name + ".f32"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}

}  // namespace

class TestEngine : public QObject {
    Q_OBJECT
private slots:
    void bf16RoundsToNearestEven();
    void e4m3CodesRoundTrip();
    void quantisedMatricesStayClose_data();
    void quantisedMatricesStayClose();
    void seededWeightsDependOnlyOnTheirIndex();
    void vectorKernelsAgreeWithPortable();
    void blockedTilesEqualTheOneRowKernel();
    void kernelNamesAreRead();
    void bf16KernelIsExactOnBf16Values();
    void routersFollowTheirFamily();
    void groupLimitedRoutingStaysInItsGroups();
    void ranksGiveTheOneRankOutput_data();
    void ranksGiveTheOneRankOutput();
    void metricsAreMeasuredAndConsistent();
    void sharedWeightsRunEveryLayerOnTheFirstOnes();
    void matchesNumpyReference_data();
    void matchesNumpyReference();
    void runApiSelectsTheBackend();
    void simSourceKeepsItsRoutingAcrossEdits();
    void workloadRoutingGivesTheScenarioLoads();
    void badEngineInputIsLocated();
};

void TestEngine::bf16RoundsToNearestEven()
{
    QCOMPARE(bf16ToFloat(floatToBf16(1.0f)), 1.0f);
    // 1 + 2^-8 lies exactly between 1 and 1 + 2^-7: ties to even (1.0).
    QCOMPARE(bf16ToFloat(floatToBf16(1.0f + 0x1.0p-8f)), 1.0f);
    QCOMPARE(bf16ToFloat(floatToBf16(1.0f + 0x1.8p-8f)), 1.0f + 0x1.0p-7f);
    QVERIFY(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
}

void TestEngine::e4m3CodesRoundTrip()
{
    for (int c = 0; c < 256; ++c) {
        if ((c & 0x7f) == 0x7f)
            continue;  // NaN
        const float v = e4m3ToFloat(static_cast<std::uint8_t>(c));
        if (v == 0.0f)
            continue;  // +-0 both decode to zero
        QCOMPARE(static_cast<int>(floatToE4m3(v)), c);
    }
    // Any value: the nearest code (ties to the even code), as a brute-force search finds it.
    for (std::uint64_t i = 0; i < 20000; ++i) {
        const float v = hashUniform(11, i) * (i % 3 == 0 ? 500.0f : i % 3 == 1 ? 1.0f : 0.02f);
        int best = 0;
        for (int c = 0; c < 127; ++c) {
            const float d = std::fabs(e4m3ToFloat(static_cast<std::uint8_t>(c)) - std::fabs(v));
            const float bd = std::fabs(e4m3ToFloat(static_cast<std::uint8_t>(best)) - std::fabs(v));
            if (d < bd || (d == bd && (c & 1) == 0 && (best & 1) == 1))
                best = c;
        }
        if (std::fabs(v) > 448.0f)
            best = 0x7e;
        QCOMPARE(static_cast<int>(floatToE4m3(v) & 0x7f), best);
    }
    QCOMPARE(e4m3ToFloat(0x7e), 448.0f);
    QCOMPARE(e4m3ToFloat(floatToE4m3(1e9f)), 448.0f);  // saturates
    QCOMPARE(e4m3ToFloat(0x01), 0x1.0p-9f);            // smallest subnormal
    for (int c = 0; c < 16; ++c)
        QCOMPARE(static_cast<int>(floatToE2m1(e2m1ToFloat(static_cast<std::uint8_t>(c)))), c);  // -0 (code 8) keeps its sign
}

void TestEngine::quantisedMatricesStayClose_data()
{
    QTest::addColumn<int>("format");
    QTest::addColumn<double>("bound");  // max |q - v| / max |v| over the matrix
    QTest::newRow("f32") << static_cast<int>(WeightFormat::f32) << 0.0;
    QTest::newRow("bf16") << static_cast<int>(WeightFormat::bf16) << 1.0 / 256;
    QTest::newRow("fp8") << static_cast<int>(WeightFormat::fp8_block) << 1.0 / 16;
    QTest::newRow("mxfp4") << static_cast<int>(WeightFormat::mxfp4) << 0.34;
}

void TestEngine::quantisedMatricesStayClose()
{
    QFETCH(int, format);
    QFETCH(double, bound);
    const int R = 200, C = 160;  // more than one 128 x 128 block each way
    std::vector<float> v(static_cast<std::size_t>(R * C));
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = hashUniform(3, i) * (1.0f + static_cast<float>(i % 7));
    const QuantMatrix q(static_cast<WeightFormat>(format), R, C, v);
    const auto back = q.dequantAll();
    double worst = 0;
    for (int r = 0; r < R; ++r) {
        // Relative to the largest value of the element's own scale block (row block for MX).
        for (int c = 0; c < C; ++c) {
            const auto i = static_cast<std::size_t>(r * C + c);
            worst = std::max(worst, std::fabs(static_cast<double>(back[i]) - v[i]) / 7.0);
        }
    }
    QVERIFY2(worst <= bound, qPrintable(QString::number(worst)));
    if (format != static_cast<int>(WeightFormat::f32))
        QVERIFY(worst > 0);  // it did quantise
    // Storage as the format says: elements plus scales.
    const std::size_t elems = static_cast<std::size_t>(R) * C;
    const std::size_t expect = format == static_cast<int>(WeightFormat::f32) ? elems * 4
        : format == static_cast<int>(WeightFormat::bf16)                    ? elems * 2
        : format == static_cast<int>(WeightFormat::fp8_block)               ? elems + 2 * 2 * 4
                                                                            : elems / 2 + static_cast<std::size_t>(R) * (C / 32) * 4;
    QCOMPARE(q.bytes(), expect);
}

void TestEngine::seededWeightsDependOnlyOnTheirIndex()
{
    const LayerShape s = layerShape(smallModel("deepseek"), DType::fp8);
    const FfnWeights a = makeExpertWeights(s, 7, 1, 5);
    const FfnWeights b = makeExpertWeights(s, 7, 1, 5);
    const FfnWeights other = makeExpertWeights(s, 7, 1, 6);
    QCOMPARE(a.gate.dequantAll(), b.gate.dequantAll());
    QVERIFY(a.gate.dequantAll() != other.gate.dequantAll());
    QVERIFY(a.down.dequantAll() != makeExpertWeights(s, 7, 2, 5).down.dequantAll());  // another layer
    QVERIFY(a.up.dequantAll() != makeExpertWeights(s, 8, 1, 5).up.dequantAll());    // another seed
}

void TestEngine::vectorKernelsAgreeWithPortable()
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
    for (Kernel k : {Kernel::avx2, Kernel::avx512, Kernel::avx512bf16}) {
        if (!kernelSupported(k)) {
            qInfo("%s: not on this CPU", toString(k));
            continue;
        }
        for (WeightFormat f : {WeightFormat::f32, WeightFormat::bf16, WeightFormat::fp8_block, WeightFormat::mxfp4}) {
            const QuantMatrix w = QuantMatrix::seeded(f, R, C, 9, 0.3f);
            const double bound = roundsToBf16(k, w) ? std::ldexp(1.0, -8) + 1e-6 : 1e-6;
            QCOMPARE(roundsToBf16(k, w), k == Kernel::avx512bf16 && f != WeightFormat::f32);
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
    for (Kernel k : {Kernel::portable, Kernel::avx2, Kernel::avx512, Kernel::avx512bf16}) {
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
    for (Kernel k : {Kernel::avx512, Kernel::avx512bf16}) {
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

void TestEngine::kernelNamesAreRead()
{
    // The names MOEX_KERNEL and bench engine --kernel document, and the ones reports print.
    const std::pair<const char*, Kernel> named[] = {{"portable", Kernel::portable},
                                                    {"avx2", Kernel::avx2},
                                                    {"avx2+fma", Kernel::avx2},
                                                    {"avx512", Kernel::avx512},
                                                    {"avx512-bf16", Kernel::avx512bf16}};
    for (const auto& [name, kernel] : named) {
        Kernel k = name == std::string("portable") ? Kernel::avx512 : Kernel::portable;
        QVERIFY2(kernelFromString(name, k), name);
        QCOMPARE(k, kernel);
        Kernel back = Kernel::portable;
        QVERIFY(kernelFromString(toString(kernel), back));
        QCOMPARE(back, kernel);
    }
    Kernel k = Kernel::portable;
    for (const char* wrong : {"avx", "AVX2", "avx512bf16", ""})
        QVERIFY2(!kernelFromString(wrong, k), wrong);
}

void TestEngine::blockedTilesEqualTheOneRowKernel()
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

void TestEngine::bf16KernelIsExactOnBf16Values()
{
    // Where every number is already a bf16 (bf16 weights, MXFP4's power-of-two-scaled values, tokens
    // rounded beforehand), the bf16 kernel rounds nothing: only its float32 sums differ from the
    // portable kernel's. A column out of place, a lost block scale or a wrong nibble order moves a
    // result by far more than 1e-6 of the sum of |products|.
    if (!kernelSupported(Kernel::avx512bf16))
        QSKIP("this CPU has no AVX-512-BF16: the kernel cannot run here (avx512 and avx2 are tested above)");
    const int R = 7, C = 4 * 128;
    std::vector<float> x(static_cast<std::size_t>(9 * C));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = bf16ToFloat(floatToBf16(hashUniform(11, i)));
    for (WeightFormat f : {WeightFormat::bf16, WeightFormat::mxfp4}) {
        const QuantMatrix w = QuantMatrix::seeded(f, R, C, 21, 0.5f);
        const auto dense = w.dequantAll();
        std::vector<float> scratch, a(9), b(9);
        for (int r = 0; r < R; ++r) {
            rowDotsWith(Kernel::portable, w, r, x.data(), 9, C, a.data(), scratch);
            rowDotsWith(Kernel::avx512bf16, w, r, x.data(), 9, C, b.data(), scratch);
            for (int t = 0; t < 9; ++t) {
                double mag = 0;
                for (int c = 0; c < C; ++c)
                    mag += std::fabs(dense[static_cast<std::size_t>(r * C + c)] * x[static_cast<std::size_t>(t * C + c)]);
                QVERIFY2(std::fabs(a[static_cast<std::size_t>(t)] - b[static_cast<std::size_t>(t)]) <= 1e-6 * mag,
                         qPrintable(QStringLiteral("%1 row %2 token %3: %4 vs %5").arg(QLatin1String(toString(f))).arg(r).arg(t)
                                        .arg(a[static_cast<std::size_t>(t)]).arg(b[static_cast<std::size_t>(t)])));
            }
        }
    }
}

void TestEngine::routersFollowTheirFamily()
{
    // One token routed by each family: four distinct experts, and weights that sum
    // to 1 (renormalised softmax, gpt-oss), to the top-k's share (no renormalisation), or to
    // routed_scaling_factor (sigmoid, renormalised then scaled).
    for (const char* fam : {"mixtral", "qwen-no-renorm", "gpt-oss", "deepseek"}) {
        const LayerShape s = layerShape(smallModel(fam), DType::fp32);
        const RouterWeights w = makeRouterWeights(s, 7, 1);
        std::vector<float> x(64);
        makeTokenHidden(7, 0, 3, 64, x.data());
        std::vector<int> ids(4);
        std::vector<float> wt(4);
        route(s, w, x.data(), 1, ids.data(), wt.data());
        QCOMPARE(std::set<int>(ids.begin(), ids.end()).size(), std::size_t{4});
        const std::string family = fam;
        // Top-k order is the weights' order, except for sigmoid: it selects on score + correction
        // bias and weighs with the unbiased score.
        for (int j = 1; j < 4 && family != "deepseek"; ++j)
            QVERIFY(wt[static_cast<std::size_t>(j - 1)] >= wt[static_cast<std::size_t>(j)]);
        const float sum = wt[0] + wt[1] + wt[2] + wt[3];
        if (family == "qwen-no-renorm")
            QVERIFY(sum < 0.999f);
        else if (family == "deepseek")
            QVERIFY(std::fabs(sum - 2.5f) < 1e-5f);
        else
            QVERIFY(std::fabs(sum - 1.0f) < 1e-6f);
    }
}

void TestEngine::groupLimitedRoutingStaysInItsGroups()
{
    const LayerShape s = layerShape(smallModel("deepseek"), DType::fp32);  // 4 groups of 4, 2 kept
    const RouterWeights w = makeRouterWeights(s, 7, 1);
    const int T = 200;
    std::vector<float> x(static_cast<std::size_t>(T) * 64);
    for (int t = 0; t < T; ++t)
        makeTokenHidden(7, 0, t, 64, x.data() + static_cast<std::size_t>(t) * 64);
    std::vector<int> ids(static_cast<std::size_t>(T) * 4);
    std::vector<float> wt(ids.size());
    route(s, w, x.data(), T, ids.data(), wt.data());
    std::set<int> groupsSeen;
    for (int t = 0; t < T; ++t) {
        std::set<int> groups;
        for (int j = 0; j < 4; ++j)
            groups.insert(ids[static_cast<std::size_t>(t * 4 + j)] / 4);
        QVERIFY2(groups.size() <= 2, qPrintable(QStringLiteral("token %1 uses %2 groups").arg(t).arg(groups.size())));
        groupsSeen.insert(groups.begin(), groups.end());
    }
    QCOMPARE(groupsSeen.size(), std::size_t{4});  // the limit is per token, not a fixed pair
}

void TestEngine::ranksGiveTheOneRankOutput_data()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("redundant");
    for (const char* fam : {"mixtral", "qwen-no-renorm", "deepseek", "gpt-oss", "nemotron", "gemma"})
        for (DType t : {DType::fp32, DType::bf16, DType::fp8, DType::mxfp4})
            QTest::addRow("%s %s", fam, std::string(toString(t)).c_str())
                << QString::fromLatin1(fam) << static_cast<int>(t) << QStringLiteral("contiguous") << 0;
    // Replicas: a token's expert may run on another rank's copy.
    QTest::newRow("deepseek fp8 eplb +8 replicas") << QStringLiteral("deepseek") << static_cast<int>(DType::fp8)
                                                   << QStringLiteral("eplb") << 8;
}

void TestEngine::ranksGiveTheOneRankOutput()
{
    QFETCH(QString, family);
    QFETCH(int, dtype);
    QFETCH(QString, strategy);
    QFETCH(int, redundant);
    const ModelSpec m = smallModel(family.toStdString());
    const EngineConfig cfg = smallConfig(m);
    StepMetrics metrics;
    std::vector<float> one, many;
    EpEngine single(m, static_cast<DType>(dtype), placementFor(m, 1), cfg);
    const double c1 = single.step(2, metrics, &one);
    QVERIFY(std::isfinite(c1) && c1 != 0);
    for (int ranks : {2, 3, 4}) {
        if (strategy != QLatin1String("contiguous") && (m.routed_experts + redundant) % ranks != 0)
            continue;
        EpEngine ep(m, static_cast<DType>(dtype), placementFor(m, ranks, strategy.toStdString(), redundant), cfg);
        QCOMPARE(ep.ranks(), ranks);
        const double c = ep.step(2, metrics, &many);
        QCOMPARE(c, c1);      // bit for bit
        QCOMPARE(many, one);  // every element
    }
    // Another step gives other hidden states, hence another checksum.
    QVERIFY(single.step(3, metrics) != c1);
}

void TestEngine::sharedWeightsRunEveryLayerOnTheFirstOnes()
{
    // eplb lays each layer out differently; with shared weights every layer takes the first one's
    // experts and layout, so ranks still agree, and each layer is the first layer's computation.
    const ModelSpec m = smallModel("deepseek");
    EngineConfig cfg = smallConfig(m);
    cfg.shared_weights = true;
    StepMetrics metrics;
    std::vector<float> one, many;
    EpEngine single(m, DType::bf16, placementFor(m, 1), cfg);
    const double c1 = single.step(1, metrics, &one);
    EpEngine four(m, DType::bf16, placementFor(m, 4, "eplb", 8), cfg);
    QCOMPARE(four.step(1, metrics, &many), c1);
    QCOMPARE(many, one);
    // Half the weights of own weights for two layers.
    cfg.shared_weights = false;
    EpEngine own(m, DType::bf16, placementFor(m, 4, "eplb", 8), cfg);
    QCOMPARE(four.weightBytes() * 2, own.weightBytes());
    QVERIFY(own.step(1, metrics) != c1);  // the second layer's own weights differ
}

void TestEngine::metricsAreMeasuredAndConsistent()
{
    const ModelSpec m = smallModel("deepseek");
    const int ranks = 4;
    EpEngine ep(m, DType::bf16, placementFor(m, ranks), smallConfig(m, 40));
    StepMetrics s;
    ep.step(0, s);
    QCOMPARE(s.source, std::string("cpu"));
    QCOMPARE(s.num_gpus, ranks);
    QCOMPARE(static_cast<int>(s.layers.size()), 2);
    std::int64_t tokens = 0;
    for (const auto& g : s.gpus)
        tokens += g.tokens;
    QCOMPARE(tokens, std::int64_t{40});
    for (const auto& l : s.layers) {
        // Every token chose k experts; ranks computed exactly those pairs (no replicas here).
        std::int64_t pairs = 0, computed = 0;
        for (auto v : l.expert_load)
            pairs += v;
        for (auto v : l.gpu_load)
            computed += v;
        QCOMPARE(pairs, std::int64_t{40 * 4});
        QCOMPARE(computed, pairs);
        // Contiguous placement: rank r holds experts 4r..4r+3, so its load is theirs.
        for (int r = 0; r < ranks; ++r) {
            std::int64_t mine = 0;
            for (int e = 4 * r; e < 4 * r + 4; ++e)
                mine += l.expert_load[static_cast<std::size_t>(e)];
            QCOMPARE(l.gpu_load[static_cast<std::size_t>(r)], mine);
        }
        QVERIFY(l.time_us > 0 && l.time_us >= l.compute_us);
    }
    // Traffic: rows between rank pairs, both ways, H floats each; the total is every routed pair twice.
    double bytes = 0;
    for (double b : s.traffic)
        bytes += b;
    QCOMPARE(bytes, 2.0 * 2 * 40 * 4 * 64 * 4);
    QVERIFY(s.summary.step_time_us > 0);
    QCOMPARE(s.summary.step_time_us, s.layers[0].time_us + s.layers[1].time_us);
    QVERIFY(s.sim_wall_us >= s.summary.step_time_us * 0.5);
}

void TestEngine::matchesNumpyReference_data()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<bool>("bf16Products");
    QTest::addColumn<double>("tolerance");
    // The reference runs in float64 on the weights the engine used (dequantised), so with float32
    // products the only difference is the engine's float32 arithmetic: about 1e-7 per operation, a
    // few 1e-7 after the sums of 64 and 32 products. 1e-5 normwise leaves margin and still catches
    // any semantic error (a wrong weight, a missing bias or renormalisation moves the output by
    // 1e-2 or more). Quantised weights change nothing here: both sides see the same dequantised values.
    for (const char* fam : {"mixtral", "qwen-no-renorm", "deepseek", "gpt-oss", "nemotron", "gemma"}) {
        QTest::addRow("%s fp32", fam) << QString::fromLatin1(fam) << static_cast<int>(DType::fp32) << false << 1e-5;
        QTest::addRow("%s fp8", fam) << QString::fromLatin1(fam) << static_cast<int>(DType::fp8) << false << 1e-5;
    }
    QTest::newRow("gpt-oss mxfp4") << QStringLiteral("gpt-oss") << static_cast<int>(DType::mxfp4) << false << 1e-5;
    // With bf16 products (the avx512-bf16 kernel) the engine rounds the tokens, the activations
    // between up and down, and fp8 weights times their block scale to bf16: 2^-9 relative at most
    // per rounding, a few 1e-3 normwise through the two matrices of an expert (measured 2.3e-3 to
    // 2.8e-3 on these rows, the same on every run: the data are seeded). 5e-3 leaves margin and stays
    // below what a semantic error moves.
    for (const char* fam : {"mixtral", "deepseek", "gpt-oss", "nemotron"})
        for (DType t : {DType::bf16, DType::fp8})
            QTest::addRow("%s %s bf16 products", fam, std::string(toString(t)).c_str()) << QString::fromLatin1(fam) << static_cast<int>(t) << true << 5e-3;
    QTest::newRow("gpt-oss mxfp4 bf16 products") << QStringLiteral("gpt-oss") << static_cast<int>(DType::mxfp4) << true << 5e-3;
}

void TestEngine::matchesNumpyReference()
{
    QFETCH(QString, family);
    QFETCH(int, dtype);
    QFETCH(bool, bf16Products);
    QFETCH(double, tolerance);
    if (bf16Products && !kernelSupported(Kernel::avx512bf16))
        QSKIP("this CPU has no AVX-512-BF16: bf16 products cannot run here (the float32 rows run)");
    const Kernel before = activeKernel();
    const Kernel float32 = kernelSupported(Kernel::avx512) ? Kernel::avx512 : kernelSupported(Kernel::avx2) ? Kernel::avx2 : Kernel::portable;
    useKernel(bf16Products ? Kernel::avx512bf16 : float32);
    const auto restore = qScopeGuard([before] { useKernel(before); });
    const QString python = QStringLiteral(MOEX_DEBIAN_PYTHON);
    if (!QFileInfo::exists(python))
        QFAIL("Debian's python3 (with python3-numpy) is needed for the reference: .ci/setup installs it");
    const ModelSpec m = smallModel(family.toStdString());
    EngineConfig cfg = smallConfig(m, 13);
    cfg.layers = {m.moe_layers.back()};
    const int decoder = cfg.layers.front(), ordinal = 1;
    EpEngine ep(m, static_cast<DType>(dtype), placementFor(m, 2), cfg);
    StepMetrics metrics;
    std::vector<float> output;
    const int step = 5;
    ep.step(step, metrics, &output);

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString d = dir.path();
    const LayerShape& s = ep.shape();
    std::vector<float> hidden(static_cast<std::size_t>(cfg.tokens) * static_cast<std::size_t>(s.hidden));
    for (int t = 0; t < cfg.tokens; ++t)
        makeTokenHidden(cfg.seed, step * 4096 + ordinal, t, s.hidden, hidden.data() + static_cast<std::size_t>(t) * static_cast<std::size_t>(s.hidden));
    writeF32(d, "hidden", hidden);
    writeF32(d, "output", output);
    const RouterWeights rw = makeRouterWeights(s, cfg.seed, decoder);
    writeF32(d, "router", rw.weight);
    if (!rw.bias.empty())
        writeF32(d, "router_bias", rw.bias);
    if (!rw.correction.empty())
        writeF32(d, "correction", rw.correction);
    for (int e = 0; e < s.experts; ++e) {
        const FfnWeights w = makeExpertWeights(s, cfg.seed, decoder, e);
        const std::string p = "e" + std::to_string(e) + "_";
        if (isGated(s.activation))
            writeF32(d, p + "gate", w.gate.dequantAll());
        else
            QVERIFY(w.gate.bytes() == 0);  // a non-gated expert holds no gate matrix
        writeF32(d, p + "up", w.up.dequantAll());
        writeF32(d, p + "down", w.down.dequantAll());
        if (!w.gate_bias.empty()) {
            writeF32(d, p + "gate_bias", w.gate_bias);
            writeF32(d, p + "up_bias", w.up_bias);
            writeF32(d, p + "down_bias", w.down_bias);
        }
    }
    if (s.shared_inter > 0) {
        const FfnWeights w = makeSharedWeights(s, cfg.seed, decoder);
        if (isGated(s.activation))
            writeF32(d, "shared_gate", w.gate.dequantAll());
        writeF32(d, "shared_up", w.up.dequantAll());
        writeF32(d, "shared_down", w.down.dequantAll());
    }
    const char* router = s.router == RouterKind::softmax ? "softmax" : s.router == RouterKind::gpt_oss ? "gpt_oss" : "sigmoid";
    const nlohmann::json meta = {{"name", m.name + " " + toString(s.format)}, {"hidden", s.hidden}, {"inter", s.inter},
                                 {"experts", s.experts}, {"tokens", cfg.tokens}, {"topk", s.topk}, {"router", router},
                                 {"norm_topk_prob", s.norm_topk_prob}, {"scaling", s.scaling}, {"groups", s.groups},
                                 {"topk_groups", s.topk_groups}, {"shared_inter", s.shared_inter},
                                 {"swiglu_limit", s.swiglu_limit}, {"swiglu_alpha", s.swiglu_alpha}, {"tolerance", tolerance},
                                 {"activation", std::string(toString(s.activation))}};
    std::ofstream(d.toStdString() + "/meta.json") << meta.dump();

    QProcess py;
    py.start(python, {QStringLiteral(MOEX_SOURCE_DIR "/tests/reference/moe_reference.py"), d});
    QVERIFY(py.waitForFinished(120000));
    const QString said = QString::fromUtf8(py.readAllStandardOutput() + py.readAllStandardError()).trimmed();
    qInfo("%s", qPrintable(said));
    QVERIFY2(py.exitStatus() == QProcess::NormalExit && py.exitCode() == 0, qPrintable(said));

    // The check can fail: a wrong output (one element nudged by 1%) is caught.
    output[7] *= 1.5f;
    output[8] += 0.5f;
    writeF32(d, "output", output);
    py.start(python, {QStringLiteral(MOEX_SOURCE_DIR "/tests/reference/moe_reference.py"), d});
    QVERIFY(py.waitForFinished(120000));
    QCOMPARE(py.exitCode(), 1);
}

// An edit that keeps the routing (overlap, precision, placement) keeps the steps: the source is not redrawn;
// one that changes it (the seed) draws new ones.
void TestEngine::simSourceKeepsItsRoutingAcrossEdits()
{
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    auto source = makeSource(s);
    const Placement p = resolvePlacement(s);
    StepMetrics first, again, reseeded;
    source->configure(s, p);
    source->next(first);
    source->next(first);  // the second step of the window
    Scenario edited = s;
    edited.overlap = s.overlap == Overlap::none ? Overlap::two_batch : Overlap::none;
    source->configure(edited, p);
    source->next(again);
    source->next(again);
    QCOMPARE(again.layers[0].expert_load, first.layers[0].expert_load);
    QVERIFY(again.summary.step_time_us != first.summary.step_time_us);  // the edit itself took effect
    Scenario seeded = edited;
    seeded.workload.routing.seed += 1;
    source->configure(seeded, p);
    source->next(reseeded);
    source->next(reseeded);
    QVERIFY(reseeded.layers[0].expert_load != first.layers[0].expert_load);
    // A refused configuration leaves the running one and its place in the steps alone.
    Placement wrong = p;
    wrong.layers.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::exception, source->configure(s, wrong));
    StepMetrics third;
    source->next(third);
    QCOMPARE(third.step, 2);
}

void TestEngine::runApiSelectsTheBackend()
{
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    // The analytical model by default.
    QCOMPARE(makeSource(s)->name(), std::string("sim"));
    // The engine on a scaled-down Mixtral so the test stays fast; 1 and 4 ranks agree.
    s.model.hidden_size = 64;
    s.model.moe_intermediate_size = 32;
    s.engine.backend = Backend::cpu;
    s.engine.layers = {0, 5};
    s.engine.tokens = 16;
    double checksum = 0;
    for (int ranks : {1, 4}) {
        s.engine.ranks = ranks;
        const RunResult r = runScenario(s, 2, {}, 1);
        QCOMPARE(r.source, std::string("cpu"));
        QVERIFY(r.measured);
        QCOMPARE(static_cast<int>(r.steps.size()), 2);
        QCOMPARE(r.last.num_gpus, ranks);
        QCOMPARE(r.last.step, 1);  // warm-up not counted
        QVERIFY(r.mean.moe_time_us > 0);
        if (ranks == 1)
            checksum = r.checksum;
        else
            QCOMPARE(r.checksum, checksum);
    }
    // A new layout through setPlacement: the ranks rebuild their experts; the output (a function of
    // the experts and tokens, not of where they run) stays, the per-rank loads follow the layout.
    s.engine.ranks = 4;
    auto source = makeSource(s);
    PlacementRequest rq;
    rq.strategy = "contiguous";
    rq.num_experts = 8;
    rq.num_gpus = 4;
    rq.num_layers = s.model.numMoeLayers();
    const Placement contiguous = makePlacement(rq);
    source->configure(s, contiguous);
    StepMetrics before, after;
    source->next(before);
    Placement swapped = contiguous;
    for (auto& layer : swapped.layers)
        std::swap(layer.gpu_slots[0][0], layer.gpu_slots[3][1]);  // experts 0 and 7 trade ranks
    source->setPlacement(swapped, s.speeds);
    source->repeat(after);
    QCOMPARE(after.step, before.step);
    QVERIFY(after.layers[0].gpu_load != before.layers[0].gpu_load || before.layers[0].expert_load[0] == before.layers[0].expert_load[7]);
    const double c = source->checksum();
    source->setPlacement(contiguous, s.speeds);
    source->repeat(after);
    QCOMPARE(source->checksum(), c);
    QCOMPARE(after.layers[0].gpu_load, before.layers[0].gpu_load);
}

void TestEngine::workloadRoutingGivesTheScenarioLoads()
{
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    auto routing = makeRoutingSource(s);
    startRunWindow(*routing);  // the step a run shows first
    RoutingSample sample;
    routing->next(sample);
    const int E = s.model.routed_experts, K = s.model.experts_per_token;
    for (std::int64_t T : {std::int64_t{16}, std::int64_t{37}}) {
        for (int layer : {0, 7}) {
            const auto ids = forcedChoices(sample, layer, T, K);
            QCOMPARE(static_cast<std::int64_t>(ids.size()), T * K);
            std::vector<std::int64_t> mine(static_cast<std::size_t>(E), 0);
            for (std::int64_t t = 0; t < T; ++t) {
                std::set<int> distinct;
                for (int j = 0; j < K; ++j) {
                    const int e = ids[static_cast<std::size_t>(t * K + j)];
                    QVERIFY(e >= 0 && e < E);
                    distinct.insert(e);
                    ++mine[static_cast<std::size_t>(e)];
                }
                QCOMPARE(static_cast<int>(distinct.size()), K);  // a token picks an expert once
            }
            // Each expert's share of the pairs is the sample's, within the rounding of one pair.
            std::vector<double> theirs(static_cast<std::size_t>(E), 0.0);
            double total = 0;
            const auto counts = sample.layer(layer);
            for (int src = 0; src < sample.num_gpus; ++src)
                for (int e = 0; e < E; ++e) {
                    theirs[static_cast<std::size_t>(e)] += counts[static_cast<std::size_t>(src * E + e)];
                    total += counts[static_cast<std::size_t>(src * E + e)];
                }
            for (int e = 0; e < E; ++e)
                QVERIFY2(std::fabs(static_cast<double>(mine[static_cast<std::size_t>(e)]) - theirs[static_cast<std::size_t>(e)] / total * static_cast<double>(T * K)) < 1.0,
                         qPrintable(QStringLiteral("T %1 layer %2 expert %3").arg(T).arg(layer).arg(e)));
        }
    }
    // Through the run API: the engine's expert loads are the forced ones, the same on 1 and 4 ranks.
    s.model.hidden_size = 64;
    s.model.moe_intermediate_size = 32;
    s.engine.backend = Backend::cpu;
    s.engine.workload_routing = true;
    s.engine.layers = {0, 7};
    s.engine.tokens = 32;
    double checksum = 0;
    for (int ranks : {1, 4}) {
        s.engine.ranks = ranks;
        const RunResult r = runScenario(s, 1);
        QVERIFY(r.detail.find("workload routing") != std::string::npos);
        for (std::size_t li = 0; li < 2; ++li) {
            const auto want = forcedChoices(sample, li == 0 ? 0 : 7, 32, K);
            std::vector<std::int64_t> load(static_cast<std::size_t>(E), 0);
            for (int e : want)
                ++load[static_cast<std::size_t>(e)];
            QCOMPARE(r.last.layers[li].expert_load, load);
        }
        if (ranks == 1)
            checksum = r.checksum;
        else
            QCOMPARE(r.checksum, checksum);
    }
}

void TestEngine::badEngineInputIsLocated()
{
    auto message = [](Scenario s) -> std::string {
        try {
            runScenario(s, 1);
        } catch (const InputError& e) {
            return e.what();
        }
        return "(accepted)";
    };
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    s.model.hidden_size = 64;
    s.model.moe_intermediate_size = 32;
    s.engine.backend = Backend::cpu;
    s.engine.ranks = 9;  // 8 experts
    QVERIFY2(message(s).find("engine.ranks = 9") != std::string::npos, message(s).c_str());
    s.engine.ranks = 2;
    s.engine.memory_gb = 1e-6;  // a kilobyte: nothing fits
    const std::string tooBig = message(s);
    QVERIFY2(tooBig.find("weights need") != std::string::npos && tooBig.find("engine.memory_gb") != std::string::npos,
             tooBig.c_str());
    s.engine.memory_gb = 0;
    s.engine.backend = Backend::cuda;
    QVERIFY2(message(s).find("no CUDA engine backend") != std::string::npos, message(s).c_str());
    // From YAML: the error points at engine.backend's line.
    const std::string yaml = "name: x\nmodel: " MOEX_SOURCE_DIR "/samples/models/mixtral-8x7b.yaml\n"
                             "topology: {builtin: hgx-h100}\nworkload: {phase: decode, tokens_per_gpu: 8}\n"
                             "engine:\n  backend: remote\n  host: 127.0.0.1:1\n";
    const Scenario remote = loadScenarioText(yaml, "/tmp/engine-test.yaml");
    const std::string where = message(remote);
    QVERIFY2(where.find("engine-test.yaml:6:") != std::string::npos, where.c_str());
}

QTEST_GUILESS_MAIN(TestEngine)
#include "tst_engine.moc"
