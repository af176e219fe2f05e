// The counts sampler (the fast path of simulate, the GUI and placement) against the pairs sampler
// (every token-expert pair drawn: the generator as it was) on the samples' shapes: the same
// model, other random streams, many steps. Each statistic of the counts sampler must lie within a
// stated tolerance of the pairs sampler's; the tolerances are about three times the difference
// between two streams of the pairs sampler itself (printed with -v2), so they catch a changed
// meaning, not noise.
#include "workload/random_tables.h"
#include "workload/synthetic_routing.h"

#include "routing_fixtures.h"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <vector>

using namespace moex;

namespace {


struct Case {
    int experts = 256, topK = 8, groups = 8, groupsPerToken = 4;
    int tokens = 128, gpus = 16, layers = 2, subbatches = 32;
    double skew = 0.4, hot = 0.03, drift = 0.0;
    int coGroups = 16;
    int steps = 300;
};

// What the tests compare, per run (all layers pooled).
struct Stats {
    std::vector<double> share;  // per expert (layer-major): mean share of the layer's pairs
    double loadVariance = 0.0;  // mean over experts of the per-step variance of the layer-level count
    double rowVariance = 0.0;   // mean over (source, expert) of the per-step variance of the count
    double coCorrSame = 0.0;    // mean correlation of two experts' counts in a source row, same co-activation group
    double coCorrOther = 0.0;   // the same, different groups
    double autocorr1 = 0.0;     // lag-1 autocorrelation of the layer-level counts, mean over experts
    double autocorr10 = 0.0;
    double groupsUsed = 0.0;    // routing groups with pairs, per source row
    double topGroupsShare = 0.0;  // share of a row's pairs in its groups_per_token largest groups
    int maxCount = 0;
    bool rowsExact = true;      // every row sums to tokens * top_k
};

double mean(const std::vector<double>& v)
{
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

Stats measure(const Case& c, RoutingSampler sampler, std::uint64_t stream)
{
    Workload w;
    w.tokens_per_gpu = c.tokens;
    w.routing.skew = c.skew;
    w.routing.hot_experts = c.hot;
    w.routing.coactivation_groups = c.coGroups;
    w.routing.drift = c.drift;
    w.routing.seed = 11;
    SyntheticRoutingOptions o;
    o.group_subbatches = c.subbatches;
    o.sampler = sampler;
    o.stream = stream;
    SyntheticRouting gen(test::routingModel(c.layers, c.experts, c.topK, c.groups, c.groupsPerToken), w, c.gpus, o);
    const int E = c.experts;
    const int G = c.gpus;
    const int L = c.layers;
    const int S = c.steps;
    const int rg = gen.routingGroups();
    const int groupSize = E / rg;
    const int perToken = gen.routingGroupsPerToken();

    std::vector<double> load(static_cast<std::size_t>(L) * S * E);  // [layer][step][expert]
    std::vector<double> rowSum(static_cast<std::size_t>(L) * G * E), rowSq(rowSum.size());
    // Co-activation: correlation over (step, source) of two experts' counts, for sampled pairs.
    std::vector<double> sx(static_cast<std::size_t>(L) * E), sxx(sx.size());
    std::vector<std::vector<double>> sxy(static_cast<std::size_t>(L), std::vector<double>(static_cast<std::size_t>(E) * E));
    Stats st;
    double groupsUsed = 0.0, topShare = 0.0;
    long rows = 0;
    RoutingSample s;
    for (int t = 0; t < S; ++t) {
        gen.next(s);
        for (int l = 0; l < L; ++l)
            for (int g = 0; g < G; ++g) {
                const auto row = s.row(l, g);
                int total = 0;
                std::vector<double> perGroup(static_cast<std::size_t>(rg), 0.0);
                for (int e = 0; e < E; ++e) {
                    const double v = row[static_cast<std::size_t>(e)];
                    total += row[static_cast<std::size_t>(e)];
                    st.maxCount = std::max<int>(st.maxCount, row[static_cast<std::size_t>(e)]);
                    load[(static_cast<std::size_t>(l) * S + t) * E + e] += v;
                    const std::size_t re = (static_cast<std::size_t>(l) * G + g) * E + e;
                    rowSum[re] += v;
                    rowSq[re] += v * v;
                    sx[static_cast<std::size_t>(l) * E + e] += v;
                    sxx[static_cast<std::size_t>(l) * E + e] += v * v;
                    perGroup[static_cast<std::size_t>(e / groupSize)] += v;
                }
                auto& m = sxy[static_cast<std::size_t>(l)];
                for (int i = 0; i < E; ++i) {
                    const double vi = row[static_cast<std::size_t>(i)];
                    if (vi == 0.0)
                        continue;
                    for (int j = i + 1; j < E; ++j)
                        m[static_cast<std::size_t>(i) * E + j] += vi * row[static_cast<std::size_t>(j)];
                }
                st.rowsExact = st.rowsExact && total == c.tokens * c.topK;
                groupsUsed += static_cast<double>(std::count_if(perGroup.begin(), perGroup.end(), [](double v) { return v > 0; }));
                std::sort(perGroup.rbegin(), perGroup.rend());
                topShare += std::accumulate(perGroup.begin(), perGroup.begin() + perToken, 0.0) / std::max(1, total);
                ++rows;
            }
    }
    st.groupsUsed = groupsUsed / static_cast<double>(rows);
    st.topGroupsShare = topShare / static_cast<double>(rows);

    std::vector<double> loadVar, ac1, ac10, rowVar, same, other;
    for (int l = 0; l < L; ++l) {
        double layerTotal = 0.0;
        for (int t = 0; t < S; ++t)
            for (int e = 0; e < E; ++e)
                layerTotal += load[(static_cast<std::size_t>(l) * S + t) * E + e];
        for (int e = 0; e < E; ++e) {
            std::vector<double> x(static_cast<std::size_t>(S));
            for (int t = 0; t < S; ++t)
                x[static_cast<std::size_t>(t)] = load[(static_cast<std::size_t>(l) * S + t) * E + e];
            const double m = mean(x);
            st.share.push_back(m * S / layerTotal);
            double var = 0.0, c1 = 0.0, c10 = 0.0;
            for (int t = 0; t < S; ++t) {
                const double d = x[static_cast<std::size_t>(t)] - m;
                var += d * d;
                if (t + 1 < S)
                    c1 += d * (x[static_cast<std::size_t>(t + 1)] - m);
                if (t + 10 < S)
                    c10 += d * (x[static_cast<std::size_t>(t + 10)] - m);
            }
            loadVar.push_back(var / (S - 1));
            if (var > 0.0) {
                ac1.push_back(c1 / var);
                ac10.push_back(c10 / var);
            }
            for (int g = 0; g < G; ++g) {
                const std::size_t re = (static_cast<std::size_t>(l) * G + g) * E + e;
                const double rm = rowSum[re] / S;
                rowVar.push_back((rowSq[re] - S * rm * rm) / (S - 1));
            }
        }
        const auto group = gen.coactivationGroup(l);
        const double n = static_cast<double>(S) * G;
        const auto& m = sxy[static_cast<std::size_t>(l)];
        for (int i = 0; i < E; ++i)
            for (int j = i + 1; j < E; ++j) {
                const std::size_t a = static_cast<std::size_t>(l) * E + i, b = static_cast<std::size_t>(l) * E + j;
                const double va = sxx[a] / n - (sx[a] / n) * (sx[a] / n);
                const double vb = sxx[b] / n - (sx[b] / n) * (sx[b] / n);
                if (va <= 0.0 || vb <= 0.0)
                    continue;
                const double cov = m[static_cast<std::size_t>(i) * E + j] / n - (sx[a] / n) * (sx[b] / n);
                const double corr = cov / std::sqrt(va * vb);
                const int gi = group[static_cast<std::size_t>(i)], gj = group[static_cast<std::size_t>(j)];
                if (gi < 0 || gj < 0)
                    continue;
                (gi == gj ? same : other).push_back(corr);
            }
    }
    st.loadVariance = mean(loadVar);
    st.rowVariance = mean(rowVar);
    st.autocorr1 = mean(ac1);
    st.autocorr10 = mean(ac10);
    st.coCorrSame = mean(same);
    st.coCorrOther = mean(other);
    return st;
}

double totalVariation(const std::vector<double>& a, const std::vector<double>& b, int layers)
{
    double tv = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        tv += std::abs(a[i] - b[i]);
    return tv / 2 / layers;  // per layer: each layer's shares sum to 1
}

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-12); }

