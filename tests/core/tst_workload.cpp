// Routing workloads: the synthetic generator's invariants and statistics, the trace and counts
// readers against the real files and against malformed input, trace replay/aggregation, and
// co-activation matrices.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "workload/coactivation.h"
#include "workload/synthetic_routing.h"
#include "workload/trace_routing.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <new>
#include <numeric>
#include <set>
#endif

#include "alloc_hook.h"
#include "routing_fixtures.h"

#include <QtTest>

using namespace moex;

namespace {


Workload makeWork(int tokens, double skew, double hot = 0.0, int groups = 0, double drift = 0.0, std::uint64_t seed = 1)
{
    Workload w;
    w.tokens_per_gpu = tokens;
    w.routing.skew = skew;
    w.routing.hot_experts = hot;
    w.routing.coactivation_groups = groups;
    w.routing.drift = drift;
    w.routing.seed = seed;
    return w;
}

// First broken invariant of a sample, or empty: rows sum to tokens * top_k, 0 <= count <= tokens.
QString violation(const RoutingSample& s)
{
    for (int l = 0; l < s.numLayers(); ++l)
        for (int g = 0; g < s.num_gpus; ++g) {
            std::int64_t sum = 0;
            for (int e = 0; e < s.num_experts; ++e) {
                const int c = s.row(l, g)[static_cast<std::size_t>(e)];
                if (c < 0 || c > s.tokens_per_gpu)
                    return QStringLiteral("layer %1 gpu %2 expert %3 has %4 pairs").arg(l).arg(g).arg(e).arg(c);
                sum += c;
            }
            if (sum != static_cast<std::int64_t>(s.tokens_per_gpu) * s.top_k)
                return QStringLiteral("layer %1 gpu %2 sums to %3").arg(l).arg(g).arg(sum);
        }
    return {};
}

double maxOverMean(const std::vector<double>& v)
{
    const double sum = std::accumulate(v.begin(), v.end(), 0.0);
    return *std::max_element(v.begin(), v.end()) / (sum / static_cast<double>(v.size()));
}

// Expert load of one layer summed over `steps` steps.
std::vector<double> loadOver(SyntheticRouting& gen, int layer, int steps)
{
    RoutingSample s;
    std::vector<double> load(static_cast<std::size_t>(gen.numExperts()), 0.0);
    for (int i = 0; i < steps; ++i) {
        gen.next(s);
        const auto l = s.expertLoad(layer);
        for (std::size_t e = 0; e < load.size(); ++e)
            load[e] += static_cast<double>(l[e]);
    }
    return load;
}

double totalVariation(std::vector<double> a, std::vector<double> b)
{
    const double sa = std::accumulate(a.begin(), a.end(), 0.0);
    const double sb = std::accumulate(b.begin(), b.end(), 0.0);
    double tv = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        tv += std::abs(a[i] / sa - b[i] / sb);
    return tv / 2;
}

double correlation(const std::vector<double>& x, const std::vector<double>& y)
{
    const double n = static_cast<double>(x.size());
    const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
    const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0.0;
}

std::string sharedData(const char* file)
{
    return std::string(MOEX_TEST_DATA_DIR) + "/traces/" + file;
}

const char* kMixtral = "mixtral8x7b_gsm8k_2_routing.jsonl";
const char* kSwitch = "switch_base128_comprehensive_expert_statistics.json";

// A small valid trace: 2 layers x 4 tokens, top-2 of 8 experts (8 data rows).
QStringList validTraceLines()
{
    QStringList lines;
    for (int layer = 0; layer < 2; ++layer)
        for (int t = 0; t < 4; ++t)
            lines
                << QStringLiteral(
                       R"({"dataset": "x", "problem_id": 0, "layer": %1, "experts": [%2, %3], "gating_probs": [0.6, 0.4], "token_idx": %4})")
                       .arg(layer)
                       .arg(t)
                       .arg((t + 3) % 8)
                       .arg(t);
    return lines;
}

// The diagnostics of parsing `text`, in memory and through a file (the streaming reader).
Diagnostics traceErrors(const QByteArray& text, TraceReadOptions options, bool viaFile)
{
    try {
        if (viaFile) {
            QTemporaryDir dir;
            const QString path = dir.filePath(QStringLiteral("t.jsonl"));
            QFile f(path);
            if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
                return {};
            f.close();
            readTokenTrace(path.toStdString(), options);
        } else {
            parseTokenTrace(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "t.jsonl",
                            options);
        }
    } catch (const InputError& e) {
        return e.diagnostics();
    }
    return {};
}

}  // namespace

class TestWorkload : public QObject {
    Q_OBJECT
private slots:
    void sampleLayout();
    void syntheticInvariants_data();
    void syntheticInvariants();
    void syntheticDeterminism();
    void syntheticNoAllocationPerStep();
    void syntheticSkew();
    void syntheticHotExpertsDifferAcrossLayers();
    void syntheticConsistentExperts();
    void syntheticCoactivationGroups();
    void syntheticFollowsPopularity();
    void syntheticDrift();
    void syntheticGroupLimited();
    void syntheticRejectsBadInput_data();
    void syntheticRejectsBadInput();

    void mixtralTrace();
    void mixtralCoactivation();
    void mixtralReplay();
    void traceModelMismatch();
    void aggregatedRounding();
    void switchStatistics();
    void countsFormats_data();
    void countsFormats();
    void countsErrors_data();
    void countsErrors();
    void malformedTraces_data();
    void malformedTraces();
    void garbageNeverCrashes();
    void streamingReaderMatchesParse();
};

// ---- synthetic -------------------------------------------------------------------------------

