// The random draws under the synthetic routing generator, each against its distribution or its
// definition, and each vector kernel (AVX2, AVX-512) against the scalar path it replaces, bit for
// bit: Poisson counts, the clipped binomial's moments, the exponential race that picks routing
// groups, and the counter-based random words. tst_routing_statistics checks what the generator
// makes of them.
#include "workload/random_tables.h"
#include "workload/synthetic_routing.h"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

using namespace moex;

class TestRandomDraws : public QObject {
    Q_OBJECT
private slots:
    void poissonMoments_data();
    void poissonMoments();
    void exponentialTable();
    void clippedBinomialMoments();
    void raceVectorMatchesScalar();
    void raceManyMatchesOneByOne();
    void poissonRowVectorMatchesScalar();
    void poissonRowVectorMatchesScalarAtBoundaries();
    void clippedBinomialManyMatchesOneByOne();
    void counterWordsAreSplitmix();
    void raceIsSequentialChoice();
};

void TestRandomDraws::poissonMoments_data()
{
    QTest::addColumn<double>("mu");
    for (double mu : {0.01, 0.3, 1.0, 3.7, 8.25, 15.9, 16.0, 40.0, 400.0})
        QTest::addRow("mean %g", mu) << mu;
}

void TestRandomDraws::poissonMoments()
{
    // Mean, variance and P(0) of detail::poisson against the Poisson distribution's.
    QFETCH(double, mu);
    detail::Rng rng(5);
    const int n = 400000;
    double sum = 0.0, sq = 0.0;
    int zeros = 0;
    for (int i = 0; i < n; ++i) {
        const double k = detail::poisson(mu, static_cast<std::uint32_t>(rng.next() >> 32));
        sum += k;
        sq += k * k;
        zeros += k == 0.0;
    }
    const double m = sum / n;
    const double var = sq / n - m * m;
    // Standard errors: sqrt(mu / n) for the mean, about mu * sqrt(2 / n) for the variance.
    QVERIFY2(std::abs(m - mu) < 5 * std::sqrt(mu / n) + 1e-3 * mu, qPrintable(QString::number(m)));
    QVERIFY2(std::abs(var - mu) < 6 * mu * std::sqrt(2.0 / n) + 2e-3 + 0.01 * mu, qPrintable(QString::number(var)));
    if (mu < 16.0) {
        const double p0 = std::exp(-mu);
        QVERIFY2(std::abs(zeros / static_cast<double>(n) - p0) < 5 * std::sqrt(p0 * (1 - p0) / n) + 1e-3,
                 qPrintable(QString::number(zeros / static_cast<double>(n))));
    }
}

