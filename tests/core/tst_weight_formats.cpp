// The CPU engine's number formats (issue 15): bf16 rounding, fp8-e4m3 and e2m1 codes, quantised
// matrices against the values they hold, and seeded weights, each by its format's rules.
// tst_engine_kernels checks the kernels that multiply them.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "engine/moe_layer.h"
#include "engine/quant_matrix.h"

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

class TestWeightFormats : public QObject {
    Q_OBJECT
private slots:
    void bf16RoundsToNearestEven();
    void e4m3CodesRoundTrip();
    void quantisedMatricesStayClose_data();
    void quantisedMatricesStayClose();
    void seededWeightsDependOnlyOnTheirIndex();
    void e2m1IsTheNearestMagnitude();
    void seededMatricesFollowTheFormatsRules_data();
    void seededMatricesFollowTheFormatsRules();
};

void TestWeightFormats::bf16RoundsToNearestEven()
{
    QCOMPARE(bf16ToFloat(floatToBf16(1.0f)), 1.0f);
    // 1 + 2^-8 lies exactly between 1 and 1 + 2^-7: ties to even (1.0).
    QCOMPARE(bf16ToFloat(floatToBf16(1.0f + 0x1.0p-8f)), 1.0f);
    QCOMPARE(bf16ToFloat(floatToBf16(1.0f + 0x1.8p-8f)), 1.0f + 0x1.0p-7f);
    QVERIFY(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
}

void TestWeightFormats::e4m3CodesRoundTrip()
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

void TestWeightFormats::quantisedMatricesStayClose_data()
{
    QTest::addColumn<int>("format");
    QTest::addColumn<double>("bound");  // max |q - v| / max |v| over the matrix
    QTest::newRow("f32") << static_cast<int>(WeightFormat::f32) << 0.0;
    QTest::newRow("bf16") << static_cast<int>(WeightFormat::bf16) << 1.0 / 256;
    QTest::newRow("fp8") << static_cast<int>(WeightFormat::fp8_block) << 1.0 / 16;
    QTest::newRow("mxfp4") << static_cast<int>(WeightFormat::mxfp4) << 0.34;
}

void TestWeightFormats::quantisedMatricesStayClose()
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

void TestWeightFormats::seededWeightsDependOnlyOnTheirIndex()
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

void TestWeightFormats::e2m1IsTheNearestMagnitude()
{
    // Against the nearest magnitude found in double precision (exact for these floats), a tie to
    // the smaller; above 6 the largest, 6.
    const double mags[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    const auto nearest = [&mags](float v) {
        const double a = std::fabs(static_cast<double>(v));
        int best = 0;
        for (int i = 1; i < 8; ++i)
            if (std::fabs(mags[i] - a) < std::fabs(mags[best] - a))
                best = i;
        return (std::signbit(v) ? 8 : 0) | (a > 6 ? 7 : best);  // 1e30 - 6 is 1e30 in double too
    };
    std::vector<float> values;
    for (int i = 0; i < 7; ++i) {  // every midpoint, and the floats either side of it
        const auto mid = static_cast<float>((mags[i] + mags[i + 1]) / 2);
        for (float m : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 10.0f)})
            values.insert(values.end(), {m, -m});
    }
    for (std::uint64_t i = 0; i < 20000; ++i)
        values.push_back(hashUniform(13, i) * (i % 2 ? 7.0f : 0.7f));
    values.insert(values.end(), {6.5f, 100.0f, 3e7f, -1e30f, 0.0f, -0.0f});
    for (float v : values)
        QCOMPARE(static_cast<int>(floatToE2m1(v)), nearest(v));
    // No magnitude to be nearest to: a zero that keeps the sign.
    QCOMPARE(static_cast<int>(floatToE2m1(std::numeric_limits<float>::infinity())), 0);
    QCOMPARE(static_cast<int>(floatToE2m1(-std::numeric_limits<float>::infinity())), 8);
    QCOMPARE(static_cast<int>(floatToE2m1(std::nanf(""))), 0);
}

void TestWeightFormats::seededMatricesFollowTheFormatsRules_data()
{
    QTest::addColumn<int>("format");
    QTest::newRow("f32") << static_cast<int>(WeightFormat::f32);
    QTest::newRow("bf16") << static_cast<int>(WeightFormat::bf16);
    QTest::newRow("fp8") << static_cast<int>(WeightFormat::fp8_block);
    QTest::newRow("mxfp4") << static_cast<int>(WeightFormat::mxfp4);
}

void TestWeightFormats::seededMatricesFollowTheFormatsRules()
{
    // seeded() rounds each element straight from its hash: the same storage as the fp32 values
    // quantised whole, and each element and scale as the format defines them (FORMATS.md),
    // restated here: blocks cut short at both edges (300 x 160 is 3 x 2 fp8 blocks, 5 MX blocks a row).
    QFETCH(int, format);
    const auto f = static_cast<WeightFormat>(format);
    const int R = 300, C = 160;
    const float a = 0.3f;
    std::vector<float> v(static_cast<std::size_t>(R) * C);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = a * 1.7320508f * hashUniform(17, i);
    const QuantMatrix seeded = QuantMatrix::seeded(f, R, C, 17, a);
    const QuantMatrix whole(f, R, C, v);
    QVERIFY(std::equal(seeded.storage().begin(), seeded.storage().end(), whole.storage().begin(), whole.storage().end()));
    QVERIFY(std::equal(seeded.scaleStorage().begin(), seeded.scaleStorage().end(), whole.scaleStorage().begin(),
                       whole.scaleStorage().end()));
    const auto at = [&](int r, int c) { return v[static_cast<std::size_t>(r) * C + static_cast<std::size_t>(c)]; };
    for (int r = 0; r < R; ++r) {
        const std::uint8_t* row = seeded.rowData(r);
        for (int c = 0; c < C; ++c) {
            switch (f) {
            case WeightFormat::f32: {
                float got;
                std::memcpy(&got, row + 4 * c, 4);
                QCOMPARE(got, at(r, c));
                break;
            }
            case WeightFormat::bf16: {
                std::uint16_t got;
                std::memcpy(&got, row + 2 * c, 2);
                QCOMPARE(got, floatToBf16(at(r, c)));
                break;
            }
            case WeightFormat::fp8_block: {
                const int r0 = r / 128 * 128, c0 = c / 128 * 128;
                float amax = 0;
                for (int i = r0; i < std::min(R, r0 + 128); ++i)
                    for (int j = c0; j < std::min(C, c0 + 128); ++j)
                        amax = std::max(amax, std::fabs(at(i, j)));
                const float scale = amax / 448.0f;
                QCOMPARE(seeded.rowScales(r)[c / 128], scale);
                QCOMPARE(static_cast<int>(row[c]), static_cast<int>(floatToE4m3(at(r, c) / scale)));
                break;
            }
            case WeightFormat::mxfp4: {
                const int c0 = c / 32 * 32;
                float amax = 0;
                for (int j = c0; j < c0 + 32; ++j)
                    amax = std::max(amax, std::fabs(at(r, j)));
                const float scale = std::ldexp(1.0f, std::ilogb(amax) - 2);
                QCOMPARE(seeded.rowScales(r)[c / 32], scale);
                QCOMPARE(static_cast<int>(c % 2 ? row[c / 2] >> 4 : row[c / 2] & 15), static_cast<int>(floatToE2m1(at(r, c) / scale)));
                break;
            }
            }
        }
    }
}

QTEST_GUILESS_MAIN(TestWeightFormats)
#include "tst_weight_formats.moc"