void TestWorkload::syntheticInvariants_data()
{
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("topK");
    QTest::addColumn<int>("groups");
    QTest::addColumn<int>("tokens");
    QTest::addColumn<double>("skew");
    QTest::addColumn<int>("coGroups");
    QTest::addColumn<double>("drift");
    QTest::addColumn<int>("subbatches");
    QTest::addColumn<double>("share");  // group_share
    QTest::addRow("mixtral uniform") << 8 << 2 << 1 << 64 << 0.0 << 0 << 0.0 << 1 << 0.5;
    QTest::addRow("mixtral skewed") << 8 << 2 << 1 << 64 << 1.5 << 2 << 0.05 << 1 << 0.5;
    QTest::addRow("deepseek full") << 256 << 8 << 8 << 128 << 1.1 << 16 << 0.01 << 1 << 0.5;
    QTest::addRow("deepseek subbatches") << 256 << 8 << 8 << 100 << 1.1 << 16 << 0.01 << 3 << 0.5;
    QTest::addRow("extreme skew caps") << 64 << 8 << 1 << 32 << 6.0 << 0 << 0.0 << 1 << 0.5;
    QTest::addRow("one token") << 64 << 4 << 1 << 1 << 1.0 << 4 << 0.1 << 1 << 0.5;
    QTest::addRow("no tokens") << 64 << 4 << 1 << 0 << 1.0 << 4 << 0.1 << 1 << 0.5;
    QTest::addRow("top-k = experts") << 4 << 4 << 1 << 16 << 2.0 << 0 << 0.0 << 1 << 0.5;
    QTest::addRow("all temporal mass in groups") << 256 << 8 << 8 << 64 << 2.0 << 8 << 0.0 << 2 << 1.0;
    QTest::addRow("skew at its limit") << 256 << 8 << 8 << 64 << 50.0 << 8 << 0.0 << 1 << 0.5;
}

void TestWorkload::syntheticInvariants()
{
    QFETCH(int, experts);
    QFETCH(int, topK);
    QFETCH(int, groups);
    QFETCH(int, tokens);
    QFETCH(double, skew);
    QFETCH(int, coGroups);
    QFETCH(double, drift);
    QFETCH(int, subbatches);
    QFETCH(double, share);
    SyntheticRoutingOptions options;
    options.group_subbatches = subbatches;
    options.group_share = share;
    SyntheticRouting gen(test::routingModel(3, experts, topK, groups, groups > 1 ? 4 : 1),
                         makeWork(tokens, skew, share == 1.0 ? 0.0 : 0.05, coGroups, drift, 5), 6, options);
    RoutingSample s;
    for (int step = 0; step < 8; ++step) {
        gen.next(s);
        QCOMPARE(s.numLayers(), 3);
        QCOMPARE(s.num_gpus, 6);
        QCOMPARE(s.num_experts, experts);
        QCOMPARE(violation(s), QString());
    }
    QCOMPARE(gen.step(), std::int64_t(8));
}

void TestWorkload::syntheticDeterminism()
{
    const ModelSpec model = test::routingModel(4, 64, 4, 8, 4);
    RoutingSample a, b;
    SyntheticRouting g1(model, makeWork(32, 1.0, 0.05, 8, 0.05, 42), 8);
    SyntheticRouting g2(model, makeWork(32, 1.0, 0.05, 8, 0.05, 42), 8);
    SyntheticRouting g3(model, makeWork(32, 1.0, 0.05, 8, 0.05, 43), 8);
    std::vector<std::vector<RoutingSample::Count>> first;
    bool differs = false;
    for (int step = 0; step < 5; ++step) {
        g1.next(a);
        g2.next(b);
        QVERIFY(a.all_counts == b.all_counts);
        first.emplace_back(a.all_counts.begin(), a.all_counts.end());
        g3.next(b);
        differs = differs || a.all_counts != b.all_counts;
    }
    QVERIFY(differs);
    g1.reset();
    for (int step = 0; step < 5; ++step) {
        g1.next(a);
        QVERIFY(std::ranges::equal(a.all_counts, first[static_cast<std::size_t>(step)]));
    }
}

// One block, layer after layer; a DeepSeek-R1 NVL72 step (2.1 MB) is mapped on its own at a
// 2 MiB boundary so that the kernel can back it with huge pages; small samples are ordinary.
void TestWorkload::sampleLayout()
{
    RoutingSample s;
    const int L = 58, G = 72, E = 256;
    s.resize(L, G, E, 128, 8);
    QCOMPARE(s.numLayers(), L);
    QCOMPARE(s.all_counts.size(), static_cast<std::size_t>(L) * G * E);
    QVERIFY(std::all_of(s.all_counts.begin(), s.all_counts.end(), [](auto c) { return c == 0; }));
#if defined(__linux__)
    QCOMPARE(reinterpret_cast<std::uintptr_t>(s.all_counts.data()) % (std::uintptr_t{2} << 20), std::uintptr_t{0});
#endif
    for (int l = 0; l < L; l += 19)
        for (int g = 0; g < G; g += 7)
            for (int e = 0; e < E; e += 31)
                s.row(l, g)[static_cast<std::size_t>(e)] = static_cast<RoutingSample::Count>(l * 1000 + g * 10 + e % 10);
    for (int l = 0; l < L; l += 19)
        for (int g = 0; g < G; g += 7)
            for (int e = 0; e < E; e += 31) {
                const auto want = static_cast<RoutingSample::Count>(l * 1000 + g * 10 + e % 10);
                QCOMPARE(s.all_counts[(static_cast<std::size_t>(l) * G + g) * E + e], want);
                QCOMPARE(s.layer(l)[static_cast<std::size_t>(g) * E + e], want);
            }
    const RoutingSample copy = s;
    QVERIFY(copy.all_counts == s.all_counts);
    QVERIFY(copy.all_counts.data() != s.all_counts.data());
    std::int64_t expert31 = 0;  // layer 38, expert 31: written on every 7th source
    for (int g = 0; g < G; g += 7)
        expert31 += 38 * 1000 + g * 10 + 1;
    QCOMPARE(copy.expertLoad(38)[31], expert31);
    s.resize(2, 3, 4, 16, 2);  // small: back to operator new
    QCOMPARE(s.all_counts.size(), std::size_t{24});
    QVERIFY(std::all_of(s.all_counts.begin(), s.all_counts.end(), [](auto c) { return c == 0; }));
    QVERIFY(s.hasShape(2, 3, 4));
    QVERIFY(!s.hasShape(2, 3, 5));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, s.resize(1, 1, 1, kMaxTokensPerGpu + 1, 1));
}

void TestWorkload::syntheticNoAllocationPerStep()
{
    SyntheticRoutingOptions options;
    options.group_subbatches = 2;
    SyntheticRouting gen(test::routingModel(6, 256, 8, 8, 4), makeWork(128, 1.2, 0.05, 16, 0.02), 16, options);
    RoutingSample s;
    gen.next(s);  // sizes the sample
    test::startCountingAllocations();
    for (int i = 0; i < 5; ++i)
        gen.next(s);
    QCOMPARE(test::stopCountingAllocations(), 0L);
    QCOMPARE(violation(s), QString());
}