void TestRandomDraws::clippedBinomialMoments()
{
    // detail::clippedBinomial against the moments of min(X, t) summed from the binomial's pmf
    // (lgamma, exp), for the sub-batches' shapes: one token (t = 1, the closed form's case), a few,
    // and more pairs than the power by squaring takes (n > 1024: exp and log1p).
    struct Shape {
        int n;
        double p;
        int t;
    };
    for (const Shape& c : {Shape{8, 0.01, 1}, Shape{8, 0.3, 1}, Shape{32, 0.05, 4}, Shape{32, 0.2, 4}, Shape{1000, 0.003, 3},
                           Shape{4096, 0.001, 8}, Shape{9, 0.5, 20}}) {
        double m1 = 0, m2 = 0, below = 0;
        for (int k = 0; k <= c.n; ++k) {
            const double pmf = std::exp(std::lgamma(c.n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(c.n - k + 1.0) +
                                        k * std::log(c.p) + (c.n - k) * std::log1p(-c.p));
            const double clipped = std::min(k, c.t);
            m1 += pmf * clipped;
            m2 += pmf * clipped * clipped;
            if (k < c.t)
                below += pmf;
        }
        double g1 = 0, g2 = 0, gBelow = 0;
        detail::clippedBinomial(c.n, c.p, c.t, g1, g2, gBelow);
        const QString what = QStringLiteral("n %1 p %2 t %3: %4 %5 %6 vs %7 %8 %9")
                                 .arg(c.n).arg(c.p).arg(c.t).arg(g1).arg(g2).arg(gBelow).arg(m1).arg(m2).arg(below);
        QVERIFY2(std::abs(g1 - m1) <= 1e-9 * std::max(1.0, m1), qPrintable(what));
        QVERIFY2(std::abs(g2 - m2) <= 1e-9 * std::max(1.0, m2), qPrintable(what));
        QVERIFY2(std::abs(gBelow - below) <= 1e-9, qPrintable(what));
    }
    QCOMPARE(detail::powerBySquaring(0.5, 0), 1.0);
    QCOMPARE(detail::powerBySquaring(0.5, 10), std::ldexp(1.0, -10));
    QCOMPARE(detail::powerBySquaring(3.0, 5), 243.0);
}

void TestRandomDraws::exponentialTable()
{
    // The race's exponentials: mean 1, and P(E > 1) = 1/e.
    const detail::RandomTables& t = detail::RandomTables::get();
    double sum = 0.0;
    int above = 0;
    for (std::uint32_t v = 0; v < 65536; ++v) {
        const float e = t.exponential16(v);
        QVERIFY(e >= 0.0f && std::isfinite(e));
        sum += e;
        above += e > 1.0f;
    }
    QVERIFY2(std::abs(sum / 65536 - 1.0) < 1e-3, qPrintable(QString::number(sum / 65536)));
    QVERIFY2(std::abs(above / 65536.0 - std::exp(-1.0)) < 1e-4, qPrintable(QString::number(above / 65536.0)));
    for (std::uint32_t v = 1; v < 65536; ++v)
        QVERIFY(t.exponential16(v) >= t.exponential16(v - 1));
}

void TestRandomDraws::raceVectorMatchesScalar()
{
    // The AVX2 race gives the scalar one's mask for every draw, weightless groups and exact ties
    // (equal weights, equal random bits) included.
    if (!detail::race8HasAvx2())
        QSKIP("this CPU has no AVX2");
    const detail::RandomTables& t = detail::RandomTables::get();
    detail::Rng rng(9);
    for (int i = 0; i < 200000; ++i) {
        float inverse[8], offset[8];
        for (int q = 0; q < 8; ++q) {
            const std::uint64_t r = rng.next();
            const int kind = static_cast<int>(r % 8);
            inverse[q] = kind == 0 ? 0.0f : kind == 1 ? 4.0f : static_cast<float>(1.0 / (0.01 + rng.uniform()));
            offset[q] = kind == 0 ? 3.0e38f : 0.0f;
        }
        std::uint64_t r0 = rng.next(), r1 = rng.next();
        if (i % 16 == 0)  // equal bits in every lane: ties wherever the weights are equal
            r1 = r0 = (r0 & 0xffffu) * 0x0001000100010001ULL;
        const int count = 1 + static_cast<int>(rng.below(7));
        const std::uint64_t v = detail::race8(t.exponential, r0, r1, inverse, offset, count, true);
        const std::uint64_t scalar = detail::race8(t.exponential, r0, r1, inverse, offset, count, false);
        QCOMPARE(v, scalar);
        QCOMPARE(std::popcount(scalar), count);
    }
}

void TestRandomDraws::raceManyMatchesOneByOne()
{
    // The batched race (every sub-batch of a source in one call) gives race8's mask for each
    // sub-batch, on both paths, ties included (equal bits in every lane of some sub-batches).
    const detail::RandomTables& t = detail::RandomTables::get();
    detail::Rng rng(11);
    for (int source = 0; source < 2000; ++source) {
        float inverse[8], offset[8];
        for (int q = 0; q < 8; ++q) {
            const int kind = static_cast<int>(rng.below(6));
            inverse[q] = kind == 0 ? 0.0f : kind == 1 ? 2.0f : static_cast<float>(1.0 / (0.01 + rng.uniform()));
            offset[q] = kind == 0 ? 3.0e38f : 0.0f;
        }
        const int n = 1 + static_cast<int>(rng.below(40));
        const int count = 1 + static_cast<int>(rng.below(7));
        std::vector<std::uint64_t> words(2 * static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < words.size(); i += 2) {
            words[i] = rng.next();
            words[i + 1] = rng.next();
            if (rng.below(5) == 0)  // equal bits in every lane: ties wherever the weights are equal
                words[i] = words[i + 1] = (words[i] & 0xffffu) * 0x0001000100010001ULL;
        }
        for (const bool vector : {false, true}) {
            if (vector && !detail::race8HasAvx2())
                continue;
            std::vector<std::uint64_t> masks(static_cast<std::size_t>(n), 0);
            detail::race8Many(t.exponential, words.data(), n, inverse, offset, count, vector, masks.data());
            for (int b = 0; b < n; ++b) {
                const auto i = static_cast<std::size_t>(b);
                const std::uint64_t one = detail::race8(t.exponential, words[2 * i], words[2 * i + 1], inverse, offset,
                                                        count, false);
                QCOMPARE(masks[i], one);
                QCOMPARE(std::popcount(one), count);
            }
        }
    }
}

void TestRandomDraws::poissonRowVectorMatchesScalar()
{
    // The AVX-512 draws give the scalar ones' counts and sum: rows of every length up to 40 (a
    // part-filled last block), means 0, negative, NaN, tiny, on both sides of the table's end
    // (16: the scalar normal approximation takes over), clipped experts skipped, caps from 1,
    // and the largest uniform (the CDF walk to its end).
    if (!detail::poissonRowHasAvx512())
        QSKIP("this CPU has no AVX-512");
    detail::Rng rng(21);
    long draws = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        const int n = 1 + static_cast<int>(rng.below(40));
        std::vector<double> mu(static_cast<std::size_t>(n)), skip(static_cast<std::size_t>(n));
        std::vector<std::uint32_t> bits(static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < mu.size(); ++i) {
            const std::uint32_t kind = rng.below(16);
            mu[i] = kind == 0 ? 0.0
                    : kind == 1 ? -1.0
                    : kind == 2 ? std::nan("")
                    : kind == 3 ? 1e-6 * rng.uniform()
                    : kind == 4 ? 15.9 + 0.2 * rng.uniform()
                    : kind == 5 ? 16.0 + 200.0 * rng.uniform()
                                : 8.0 * rng.uniform();
            skip[i] = rng.below(8) == 0 ? 2.5 : -1.0;
            bits[i] = rng.below(64) == 0 ? 0xffffffffu : static_cast<std::uint32_t>(rng.next());
        }
        const int cap = rng.below(4) == 0 ? 1000 : 1 + static_cast<int>(rng.below(30));
        const double scale = 0.9 + 0.2 * rng.uniform();
        std::vector<std::uint16_t> scalar(mu.size()), vector(mu.size(), 7);
        const int a = detail::poissonRow(mu.data(), scale, bits.data(), skip.data(), n, cap, scalar.data(), false);
        const int b = detail::poissonRow(mu.data(), scale, bits.data(), skip.data(), n, cap, vector.data(), true);
        QCOMPARE(b, a);
        for (std::size_t i = 0; i < mu.size(); ++i) {
            QCOMPARE(vector[i], scalar[i]);
            QVERIFY(scalar[i] <= cap);
            if (skip[i] >= 0.0 || !(mu[i] > 0.0))
                QCOMPARE(int{scalar[i]}, 0);
        }
        draws += n;
    }
    QVERIFY(draws > 300000);
}

