// The simulator's routing kernel (core/sim/route_kernel.h) against a plain double-precision
// reference written from its definition, on shapes that exercise every edge: sources not a
// multiple of the block of eight, experts not a multiple of the vector width, GPUs with different
// slot counts, replicated experts with uneven shares. The portable and AVX2 versions must agree
// bit for bit (same operations in the same order), and both with the reference to float rounding.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "sim/route_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>
#endif

#include <QtTest>

using namespace moex::detail;
using moex::kMaxTokensPerGpu;
using moex::RoutingSample;

namespace {

// One layer's input: counts, and a plan in the simulator's form.
struct Case {
    int G = 0, E = 0, T = 0;
    std::vector<RoutingSample::Count> counts;  // [G][E]
    std::vector<int> slotKeep, gpuBegin, repExpert;
    std::vector<std::vector<float>> share;  // [replica][src] fraction of src's tokens for the expert
    std::vector<float> repFraction;         // kernel layout [(src / 8) * R + r][src % 8]
    bool compact = false;                   // the kernel reads the compact form below instead
    FractionTable table{};
    std::vector<std::uint8_t> index;
    std::vector<RoutingSample::Count> zeroRow;
    int R() const { return static_cast<int>(repExpert.size()); }
};

// `uniform`: every GPU gets the same number of slots (the kernel's fast path), else 1..5 per GPU.
// `nearest`: shares as the nearest-replica rule makes them (per source, one replica takes all or
// all take 1 / copies), which the kernel reads in the compact form; else uneven shares, dense.
Case makeCase(int G, int E, int T, bool uniform, bool nearest, std::uint32_t seed)
{
    std::mt19937 rng(seed);
    Case c;
    c.G = G;
    c.E = E;
    c.T = T;
    c.counts.resize(static_cast<std::size_t>(G) * static_cast<std::size_t>(E));
    for (auto& v : c.counts)  // mostly small, some zero, some the whole batch
        v = static_cast<RoutingSample::Count>(std::uniform_int_distribution<int>(0, 9)(rng) == 0
                                                  ? T
                                                  : std::uniform_int_distribution<int>(0, T / 4)(rng));
    // Slots: every expert once, about a fifth of them again on other GPUs.
    std::vector<std::vector<int>> gpuExperts(static_cast<std::size_t>(G));
    std::vector<int> experts(static_cast<std::size_t>(E));
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng);
    std::vector<int> extra;
    for (int e = 0; e < E; ++e)
        if (std::uniform_int_distribution<int>(0, 4)(rng) == 0)
            extra.push_back(e);
    std::vector<int> all = experts;
    all.insert(all.end(), extra.begin(), extra.end());
    if (uniform) {
        while (all.size() % static_cast<std::size_t>(G) != 0)  // pad with replicas of expert 0..
            all.push_back(static_cast<int>(all.size() % static_cast<std::size_t>(E)));
        for (std::size_t i = 0; i < all.size(); ++i)
            gpuExperts[i % static_cast<std::size_t>(G)].push_back(all[i]);
    } else {
        for (int e : all)
            gpuExperts[static_cast<std::size_t>(std::uniform_int_distribution<int>(0, G - 1)(rng))].push_back(e);
    }
    // Slot order GPU by GPU; replicated experts get keep rows E + r.
    std::vector<int> slotExpert;
    c.gpuBegin.push_back(0);
    for (const auto& list : gpuExperts) {
        slotExpert.insert(slotExpert.end(), list.begin(), list.end());
        c.gpuBegin.push_back(static_cast<int>(slotExpert.size()));
    }
    std::vector<int> copies(static_cast<std::size_t>(E), 0);
    for (int e : slotExpert)
        ++copies[static_cast<std::size_t>(e)];
    std::vector<std::vector<int>> repsOf(static_cast<std::size_t>(E));
    for (int e : slotExpert) {
        if (copies[static_cast<std::size_t>(e)] == 1) {
            c.slotKeep.push_back(e);
            continue;
        }
        repsOf[static_cast<std::size_t>(e)].push_back(c.R());
        c.slotKeep.push_back(E + c.R());
        c.repExpert.push_back(e);
    }
    // Uneven shares per source, summing to 1 over an expert's replicas.
    c.share.assign(static_cast<std::size_t>(c.R()), std::vector<float>(static_cast<std::size_t>(G), 0.0f));
    for (int e = 0; e < E; ++e) {
        const auto& reps = repsOf[static_cast<std::size_t>(e)];
        for (int src = 0; src < G && !reps.empty(); ++src) {
            if (nearest) {
                const auto n = reps.size();
                const auto local = static_cast<std::size_t>(std::uniform_int_distribution<int>(0, 2 * static_cast<int>(n) - 1)(rng));
                for (std::size_t j = 0; j < n; ++j)  // half the time one replica is on src's GPU
                    c.share[static_cast<std::size_t>(reps[j])][static_cast<std::size_t>(src)] =
                        local < n ? (j == local ? 1.0f : 0.0f) : 1.0f / static_cast<float>(n);
                continue;
            }
            float left = 1.0f;
            for (std::size_t j = 0; j + 1 < reps.size(); ++j) {
                const float f = left * std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
                c.share[static_cast<std::size_t>(reps[j])][static_cast<std::size_t>(src)] = f;
                left -= f;
            }
            c.share[static_cast<std::size_t>(reps.back())][static_cast<std::size_t>(src)] = left;
        }
    }
    const int blocks = (G + kRouteBlock - 1) / kRouteBlock;
    c.repFraction.assign(static_cast<std::size_t>(blocks) * static_cast<std::size_t>(c.R()) * kRouteBlock, 0.0f);
    for (int r = 0; r < c.R(); ++r)
        for (int src = 0; src < G; ++src)
            c.repFraction[(static_cast<std::size_t>(src / kRouteBlock) * static_cast<std::size_t>(c.R()) + static_cast<std::size_t>(r)) * kRouteBlock
                          + static_cast<std::size_t>(src % kRouteBlock)] = c.share[static_cast<std::size_t>(r)][static_cast<std::size_t>(src)];
    c.compact = compactFractions(c.repFraction, c.table, c.index);
    c.zeroRow.assign(static_cast<std::size_t>(E), 0);
    return c;
}

