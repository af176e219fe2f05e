// What-if comparison (terms, model, background runner), heatmap data, samples gallery and tours,
// CSV and headless summaries.
#include "compare_model.h"
#include "compare_runner.h"
#include "heatmap_data.h"
#include "metrics_csv.h"
#include "run_summary.h"
#include "samples_catalog.h"
#include "scenario_document.h"
#include "tour_figures.h"

#include "common/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace moex::session;

namespace {

QString samples() { return QStringLiteral(MOEX_SOURCE_DIR "/samples"); }
QString sample(const char* name) { return samples() + QStringLiteral("/scenarios/") + QLatin1String(name); }

}  // namespace

class TestComparison : public QObject {
    Q_OBJECT
private slots:
    void termsAndExplanation()
    {
        ScenarioDocument a, b;
        QVERIFY(a.load(sample("deepseek-r1-decode-hgx-h200x8.yaml")));
        QVERIFY(b.load(sample("deepseek-r1-decode-nvl72.yaml")));
        const ComparisonResult r = compareScenarios(a.scenario(), a.placement(), b.scenario(), b.placement(), 3);
        // Every term of the step's breakdown, once, with each side's mean.
        QStringList keys;
        for (const CompareTerm& t : r.terms)
            keys << QString::fromStdString(t.key);
        for (const char* k : {"dispatch_us", "combine_us", "expert_compute_us", "attention_us", "overhead_us", "dp_sync_us",
                              "step_time_us", "tokens_per_s_per_gpu", "imbalance_cost_us"})
            QCOMPARE(keys.count(QLatin1String(k)), 1);
        const auto small = std::find_if(r.terms.begin(), r.terms.end(), [](const CompareTerm& t) { return t.key == "overhead_us"; });
        QCOMPARE(small->a, r.a.mean.overhead_us);
        QCOMPARE(small->b, r.b.mean.overhead_us);
        QVERIFY(small->a > 0 && small->b > 0);
        // What imbalance costs: the MoE time over the balanced floor of each side.
        const auto cost = std::find_if(r.terms.begin(), r.terms.end(),
                                       [](const CompareTerm& t) { return t.key == "imbalance_cost_us"; });
        QVERIFY(cost != r.terms.end());
        QCOMPARE(cost->a, r.a.mean.moe_time_us - r.a.mean.moe_time_balanced_us);
        QCOMPARE(cost->b, r.b.mean.moe_time_us - r.b.mean.moe_time_balanced_us);
        // The NVL72 side pays for its imbalance. The 8 x HGX-H200 side is communication-bound
        // under two-batch overlap (DeepEP's per-pair messages over the NICs: dispatch + combine
        // about 5x its expert compute), so its compute, balanced or not, hides behind the
        // all-to-all: imbalance costs it nothing, and the cost must say so rather than go negative.
        QVERIFY(cost->b > 0);
        QVERIFY(cost->a >= 0);
        QVERIFY(r.a.mean.dispatch_us + r.a.mean.combine_us > r.a.mean.expert_compute_us);
        QCOMPARE(QString::fromStdString(r.terms.front().key), QStringLiteral("dispatch_us"));
        QVERIFY(r.terms.front().a > r.terms.front().b);  // NICs are slower than NVLink
        const QString text = QString::fromStdString(r.explanation);
        QVERIFY2(text.contains(QStringLiteral("NVLink domain")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("tokens/s per GPU")));
        // Terms that did not move are left out of the list; with none moved the text says so.
        QVERIFY2(!text.contains(QStringLiteral(" +0.00 ms")) && !text.contains(QStringLiteral(" -0.00 ms")), qPrintable(text));
        const ComparisonResult same = compareScenarios(a.scenario(), a.placement(), a.scenario(), a.placement(), 2);
        QVERIFY2(QString::fromStdString(same.explanation).contains(QStringLiteral("No term of the step differs")),
                 same.explanation.c_str());

        CompareModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setTerms(r.terms);
        QCOMPARE(model.rowCount(), static_cast<int>(r.terms.size()));
        QCOMPARE(model.columnCount(), 5);
        QVERIFY(model.data(model.index(0, CompareModel::AColumn)).toString().endsWith(QStringLiteral(" ms")));
        QVERIFY(model.data(model.index(0, CompareModel::RatioColumn)).toString().endsWith(QLatin1Char('x')));
        QCOMPARE(model.data(model.index(0, CompareModel::DeltaColumn), CompareModel::BetterRole).toInt(), 1);
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void runnerWorksInTheBackground()
    {
        ScenarioDocument a;
        QVERIFY(a.load(sample("mixtral-8x7b-decode-hgx-h100.yaml")));
        ScenarioDocument b;
        b.copyFrom(a);
        QVERIFY(!b.isModified());  // an exact copy: nothing to lose until it is edited
        QVERIFY(b.filePath().isEmpty());
        QVERIFY(b.applyOverride(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("32")));
        QVERIFY(b.isModified());
        CompareRunner runner;
        QSignalSpy ready(&runner, &CompareRunner::ready);
        runner.request(a.scenario(), a.placement(), b.scenario(), b.placement(), 2);
        QTRY_COMPARE(ready.count(), 1);
        QVERIFY(runner.result());
        // The step time of each side is what a summary of that side alone gives, and B's batch of
        // 32 tokens per GPU (A: 64) takes less time a step.
        const auto& terms = runner.result()->terms;
        const auto step = std::find_if(terms.begin(), terms.end(), [](const CompareTerm& t) { return t.key == "step_time_us"; });
        QVERIFY(step != terms.end());
        QCOMPARE(step->a, summarize(a.scenario(), a.placement(), 2).mean.step_time_us);
        QCOMPARE(step->b, summarize(b.scenario(), b.placement(), 2).mean.step_time_us);
        QVERIFY(step->b < step->a);
    }

    void newerRequestSupersedesOlder()
    {
        ScenarioDocument a;
        QVERIFY(a.load(sample("mixtral-8x7b-decode-hgx-h100.yaml")));
        CompareRunner runner;
        QSignalSpy ready(&runner, &CompareRunner::ready);
        QSignalSpy failed(&runner, &CompareRunner::failed);
        // A request of 20,000 steps a side (a minute or more) is superseded at once: were it not
        // cancelled, the runner's one thread would still be busy with it when the test times out.
        runner.request(a.scenario(), a.placement(), a.scenario(), a.placement(), 20000);
        runner.request(a.scenario(), a.placement(), a.scenario(), a.placement(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 30000);
        QCOMPARE(runner.result()->a.steps, 2);
        QCOMPARE(runner.result()->b.steps, 2);
        QVERIFY(!runner.busy());
        QCOMPARE(failed.count(), 0);
        // Nothing of the superseded request arrives later.
        QTest::qWait(50);
        QCOMPARE(ready.count(), 1);
    }

    void destroyingRunnerStopsItsRequest()
    {
        ScenarioDocument a;
        QVERIFY(a.load(sample("mixtral-8x7b-decode-hgx-h100.yaml")));
        auto runner = std::make_unique<CompareRunner>();
        QSignalSpy ready(runner.get(), &CompareRunner::ready);
        runner->request(a.scenario(), a.placement(), a.scenario(), a.placement(), 20000);
        QVERIFY(runner->busy());
        QTest::qWait(20);  // let the job start its steps
        runner.reset();    // cancels and waits one step at most (a hang here is the failure)
        QCOMPARE(ready.count(), 0);
    }

    void heatmapDataAndHistory()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("mixtral-8x7b-decode-hgx-h100.yaml")));
        RunSummary r = summarize(doc.scenario(), doc.placement(), 2);
        const Matrix load = expertLoadMatrix(r.last);
        QCOMPARE(load.rows, doc.scenario().model.numMoeLayers());
        QCOMPARE(load.cols, 8);
        const Matrix traffic = trafficMatrix(r.last);
        QCOMPARE(traffic.rows, 8);
        QCOMPARE(traffic.cols, 8);
        LatencyHistory h(3);
        for (int i = 0; i < 5; ++i) {
            r.last.step = i;
            h.add(r.last);
        }
        QCOMPARE(h.size(), 3);
        QCOMPARE(h.steps(), (std::vector<int>{2, 3, 4}));
        h.add(r.last);  // step 4 again (re-simulated after an edit) replaces its row
        QCOMPARE(h.size(), 3);
        r.last.step = 0;
        h.add(r.last);  // reset
        QCOMPARE(h.size(), 1);
        QCOMPARE(h.matrix().cols, 8);
        QVERIFY(h.matrix().at(0, 0) > 0);
        // Under two-batch overlap a GPU's traffic runs beside its compute: its latency is the step
        // less its wait, never more than the step (the sum of its phases is, in prefill).
        QVERIFY(doc.load(sample("deepseek-r1-prefill-hgx-h200x8.yaml")));
        const RunSummary tbo = summarize(doc.scenario(), doc.placement(), 1);
        LatencyHistory ht(3);
        ht.add(tbo.last);
        double phasesBeyond = 0;
        for (std::size_t g = 0; g < tbo.last.gpus.size(); ++g) {
            const moex::GpuMetrics& x = tbo.last.gpus[g];
            const double ms = ht.matrix().at(0, static_cast<int>(g));
            QVERIFY2(ms > 0 && ms <= tbo.last.summary.step_time_us / 1000.0 * (1 + 1e-12), qPrintable(QString::number(g)));
            QVERIFY(std::abs(ms * 1000.0 + x.idle_us - tbo.last.summary.step_time_us) <= 1e-9 * tbo.last.summary.step_time_us);
            phasesBeyond = std::max(phasesBeyond, x.compute_us + x.attention_us + x.dispatch_us + x.combine_us
                                                      - tbo.last.summary.step_time_us);
        }
        QVERIFY(phasesBeyond > 0);  // what the old sum of phases showed