void TestRandomDraws::poissonRowVectorMatchesScalarAtBoundaries()
{
    // Means from 16 on take the normal approximation, mean + sqrt(mean) z + (z^2 - 1) / 6 + 0.5,
    // truncated. Where that lands within a few ulps of an integer, any other rounding (a fused
    // multiply-add, which GCC makes of a * b + c wherever the target has FMA) changes the count by
    // one. For quantile cells across the range and integers K up to 3000, the means around the
    // root of x(mean) = K, 128 adjacent doubles each: both paths must give the same counts.
    if (!detail::poissonRowHasAvx512())
        QSKIP("this CPU has no AVX-512");
    const detail::RandomTables& tables = detail::RandomTables::get();
    constexpr int kRow = 128;
    long compared = 0;
    long straddled = 0;  // rows whose scalar counts change along the row: the boundary was inside
    std::vector<double> mu(kRow);
    const std::vector<double> skip(kRow, -1.0);
    std::vector<std::uint16_t> scalar(kRow), vector(kRow);
    for (int cell = 0; cell < detail::RandomTables::kQuantileCells; cell += 37) {
        const double z = tables.quantile[cell];
        const std::vector<std::uint32_t> bits(kRow, static_cast<std::uint32_t>(cell) << 20);
        const auto x = [z](double m) { return m + std::sqrt(m) * z + (z * z - 1.0) / 6.0 + 0.5; };
        for (int k = 20; k < 3000; k += 97) {
            double lo = detail::RandomTables::kPoissonTableMean;
            double hi = 4000.0;
            if (x(lo) > k || x(hi) < k)
                continue;
            for (int i = 0; i < 200; ++i)
                (x(0.5 * (lo + hi)) < k ? lo : hi) = 0.5 * (lo + hi);
            double m = lo;
            for (int i = 0; i < kRow / 2; ++i)
                m = std::nextafter(m, 0.0);
            for (double& v : mu) {
                v = m;
                m = std::nextafter(m, 1e9);
            }
            detail::poissonRow(mu.data(), 1.0, bits.data(), skip.data(), kRow, 60000, scalar.data(), false);
            detail::poissonRow(mu.data(), 1.0, bits.data(), skip.data(), kRow, 60000, vector.data(), true);
            for (int i = 0; i < kRow; ++i)
                QCOMPARE(vector[static_cast<std::size_t>(i)], scalar[static_cast<std::size_t>(i)]);
            compared += kRow;
            straddled += scalar.front() != scalar.back() ? 1 : 0;
        }
    }
    QVERIFY(compared > 400000);
    QVERIFY(straddled > compared / kRow / 2);  // most rows hold their integer's boundary
}