struct Result {
    std::vector<std::int32_t> totals;
    std::vector<float> notSent, repTaken;
};

using Kernel = void (*)(const RouteKernelIn&, const RouteKernelOut&);

Result run(const Case& c, Kernel kernel, bool perPair)
{
    const int blocks = (c.G + kRouteBlock - 1) / kRouteBlock;
    Result res;
    res.totals.assign(static_cast<std::size_t>(c.E), -7);  // garbage: the kernel must overwrite
    res.notSent.assign(static_cast<std::size_t>(blocks) * static_cast<std::size_t>(c.G) * kRouteBlock, -7.0f);
    res.repTaken.assign(static_cast<std::size_t>(c.R()), -7.0f);
    std::vector<float> scratch(static_cast<std::size_t>(c.E + 2 * c.R()) * kRouteBlock + kRouteBlock, -7.0f);
    float* keep = scratch.data();
    keep += (32 - reinterpret_cast<std::uintptr_t>(keep) % 32) % 32 / sizeof(float);
    RouteKernelIn in;
    in.counts = c.counts.data();
    in.zero_row = c.zeroRow.data();
    in.G = c.G;
    in.E = c.E;
    in.inv_tokens = 1.0f / static_cast<float>(c.T);
    in.slot_keep = c.slotKeep.data();
    in.gpu_slot_begin = c.gpuBegin.data();
    in.R = c.R();
    in.rep_expert = c.repExpert.data();
    in.per_pair = perPair;
    if (c.compact) {  // the kernel must not read the dense form: garbage would show
        in.rep_fraction = nullptr;
        in.fraction_table = c.table.data();
        in.fraction_index = c.index.data();
    } else {
        in.rep_fraction = c.repFraction.data();
    }
    RouteKernelOut out;
    out.totals = res.totals.data();
    out.not_sent = res.notSent.data();
    out.rep_taken = res.repTaken.data();
    out.keep = keep;
    out.rep_acc = keep + static_cast<std::size_t>(c.E + c.R()) * kRouteBlock;
    kernel(in, out);
    return res;
}

