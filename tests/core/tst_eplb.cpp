// EPLB port: DeepSeek's README example and every reference case reproduced exactly, the heap-based
// port against a naive line-by-line port of eplb.py on random inputs (ties included), invariants
// on many shapes, balance against the contiguous layout, and the strategies' entry point.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "placement/balance.h"
#include "placement/eplb.h"
#include "placement/strategies.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#endif

#include <QtTest>

using namespace moex;
using Matrix = std::vector<std::vector<double>>;

namespace {

const Matrix kReadmeWeight = {{90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86},
                              {20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27}};

// eplb.py transliterated with its linear scans and inverse permutations, no heaps, no shortcuts:
// the yardstick the fast port must match exactly (as DeepEP tests kernels against a naive reference).
namespace naive {

using Row = std::vector<float>;
using IRow = std::vector<int>;

void packing(const Row& w, int packs, IRow& packIndex, IRow& rankInPack)
{
    const int n = static_cast<int>(w.size()), per = n / packs;
    packIndex.assign(w.size(), -1);
    rankInPack.assign(w.size(), -1);
    if (per == 1) {
        std::iota(packIndex.begin(), packIndex.end(), 0);
        std::fill(rankInPack.begin(), rankInPack.end(), 0);
        return;
    }
    std::vector<std::pair<float, int>> order;
    for (int i = 0; i < n; ++i)
        order.emplace_back(w[static_cast<std::size_t>(i)], i);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<float> packW(static_cast<std::size_t>(packs), 0.0f);
    std::vector<int> packN(static_cast<std::size_t>(packs), 0);
    for (const auto& [weight, item] : order) {
        int best = -1;
        for (int p = 0; p < packs; ++p)
            if (packN[static_cast<std::size_t>(p)] < per
                && (best < 0 || packW[static_cast<std::size_t>(p)] < packW[static_cast<std::size_t>(best)]))
                best = p;
        packIndex[static_cast<std::size_t>(item)] = best;
        rankInPack[static_cast<std::size_t>(item)] = packN[static_cast<std::size_t>(best)]++;
        packW[static_cast<std::size_t>(best)] += weight;
    }
}

void replicate(const Row& w, int numPhy, IRow& phy2log, IRow& rank, IRow& cnt)
{
    const int numLog = static_cast<int>(w.size());
    phy2log.resize(static_cast<std::size_t>(numPhy));
    std::iota(phy2log.begin(), phy2log.end(), 0);
    rank.assign(static_cast<std::size_t>(numPhy), 0);
    cnt.assign(w.size(), 1);
    for (int i = numLog; i < numPhy; ++i) {
        int best = 0;
        for (int e = 1; e < numLog; ++e)
            if (w[static_cast<std::size_t>(e)] / static_cast<float>(cnt[static_cast<std::size_t>(e)])
                > w[static_cast<std::size_t>(best)] / static_cast<float>(cnt[static_cast<std::size_t>(best)]))
                best = e;
        phy2log[static_cast<std::size_t>(i)] = best;
        rank[static_cast<std::size_t>(i)] = cnt[static_cast<std::size_t>(best)]++;
    }
}

IRow inverse(const IRow& perm)
{
    IRow inv(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i)
        inv[static_cast<std::size_t>(perm[i])] = static_cast<int>(i);
    return inv;
}

// One layer of rebalance_experts_hierarchical; returns phy2log and logcnt.
std::pair<IRow, IRow> hierarchical(const Row& w, int R, int groups, int nodes, int gpus)
{
    const int E = static_cast<int>(w.size()), gs = E / groups, gpn = groups / nodes, perGpu = R / gpus;
    Row groupW(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
        double s = 0;
        for (int k = 0; k < gs; ++k)
            s += w[static_cast<std::size_t>(g * gs + k)];
        groupW[static_cast<std::size_t>(g)] = static_cast<float>(s);
    }
    IRow gPack, gRank;
    packing(groupW, nodes, gPack, gRank);
    IRow log2mlog(static_cast<std::size_t>(E));
    for (int e = 0; e < E; ++e)
        log2mlog[static_cast<std::size_t>(e)] =
            (gPack[static_cast<std::size_t>(e / gs)] * gpn + gRank[static_cast<std::size_t>(e / gs)]) * gs + e % gs;
    const IRow mlog2log = inverse(log2mlog);
    IRow out(static_cast<std::size_t>(R)), mlogcntAll;
    const int En = E / nodes, Rn = R / nodes;
    for (int node = 0; node < nodes; ++node) {
        Row tpm;
        for (int j = 0; j < En; ++j)
            tpm.push_back(w[static_cast<std::size_t>(mlog2log[static_cast<std::size_t>(node * En + j)])]);
        IRow phy2mlog, phyrank, mlogcnt;
        replicate(tpm, Rn, phy2mlog, phyrank, mlogcnt);
        Row tpp;
        for (int m : phy2mlog)
            tpp.push_back(tpm[static_cast<std::size_t>(m)] / static_cast<float>(mlogcnt[static_cast<std::size_t>(m)]));
        IRow pack, rank;
        packing(tpp, gpus / nodes, pack, rank);
        IRow phy2pphy(static_cast<std::size_t>(Rn));
        for (int p = 0; p < Rn; ++p)
            phy2pphy[static_cast<std::size_t>(p)] = pack[static_cast<std::size_t>(p)] * perGpu + rank[static_cast<std::size_t>(p)];
        const IRow pphy2phy = inverse(phy2pphy);
        for (int q = 0; q < Rn; ++q)
            out[static_cast<std::size_t>(node * Rn + q)] = mlog2log[static_cast<std::size_t>(
                phy2mlog[static_cast<std::size_t>(pphy2phy[static_cast<std::size_t>(q)])] + node * En)];
        mlogcntAll.insert(mlogcntAll.end(), mlogcnt.begin(), mlogcnt.end());
    }
    IRow logcnt(static_cast<std::size_t>(E));
    for (int e = 0; e < E; ++e)
        logcnt[static_cast<std::size_t>(e)] = mlogcntAll[static_cast<std::size_t>(log2mlog[static_cast<std::size_t>(e)])];
    return {out, logcnt};
}

}  // namespace naive

struct Shape {
    int experts, groups, nodes, gpus, replicas;
};

// Loads with a heavy head (Zipf over a random permutation) or small integers full of ties.
Matrix randomLoad(std::mt19937_64& rng, int layers, int experts, bool ties)
{
    Matrix w(static_cast<std::size_t>(layers), std::vector<double>(static_cast<std::size_t>(experts)));
    for (auto& row : w) {
        std::vector<int> perm(static_cast<std::size_t>(experts));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int i = 0; i < experts; ++i)
            row[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] =
                ties ? static_cast<double>(rng() % 4) : std::floor(1e5 / std::pow(i + 1.0, 1.1)) + static_cast<double>(rng() % 7);
    }
    return w;
}

