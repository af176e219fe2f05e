// The synthetic routing generator: its invariants (every row sums to tokens x top-k, no count above
// the tokens), determinism, no allocation per step, and its statistics (skew, hot experts,
// co-activation groups, drift, group-limited routing). The trace and counts readers are
// tst_trace_readers.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "workload/coactivation.h"
#include "workload/synthetic_routing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#endif

#include "alloc_hook.h"
#include "routing_fixtures.h"

#include <QtTest>

using namespace moex;
using test::makeWork;
using test::maxOverMean;
using test::violation;

namespace {

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

QTEST_APPLESS_MAIN(TestWorkload)
#include "tst_workload.moc"