// The definition, in double: keep = 1 - share x c / T per (source, expert or replica); not-sent =
// product over the GPU's slots (per pair: 1 - the sum of share x c / T over them, so that
// T (1 - not-sent) is the pairs the source sends the GPU); replica tokens = sum over sources of
// share x c / T.
void checkAgainstReference(const Case& c, const Result& res, bool perPair)
{
    for (int e = 0; e < c.E; ++e) {
        std::int64_t total = 0;
        for (int src = 0; src < c.G; ++src)
            total += c.counts[static_cast<std::size_t>(src) * c.E + e];
        QCOMPARE(res.totals[static_cast<std::size_t>(e)], static_cast<std::int32_t>(total));
    }
    auto keep = [&](int src, int row) {
        if (row < c.E)
            return 1.0 - static_cast<double>(c.counts[static_cast<std::size_t>(src) * c.E + row]) / c.T;
        const int r = row - c.E;
        const int e = c.repExpert[static_cast<std::size_t>(r)];
        return 1.0 - c.share[static_cast<std::size_t>(r)][static_cast<std::size_t>(src)] * static_cast<double>(c.counts[static_cast<std::size_t>(src) * c.E + e]) / c.T;
    };
    const int blocks = (c.G + kRouteBlock - 1) / kRouteBlock;
    for (int src = 0; src < blocks * kRouteBlock; ++src)
        for (int g = 0; g < c.G; ++g) {
            const float got = res.notSent[notSentIndex(src, g, c.G)];
            if (src >= c.G) {  // a lane past the last source sends nothing
                QCOMPARE(got, 1.0f);
                continue;
            }
            double want = 1.0;
            for (int k = c.gpuBegin[static_cast<std::size_t>(g)]; k < c.gpuBegin[static_cast<std::size_t>(g) + 1]; ++k)
                if (perPair)
                    want -= 1.0 - keep(src, c.slotKeep[static_cast<std::size_t>(k)]);
                else
                    want *= keep(src, c.slotKeep[static_cast<std::size_t>(k)]);
            if (std::abs(got - want) > 1e-5 * std::max(1.0, std::abs(want)))
                QFAIL(qPrintable(QStringLiteral("not-sent(%1, %2) = %3, reference %4").arg(src).arg(g).arg(got).arg(want)));
        }
    for (int r = 0; r < c.R(); ++r) {
        double want = 0;
        for (int src = 0; src < c.G; ++src)
            want += 1.0 - keep(src, c.E + r);
        const double got = res.repTaken[static_cast<std::size_t>(r)];
        if (std::abs(got - want) > 1e-5 * std::max(1.0, want))
            QFAIL(qPrintable(QStringLiteral("replica %1 took %2, reference %3").arg(r).arg(got).arg(want)));
    }
}

}  // namespace

