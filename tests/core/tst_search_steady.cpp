// steadySwaps (placement/search_steady.h): lowers a smooth measure of each step's high GPU loads,
// within a bound on the balance of the mean load, without putting an expert twice on a GPU. Every
// figure is recomputed here from the layout, independently of the function's bookkeeping.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "placement/search_steady.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <utility>
#endif

#include <QtTest>

using namespace moex;
using moex::search_internal::Layout;
using moex::search_internal::steadyObjective;
using moex::search_internal::steadySwaps;

namespace {

using Steps = std::vector<std::vector<double>>;

std::vector<int> countsOf(const Layout& l, int experts)
{
    std::vector<int> c(static_cast<std::size_t>(experts), 0);
    for (int e : l.expert)
        ++c[static_cast<std::size_t>(e)];
    return c;
}

double weightOf(const Layout& l, const std::vector<int>& c, int slot)
{
    return l.share.empty() ? 1.0 / c[static_cast<std::size_t>(l.expert[static_cast<std::size_t>(slot)])]
                           : l.share[static_cast<std::size_t>(slot)];
}

// Mean over steps of the largest GPU load of each step (load / speed).
double peakOfSteps(const Layout& l, const Steps& steps, const std::vector<double>& speed)
{
    const auto c = countsOf(l, static_cast<int>(steps.front().size()));
    double sum = 0;
    for (const auto& x : steps) {
        std::vector<double> gpu(static_cast<std::size_t>(l.gpus), 0.0);
        for (int s = 0; s < static_cast<int>(l.expert.size()); ++s)
            gpu[static_cast<std::size_t>(l.gpuOf(s))] +=
                x[static_cast<std::size_t>(l.expert[static_cast<std::size_t>(s)])] * weightOf(l, c, s);
        for (int g = 0; g < l.gpus; ++g)
            gpu[static_cast<std::size_t>(g)] /= speed[static_cast<std::size_t>(g)];
        sum += *std::max_element(gpu.begin(), gpu.end());
    }
    return sum / static_cast<double>(steps.size());
}

// Sum over steps and GPUs of (load / speed / the step's mean GPU load)^16, written out.
double measureOf(const Layout& l, const Steps& steps, const std::vector<double>& speed)
{
    const auto c = countsOf(l, static_cast<int>(steps.front().size()));
    double sum = 0;
    for (const auto& x : steps) {
        std::vector<double> gpu(static_cast<std::size_t>(l.gpus), 0.0);
        double total = 0;
        for (double v : x)
            total += v;
        for (int s = 0; s < static_cast<int>(l.expert.size()); ++s)
            gpu[static_cast<std::size_t>(l.gpuOf(s))] +=
                x[static_cast<std::size_t>(l.expert[static_cast<std::size_t>(s)])] * weightOf(l, c, s);
        for (int g = 0; g < l.gpus; ++g)
            sum += std::pow(gpu[static_cast<std::size_t>(g)] / speed[static_cast<std::size_t>(g)] / (total / l.gpus), 16);
    }
    return sum;
}

// max / mean GPU load of the mean load, even shares, no speed (how the search judges balance).
double balanceOf(const Layout& l, const std::vector<double>& mean)
{
    const auto c = countsOf(l, static_cast<int>(mean.size()));
    std::vector<double> gpu(static_cast<std::size_t>(l.gpus), 0.0);
    for (int s = 0; s < static_cast<int>(l.expert.size()); ++s) {
        const auto e = static_cast<std::size_t>(l.expert[static_cast<std::size_t>(s)]);
        gpu[static_cast<std::size_t>(l.gpuOf(s))] += mean[e] / c[e];
    }
    double total = 0;
    for (double v : gpu)
        total += v;
    return *std::max_element(gpu.begin(), gpu.end()) * l.gpus / total;
}

std::vector<double> meanOf(const Steps& steps)
{
    std::vector<double> m(steps.front().size(), 0.0);
    for (const auto& x : steps)
        for (std::size_t e = 0; e < x.size(); ++e)
            m[e] += x[e] / static_cast<double>(steps.size());
    return m;
}

bool twiceOnAGpu(const Layout& l)
{
    for (int g = 0; g < l.gpus; ++g) {
        std::vector<int> own(l.expert.begin() + g * l.perGpu, l.expert.begin() + (g + 1) * l.perGpu);
        std::sort(own.begin(), own.end());
        if (std::adjacent_find(own.begin(), own.end()) != own.end())
            return true;
    }
    return false;
}

// (expert, share) of every slot, as a multiset: swaps move slots, never change them.
std::map<std::pair<int, double>, int> slotsOf(const Layout& l)
{
    std::map<std::pair<int, double>, int> out;
    for (std::size_t s = 0; s < l.expert.size(); ++s)
        ++out[{l.expert[s], l.share.empty() ? 0.0 : l.share[s]}];
    return out;
}

}  // namespace