        const std::string csv = metricsToCsv(r.last);
        QVERIFY(csv.rfind("gpu,compute_us", 0) == 0);
        QVERIFY(csv.find("step_time_us,") != std::string::npos);
        const QString text = QString::fromStdString(headlessSummary(r));
        QVERIFY(text.contains(QStringLiteral("tokens/s")));
        QVERIFY(text.contains(QStringLiteral("straggler")));
    }

    void samplesGalleryAndTours()
    {
        const auto list = listSamples(samples() + QStringLiteral("/scenarios"));
        QVERIFY(list.size() >= 10);
        for (const auto& s : list)
            QVERIFY2(!s.summary.isEmpty(), qPrintable(s.path));
        const auto tours = listTours(samples() + QStringLiteral("/tours"));
        QVERIFY(!tours.empty());
        for (const auto& info : tours) {
            const Tour t = loadTour(info.path);
            QVERIFY(t.steps.size() >= 2);
            for (const auto& step : t.steps) {
                ScenarioDocument doc;
                QVERIFY2(doc.load(step.scenario, step.overrides), qPrintable(doc.lastError()));
                QVERIFY(!step.caption.isEmpty());
            }
        }
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("bad-tour.yaml"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("title: x\nsteps:\n  - {scenario: nowhere.yaml, caption: c}\n");
        f.close();
        try {
            loadTour(bad);
            QFAIL("a tour naming a missing scenario loaded");
        } catch (const moex::InputError& e) {
            const QString msg = QString::fromStdString(e.diagnostics().format());
            QVERIFY2(msg.contains(QStringLiteral("bad-tour.yaml:3:")), qPrintable(msg));
        }
        // Typos and placeholders a tour would show as "…" or ignore: errors at their line.
        const QString scenario = samples() + QStringLiteral("/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
        const std::vector<std::pair<QString, QString>> rows = {
            {QStringLiteral("title: x\nsteps:\n  - {scenario: S, caption: c, capton: d}\n"), QStringLiteral("3:")},
            {QStringLiteral("title: x\nextra: 2\nsteps:\n  - {scenario: S, caption: c}\n"), QStringLiteral("2:")},
            {QStringLiteral("title: x\nsteps:\n  - {scenario: S, caption: 'was {step_ms@9}'}\n"), QStringLiteral("3:")},
            {QStringLiteral("title: x\nsteps:\n  - {scenario: S, caption: '{nosuch}'}\n"), QStringLiteral("3:")},
            {QStringLiteral("title: x\nsteps:\n  - {scenario: S, caption: '{recovered@1}'}\n"), QStringLiteral("3:")},
            {QStringLiteral("title: x\nsteps:\n  - {scenario: S, caption: 'open {imbalance'}\n"), QStringLiteral("3:")},
            // A setting the scenario refuses is the tour's line, at the value (column 36), not "--set".
            {QStringLiteral("title: x\nsteps:\n  - scenario: S\n    caption: c\n    set: {workload.tokens_per_gpu: lots}\n"),
             QStringLiteral("5:36: error: set workload.tokens_per_gpu: lots:")},
            {QStringLiteral("title: x\nsteps:\n  - {scenario: S, caption: c}\n  - scenario: S\n    caption: c\n"
                            "    set:\n      placement.strategy: eplb\n      workload.tokns_per_gpu: 8\n"),
             QStringLiteral("8:31: error: set workload.tokns_per_gpu: 8:")},
            // Keys given twice (yaml-cpp kept one in silence) and a second document: errors at their line.
            {QStringLiteral("title: x\nsteps:\n  - scenario: S\n    caption: c\n    caption: d\n"),
             QStringLiteral("5:5: error: key 'caption' given twice in a step (first at line 4)")},
            {QStringLiteral("title: x\nsteps:\n  - scenario: S\n    caption: c\n    set:\n      workload.tokens_per_gpu: 8\n"
                            "      workload.tokens_per_gpu: 16\n"),
             QStringLiteral("7:7: error: key 'workload.tokens_per_gpu' given twice in a step's set")},
            {QStringLiteral("title: x\nsteps:\n  - {scenario: S, caption: c}\n---\ntitle: y\n"),
             QStringLiteral("5:1: error: a second YAML document")},
            // A placement shape the settings made (11 slots on 8 GPUs): blamed on both, at the first.
            {QStringLiteral("title: x\nsteps:\n  - scenario: S\n    caption: c\n    set:\n      placement.strategy: eplb\n"
                            "      placement.redundant_slots: 3\n"),
             QStringLiteral("6:27: error: set placement.strategy: eplb, placement.redundant_slots: 3: placement: eplb needs the slots")},
        };
        for (const auto& [text, line] : rows) {
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(QString(text).replace(QStringLiteral("scenario: S"), QStringLiteral("scenario: ") + scenario).toUtf8());
            f.close();
            try {
                loadTour(bad);
                QFAIL(qPrintable(QStringLiteral("loaded: ") + text));
            } catch (const moex::InputError& e) {
                const QString msg = QString::fromStdString(e.diagnostics().format());
                QVERIFY2(msg.contains(QStringLiteral("bad-tour.yaml:") + line), qPrintable(msg));
            }
        }
    }

    // Captions are filled from figures, hand-made here: step times 10, 20 and 14 ms recover
    // (20 - 14) / (20 - 10) = 60% at step 3 of the 10 ms that step 2 cost.
    void captionPlaceholders()
    {
        std::vector<TourStepFigures> f(3);
        const double ms[] = {10, 20, 14};
        for (int i = 0; i < 3; ++i) {
            f[static_cast<std::size_t>(i)].ok = true;
            f[static_cast<std::size_t>(i)].step_ms = ms[i];
            f[static_cast<std::size_t>(i)].imbalance = 1.0 + 0.1 * i;
            f[static_cast<std::size_t>(i)].comm_ms = 2.5;
            f[static_cast<std::size_t>(i)].ktok_s = 640.4;
        }
        QCOMPARE(fillCaption(QStringLiteral("{step_ms@2} -> {step_ms}: {recovered@1,2} of {loss@1,2} ms"), 2, f),
                 QStringLiteral("20.00 -> 14.00: 60% of 10.00 ms"));
        QCOMPARE(fillCaption(QStringLiteral("imbalance {imbalance}, {comm_ms} ms, {ktok_s}k tok/s"), 1, f),
                 QStringLiteral("imbalance 1.10, 2.50 ms, 640k tok/s"));
        QCOMPARE(fillCaption(QStringLiteral("{step_ms} {unknown} {recovered}"), 0, f),
                 QStringLiteral("10.00 {unknown} {recovered}"));
        // Not computed yet, or a failed step: an ellipsis, never a made-up number.
        QCOMPARE(fillCaption(QStringLiteral("{step_ms} and {recovered@1,2}"), 2, {}), QStringLiteral("\u2026 and \u2026"));
        f[1].ok = false;
        QCOMPARE(fillCaption(QStringLiteral("{step_ms@2}"), 0, f), QStringLiteral("\u2026"));
    }

    // The shipped tour's captions quote the figures of its own steps: every placeholder known,
    // and step 5's recovery equals what the steps' summaries give.
    void shippedTourQuotesItsFigures()
    {
        for (const auto& info : listTours(samples() + QStringLiteral("/tours"))) {
            const Tour t = loadTour(info.path);
            const auto figures = tourFigures(t);
            QCOMPARE(figures.size(), t.steps.size());
            for (std::size_t i = 0; i < t.steps.size(); ++i) {
                QVERIFY2(figures[i].ok, figures[i].error.c_str());
                const QString text = fillCaption(t.steps[i].caption, static_cast<int>(i), figures);
                QVERIFY2(!text.contains(QLatin1Char('{')) && !text.contains(QStringLiteral("\u2026")), qPrintable(text));
                if (t.steps[i].caption.contains(QStringLiteral("{recovered@3,4}"))) {
                    const double share = 100.0 * (figures[3].step_ms - figures[i].step_ms)
                                         / (figures[3].step_ms - figures[2].step_ms);
                    QVERIFY2(text.contains(QString::number(share, 'f', 0) + QLatin1Char('%')), qPrintable(text));
                    QVERIFY(share > 0 && share < 100);  // what the sample shows: part, not all, recovered
                }
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestComparison)
#include "tst_comparison.moc"