class TestRouteKernel : public QObject {
    Q_OBJECT
private slots:
    void matchesReference_data()
    {
        QTest::addColumn<int>("G");
        QTest::addColumn<int>("E");
        QTest::addColumn<int>("T");
        QTest::addColumn<bool>("uniform");
        QTest::addColumn<bool>("nearest");
        QTest::addColumn<bool>("perPair");
        QTest::newRow("NVL72 DeepSeek shape") << 72 << 256 << 128 << true << false << false;
        QTest::newRow("NVL72 DeepSeek shape, nearest-replica shares") << 72 << 256 << 128 << true << true << false;
        QTest::newRow("8 GPUs, Mixtral") << 8 << 8 << 64 << true << false << false;
        QTest::newRow("13 GPUs, 37 experts, uneven slots") << 13 << 37 << 100 << false << false << false;
        QTest::newRow("13 GPUs, 37 experts, uneven slots, nearest-replica shares") << 13 << 37 << 100 << false << true << false;
        QTest::newRow("3 GPUs, 5 experts") << 3 << 5 << 16 << true << false << false;
        QTest::newRow("64 GPUs, 384 experts, uneven slots") << 64 << 384 << 256 << false << false << false;
        QTest::newRow("20 GPUs, 130 experts, prefill batch") << 20 << 130 << 8192 << true << true << false;
        // The widest counts: above 32767 a signed 16-bit widening would turn them negative.
        QTest::newRow("16 GPUs, 64 experts, most tokens a step allows") << 16 << 64 << kMaxTokensPerGpu << true << false << false;
        // Per-pair mode (DeepEP low-latency kernels): the sum instead of the product.
        QTest::newRow("per pair: NVL72 DeepSeek shape") << 72 << 256 << 128 << true << false << true;
        QTest::newRow("per pair: nearest-replica shares") << 72 << 256 << 128 << true << true << true;
        QTest::newRow("per pair: 13 GPUs, 37 experts, uneven slots") << 13 << 37 << 100 << false << false << true;
        QTest::newRow("per pair: 3 GPUs, 5 experts") << 3 << 5 << 16 << true << false << true;
    }
    void matchesReference()
    {
        QFETCH(int, G);
        QFETCH(int, E);
        QFETCH(int, T);
        QFETCH(bool, uniform);
        QFETCH(bool, nearest);
        QFETCH(bool, perPair);
        for (std::uint32_t seed = 1; seed <= 3; ++seed) {
            const Case c = makeCase(G, E, T, uniform, nearest, seed);
            QVERIFY(c.R() > 0);
            if (nearest)
                QVERIFY(c.compact);
            else if (G >= 8)  // uneven shares take far more than 8 values (3 GPUs' few may not)
                QVERIFY(!c.compact);
            const Result portable = run(c, routeKernelPortable, perPair);
            checkAgainstReference(c, portable, perPair);
            if (QTest::currentTestFailed())
                return;
            // routeKernel is what the simulator calls; it must be one of the two, bit for bit.
            const Result chosen = run(c, routeKernel, perPair);
            QVERIFY(chosen.totals == portable.totals);
            QVERIFY(std::memcmp(chosen.notSent.data(), portable.notSent.data(), portable.notSent.size() * sizeof(float)) == 0);
            if (!routeKernelHasAvx2())
                continue;
            const Result avx2 = run(c, routeKernelAvx2, perPair);
            QVERIFY(avx2.totals == portable.totals);
            QVERIFY2(std::memcmp(avx2.notSent.data(), portable.notSent.data(), portable.notSent.size() * sizeof(float)) == 0,
                     "AVX2 and portable not-sent differ");
            QVERIFY2(std::memcmp(avx2.repTaken.data(), portable.repTaken.data(), portable.repTaken.size() * sizeof(float)) == 0,
                     "AVX2 and portable replica sums differ");
        }
        if (!routeKernelHasAvx2())
            qInfo("this CPU has no AVX2: only the portable version was checked");
    }

    // The compact form holds the same floats, bit for bit, or is refused.
    void compactFractionsRoundTrip()
    {
        const std::vector<float> eight = {0.0f, 1.0f, 0.5f, 1.0f / 3, 0.25f, 0.2f, 1.0f / 6, 1.0f / 7, 0.5f, 0.0f, 1.0f, 1.0f / 7};
        FractionTable table{};
        table.fill(-7.0f);
        std::vector<std::uint8_t> index;
        QVERIFY(compactFractions(eight, table, index));
        QCOMPARE(index.size(), eight.size());
        for (std::size_t i = 0; i < eight.size(); ++i) {
            QVERIFY(index[i] < kFractionTable);
            QVERIFY(std::memcmp(&table[index[i]], &eight[i], sizeof(float)) == 0);
        }
        // Nine distinct values do not fit; -0 and +0 are distinct bit patterns.
        std::vector<float> nine = eight;
        nine.push_back(-0.0f);
        table.fill(-7.0f);
        index.assign(3, 9);
        QVERIFY(!compactFractions(nine, table, index));
        QCOMPARE(table[0], -7.0f);  // untouched on refusal
        QCOMPARE(index.size(), std::size_t{3});
        // Fewer values: the unused table entries are 0.
        QVERIFY(compactFractions(std::vector<float>{0.5f, 0.5f}, table, index));
        QCOMPARE(index, std::vector<std::uint8_t>({0, 0}));
        QCOMPARE(table[0], 0.5f);
        for (int k = 1; k < kFractionTable; ++k)
            QCOMPARE(table[static_cast<std::size_t>(k)], 0.0f);
    }