void TestWorkload::syntheticSkew()
{
    const ModelSpec model = test::routingModel(2, 64, 4);
    SyntheticRouting uniform(model, makeWork(256, 0.0), 8);
    SyntheticRouting skewed(model, makeWork(256, 1.2), 8);
    const double flat = maxOverMean(loadOver(uniform, 0, 10));
    const double steep = maxOverMean(loadOver(skewed, 0, 10));
    QVERIFY2(flat < 1.15, qPrintable(QString::number(flat)));
    QVERIFY2(steep > 4.0, qPrintable(QString::number(steep)));
    // The popularity is Zipf over ranks: the top expert's share against the expected 1/H(64, 1.2),
    // capped at one pair per token (share <= 1/top_k).
    double h = 0.0;
    for (int r = 1; r <= 64; ++r)
        h += std::pow(r, -1.2);
    const auto pop = skewed.popularity(0);
    QVERIFY(std::abs(*std::max_element(pop.begin(), pop.end()) - 1.0 / h) < 1e-9);
}

void TestWorkload::syntheticHotExpertsDifferAcrossLayers()
{
    SyntheticRouting gen(test::routingModel(8, 64, 4), makeWork(128, 1.2), 4);
    std::set<int> hottest;
    std::set<std::vector<int>> topSets;
    RoutingSample s;
    gen.next(s);
    for (int l = 0; l < 8; ++l) {
        const auto load = s.expertLoad(l);
        std::vector<int> order(64);
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(),
                  [&](int a, int b) { return load[static_cast<std::size_t>(a)] > load[static_cast<std::size_t>(b)]; });
        hottest.insert(order[0]);
        std::vector<int> top3(order.begin(), order.begin() + 3);
        std::sort(top3.begin(), top3.end());
        topSets.insert(top3);
    }
    QVERIFY2(hottest.size() >= 5, qPrintable(QString::number(hottest.size())));
    QCOMPARE(topSets.size(), std::size_t(8));
}

void TestWorkload::syntheticConsistentExperts()
{
    // 4 consistent experts out of 64; temporal ones fluctuate with 8 co-activation groups.
    SyntheticRouting gen(test::routingModel(3, 64, 4), makeWork(64, 1.0, 4.0 / 64, 8), 8);
    QCOMPARE(gen.numConsistent(), 4);
    for (int l = 0; l < 3; ++l) {
        // The consistent experts are the most popular ones.
        const auto pop = gen.popularity(l);
        std::vector<int> order(64);
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(),
                  [&](int a, int b) { return pop[static_cast<std::size_t>(a)] > pop[static_cast<std::size_t>(b)]; });
        for (int r = 0; r < 64; ++r)
            QCOMPARE(gen.isConsistent(l, order[static_cast<std::size_t>(r)]), r < 4);
    }
    const int steps = 60;
    std::map<int, int> inTop;  // consistent expert (layer * 64 + e) -> steps in the top set
    std::map<int, int> temporalInTop;
    RoutingSample s;
    for (int step = 0; step < steps; ++step) {
        gen.next(s);
        for (int l = 0; l < 3; ++l) {
            const auto load = s.expertLoad(l);
            std::vector<int> order(64);
            std::iota(order.begin(), order.end(), 0);
            std::sort(order.begin(), order.end(), [&](int a, int b) {
                return load[static_cast<std::size_t>(a)] > load[static_cast<std::size_t>(b)];
            });
            for (int r = 0; r < 8; ++r)  // top set: twice the consistent experts
                (gen.isConsistent(l, order[static_cast<std::size_t>(r)])
                     ? inTop
                     : temporalInTop)[l * 64 + order[static_cast<std::size_t>(r)]]++;
        }
    }
    QCOMPARE(inTop.size(), std::size_t(12));
    for (const auto& [id, n] : inTop)
        QVERIFY2(n >= 0.9 * steps,
                 qPrintable(QStringLiteral("expert %1 in the top set %2 of %3 steps").arg(id).arg(n).arg(steps)));
    // The other half of the top set rotates among temporal experts.
    QVERIFY(temporalInTop.size() > 12);
}

void TestWorkload::syntheticCoactivationGroups()
{
    // Per (step, source) counts: experts of one co-activation group rise and fall together.
    const ModelSpec model = test::routingModel(1, 64, 4);
    SyntheticRouting gen(model, makeWork(64, 0.5, 0.0, 8), 16);
    const auto group = gen.coactivationGroup(0);
    QCOMPARE(gen.numCoactivationGroups(), 8);
    std::vector<std::vector<double>> series(64);
    RoutingSample s;
    for (int step = 0; step < 40; ++step) {
        gen.next(s);
        for (int g = 0; g < 16; ++g)
            for (int e = 0; e < 64; ++e)
                series[static_cast<std::size_t>(e)].push_back(s.row(0, g)[static_cast<std::size_t>(e)]);
    }
    double same = 0.0, other = 0.0;
    int nSame = 0, nOther = 0;
    for (int i = 0; i < 64; ++i)
        for (int j = i + 1; j < 64; ++j) {
            const double c = correlation(series[static_cast<std::size_t>(i)], series[static_cast<std::size_t>(j)]);
            if (group[static_cast<std::size_t>(i)] == group[static_cast<std::size_t>(j)]) {
                same += c;
                ++nSame;
            } else {
                other += c;
                ++nOther;
            }
        }
    same /= nSame;
    other /= nOther;
    QVERIFY2(same > other + 0.2, qPrintable(QStringLiteral("same %1 other %2").arg(same).arg(other)));

    // The expected co-activation from the group structure says the same.
    const ExpertMatrix m = expectedCoactivation(gen, 0);
    const auto pop = gen.popularity(0);
    double offDiagonal = 0.0, sameRatio = 0.0, otherRatio = 0.0;
    nSame = nOther = 0;
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) {
            QCOMPARE(m.at(i, j), m.at(j, i));
            if (i == j)
                continue;
            offDiagonal += m.at(i, j);
            const double r = m.at(i, j) / (pop[static_cast<std::size_t>(i)] * pop[static_cast<std::size_t>(j)]);
            if (group[static_cast<std::size_t>(i)] == group[static_cast<std::size_t>(j)]) {
                sameRatio += r;
                ++nSame;
            } else {
                otherRatio += r;
                ++nOther;
            }
        }
    QVERIFY(std::abs(offDiagonal - 64.0 * 16 * 4 * 3) < 1e-6 * offDiagonal);
    QVERIFY(sameRatio / nSame > 1.5 * otherRatio / nOther);
    QVERIFY(std::abs(m.at(0, 0) - 64.0 * 16 * 4 * pop[0]) < 1e-9);
}