void TestRandomDraws::clippedBinomialManyMatchesOneByOne()
{
    // capScale's clipped moments, 8 at a time in AVX-512, give clippedBinomial's bits: batches of
    // 1-20 (part-filled vectors), lanes of unequal loops (caps 0-200 against 1-5000 pairs, caps
    // past the pairs), p of 0, negative, NaN, tiny, near and at 1, and the exp path past 1024 pairs.
    if (!detail::clippedBinomialHasAvx512())
        QSKIP("this CPU has no AVX-512");
    detail::Rng rng(33);
    long compared = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        const int count = 1 + static_cast<int>(rng.below(20));
        std::vector<int> n(static_cast<std::size_t>(count)), t(n.size());
        std::vector<double> p(n.size());
        for (std::size_t i = 0; i < n.size(); ++i) {
            const std::uint32_t kind = rng.below(12);
            n[i] = kind == 0 ? 1 + static_cast<int>(rng.below(5000)) : 1 + static_cast<int>(rng.below(1024));
            t[i] = rng.below(8) == 0 ? static_cast<int>(rng.below(3)) : static_cast<int>(rng.below(200));
            p[i] = kind == 1 ? 0.0
                   : kind == 2 ? -0.5
                   : kind == 3 ? std::nan("")
                   : kind == 4 ? 1.0
                   : kind == 5 ? 1.0 - 1e-12 * rng.uniform()
                   : kind == 6 ? 1e-7 * rng.uniform()
                               : rng.uniform() * 0.3;
        }
        std::vector<double> a1(n.size()), a2(n.size()), aBelow(n.size()), b1(n.size(), 7.0), b2(n.size(), 7.0),
            bBelow(n.size(), 7.0);
        detail::clippedBinomialMany(n.data(), p.data(), t.data(), count, a1.data(), a2.data(), aBelow.data(), false);
        detail::clippedBinomialMany(n.data(), p.data(), t.data(), count, b1.data(), b2.data(), bBelow.data(), true);
        for (std::size_t i = 0; i < n.size(); ++i) {
            double m1 = 0, m2 = 0, below = 0;
            detail::clippedBinomial(n[i], p[i], t[i], m1, m2, below);
            const QString what = QStringLiteral("n %1 p %2 t %3").arg(n[i]).arg(p[i], 0, 'g', 17).arg(t[i]);
            QVERIFY2(std::bit_cast<std::uint64_t>(a1[i]) == std::bit_cast<std::uint64_t>(m1), qPrintable(what));
            QVERIFY2(std::bit_cast<std::uint64_t>(b1[i]) == std::bit_cast<std::uint64_t>(m1), qPrintable(what));
            QVERIFY2(std::bit_cast<std::uint64_t>(b2[i]) == std::bit_cast<std::uint64_t>(m2), qPrintable(what));
            QVERIFY2(std::bit_cast<std::uint64_t>(bBelow[i]) == std::bit_cast<std::uint64_t>(below), qPrintable(what));
            ++compared;
        }
    }
    QVERIFY(compared > 25000);
}