std::vector<Shape> randomShapes(std::mt19937_64& rng, int count)
{
    std::vector<Shape> out;
    while (static_cast<int>(out.size()) < count) {
        const int nodes = 1 << (rng() % 3);
        const int gpus = nodes * static_cast<int>(1 + rng() % 8);
        const int groups = (rng() % 3 == 0) ? nodes * static_cast<int>(1 + rng() % 3) + 1 : nodes * static_cast<int>(1 + rng() % 3);
        const int experts = groups * static_cast<int>(1 + rng() % 12);
        const int perGpu = (experts + gpus - 1) / gpus + static_cast<int>(rng() % 3);
        out.push_back({experts, groups, nodes, gpus, perGpu * gpus});
    }
    return out;
}

QString describe(const Shape& s)
{
    return QStringLiteral("E=%1 groups=%2 nodes=%3 gpus=%4 R=%5").arg(s.experts).arg(s.groups).arg(s.nodes).arg(s.gpus).arg(s.replicas);
}

}  // namespace

class TestEplb : public QObject {
    Q_OBJECT
private slots:
    void readmeExample();
    void readmeBalance();
    void referenceCases();
    void torchTieOrder_data();
    void torchTieOrder();
    void matchesNaivePort();
    void invariants();
    void balanceBeatsContiguous();
    void colocatedReplicasReported();
    void refusesBadShapes();
    void roundRobin();
    void makePlacementEntry();
};