void TestWorkload::syntheticFollowsPopularity()
{
    // Where the cap does not bind, the loads follow the popularity, heavy experts (drawn first) and
    // the rest (alias tables) alike; with co-activation groups too, averaged over batches (the hot
    // expert is then consistent: a temporal one would hit the cap in batches that favour its group).
    for (int groups : {0, 4}) {
        SyntheticRouting gen(test::routingModel(1, 64, 4), makeWork(256, 1.0, groups > 0 ? 0.05 : 0.0, groups), 8);
        const std::vector<double> pop(gen.popularity(0).begin(), gen.popularity(0).end());
        QVERIFY(*std::max_element(pop.begin(), pop.end()) > 0.5 / 4);  // at least one heavy expert
        const auto load = loadOver(gen, 0, 200);  // active groups persist over steps: average many
        const double total = std::accumulate(load.begin(), load.end(), 0.0);
        double worst = 0.0;
        for (std::size_t e = 0; e < 64; ++e)
            worst = std::max(worst, std::abs(load[e] / total - pop[e]));
        QVERIFY2(worst < 0.006, qPrintable(QStringLiteral("groups %1: worst deviation %2").arg(groups).arg(worst)));
    }
}

void TestWorkload::syntheticDrift()
{
    const ModelSpec model = test::routingModel(1, 64, 4);
    SyntheticRouting still(model, makeWork(256, 0.8), 8);
    SyntheticRouting drifting(model, makeWork(256, 0.8, 0.0, 0, 0.15), 8);
    const std::vector<double> start(still.popularity(0).begin(), still.popularity(0).end());
    const auto earlyStill = loadOver(still, 0, 10);
    const auto earlyDrift = loadOver(drifting, 0, 10);
    loadOver(still, 0, 60);
    loadOver(drifting, 0, 60);
    const auto lateStill = loadOver(still, 0, 10);
    const auto lateDrift = loadOver(drifting, 0, 10);
    // Drift 0: the popularity stays exactly where it was and the loads follow it.
    QVERIFY(std::equal(start.begin(), start.end(), still.popularity(0).begin()));
    const double tvStill = totalVariation(earlyStill, lateStill);
    QVERIFY2(tvStill < 0.05, qPrintable(QString::number(tvStill)));
    QVERIFY(totalVariation(lateStill, start) < 0.05);
    // Drift 0.15 per step over 70 steps moves it far.
    const double tvDrift = totalVariation(earlyDrift, lateDrift);
    QVERIFY2(tvDrift > 0.2, qPrintable(QString::number(tvDrift)));
}

void TestWorkload::syntheticGroupLimited()
{
    // DeepSeek-R1 routing: 256 experts in 8 groups, each token within 4 groups.
    const ModelSpec model = test::routingModel(4, 256, 8, 8, 4);
    for (int subbatches : {1, 4}) {
        SyntheticRoutingOptions options;
        options.group_subbatches = subbatches;
        SyntheticRouting gen(model, makeWork(128, 1.0, 0.05, 16), 16, options);
        QCOMPARE(gen.routingGroups(), 8);
        QCOMPARE(gen.routingGroupsPerToken(), 4);
        RoutingSample s;
        double groupsUsed = 0.0;
        double topFourShare = 0.0;
        int rows = 0;
        for (int step = 0; step < 5; ++step) {
            gen.next(s);
            QCOMPARE(violation(s), QString());
            for (int l = 0; l < 4; ++l)
                for (int g = 0; g < 16; ++g) {
                    std::vector<double> perGroup(8, 0.0);
                    for (int e = 0; e < 256; ++e)
                        perGroup[static_cast<std::size_t>(e / 32)] += s.row(l, g)[static_cast<std::size_t>(e)];
                    groupsUsed += static_cast<double>(
                        std::count_if(perGroup.begin(), perGroup.end(), [](double v) { return v > 0; }));
                    std::sort(perGroup.rbegin(), perGroup.rend());
                    topFourShare += (perGroup[0] + perGroup[1] + perGroup[2] + perGroup[3]) / (128.0 * 8);
                    ++rows;
                }
        }
        groupsUsed /= rows;
        topFourShare /= rows;
        if (subbatches == 1) {
            // One group choice per source batch: its pairs lie in exactly 4 groups.
            QVERIFY2(groupsUsed <= 4.0, qPrintable(QString::number(groupsUsed)));
            QCOMPARE(topFourShare, 1.0);
        } else {
            // Independent choices per sub-batch spread a source wider; the top 4 still dominate.
            QVERIFY(groupsUsed > 4.0);
            QVERIFY(topFourShare > 0.6);
        }
    }
    // Without a group limit a batch of 128 tokens reaches every group.
    SyntheticRouting free(test::routingModel(1, 256, 8, 8, 8), makeWork(128, 1.0), 4);
    QCOMPARE(free.routingGroups(), 1);
    RoutingSample s;
    free.next(s);
    std::set<int> groups;
    for (int e = 0; e < 256; ++e)
        if (s.row(0, 0)[static_cast<std::size_t>(e)] > 0)
            groups.insert(e / 32);
    QCOMPARE(groups.size(), std::size_t(8));
}

void TestWorkload::syntheticRejectsBadInput_data()
{
    QTest::addColumn<int>("layers");
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("topK");
    QTest::addColumn<int>("gpus");
    QTest::addColumn<double>("skew");
    QTest::addColumn<double>("hot");
    QTest::addColumn<QString>("fragment");
    QTest::addRow("no moe layers") << 0 << 8 << 2 << 4 << 1.0 << 0.0 << QStringLiteral("no MoE layers");
    QTest::addRow("top-k > experts") << 2 << 8 << 9 << 4 << 1.0 << 0.0 << QStringLiteral("experts_per_token");
    QTest::addRow("no gpus") << 2 << 8 << 2 << 0 << 1.0 << 0.0 << QStringLiteral("GPUs");
    QTest::addRow("negative skew") << 2 << 8 << 2 << 4 << -1.0 << 0.0 << QStringLiteral("skew");
    QTest::addRow("nan skew") << 2 << 8 << 2 << 4 << std::nan("") << 0.0 << QStringLiteral("skew");
    QTest::addRow("hot > 1") << 2 << 8 << 2 << 4 << 1.0 << 1.5 << QStringLiteral("hot_experts");
}