    // Tokens each GPU sends and receives in one NVLink domain, from a not-sent matrix.
    void sendTotalsMatchReference()
    {
        for (int G : {1, 8, 13, 72}) {
            const int blocks = (G + kRouteBlock - 1) / kRouteBlock;
            std::mt19937 rng(static_cast<std::uint32_t>(G));
            std::vector<float> notSent(static_cast<std::size_t>(blocks) * static_cast<std::size_t>(G) * kRouteBlock, 1.0f);
            std::vector<float> sent0(notSent.size());
            for (int src = 0; src < G; ++src)
                for (int dst = 0; dst < G; ++dst) {
                    notSent[notSentIndex(src, dst, G)] = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
                    sent0[notSentIndex(src, dst, G)] = static_cast<float>(src + dst);  // earlier layers' sums
                }
            const float T = 128.0f;
            auto runWith = [&](void (*fn)(const SendTotals&), std::vector<float>& sent, std::vector<float>& out, std::vector<float>& in) {
                sent = sent0;
                out.assign(static_cast<std::size_t>(blocks) * kRouteBlock, -7.0f);
                in.assign(static_cast<std::size_t>(G), 1.0f);  // accumulates onto what is there
                SendTotals a;
                a.not_sent = notSent.data();
                a.sent_sum = sent.data();
                a.out = out.data();
                a.in = in.data();
                a.G = G;
                a.tokens = T;
                fn(a);
            };
            std::vector<float> sent, out, in;
            runWith(sendTotalsPortable, sent, out, in);
            for (int src = 0; src < G; ++src) {
                double wantOut = 0;
                for (int dst = 0; dst < G; ++dst) {
                    const double u = T * (1.0 - notSent[notSentIndex(src, dst, G)]);
                    wantOut += u;
                    QVERIFY(std::abs(sent[notSentIndex(src, dst, G)] - (sent0[notSentIndex(src, dst, G)] + u)) < 1e-3);
                }
                QVERIFY2(std::abs(out[static_cast<std::size_t>(src)] - wantOut) < 1e-4 * std::max(1.0, wantOut),
                         qPrintable(QStringLiteral("G=%1 out[%2] = %3, reference %4").arg(G).arg(src).arg(out[static_cast<std::size_t>(src)]).arg(wantOut)));
            }
            for (int src = G; src < blocks * kRouteBlock; ++src)  // absent sources send nothing
                QCOMPARE(out[static_cast<std::size_t>(src)], 0.0f);
            for (int dst = 0; dst < G; ++dst) {
                double wantIn = 1.0;
                for (int src = 0; src < G; ++src)
                    wantIn += T * (1.0 - notSent[notSentIndex(src, dst, G)]);
                QVERIFY2(std::abs(in[static_cast<std::size_t>(dst)] - wantIn) < 1e-4 * wantIn,
                         qPrintable(QStringLiteral("G=%1 in[%2] = %3, reference %4").arg(G).arg(dst).arg(in[static_cast<std::size_t>(dst)]).arg(wantIn)));
            }
            if (!routeKernelHasAvx2())
                continue;
            std::vector<float> sent2, out2, in2;
            runWith(sendTotalsAvx2, sent2, out2, in2);
            QVERIFY(sent2 == sent);
            QVERIFY(out2 == out);
            QVERIFY(in2 == in);
        }
    }
};

QTEST_APPLESS_MAIN(TestRouteKernel)
#include "tst_route_kernel.moc"