void TestEplb::readmeExample()
{
    const EplbResult r = rebalanceExperts(kReadmeWeight, 16, 4, 2, 8);
    QVERIFY(r.hierarchical);
    const std::vector<std::vector<int>> phy2log = {{5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1},
                                                   {7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1}};
    const std::vector<std::vector<int>> logcnt = {{1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1},
                                                  {1, 2, 1, 1, 1, 2, 2, 1, 2, 1, 1, 1}};
    const std::vector<std::vector<std::vector<int>>> log2phy = {
        {{12, -1}, {15, 13}, {11, -1}, {6, -1}, {7, 5}, {0, 2}, {1, -1}, {3, -1}, {4, -1}, {9, -1}, {8, 10}, {14, -1}},
        {{13, -1}, {15, 11}, {8, -1}, {14, -1}, {9, -1}, {10, 12}, {2, 4}, {0, -1}, {6, 3}, {7, -1}, {1, -1}, {5, -1}}};
    QCOMPARE(r.phy2log, phy2log);
    QCOMPARE(r.logcnt, logcnt);
    QCOMPARE(r.log2phy, log2phy);
}

void TestEplb::readmeBalance()
{
    // FACTS.md section 4: layer-0 max/mean GPU load 1.208, the trivial layout (slot s -> expert s % 12) 2.083.
    const Placement eplb = eplbToPlacement(rebalanceExperts(kReadmeWeight, 16, 4, 2, 8), 8);
    const Placement trivial = contiguousPlacement(12, 8, 2, 4);
    QCOMPARE(trivial.layers[0].phy2log(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3}));
    QCOMPARE(std::round(maxMeanGpuLoadPerLayer(eplb, kReadmeWeight)[0] * 1000) / 1000, 1.208);
    QCOMPARE(std::round(maxMeanGpuLoadPerLayer(trivial, kReadmeWeight)[0] * 1000) / 1000, 2.083);
    QVERIFY(maxMeanGpuLoad(eplb, kReadmeWeight) < maxMeanGpuLoad(trivial, kReadmeWeight));
}

void TestEplb::referenceCases()
{
    std::ifstream in(MOEX_TEST_DATA_DIR "/eplb/readme_example.json");
    QVERIFY2(in, "tests/data/eplb/readme_example.json");
    const auto j = nlohmann::json::parse(in);
    const auto weight = j.at("weight").get<Matrix>();
    QVERIFY(j.at("cases").size() >= 2);
    for (const auto& c : j.at("cases")) {
        const int R = c.at("num_replicas"), groups = c.at("num_groups"), nodes = c.at("num_nodes"), gpus = c.at("num_gpus");
        const EplbResult r = rebalanceExperts(weight, R, groups, nodes, gpus);
        QCOMPARE(r.hierarchical, c.at("policy") == "hierarchical");
        // Counts and per-GPU loads always; the raw order too, since these loads have no ties.
        QCOMPARE(r.logcnt, c.at("logcnt").get<std::vector<std::vector<int>>>());
        const auto refPhy = c.at("phy2log").get<std::vector<std::vector<int>>>();
        Placement ref;
        ref.num_experts = 12;
        for (const auto& row : refPhy) {
            LayerPlacement l;
            l.gpu_slots.resize(static_cast<std::size_t>(gpus));
            for (std::size_t s = 0; s < row.size(); ++s)
                l.gpu_slots[s / static_cast<std::size_t>(R / gpus)].emplace_back(row[s]);
            ref.layers.push_back(l);
        }
        const Placement mine = eplbToPlacement(r, gpus);
        for (std::size_t l = 0; l < weight.size(); ++l)
            QCOMPARE(evenSplitGpuLoads(mine.layers[l], weight[l]), evenSplitGpuLoads(ref.layers[l], weight[l]));
        QCOMPARE(r.phy2log, refPhy);
        QCOMPARE(r.log2phy, c.at("log2phy").get<std::vector<std::vector<std::vector<int>>>>());
    }
}