void TestWorkload::syntheticRejectsBadInput()
{
    QFETCH(int, layers);
    QFETCH(int, experts);
    QFETCH(int, topK);
    QFETCH(int, gpus);
    QFETCH(double, skew);
    QFETCH(double, hot);
    QFETCH(QString, fragment);
    try {
        SyntheticRouting gen(test::routingModel(layers, experts, topK), makeWork(16, skew, hot), gpus);
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(fragment), e.what());
    }
}

// ---- traces ----------------------------------------------------------------------------------

void TestWorkload::mixtralTrace()
{
    const std::string path = sharedData(kMixtral);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    const TokenTrace t = readTokenTrace(path);
    QCOMPARE(t.num_layers, 32);
    QCOMPARE(t.num_experts, 8);
    QCOMPARE(t.top_k, 2);
    QCOMPARE(t.layer_ids.front(), 0);
    QCOMPARE(t.layer_ids.back(), 31);
    QCOMPARE(t.tokens.size(), std::size_t(247));  // problems 0 and 1
    std::size_t records = 0;
    for (int l = 0; l < 32; ++l) {
        QVERIFY(t.numTokens(l) >= 240 && t.numTokens(l) <= 247);
        records += static_cast<std::size_t>(t.numTokens(l));
    }
    QCOMPARE(records, std::size_t(7889));

    // Count the file independently, line by line with Qt's JSON.
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::ReadOnly));
    std::vector<std::vector<std::int64_t>> direct(32, std::vector<std::int64_t>(8, 0));
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        if (line.isEmpty())
            continue;
        const QJsonObject o = QJsonDocument::fromJson(line).object();
        for (const QJsonValue e : o.value(QLatin1String("experts")).toArray())
            ++direct[static_cast<std::size_t>(o.value(QLatin1String("layer")).toInt())]
                    [static_cast<std::size_t>(e.toInt())];
    }
    for (int l = 0; l < 32; ++l)
        QCOMPARE(t.expertCounts(l), direct[static_cast<std::size_t>(l)]);
    // The same token is one entry across layers.
    const int token = t.layer_tokens[5][17];
    QVERIFY(t.find(6, token) >= 0);
    QCOMPARE(t.tokens[static_cast<std::size_t>(token)],
             t.tokens[static_cast<std::size_t>(t.layer_tokens[6][static_cast<std::size_t>(t.find(6, token))])]);
}

void TestWorkload::mixtralCoactivation()
{
    const std::string path = sharedData(kMixtral);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    const TokenTrace t = readTokenTrace(path);
    const auto coact = coactivationMatrices(t);
    QCOMPARE(coact.size(), std::size_t(32));
    for (int l = 0; l < 32; ++l) {
        const ExpertMatrix& m = coact[static_cast<std::size_t>(l)];
        const auto counts = t.expertCounts(l);
        for (int i = 0; i < 8; ++i) {
            QCOMPARE(m.at(i, i), static_cast<double>(counts[static_cast<std::size_t>(i)]));
            for (int j = 0; j < 8; ++j)
                QCOMPARE(m.at(i, j), m.at(j, i));
        }
        QCOMPARE(m.offDiagonalSum(), static_cast<double>(t.numTokens(l)) * 2 * 1);
        const ExpertMatrix p = conditionalProbability(m);
        for (int i = 0; i < 8; ++i) {
            // Top-2: each token choosing i chose exactly one other expert.
            double others = 0.0;
            for (int j = 0; j < 8; ++j)
                if (j != i)
                    others += p.at(i, j);
            if (m.at(i, i) > 0)
                QVERIFY(std::abs(others - 1.0) < 1e-12);
        }
    }
    const auto affinity = interLayerAffinities(t);
    QCOMPARE(affinity.size(), std::size_t(31));
    for (int l = 0; l < 31; ++l) {
        int matched = 0;
        for (int tok : t.layer_tokens[static_cast<std::size_t>(l)])
            matched += t.find(l + 1, tok) >= 0 ? 1 : 0;
        double sum = 0.0;
        for (double v : affinity[static_cast<std::size_t>(l)].values)
            sum += v;
        QCOMPARE(sum, matched * 2.0 * 2.0);
        const ExpertMatrix r = rowNormalised(affinity[static_cast<std::size_t>(l)]);
        for (int i = 0; i < 8; ++i)
            if (affinity[static_cast<std::size_t>(l)].rowSum(i) > 0)
                QVERIFY(std::abs(r.rowSum(i) - 1.0) < 1e-12);
    }
}

void TestWorkload::mixtralReplay()
{
    const std::string path = sharedData(kMixtral);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    TokenTrace t = readTokenTrace(path);
    const TokenTrace copy = t;
    // 13 sources x 19 tokens = 247: one step replays every token once.
    TraceRouting replay(std::move(t), test::routingModel(32, 8, 2), makeWork(19, 0.0), 13);
    RoutingSample s;
    for (int step = 0; step < 3; ++step) {
        replay.next(s);
        QCOMPARE(violation(s), QString());
        for (int l = 0; l < 32; ++l)
            if (copy.numTokens(l) == 247)
                QCOMPARE(s.expertLoad(l), copy.expertCounts(l));
    }
    // Another shape wraps around the trace; invariants hold and steps differ.
    TraceRouting wrap(copy, test::routingModel(32, 8, 2), makeWork(100, 0.0), 7);
    RoutingSample a, b;
    wrap.next(a);
    wrap.next(b);
    QCOMPARE(violation(a), QString());
    QCOMPARE(violation(b), QString());
    QVERIFY(a.all_counts != b.all_counts);
    test::startCountingAllocations();
    wrap.next(b);
    QCOMPARE(test::stopCountingAllocations(), 0L);
    wrap.reset();
    wrap.next(b);
    QVERIFY(a.all_counts == b.all_counts);
}