QString describe(const char* name, const Stats& s)
{
    return QStringLiteral("%1: loadVar %2 rowVar %3 coSame %4 coOther %5 ac1 %6 ac10 %7 groups %8 top %9 max %10")
        .arg(QLatin1String(name))
        .arg(s.loadVariance, 0, 'f', 2)
        .arg(s.rowVariance, 0, 'f', 3)
        .arg(s.coCorrSame, 0, 'f', 4)
        .arg(s.coCorrOther, 0, 'f', 4)
        .arg(s.autocorr1, 0, 'f', 3)
        .arg(s.autocorr10, 0, 'f', 3)
        .arg(s.groupsUsed, 0, 'f', 3)
        .arg(s.topGroupsShare, 0, 'f', 4)
        .arg(s.maxCount);
}

}  // namespace

Q_DECLARE_METATYPE(Case)

class TestRoutingStatistics : public QObject {
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
    void countsMatchPairs_data();
    void countsMatchPairs();
    void threadsDoNotChangeTheCounts();
    void vectorKernelsDoNotChangeTheCounts();
};

void TestRoutingStatistics::poissonMoments_data()
{
    QTest::addColumn<double>("mu");
    for (double mu : {0.01, 0.3, 1.0, 3.7, 8.25, 15.9, 16.0, 40.0, 400.0})
        QTest::addRow("mean %g", mu) << mu;
}