class TestSearchSteady : public QObject {
    Q_OBJECT
private slots:
    void separatesExpertsThatRiseTogether();
    void keepsTheBoundAndTheSlots_data();
    void keepsTheBoundAndTheSlots();
    void theBoundBinds();
    void noStepsNoChange();
};

// Experts 0-3 are hot in step A, 4-7 in step B, all with the same mean. Laid out in pairs of one
// kind, a GPU carries 3 units in the step of its kind; one of each kind per GPU carries 2 in both.
void TestSearchSteady::separatesExpertsThatRiseTogether()
{
    const Steps steps = {{1.5, 1.5, 1.5, 1.5, 0.5, 0.5, 0.5, 0.5}, {0.5, 0.5, 0.5, 0.5, 1.5, 1.5, 1.5, 1.5}};
    const std::vector<double> speed(4, 1.0);
    Layout l{4, 2, {0, 1, 2, 3, 4, 5, 6, 7}, {}};
    const auto mean = meanOf(steps);
    QCOMPARE(peakOfSteps(l, steps, speed), 3.0);
    const Layout start = l;
    const auto r = steadySwaps(l, steps, mean, speed, 1.0, 64);
    QVERIFY(std::abs(r.before - measureOf(start, steps, speed)) <= 1e-9 * r.before);
    QCOMPARE(peakOfSteps(l, steps, speed), 2.0);
    QVERIFY(std::abs(r.after - measureOf(l, steps, speed)) <= 1e-9 * r.before);
    QVERIFY(std::abs(steadyObjective(l, steps, speed) - r.after) <= 1e-9 * r.before);
    QVERIFY(r.swaps >= 2);
    for (int g = 0; g < 4; ++g) {
        const int a = l.expert[static_cast<std::size_t>(2 * g)], b = l.expert[static_cast<std::size_t>(2 * g + 1)];
        QVERIFY2((a < 4) != (b < 4), qPrintable(QStringLiteral("GPU %1 holds %2 and %3").arg(g).arg(a).arg(b)));
    }
    QCOMPARE(balanceOf(l, mean), 1.0);

    // A step without load counts for nothing: the same swaps, the same measure.
    Steps withIdle = steps;
    withIdle.push_back(std::vector<double>(8, 0.0));
    Layout idle{4, 2, {0, 1, 2, 3, 4, 5, 6, 7}, {}};
    const auto ri = steadySwaps(idle, withIdle, mean, speed, 1.0, 64);
    QCOMPARE(idle.expert, l.expert);
    QCOMPARE(ri.swaps, r.swaps);
    QVERIFY(std::isfinite(ri.after) && std::abs(ri.after - r.after) <= 1e-12 * r.after);
    QCOMPARE(steadyObjective(idle, withIdle, speed), steadyObjective(idle, steps, speed));
    QCOMPARE(steadyObjective(idle, {}, speed), 0.0);

    // With GPU 0 at half speed the peaks are its own (6 in one step): one of each kind there too.
    Layout slow{4, 2, {0, 1, 2, 3, 4, 5, 6, 7}, {}};
    const std::vector<double> speeds = {0.5, 1.0, 1.0, 1.0};
    const double before = peakOfSteps(slow, steps, speeds);
    steadySwaps(slow, steps, mean, speeds, 1.0, 64);
    QVERIFY(peakOfSteps(slow, steps, speeds) < before);
}

void TestSearchSteady::keepsTheBoundAndTheSlots_data()
{
    QTest::addColumn<int>("gpus");
    QTest::addColumn<int>("perGpu");
    QTest::addColumn<int>("experts");
    QTest::addColumn<bool>("shares");
    QTest::addColumn<double>("slack");  // bound = the start's balance x (1 + slack)
    QTest::addColumn<unsigned>("seed");
    QTest::newRow("72 x 4, 256 experts, tight") << 72 << 4 << 256 << false << 0.0 << 1u;
    QTest::newRow("72 x 4, 256 experts, loose") << 72 << 4 << 256 << false << 0.05 << 2u;
    QTest::newRow("8 x 5, 32 experts, shares") << 8 << 5 << 32 << true << 0.02 << 3u;
    QTest::newRow("3 x 3, 8 experts") << 3 << 3 << 8 << false << 0.1 << 4u;
    QTest::newRow("2 GPUs") << 2 << 4 << 6 << false << 0.1 << 5u;
}

