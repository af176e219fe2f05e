// The counts sampler (the fast path of simulate, the GUI and placement) against the pairs sampler
// (every token-expert pair drawn: the generator as it was) on the samples' shapes: the same
// model, other random streams, many steps. Each statistic of the counts sampler must lie within a
// stated tolerance of the pairs sampler's; the tolerances are about three times the difference
// between two streams of the pairs sampler itself (printed with -v2), so they catch a changed
// meaning, not noise.
#include "workload/synthetic_routing.h"

#include "routing_fixtures.h"

#include <QtTest>

#include <algorithm>
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
    void countsMatchPairs_data();
    void countsMatchPairs();
    void threadsDoNotChangeTheCounts();
    void vectorKernelsDoNotChangeTheCounts();
};

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
