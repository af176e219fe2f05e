// The load-statistics report (core/run/load_report.h) on the real SGLang recorder and TensorRT-LLM
// statistics of Mixtral-8x7B (tests/data/loadstats, sources in tests/data/README.md): its balance
// figures against the file read on its own, its simulated figures against `moex-cli simulate`'s
// path (the scenario file loaded with the report's --set overrides, run by runScenario), its
// snapshots against their sum, and a file of the wrong shape refused with both shapes named.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "placement/load_stats.h"
#include "run/load_report.h"
#include "run/run_loop.h"
#include "scenario/scenario_yaml.h"

#include <algorithm>
#include <string>
#endif

#include <QtTest>

using namespace moex;

namespace {

const std::string kScenario = std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml";
const std::string kSglang = std::string(MOEX_TEST_DATA_DIR) + "/loadstats/sglang_expert_distribution_recorder_mixtral.pt";
const std::string kTrtllm = std::string(MOEX_TEST_DATA_DIR) + "/loadstats/trtllm_mixtral";

}  // namespace

class TestLoadReport : public QObject {
    Q_OBJECT
private slots:
    void snapshotsSumToTheLoad();
    void reportMatchesSimulate_data();
    void reportMatchesSimulate();
    void wrongShapeNamesBoth();
};

// SGLang's stat mode keeps each non-empty buffer row; their sum is the file's load.
void TestLoadReport::snapshotsSumToTheLoad()
{
    const LoadStats s = readLoadStats(kSglang);
    QCOMPARE(static_cast<int>(s.snapshots.size()), 2);  // "3 buffer rows (2 non-empty)"
    for (int l = 0; l < s.numLayers(); ++l)
        for (int e = 0; e < s.num_experts; ++e) {
            double sum = 0;
            for (const auto& snap : s.snapshots)
                sum += snap[static_cast<std::size_t>(l)][static_cast<std::size_t>(e)];
            QCOMPARE(sum, s.load[static_cast<std::size_t>(l)][static_cast<std::size_t>(e)]);
        }
    // TensorRT-LLM's folder holds one iteration: no snapshots to compare.
    QVERIFY(readLoadStats(kTrtllm).snapshots.empty());
}

void TestLoadReport::reportMatchesSimulate_data()
{
    QTest::addColumn<QString>("stats");
    QTest::newRow("SGLang recorder") << QString::fromStdString(kSglang);
    QTest::newRow("TensorRT-LLM statistics") << QString::fromStdString(kTrtllm);
}

void TestLoadReport::reportMatchesSimulate()
{
    QFETCH(QString, stats);
    const std::string path = stats.toStdString();
    const Scenario s = loadScenarioFile(kScenario);
    LoadReportOptions options;
    options.strategies = {"eplb", "gem"};
    options.extra_slots_per_gpu = {0, 1, 2, 8};
    options.steps = 3;
    const LoadReport r = buildLoadReport(s, path, options);

    // Balance of the file's own counts: Mixtral's 8 experts on 8 GPUs, one each, so a layer's
    // max/mean GPU load is its max/mean expert load as load-stats prints it.
    const LoadStats file = alignToModel(readLoadStats(path), s.model, path);
    QCOMPARE(static_cast<int>(r.layer_imbalance.size()), 32);
    for (int l = 0; l < 32; ++l)
        QVERIFY(qFuzzyCompare(r.layer_imbalance[static_cast<std::size_t>(l)], file.maxOverMean(l)));
    QVERIFY(r.imbalance_p50 <= r.imbalance_p90 && r.imbalance_p90 <= r.imbalance_p99 && r.imbalance_p99 <= r.imbalance_max);
    QCOMPARE(r.imbalance_max, *std::max_element(r.layer_imbalance.begin(), r.layer_imbalance.end()));
    QVERIFY(r.imbalance_max > 1.1);  // real routing is not uniform
    // The hottest expert of all is the largest over-mean ratio of any layer.
    QVERIFY(!r.hottest.empty());
    double largest = 0;
    for (int l = 0; l < 32; ++l)
        largest = std::max(largest, file.maxOverMean(l));
    QVERIFY(qFuzzyCompare(r.hottest.front().over_mean, largest));
    QCOMPARE(r.hottest.front().stability >= 0, !file.snapshots.empty());

    // Every point is what simulate gives with the report's overrides.
    auto simulate = [&](const ReportPoint& p) {
        const Scenario again = loadScenarioFile(kScenario, {{"workload.routing.kind", "counts"},
                                                            {"workload.routing.file", path},
                                                            {"placement.strategy", p.strategy},
                                                            {"placement.redundant_slots", std::to_string(p.redundant_slots)}});
        return runScenario(again, options.steps).mean;
    };
    const StepTotals base = simulate(r.baseline);
    QCOMPARE(r.baseline.step_time_us, base.step_time_us);
    QCOMPARE(r.baseline.max_concurrent_users, base.max_concurrent_users);
    QVERIFY(!r.curve.empty());
    bool sawFull = false;
    for (const ReportPoint& p : r.curve) {
        if (!p.fits) {  // simulate refuses it too, with the bytes it needs
            QVERIFY_THROWS_EXCEPTION(InputError, simulate(p));
            sawFull = true;
            continue;
        }
        const StepTotals t = simulate(p);
        QCOMPARE(p.step_time_us, t.step_time_us);
        QCOMPARE(p.moe_time_us, t.moe_time_us);
        QCOMPARE(p.max_concurrent_users, t.max_concurrent_users);
        // Redundant slots cost memory: fewer users than without them.
        QCOMPARE(p.slot_count, p.slots_per_gpu * 8);
        if (p.redundant_slots > 0 && p.fits)
            QVERIFY(p.max_concurrent_users < r.baseline.max_concurrent_users);
    }
    // 8 more experts per GPU (another copy of every Mixtral layer's experts: 94 GB) cannot fit an H100.
    QVERIFY(sawFull);

    // The recommendation is the knee: better than EPLB off by the gain, or EPLB off.
    QVERIFY(!r.recommendation.empty());
    if (r.recommended >= 0) {
        const ReportPoint& p = r.curve[static_cast<std::size_t>(r.recommended)];
        QVERIFY(p.fits);
        QVERIFY(p.step_time_us <= (1.0 - options.knee_gain) * r.baseline.step_time_us);
        QVERIFY2(r.recommendation.find(p.strategy) != std::string::npos, r.recommendation.c_str());
        QCOMPARE(r.recommended_placement.numLayers(), 32);
    } else {
        QVERIFY2(r.recommendation.rfind("Keep EPLB off", 0) == 0, r.recommendation.c_str());
    }
    QCOMPARE(r.traffic_off.size(), std::size_t{64});
    QCOMPARE(r.traffic_on.size(), std::size_t{64});
}

// The Mixtral files against DeepSeek-R1: refused before any work, naming both shapes.
void TestLoadReport::wrongShapeNamesBoth()
{
    const Scenario s = loadScenarioFile(std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/deepseek-r1-decode-hgx-h200x8.yaml");
    for (const std::string& path : {kSglang, kTrtllm}) {
        try {
            (void)buildLoadReport(s, path, {});
            QFAIL("expected an InputError");
        } catch (const InputError& e) {
            const QString text = QString::fromStdString(e.what());
            QVERIFY2(text.contains(QStringLiteral("32")) && (text.contains(QStringLiteral("61")) || text.contains(QStringLiteral("58"))),
                     qPrintable(text));
        }
    }
}

QTEST_GUILESS_MAIN(TestLoadReport)
#include "tst_load_report.moc"