void TestRoutingStatistics::poissonMoments()
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

void TestRoutingStatistics::clippedBinomialMoments()
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

void TestRoutingStatistics::exponentialTable()
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

void TestRoutingStatistics::raceVectorMatchesScalar()
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

void TestRoutingStatistics::raceManyMatchesOneByOne()
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

void TestRoutingStatistics::poissonRowVectorMatchesScalar()
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

void TestRoutingStatistics::poissonRowVectorMatchesScalarAtBoundaries()
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

void TestRoutingStatistics::clippedBinomialManyMatchesOneByOne()
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

void TestRoutingStatistics::counterWordsAreSplitmix()
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

void TestRoutingStatistics::raceIsSequentialChoice()
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

void TestRoutingStatistics::countsMatchPairs_data()
{
    QTest::addColumn<Case>("c");
    Case r1;  // deepseek-r1 decode: 32 sub-batches of 4 tokens choose 4 of 8 groups
    QTest::addRow("deepseek decode") << r1;
    Case one = r1;  // one group choice per source: the upper bound of group concentration
    one.subbatches = 1;
    QTest::addRow("deepseek one sub-batch") << one;
    Case drift = r1;
    drift.drift = 0.05;
    QTest::addRow("deepseek drifting") << drift;
    Case single = r1;  // deepseek-v3.2 at 64K context: 16 tokens, each its own sub-batch (every expert clipped)
    single.tokens = 16;
    single.subbatches = 16;
    QTest::addRow("deepseek one-token sub-batches") << single;
    Case kimi;  // kimi-k2: 384 experts, no group limit
    kimi.experts = 384;
    kimi.groups = 1;
    kimi.groupsPerToken = 1;
    QTest::addRow("kimi decode") << kimi;
    Case mixtral;
    mixtral.experts = 8;
    mixtral.topK = 2;
    mixtral.groups = 1;
    mixtral.groupsPerToken = 1;
    mixtral.tokens = 64;
    mixtral.coGroups = 2;
    mixtral.hot = 0.0;
    mixtral.layers = 4;
    mixtral.steps = 2000;  // 8 experts: cheap, and the slow active-group swings need many steps
    QTest::addRow("mixtral decode") << mixtral;
    Case prefill = r1;
    prefill.tokens = 4096;
    prefill.gpus = 4;
    prefill.steps = 150;
    QTest::addRow("deepseek prefill") << prefill;
    Case caps;  // skew so steep the top experts reach the one-pair-per-token cap
    caps.experts = 64;
    caps.groups = 1;
    caps.groupsPerToken = 1;
    caps.tokens = 32;
    caps.skew = 3.0;
    caps.coGroups = 4;
    caps.steps = 1000;
    QTest::addRow("caps") << caps;
}

void TestRoutingStatistics::countsMatchPairs()
{
    QFETCH(Case, c);
    const Stats ref = measure(c, RoutingSampler::pairs, 1);
    const Stats ref2 = measure(c, RoutingSampler::pairs, 2);
    const Stats fast = measure(c, RoutingSampler::counts, 3);
    qDebug().noquote() << describe("pairs  ", ref);
    qDebug().noquote() << describe("pairs 2", ref2);
    qDebug().noquote() << describe("counts ", fast);
    const double tvNoise = totalVariation(ref2.share, ref.share, c.layers);
    const double tv = totalVariation(fast.share, ref.share, c.layers);
    qDebug().noquote() << QStringLiteral("share TV: counts %1, pairs vs pairs %2").arg(tv).arg(tvNoise);

    QVERIFY(fast.rowsExact);
    QVERIFY(fast.maxCount <= c.tokens);
    // Per-expert mean share: total variation per layer.
    QVERIFY2(tv < std::max(0.03, 2.5 * tvNoise), qPrintable(QString::number(tv)));
    // Per-step variance of each expert's load (co-activation, group choice and the multinomial).
    QVERIFY2(relative(fast.loadVariance, ref.loadVariance) < 0.15, qPrintable(describe("counts", fast)));
    QVERIFY2(relative(fast.rowVariance, ref.rowVariance) < 0.10, qPrintable(describe("counts", fast)));
    // Co-activation: experts of one group go up and down together in a source's batch.
    QVERIFY2(std::abs(fast.coCorrSame - ref.coCorrSame) < 0.02 + 0.15 * std::abs(ref.coCorrSame),
             qPrintable(describe("counts", fast)));
    QVERIFY2(std::abs(fast.coCorrOther - ref.coCorrOther) < 0.01 + 0.15 * std::abs(ref.coCorrOther),
             qPrintable(describe("counts", fast)));
    // Temporal structure (drift, persisting active groups).
    QVERIFY2(std::abs(fast.autocorr1 - ref.autocorr1) < 0.05, qPrintable(describe("counts", fast)));
    QVERIFY2(std::abs(fast.autocorr10 - ref.autocorr10) < 0.10, qPrintable(describe("counts", fast)));
    // Group-limited routing: how many groups a source row touches and how concentrated it is.
    QVERIFY2(std::abs(fast.groupsUsed - ref.groupsUsed) < 0.02 * ref.groupsUsed, qPrintable(describe("counts", fast)));
    QVERIFY2(std::abs(fast.topGroupsShare - ref.topGroupsShare) < 0.02, qPrintable(describe("counts", fast)));
    if (c.groups > 1 && c.subbatches == 1) {  // one choice per source: never outside its groups
        QVERIFY(fast.groupsUsed <= c.groupsPerToken);
        QCOMPARE(fast.topGroupsShare, 1.0);
    }
}