// Random layouts with replicas and random steps: the measure never rises, the balance stays within
// the bound, no expert lands twice on a GPU, the slots are the same, and it is deterministic.
void TestSearchSteady::keepsTheBoundAndTheSlots()
{
    QFETCH(int, gpus);
    QFETCH(int, perGpu);
    QFETCH(int, experts);
    QFETCH(bool, shares);
    QFETCH(double, slack);
    QFETCH(unsigned, seed);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const int n = gpus * perGpu;
    // Every expert once, then replicas of random experts, dealt so that no GPU holds one twice.
    Layout l{gpus, perGpu, std::vector<int>(static_cast<std::size_t>(n), -1), {}};
    std::vector<int> pool(static_cast<std::size_t>(experts));
    std::iota(pool.begin(), pool.end(), 0);
    while (static_cast<int>(pool.size()) < n)
        pool.push_back(static_cast<int>(rng() % static_cast<unsigned>(experts)));
    std::shuffle(pool.begin(), pool.end(), rng);
    for (int tries = 0; twiceOnAGpu(Layout{gpus, perGpu, pool, {}}); ++tries) {
        QVERIFY(tries < 10000);
        std::shuffle(pool.begin(), pool.end(), rng);
    }
    l.expert = pool;
    if (shares) {
        const auto c = countsOf(l, experts);
        l.share.resize(static_cast<std::size_t>(n));
        std::vector<double> left(static_cast<std::size_t>(experts), 1.0);
        std::vector<int> seen(static_cast<std::size_t>(experts), 0);
        for (int s = 0; s < n; ++s) {
            const auto e = static_cast<std::size_t>(l.expert[static_cast<std::size_t>(s)]);
            const bool last = ++seen[e] == c[e];
            const double take = last ? left[e] : left[e] * (0.3 + 0.4 * u(rng));
            l.share[static_cast<std::size_t>(s)] = take;
            left[e] -= take;
        }
    }
    Steps steps(8, std::vector<double>(static_cast<std::size_t>(experts)));
    for (int e = 0; e < experts; ++e) {
        const double base = 10.0 / (1.0 + e % 17);  // skewed mean
        for (auto& x : steps)
            x[static_cast<std::size_t>(e)] = base * (0.5 + u(rng));
    }
    std::vector<double> speed(static_cast<std::size_t>(gpus), 1.0);
    speed[0] = 0.8;
    const auto mean = meanOf(steps);
    const double bound = balanceOf(l, mean) * (1 + slack);
    const double before = measureOf(l, steps, speed);
    const auto original = slotsOf(l);

    Layout a = l, b = l;
    const auto ra = steadySwaps(a, steps, mean, speed, bound, 200);
    const auto rb = steadySwaps(b, steps, mean, speed, bound, 200);
    QCOMPARE(a.expert, b.expert);
    QCOMPARE(ra.swaps, rb.swaps);
    const double after = measureOf(a, steps, speed);
    QVERIFY(std::abs(ra.before - before) <= 1e-9 * before);
    QVERIFY(std::abs(ra.after - after) <= 1e-9 * before);
    if (ra.swaps > 0)
        QVERIFY2(after < before, qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(after)));
    else
        QCOMPARE(after, before);
    QVERIFY2(balanceOf(a, mean) <= bound * (1 + 1e-9),
             qPrintable(QStringLiteral("balance %1 > bound %2").arg(balanceOf(a, mean)).arg(bound)));
    QVERIFY(!twiceOnAGpu(a));
    QVERIFY(slotsOf(a) == original);
    if (gpus == 72)
        QVERIFY(ra.swaps > 0);  // random steps leave room on a large layout
}

// Experts 0 and 1 rise together (3 + 3 in one step, 0 + 0 in the other); 2 and 3 are steady at 1
// and 2. {0, 1 | 2, 3} balances the means (3 | 3) but carries 6 against 3 in the busy step; trading
// 1 for 3 evens the steps (5 | 4, then 2 | 1) at a mean balance of 3.5 / 3.
void TestSearchSteady::theBoundBinds()
{
    const Steps steps = {{3, 3, 1, 2}, {0, 0, 1, 2}};
    const std::vector<double> speed(2, 1.0);
    const auto mean = meanOf(steps);
    Layout l{2, 2, {0, 1, 2, 3}, {}};
    QCOMPARE(balanceOf(l, mean), 1.0);
    const auto held = steadySwaps(l, steps, mean, speed, 1.0, 10);
    QCOMPARE(held.swaps, 0);
    QCOMPARE(l.expert, (std::vector<int>{0, 1, 2, 3}));

    const double before = measureOf(l, steps, speed);
    const auto freed = steadySwaps(l, steps, mean, speed, 1.2, 10);
    QVERIFY(freed.swaps >= 1);
    QVERIFY(measureOf(l, steps, speed) < before);
    QVERIFY(std::abs(balanceOf(l, mean) - 3.5 / 3.0) < 1e-12);
    for (int g = 0; g < 2; ++g)
        QVERIFY(!l.holds(g, 0) || !l.holds(g, 1));  // 0 and 1 apart
}

void TestSearchSteady::noStepsNoChange()
{
    Layout l{2, 2, {0, 1, 2, 3}, {}};
    const Layout before = l;
    const auto r = steadySwaps(l, {}, {1, 1, 1, 1}, {1.0, 1.0}, 1.0, 10);
    QCOMPARE(r.swaps, 0);
    QCOMPARE(l.expert, before.expert);
}

QTEST_APPLESS_MAIN(TestSearchSteady)
#include "tst_search_steady.moc"