void TestEplb::torchTieOrder_data()
{
    // Outputs of eplb.py under torch 1.13.1 (Debian build, CPU) for loads full of ties. Replicas of one
    // expert always tie, so even distinct loads hit this. A stable sort gives a different phy2log
    // for each of these; std::sort keyed on the value alone, as torch's CPU sort is, gives torch's.
    QTest::addColumn<QVector<double>>("weight");
    QTest::addColumn<QVector<int>>("shape");  // experts, groups, nodes, gpus, replicas
    QTest::addColumn<QVector<int>>("phy2log");
    QTest::addRow("global ties 10/20") << QVector<double>{0, 2, 3, 0, 2, 0, 1, 3, 0, 0} << QVector<int>{10, 1, 1, 4, 20}
                                       << QVector<int>{7, 2, 4, 6, 0, 7, 2, 1, 9, 8, 7, 1, 1, 6, 5, 2, 2, 4, 4, 3};
    QTest::addRow("global ties 11/20") << QVector<double>{0, 3, 3, 1, 3, 3, 0, 2, 1, 2, 3} << QVector<int>{11, 1, 1, 5, 20}
                                       << QVector<int>{4, 10, 7, 0, 5, 2, 2, 3, 10, 1, 1, 2, 5, 9, 9, 1, 4, 7, 8, 6};
    QTest::addRow("all zero 11/20") << QVector<double>(11, 0.0) << QVector<int>{11, 1, 1, 5, 20}
                                    << QVector<int>{10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    QTest::addRow("3 groups 1 node") << QVector<double>{1, 0, 2, 3, 1, 3, 1, 3, 1, 3, 1, 0, 3, 3, 3, 1, 3, 1, 3, 1, 1}
                                     << QVector<int>{21, 3, 1, 6, 30}
                                     << QVector<int>{2, 18, 9, 20, 1, 16, 12, 14, 7, 11, 5, 13, 13, 8, 19,
                                                     7, 14, 12, 6, 17, 3, 18, 3, 4, 15, 9, 16, 5, 0, 10};
    QTest::addRow("12 groups 4 nodes")
        << QVector<double>{2, 0, 1, 1, 3, 2, 0, 0, 3, 0, 3, 3, 2, 3, 3, 3, 3, 3, 2, 1, 1, 0, 1, 2, 1, 0, 1, 2, 2, 2, 1, 2, 3, 1, 2, 2,
                           0, 1, 0, 2, 1, 1, 0, 3, 1, 2, 0, 2, 2, 1, 1, 0, 0, 0, 0, 1, 3, 0, 2, 0, 3, 2, 3, 1, 0, 0, 1, 1, 1, 1, 0, 3}
        << QVector<int>{72, 12, 4, 12, 96}
        << QVector<int>{18, 13, 15, 17, 14, 50, 21, 51, 48, 17, 14, 16, 22, 19, 12, 52, 23, 16, 13, 15, 20, 49, 12, 53,
                        47, 43, 45, 31, 37, 35, 30, 42, 39, 32, 35, 41, 45, 34, 38, 36, 32, 43, 31, 34, 40, 44, 33, 46,
                        58, 4, 62, 63, 0, 3, 54, 59, 61, 62, 56, 55, 0, 2, 57, 65, 4, 60, 60, 56, 5, 5, 64, 1,
                        29, 11, 71, 27, 67, 26, 25, 9, 8, 11, 10, 66, 69, 28, 24, 7, 10, 71, 8, 28, 68, 27, 6, 70};
}

void TestEplb::torchTieOrder()
{
    QFETCH(QVector<double>, weight);
    QFETCH(QVector<int>, shape);
    QFETCH(QVector<int>, phy2log);
#ifndef __GLIBCXX__
    QSKIP("the order among equal loads follows libstdc++'s std::sort, as torch's CPU sort does");
#endif
    const Matrix w = {std::vector<double>(weight.begin(), weight.end())};
    const EplbResult r = rebalanceExperts(w, shape[4], shape[1], shape[2], shape[3]);
    QCOMPARE(r.phy2log[0], std::vector<int>(phy2log.begin(), phy2log.end()));
}

void TestEplb::matchesNaivePort()
{
    std::mt19937_64 rng(20250601);
    int compared = 0;
    for (const Shape& s : randomShapes(rng, 150)) {
        for (bool ties : {false, true}) {
            const Matrix w = randomLoad(rng, 3, s.experts, ties);
            const EplbResult r = rebalanceExperts(w, s.replicas, s.groups, s.nodes, s.gpus);
            const bool hier = s.groups % s.nodes == 0;
            for (std::size_t l = 0; l < w.size(); ++l) {
                naive::Row row(w[l].begin(), w[l].end());
                const auto [phy, cnt] = hier ? naive::hierarchical(row, s.replicas, s.groups, s.nodes, s.gpus)
                                             : naive::hierarchical(row, s.replicas, 1, 1, s.gpus);
                if (r.phy2log[l] != phy || r.logcnt[l] != cnt)
                    QFAIL(qPrintable(describe(s) + (ties ? QStringLiteral(" with ties") : QString())));
                ++compared;
            }
        }
    }
    QVERIFY(compared >= 900);
}

void TestEplb::invariants()
{
    std::mt19937_64 rng(7);
    std::vector<Shape> shapes = {{12, 4, 2, 8, 16},   {12, 3, 2, 8, 16},   {256, 8, 1, 72, 288}, {256, 8, 8, 64, 320},
                                 {256, 8, 4, 32, 256}, {64, 4, 2, 8, 64},   {60, 6, 4, 8, 64},    {160, 1, 1, 16, 160},
                                 {128, 8, 2, 16, 192}, {8, 1, 1, 8, 8},     {8, 1, 2, 8, 16},     {384, 1, 8, 64, 448}};
    const auto more = randomShapes(rng, 60);
    shapes.insert(shapes.end(), more.begin(), more.end());
    for (const Shape& s : shapes) {
        const QString what = describe(s);
        const Matrix w = randomLoad(rng, 4, s.experts, rng() % 2 == 0);
        const EplbResult r = rebalanceExperts(w, s.replicas, s.groups, s.nodes, s.gpus);
        const Placement p = eplbToPlacement(r, s.gpus);
        QVERIFY2(checkPlacement(p, s.experts, s.gpus).empty(), qPrintable(what));
        const int perNode = s.replicas / s.nodes, groupSize = s.experts / s.groups;
        for (int l = 0; l < 4; ++l) {
            const auto& phy = r.phy2log[static_cast<std::size_t>(l)];
            const auto& cnt = r.logcnt[static_cast<std::size_t>(l)];
            QCOMPARE(static_cast<int>(phy.size()), s.replicas);
            QCOMPARE(std::accumulate(cnt.begin(), cnt.end(), 0), s.replicas);
            QCOMPARE(p.layers[static_cast<std::size_t>(l)].replicaCounts(s.experts), cnt);
            QVERIFY2(*std::min_element(cnt.begin(), cnt.end()) >= 1, qPrintable(what));
            for (const auto& g : p.layers[static_cast<std::size_t>(l)].gpu_slots)
                QCOMPARE(static_cast<int>(g.size()), s.replicas / s.gpus);
            // log2phy lists each expert's slots (rank order), padded with -1.
            for (int e = 0; e < s.experts; ++e) {
                const auto& row = r.log2phy[static_cast<std::size_t>(l)][static_cast<std::size_t>(e)];
                for (int k = 0; k < static_cast<int>(row.size()); ++k) {
                    const int slot = row[static_cast<std::size_t>(k)];
                    if (k < cnt[static_cast<std::size_t>(e)])
                        QCOMPARE(phy[static_cast<std::size_t>(slot)], e);
                    else
                        QCOMPARE(slot, -1);
                }
            }
            if (!r.hierarchical)
                continue;
            // Hierarchical: an expert group's replicas stay inside one node, groups/nodes groups per node.
            std::vector<std::set<int>> nodesOfGroup(static_cast<std::size_t>(s.groups));
            for (int slot = 0; slot < s.replicas; ++slot)
                nodesOfGroup[static_cast<std::size_t>(phy[static_cast<std::size_t>(slot)] / groupSize)].insert(slot / perNode);
            std::vector<int> groupsOnNode(static_cast<std::size_t>(s.nodes), 0);
            for (const auto& ns : nodesOfGroup) {
                QVERIFY2(ns.size() == 1, qPrintable(what));
                ++groupsOnNode[static_cast<std::size_t>(*ns.begin())];
            }
            for (int n : groupsOnNode)
                QCOMPARE(n, s.groups / s.nodes);
        }
        QCOMPARE(rebalanceExperts(w, s.replicas, s.groups, s.nodes, s.gpus).phy2log, r.phy2log);  // deterministic
    }
}

void TestEplb::balanceBeatsContiguous()
{
    std::mt19937_64 rng(11);
    const std::vector<Shape> shapes = {{256, 8, 1, 72, 288}, {256, 8, 8, 64, 320}, {256, 8, 4, 32, 288},
                                       {128, 1, 1, 16, 144}, {64, 4, 2, 8, 80},    {12, 4, 2, 8, 16}};
    for (const Shape& s : shapes) {
        const Matrix w = randomLoad(rng, 6, s.experts, false);
        const Placement eplb = eplbToPlacement(rebalanceExperts(w, s.replicas, s.groups, s.nodes, s.gpus), s.gpus);
        const Placement contiguous = contiguousPlacement(s.experts, s.gpus, 6, s.replicas - s.experts);
        const auto a = maxMeanGpuLoadPerLayer(eplb, w), b = maxMeanGpuLoadPerLayer(contiguous, w);
        for (std::size_t l = 0; l < a.size(); ++l)
            QVERIFY2(a[l] <= b[l] + 1e-9, qPrintable(describe(s) + QStringLiteral(": eplb %1 > contiguous %2").arg(a[l]).arg(b[l])));
    }
}

void TestEplb::colocatedReplicasReported()
{
    // The global-policy case of the README weights puts both replicas of expert 8 (layer 1) on GPU 6
    // and of expert 1 (layer 0) on GPU 7: deepseek-ai/EPLB#22, reproduced and reported.
    const Placement p = eplbToPlacement(rebalanceExperts(kReadmeWeight, 16, 3, 2, 8), 8);
    const auto found = findColocatedReplicas(p);
    QCOMPARE(found.size(), std::size_t(2));
    QCOMPARE(found[0].moe_layer, 0);
    QCOMPARE(found[0].gpu, 7);
    QCOMPARE(found[0].expert, 1);
    QCOMPARE(found[1].moe_layer, 1);
    QCOMPARE(found[1].gpu, 6);
    QCOMPARE(found[1].expert, 8);
    QCOMPARE(found[1].copies, 2);
    QVERIFY(describeColocated(found).find("GPU 6 holds 2 replicas of expert 8") != std::string::npos);
    QVERIFY(findColocatedReplicas(eplbToPlacement(rebalanceExperts(kReadmeWeight, 16, 4, 2, 8), 8)).empty());
}

void TestEplb::refusesBadShapes()
{
    auto refuses = [](auto f, const char* needle) {
        try {
            f();
        } catch (const std::invalid_argument& e) {
            return std::string(e.what()).find(needle) != std::string::npos;
        }
        return false;
    };
    QVERIFY(refuses([] { rebalanceExperts(kReadmeWeight, 10, 4, 2, 8); }, "cannot hold"));
    QVERIFY(refuses([] { rebalanceExperts(kReadmeWeight, 18, 4, 2, 8); }, "divide evenly over 8 GPUs"));
    QVERIFY(refuses([] { rebalanceExperts(kReadmeWeight, 16, 4, 3, 8); }, "nodes"));
    QVERIFY(refuses([] { rebalanceExperts(kReadmeWeight, 16, 5, 2, 8); }, "groups"));
    QVERIFY(refuses([] { rebalanceExperts({{1, 2}, {1, 2, 3}}, 4, 1, 1, 2); }, "layer 1"));
    QVERIFY(refuses([] { rebalanceExperts({{1, -2}}, 4, 1, 1, 2); }, "non-negative"));
    QVERIFY(refuses([] { rebalanceExperts({{1, NAN}}, 4, 1, 1, 2); }, "finite"));
    QVERIFY(refuses([] { rebalanceExperts({}, 4, 1, 1, 2); }, "no layers"));
}

void TestEplb::roundRobin()
{
    // Experts 0..11 cycle over 8 GPUs; the 4 copies continue the cycle on GPUs 4..7.
    const Placement p = roundRobinPlacement(12, 8, 2, 4);
    QCOMPARE(p.layers[0].phy2log(), (std::vector<int>{0, 8, 1, 9, 2, 10, 3, 11, 4, 0, 5, 1, 6, 2, 7, 3}));
    // With load, the hottest experts get the copies.
    const Placement hot = roundRobinPlacement(12, 8, 2, 4, kReadmeWeight);
    QCOMPARE(hot.layers[0].replicaCounts(12), (std::vector<int>{1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1}));  // 10, 5, 1, 4
    QVERIFY(checkPlacement(hot, 12, 8).empty());
    // When E is a multiple of G, copy k would land beside its original: the next pending copy goes there.
    const Placement even = roundRobinPlacement(16, 8, 1, 8);
    QVERIFY(findColocatedReplicas(even).empty());
    QVERIFY(checkPlacement(even, 16, 8).empty());
    QCOMPARE(even.layers[0].replicaCounts(16), (std::vector<int>{2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1}));
    QCOMPARE(even.layers[0].gpu_slots[0], (std::vector<ExpertId>{ExpertId(0), ExpertId(8), ExpertId(1)}));
}

void TestEplb::makePlacementEntry()
{
    PlacementRequest rq;
    rq.num_experts = 12;
    rq.num_gpus = 8;
    rq.num_nodes = 2;
    rq.num_groups = 4;
    rq.num_slots = 16;
    rq.load = kReadmeWeight;
    rq.strategy = "eplb-exact";
    QCOMPARE(makePlacement(rq).layers[1].phy2log(), (std::vector<int>{7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1}));
    // The README example puts no two copies on one GPU, so eplb (copies separated) is the same.
    rq.strategy = "eplb";
    {
        PlacementRequest exact = rq;
        exact.strategy = "eplb-exact";
        QVERIFY(makePlacement(rq) == makePlacement(exact));
    }
    rq.strategy = "contiguous";
    QCOMPARE(makePlacement(rq).layers[0].phy2log(), contiguousPlacement(12, 8, 1, 4).layers[0].phy2log());
    rq.strategy = "round-robin";
    QCOMPARE(makePlacement(rq).layers[0].phy2log(), roundRobinPlacement(12, 8, 2, 4, kReadmeWeight).layers[0].phy2log());

    // Uniform load when none is given; every strategy names each expert.
    PlacementRequest big;
    big.strategy = "eplb";
    big.num_experts = 256;
    big.num_gpus = 72;
    big.num_layers = 58;
    big.num_groups = 8;
    big.num_slots = 288;
    const Placement p = makePlacement(big);
    QCOMPARE(p.numLayers(), 58);
    QVERIFY(checkPlacement(p, 256, 72).empty());

    auto message = [](PlacementRequest r) {
        try {
            makePlacement(r);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    PlacementRequest bad = rq;
    bad.strategy = "gemm";
    QVERIFY(message(bad).find("unknown strategy 'gemm'") != std::string::npos);
    QVERIFY(message(bad).find("contiguous, round-robin, eplb") != std::string::npos);
    bad = rq;
    bad.num_slots = 10;
    QVERIFY(message(bad).find("cannot hold 12 experts") != std::string::npos);
    bad = rq;
    bad.num_slots = 20;
    bad.strategy = "eplb";
    QVERIFY(message(bad).find("divide evenly over the GPUs") != std::string::npos);
    bad = rq;
    bad.load.pop_back();
    bad.num_layers = 2;
    QVERIFY(message(bad).find("the load has 1 layers") != std::string::npos);
    bad = rq;
    bad.load[0].push_back(1);
    QVERIFY(message(bad).find("13 experts") != std::string::npos);
}

QTEST_APPLESS_MAIN(TestEplb)
#include "tst_eplb.moc"