void TestRandomDraws::counterWordsAreSplitmix()
{
    // The counter-based words are splitmix64's outputs from seed + first * gamma, on both paths,
    // for every length up to 40 (a part-filled last vector) and any start.
    detail::Rng rng(5);
    for (int trial = 0; trial < 2000; ++trial) {
        const std::uint64_t seed = rng.next();
        const std::uint64_t first = rng.below(1000);
        const int n = static_cast<int>(rng.below(41));
        std::vector<std::uint64_t> expected(static_cast<std::size_t>(n));
        std::uint64_t state = seed + first * 0x9e3779b97f4a7c15ULL;
        for (std::uint64_t& word : expected)
            word = detail::splitmix64(state);
        for (const bool vector : {false, true}) {
            if (vector && !detail::counterWordsHasAvx512())
                continue;
            std::vector<std::uint64_t> words(static_cast<std::size_t>(n) + 1, 42);
            detail::counterWords(seed, first, n, words.data(), vector);
            for (std::size_t i = 0; i < expected.size(); ++i)
                QCOMPARE(words[i], expected[i]);
            QCOMPARE(words.back(), std::uint64_t{42});  // nothing written past n
        }
    }
    // Consecutive calls continue one stream: words [0, 24) in one call = [0, 10) then [10, 24).
    std::uint64_t once[24], twice[24];
    detail::counterWords(77, 0, 24, once, detail::counterWordsHasAvx512());
    detail::counterWords(77, 0, 10, twice, false);
    detail::counterWords(77, 10, 14, twice + 10, detail::counterWordsHasAvx512());
    QVERIFY(std::equal(once, once + 24, twice));
}

void TestRandomDraws::raceIsSequentialChoice()
{
    // The exponential race picks subsets with the probabilities of choosing groups one after the
    // other in proportion to weight (Plackett-Luce): P({a, b}) = w_a/W * w_b/(W - w_a) + the reverse.
    const double w[8] = {8, 4, 2, 1, 1, 0.5, 0.25, 0.25};
    float inverse[8], offset[8] = {};
    double total = 0.0;
    for (int q = 0; q < 8; ++q) {
        inverse[q] = static_cast<float>(1.0 / w[q]);
        total += w[q];
    }
    const detail::RandomTables& t = detail::RandomTables::get();
    detail::Rng rng(4);
    const int n = 400000;
    std::vector<int> hits(256, 0);
    for (int i = 0; i < n; ++i)
        ++hits[static_cast<std::size_t>(detail::race8(t.exponential, rng.next(), rng.next(), inverse, offset, 2, detail::race8HasAvx2()))];
    for (int a = 0; a < 8; ++a)
        for (int b = a + 1; b < 8; ++b) {
            const double p = w[a] / total * w[b] / (total - w[a]) + w[b] / total * w[a] / (total - w[b]);
            const double got = hits[static_cast<std::size_t>((1 << a) | (1 << b))] / static_cast<double>(n);
            QVERIFY2(std::abs(got - p) < 5 * std::sqrt(p * (1 - p) / n) + 2e-4,
                     qPrintable(QStringLiteral("{%1, %2}: %3 vs %4").arg(a).arg(b).arg(got).arg(p)));
        }
}

QTEST_GUILESS_MAIN(TestRandomDraws)
#include "tst_random_draws.moc"