void TestRoutingStatistics::threadsDoNotChangeTheCounts()
{
    // Layers run in parallel, each on its own stream: 1, 3 and 8 threads give the same steps.
    Workload w;
    w.tokens_per_gpu = 64;
    w.routing.skew = 1.0;
    w.routing.hot_experts = 0.05;
    w.routing.coactivation_groups = 8;
    w.routing.drift = 0.02;
    std::vector<std::vector<RoutingSample::Count>> runs;
    for (int threads : {1, 3, 8}) {
        SyntheticRoutingOptions o;
        o.group_subbatches = 4;
        o.threads = threads;
        SyntheticRouting gen(test::routingModel(7, 64, 4, 8, 4), w, 6, o);
        RoutingSample s;
        std::vector<RoutingSample::Count> all;
        for (int t = 0; t < 6; ++t) {
            gen.next(s);
            all.insert(all.end(), s.all_counts.begin(), s.all_counts.end());
        }
        runs.push_back(all);
    }
    QVERIFY(runs[0] == runs[1]);
    QVERIFY(runs[0] == runs[2]);
}

void TestRoutingStatistics::vectorKernelsDoNotChangeTheCounts()
{
    // The whole generator with its AVX2 / AVX-512 kernels against the scalar code alone, on the
    // samples' routing shapes: every count of every step the same, so a scenario's steps do not
    // depend on the CPU. Each kernel is also tested against its scalar twin above; this checks
    // how the generator lays out their words and bits and which experts it sends to each.
    if (!detail::race8HasAvx2() && !detail::poissonRowHasAvx512() && !detail::counterWordsHasAvx512())
        QSKIP("this CPU has none of the vector kernels");
    struct Shape {
        const char* name;
        int experts, topK, groups, groupsPerToken, tokens, subbatches;
        double skew;
    };
    const Shape shapes[] = {
        {"DeepSeek-R1 decode", 256, 8, 8, 4, 128, 32, 0.59},
        {"DeepSeek-V3.2, one-token sub-batches", 256, 8, 8, 4, 16, 16, 0.59},
        {"DeepSeek-R1 prefill (means past the table)", 256, 8, 8, 4, 4096, 32, 0.59},
        {"Kimi K2, one routing group", 384, 8, 1, 1, 128, 32, 0.5},
        {"four routing groups (the scalar race)", 64, 4, 4, 2, 64, 8, 0.8},
        {"Mixtral", 8, 2, 1, 1, 128, 1, 0.3},
    };
    for (const Shape& sh : shapes) {
        const Workload w = test::makeWork(sh.tokens, sh.skew, 0.03, 16, 0.01, 7);
        std::vector<RoutingSample::Count> counts[2];
        for (const bool vector : {true, false}) {
            SyntheticRoutingOptions o;
            o.group_subbatches = sh.subbatches;
            o.vector_kernels = vector;
            SyntheticRouting gen(test::routingModel(4, sh.experts, sh.topK, sh.groups, sh.groupsPerToken), w, 12, o);
            RoutingSample s;
            for (int t = 0; t < 5; ++t) {
                gen.next(s);
                QVERIFY2(test::violation(s).isEmpty(), qPrintable(test::violation(s)));
                counts[vector ? 0 : 1].insert(counts[vector ? 0 : 1].end(), s.all_counts.begin(), s.all_counts.end());
            }
        }
        QVERIFY2(counts[0] == counts[1], sh.name);
        QVERIFY(counts[0].size() == 5u * 4u * 12u * static_cast<std::size_t>(sh.experts));
    }
}

QTEST_GUILESS_MAIN(TestRoutingStatistics)
#include "tst_routing_statistics.moc"