void TestWorkload::traceModelMismatch()
{
    const QByteArray text = validTraceLines().join(QLatin1Char('\n')).toUtf8();
    // Experts 0..6 appear; the model has 8.
    const std::string_view view(text.constData(), static_cast<std::size_t>(text.size()));
    QCOMPARE(parseTokenTrace(view, "t.jsonl").num_experts, 7);
    TraceReadOptions eight;
    eight.num_experts = 8;
    const TokenTrace t = parseTokenTrace(view, "t.jsonl", eight);
    QCOMPARE(t.num_layers, 2);
    QCOMPARE(t.num_experts, 8);
    const auto expectError = [&](auto&& make, const QString& fragment) {
        try {
            make();
            QFAIL(qPrintable(QStringLiteral("no error; expected: ") + fragment));
        } catch (const InputError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(fragment), e.what());
            QVERIFY2(QString::fromUtf8(e.what()).startsWith(QLatin1String("t.jsonl")), e.what());
        }
    };
    expectError([&] { TraceRouting r(t, test::routingModel(3, 8, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 2 MoE layers but the model has 3 (fewer in the file)"));
    expectError([&] { TraceRouting r(t, test::routingModel(1, 8, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 2 MoE layers but the model has 1 (more in the file)"));
    expectError([&] { TraceRouting r(t, test::routingModel(2, 16, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 8 experts but the model has 16"));
    expectError([&] { TraceRouting r(parseTokenTrace(view, "t.jsonl"), test::routingModel(2, 8, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 7 experts but the model has 8"));
    expectError([&] { TraceRouting r(t, test::routingModel(2, 8, 4), makeWork(4, 0), 2); },
                QStringLiteral("experts_per_token is 4"));
    // Aggregated mode takes another top-k; cycling takes another layer count.
    TraceRouting aggregated(t, test::routingModel(2, 8, 4), makeWork(4, 0), 2, {TraceMode::aggregated, false});
    TraceRouting cycling(t, test::routingModel(5, 8, 2), makeWork(4, 0), 2, {TraceMode::replay, true});
    RoutingSample s;
    aggregated.next(s);
    QCOMPARE(violation(s), QString());
    cycling.next(s);
    QCOMPARE(violation(s), QString());
    QCOMPARE(cycling.traceLayerOf(3), 1);
    QVERIFY(std::ranges::equal(s.layer(3), s.layer(1)));
    QVERIFY(std::ranges::equal(s.layer(4), s.layer(0)));
}

void TestWorkload::aggregatedRounding()
{
    // Shares that do not divide evenly: rows still sum exactly, and summed over sources each expert
    // is within one pair of its exact quota (error diffusion), also at the cap.
    LayerCounts c;
    c.source = "c.json";
    c.num_experts = 8;
    c.layer_ids = {0, 1};
    c.counts = {{1, 1, 1, 0, 2, 3, 5, 100}, {7, 7, 7, 7, 7, 7, 7, 7}};
    TraceRouting r(c, test::routingModel(2, 8, 2), makeWork(13, 0), 5);
    RoutingSample s;
    for (int step = 0; step < 4; ++step) {
        r.next(s);
        QCOMPARE(violation(s), QString());
        const auto load = s.expertLoad(0);
        QCOMPARE(load[7], std::int64_t(13 * 5));  // the hot expert is capped at one pair per token
        // The other 13 pairs per source spread 1:1:1:0:2:3:5.
        const double rest[7] = {1, 1, 1, 0, 2, 3, 5};
        for (int e = 0; e < 7; ++e)
            QVERIFY2(std::abs(static_cast<double>(load[static_cast<std::size_t>(e)]) - 13.0 * 5 * rest[e] / 13.0) <=
                         1.0,
                     qPrintable(QStringLiteral("expert %1: %2").arg(e).arg(load[static_cast<std::size_t>(e)])));
        for (auto v : s.expertLoad(1))
            QVERIFY(std::abs(static_cast<double>(v) - 13.0 * 2 * 5 / 8) <= 1.0);
    }
}

void TestWorkload::switchStatistics()
{
    const std::string path = sharedData(kSwitch);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    const LayerCounts c = readLayerCounts(path);
    QCOMPARE(c.num_experts, 128);
    QVERIFY(c.from_summary);
    QCOMPARE(c.layer_ids, (std::vector<int>{1, 3, 5, 7, 9, 11}));
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject stats =
        QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String("layer_statistics")).toObject();
    double worst = 0.0;
    for (int l = 0; l < c.numLayers(); ++l) {
        const QJsonObject s = stats.value(QString::number(c.layer_ids[static_cast<std::size_t>(l)])).toObject();
        const auto& counts = c.counts[static_cast<std::size_t>(l)];
        QVERIFY(std::abs(c.total(l) - s.value(QLatin1String("total_usage")).toDouble()) < 1e-6);
        QCOMPARE(*std::max_element(counts.begin(), counts.end()), s.value(QLatin1String("max_usage")).toDouble());
        QCOMPARE(static_cast<int>(std::count(counts.begin(), counts.end(), 0.0)),
                 s.value(QLatin1String("zero_usage_experts")).toInt());
        const double ratio = s.value(QLatin1String("max_usage")).toDouble() / s.value(QLatin1String("mean")).toDouble();
        QVERIFY(std::abs(c.maxOverMean(l) - ratio) < 1e-6 * ratio);
        // The reconstructed median is near the file's.
        std::vector<double> sorted = counts;
        std::sort(sorted.begin(), sorted.end());
        const double median = (sorted[63] + sorted[64]) / 2;
        QVERIFY(std::abs(median - s.value(QLatin1String("median")).toDouble()) <
                0.25 * s.value(QLatin1String("median")).toDouble());
        worst = std::max(worst, c.maxOverMean(l));
    }
    // Heavily skewed: the worst layer's hottest expert takes ~16x the mean (layer 11: 16964 / 1055.5).
    QVERIFY2(worst > 15.0 && worst < 17.0, qPrintable(QString::number(worst)));

    // Aggregated routing of a top-1 model follows the counts.
    TraceRouting r(c, test::routingModel(6, 128, 1), makeWork(256, 0), 8);
    RoutingSample s;
    r.next(s);
    QCOMPARE(violation(s), QString());
    std::vector<double> load;
    for (auto v : s.expertLoad(5))
        load.push_back(static_cast<double>(v));
    QVERIFY(maxOverMean(load) > 14.0);
}

void TestWorkload::countsFormats_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("experts");
    QTest::addColumn<QList<int>>("layers");
    QTest::addColumn<double>("layer0expert1");
    QTest::addRow("usage with layers")
        << QByteArray(
               R"({"num_experts": 4, "layers": [3, 1], "expert_usage_by_layer": {"1": {"0": 5, "1": 7}, "3": {"1": 2, "3": 9}}})")
        << 4 << QList<int>{3, 1} << 2.0;
    QTest::addRow("usage keyed") << QByteArray(R"({"expert_usage_by_layer": {"10": {"0": 5, "2": 7}, "2": {"1": 4}}})")
                                 << 3 << QList<int>{2, 10} << 4.0;
    QTest::addRow("usage arrays") << QByteArray(R"({"num_experts": 3, "expert_usage_by_layer": {"0": [1, 2, 3]}})") << 3
                                  << QList<int>{0} << 2.0;
    QTest::addRow("matrix") << QByteArray("[[1, 2.5, 3],\n [4, 5, 6]]") << 3 << QList<int>{0, 1} << 2.5;
}

void TestWorkload::countsFormats()
{
    QFETCH(QByteArray, text);
    QFETCH(int, experts);
    QFETCH(QList<int>, layers);
    QFETCH(double, layer0expert1);
    const LayerCounts c =
        parseLayerCounts(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "c.json");
    QCOMPARE(c.num_experts, experts);
    QCOMPARE(c.layer_ids, std::vector<int>(layers.begin(), layers.end()));
    QCOMPARE(c.counts[0][1], layer0expert1);
    QVERIFY(!c.from_summary);
}

void TestWorkload::countsErrors_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("fragment");
    QTest::addRow("bad json") << QByteArray("{\"num_experts\": 4,\n \"layers\": [1,\n ]}") << 3
                              << QStringLiteral("is not valid JSON");
    QTest::addRow("ragged matrix") << QByteArray("[[1, 2], [3]]") << 1 << QStringLiteral("row 1 has 1 counts");
    QTest::addRow("negative count") << QByteArray("[[1, -2]]") << 1 << QStringLiteral("number from 0 to 2^40");
    // Matrix errors on the value's own line (they were all at 1:1).
    QTest::addRow("negative count, line 4") << QByteArray("[\n [1,2,3],\n [4,5,6],\n [7,-8,9]\n]\n") << 4
                                            << QStringLiteral("row 2, expert 1");
    QTest::addRow("ragged matrix, line 3") << QByteArray("[\n [1,2,3],\n [4,5],\n [7,8,9]\n]\n") << 3
                                           << QStringLiteral("row 1 has 2 counts, row 0 has 3");
    QTest::addRow("usage list shorter") << QByteArray("{\"expert_usage_by_layer\": {\n\"0\": [1,2,3],\n\"1\": [1,2]}}") << 3
                                        << QStringLiteral("layer 1 has 2 counts");
    QTest::addRow("expert out of range")
        << QByteArray("{\"num_experts\": 2,\n\"expert_usage_by_layer\": {\n\"1\": {\"5\": 3}}}") << 3
        << QStringLiteral("expert \"5\" is out of range");
    QTest::addRow("missing layer") << QByteArray("{\"layers\": [1, 2], \"expert_usage_by_layer\": {\"1\": {\"0\": 3}}}")
                                   << 1 << QStringLiteral("layer 2 is listed");
    QTest::addRow("unknown format") << QByteArray("{\"foo\": 1}") << 1 << QStringLiteral("unrecognised counts file");
    QTest::addRow("empty matrix") << QByteArray("[]") << 1 << QStringLiteral("no layers");
}

void TestWorkload::countsErrors()
{
    QFETCH(QByteArray, text);
    QFETCH(int, line);
    QFETCH(QString, fragment);
    try {
        parseLayerCounts(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "c.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        const auto& d = e.diagnostics().items();
        QVERIFY(!d.empty());
        QCOMPARE(d.front().where.file, std::string("c.json"));
        QCOMPARE(d.front().where.line, line);
        QVERIFY2(QString::fromStdString(d.front().message).contains(fragment), e.what());
    }
}

void TestWorkload::malformedTraces_data()
{
    QTest::addColumn<QString>("badLine");  // replaces data row 3 ("" = see text)
    QTest::addColumn<QByteArray>("text");  // whole file when badLine is empty
    QTest::addColumn<int>("numExperts");
    QTest::addColumn<int>("line");
    QTest::addColumn<int>("column");  // 0 = any
    QTest::addColumn<QString>("fragment");
    QTest::addRow("bad json") << QStringLiteral(R"({"layer": 0, "experts": [1, 2)") << QByteArray() << 0 << 3 << 0
                              << QStringLiteral("is not valid JSON");
    QTest::addRow("not an object") << QStringLiteral("[1, 2]") << QByteArray() << 0 << 3 << 1
                                   << QStringLiteral("must be a JSON object");
    QTest::addRow("missing experts") << QStringLiteral(R"({"layer": 0, "token_idx": 2})") << QByteArray() << 0 << 3 << 1
                                     << QStringLiteral("missing \"experts\"");
    QTest::addRow("missing layer") << QStringLiteral(R"({"experts": [1, 2], "token_idx": 2})") << QByteArray() << 0 << 3
                                   << 1 << QStringLiteral("missing \"layer\"");
    QTest::addRow("negative expert") << QStringLiteral(R"({"layer": 0, "experts": [-1, 2], "token_idx": 2})")
                                     << QByteArray() << 0 << 3 << 14 << QStringLiteral("expert id -1 is negative");
    QTest::addRow("expert >= num_experts")
        << QStringLiteral(R"({"layer": 0, "experts": [1, 8], "token_idx": 2})") << QByteArray() << 8 << 3 << 14
        << QStringLiteral("expert id 8 is out of range: num_experts is 8");
    QTest::addRow("experts wrong type") << QStringLiteral(R"({"layer": 0, "experts": "1,2", "token_idx": 2})")
                                        << QByteArray() << 0 << 3 << 14
                                        << QStringLiteral("must be an array of expert ids, found string");
    QTest::addRow("expert id wrong type")
        << QStringLiteral(R"({"layer": 0, "experts": [1.5, 2], "token_idx": 2})") << QByteArray() << 0 << 3 << 14
        << QStringLiteral("integer expert ids, found number 1.5");
    QTest::addRow("layer wrong type") << QStringLiteral(R"({"layer": "0", "experts": [1, 2], "token_idx": 2})")
                                      << QByteArray() << 0 << 3 << 2 << QStringLiteral("\"layer\" must be an integer");
    QTest::addRow("token wrong type") << QStringLiteral(R"({"layer": 0, "experts": [1, 2], "token_idx": null})")
                                      << QByteArray() << 0 << 3 << 0
                                      << QStringLiteral("\"token_idx\" must be an integer");
    QTest::addRow("inconsistent top-k")
        << QStringLiteral(R"({"layer": 0, "experts": [1, 2, 3], "token_idx": 2})") << QByteArray() << 0 << 3 << 14
        << QStringLiteral("inconsistent top-k: this record has 3 experts, the record at line 1 has 2");
    QTest::addRow("expert twice") << QStringLiteral(R"({"layer": 0, "experts": [2, 2], "token_idx": 2})")
                                  << QByteArray() << 0 << 3 << 14 << QStringLiteral("appears twice");
    QTest::addRow("duplicate token")
        << QStringLiteral(R"({"problem_id": 0, "layer": 0, "experts": [1, 2], "token_idx": 0})") << QByteArray() << 0
        << 3 << 1
        << QStringLiteral("duplicate record for token (problem_id 0, token_idx 0) at layer 0 (first at line 1)");
    QTest::addRow("empty file") << QString() << QByteArray() << 0 << 0 << 0 << QStringLiteral("no routing records");
    QTest::addRow("blank lines only") << QString() << QByteArray("\n  \n\r\n") << 0 << 0 << 0
                                      << QStringLiteral("no routing records");
    QTest::addRow("binary garbage") << QString() << QByteArray("\x01\x02\xff\xfe\n{\"layer\"", 13) << 0 << 1 << 0
                                    << QStringLiteral("is not valid JSON");
}

void TestWorkload::malformedTraces()
{
    QFETCH(QString, badLine);
    QFETCH(QByteArray, text);
    QFETCH(int, numExperts);
    QFETCH(int, line);
    QFETCH(int, column);
    QFETCH(QString, fragment);
    if (!badLine.isEmpty()) {
        QStringList lines = validTraceLines();
        lines[2] = badLine;
        text = lines.join(QLatin1Char('\n')).toUtf8() + '\n';
    }
    TraceReadOptions options;
    options.num_experts = numExperts;
    for (bool viaFile : {false, true}) {
        const Diagnostics d = traceErrors(text, options, viaFile);
        QVERIFY2(!d.empty(), viaFile ? "file: no error" : "memory: no error");
        const Diagnostic& first = d.items().front();
        QCOMPARE(first.where.line, line);
        if (column > 0)
            QCOMPARE(first.where.column, column);
        QVERIFY2(QString::fromStdString(first.message).contains(fragment), first.message.c_str());
        QVERIFY(QString::fromStdString(first.format()).contains(QLatin1String("error: ")));
    }
}

void TestWorkload::garbageNeverCrashes()
{
    // Deep nesting, huge numbers, a line over the limit, random bytes: errors, never a crash.
    QByteArray deep(200000, '[');
    TraceReadOptions small;
    small.max_line_bytes = 1000;
    QByteArray longLine = validTraceLines().first().toUtf8() + '\n' + QByteArray(5000, ' ') + "{}\n";
    const QList<QPair<QByteArray, TraceReadOptions>> inputs = {
        {deep, {}},
        {QByteArray(R"({"layer": 1e400, "experts": [1]})"), {}},
        {QByteArray(R"({"layer": 99999999999999999999, "experts": [1]})"), {}},
        {QByteArray(R"({"layer": 0, "experts": [4294967296]})"), {}},
        {QByteArray(R"({"layer": 0, "experts": [18446744073709551615]})"), {}},
        {QByteArray(R"({"layer": 18446744073709551615, "experts": [1]})"), {}},
        {longLine, small},
    };
    for (const auto& [text, options] : inputs)
        for (bool viaFile : {false, true})
            QVERIFY(!traceErrors(text, options, viaFile).empty());
    const Diagnostics tooLong = traceErrors(longLine, small, true);
    QCOMPARE(tooLong.items().front().where.line, 2);
    QVERIFY(tooLong.items().front().message.find("longer than 1000 bytes") != std::string::npos);
    std::srand(7);
    for (int i = 0; i < 50; ++i) {
        QByteArray junk(1 + std::rand() % 400, '\0');
        for (auto& ch : junk)
            ch = static_cast<char>(std::rand() % 256);
        QVERIFY(!traceErrors(junk, {}, false).empty());
    }
    TraceReadOptions tiny;
    tiny.max_file_bytes = 100;
    const Diagnostics big = traceErrors(validTraceLines().join(QLatin1Char('\n')).toUtf8(), tiny, true);
    QVERIFY(!big.empty() && big.items().front().message.find("limit of 100") != std::string::npos);
}

void TestWorkload::streamingReaderMatchesParse()
{
    // Over 3 MiB with CRLF endings: several read chunks, lines split across them.
    QByteArray text;
    for (int t = 0; t < 12000; ++t)
        for (int layer = 0; layer < 2; ++layer)
            text += QStringLiteral(
                        R"({"problem_id": %1, "layer": %2, "experts": [%3, %4, %5], "token_idx": %6, "pad": "%7"})")
                        .arg(t % 3)
                        .arg(layer)
                        .arg(t % 16)
                        .arg((t + 5) % 16)
                        .arg((t + 9) % 16)
                        .arg(t)
                        .arg(QString(t % 200, QLatin1Char('x')))
                        .toUtf8() +
                    "\r\n";
    QVERIFY(text.size() > 3 * (1 << 20));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("big.jsonl"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    const TokenTrace a = readTokenTrace(path.toStdString());
    const TokenTrace b =
        parseTokenTrace(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "mem");
    QCOMPARE(a.num_layers, 2);
    QCOMPARE(a.top_k, 3);
    QCOMPARE(a.num_experts, 16);
    QCOMPARE(a.tokens.size(), std::size_t(12000));
    QVERIFY(a.layer_tokens == b.layer_tokens);
    QVERIFY(a.layer_experts == b.layer_experts);
    QVERIFY(a.tokens == b.tokens);
}

QTEST_APPLESS_MAIN(TestWorkload)
#include "tst_workload.moc"
