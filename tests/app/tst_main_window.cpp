// The main window as a new user drives it: every sample loads and renders with no Qt warning; a
// mouse drag on the canvas moves an expert, the numbers change and undo restores them exactly;
// refused edits show feedback; Duplicate as B fills the compare view; every model passes
// QAbstractItemModelTester; presentation mode enlarges fonts. (The guided tours: tst_tour.)
#include "compare_runner.h"
#include "window_fixture.h"
#include "compare_view.h"
#include "main_window.h"
#include "prediction_view.h"
#include "samples_catalog.h"
#include "scenario_document.h"
#include "screenshot.h"
#include "sim_runner.h"
#include "tour_bar.h"

#include "compare_model.h"
#ifndef Q_MOC_RUN
#include "common/atomic_file.h"
#include "metrics/step_metrics.h"
#include "placement/exporters.h"
#endif
#include "heatmap_panel.h"
#include "views/charts.h"
#include "views/heatmap_widget.h"
#include "views/scenario_panel.h"
#include "views/topology_canvas.h"

#include <QAbstractItemModelTester>
#include <QChart>
#include <QDockWidget>
#include <QFontInfo>
#include <QLabel>

#include <thread>
#include <QAction>
#include <QApplication>
#include <QMenu>
#include <QPushButton>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include <algorithm>
#include <memory>

using moex::app::MainWindow;
using namespace moex::app::test;
using moex::session::MetricsPtr;
using moex::ExpertId;
using moex::GpuId;
using moex::MoeLayerId;
using moex::MoeLayers;

namespace {

MoeLayers onlyLayer(int moeLayer) { return MoeLayers::only(MoeLayerId(moeLayer)); }

bool holds(const moex::Placement& p, int layer, int gpu, int expert)
{
    const auto& g = p.layers[static_cast<std::size_t>(layer)].gpu_slots[static_cast<std::size_t>(gpu)];
    return std::find(g.begin(), g.end(), moex::ExpertId(expert)) != g.end();
}

void compareExactly(const moex::StepMetrics& a, const moex::StepMetrics& b)
{
    QCOMPARE(a.summary.step_time_us, b.summary.step_time_us);
    QCOMPARE(a.summary.tokens_per_s, b.summary.tokens_per_s);
    QCOMPARE(a.summary.tokens_per_s_per_kw, b.summary.tokens_per_s_per_kw);
    QCOMPARE(a.summary.imbalance, b.summary.imbalance);
    QCOMPARE(a.gpus.size(), b.gpus.size());
    for (std::size_t g = 0; g < a.gpus.size(); ++g) {
        QCOMPARE(a.gpus[g].compute_us, b.gpus[g].compute_us);
        QCOMPARE(a.gpus[g].dispatch_us, b.gpus[g].dispatch_us);
        QCOMPARE(a.gpus[g].combine_us, b.gpus[g].combine_us);
        QCOMPARE(a.gpus[g].idle_us, b.gpus[g].idle_us);
        QCOMPARE(a.gpus[g].expert_pairs, b.gpus[g].expert_pairs);
        QCOMPARE(a.gpus[g].hbm_used_gb, b.gpus[g].hbm_used_gb);
    }
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { setUpWindowTests(m_config.path()); }
    void init() { clearWarnings(); }
    void cleanup() { QVERIFY2(noWarnings(), warningText().constData()); }

    // File > Export without its dialogs: every placement format parses back (by the format's own
    // rules) into the window's placement; the view exports as a real PNG and SVG; metrics as CSV
    // with one row per GPU and as JSON with the contract keys; an unwritable path is an error and
    // leaves nothing behind.
    void exportsWriteWhatTheirReadersAccept()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        QTemporaryDir dir;
        const auto& doc = *w.documentA();
        const int G = doc.scenario().topology.numGpus();
        using moex::ExportFormat;
        for (ExportFormat f : {ExportFormat::native, ExportFormat::sglang, ExportFormat::trtllm, ExportFormat::vllm_ascend,
                               ExportFormat::eplb}) {
            const QString name = QString::fromStdString(std::string(moex::toString(f)));
            const QString path = dir.filePath(QStringLiteral("placement-") + name);
            const QString error = w.exportPlacementTo(f, path);
            QVERIFY2(error.isEmpty(), qPrintable(name + QStringLiteral(": ") + error));
            const std::string text = moex::readFile(path.toStdString());
            const moex::Placement back = moex::parsePlacementExport(text, doc.scenario().model, G, f, path.toStdString());
            QCOMPARE(back.numLayers(), doc.placement().numLayers());
            for (int l = 0; l < back.numLayers(); ++l)
                QVERIFY2(back.layers[static_cast<std::size_t>(l)].gpu_slots == doc.placement().layers[static_cast<std::size_t>(l)].gpu_slots,
                         qPrintable(name + QStringLiteral(" layer ") + QString::number(l)));
        }
        const QString png = dir.filePath(QStringLiteral("view.png"));
        QVERIFY(w.exportViewTo(png, false).isEmpty());
        const QImage image(png);
        QCOMPARE(image.size(), w.canvas()->size());
        const QString svg = dir.filePath(QStringLiteral("view.svg"));
        QVERIFY(w.exportViewTo(svg, true).isEmpty());
        const std::string svgText = moex::readFile(svg.toStdString());
        QVERIFY(svgText.find("<svg") != std::string::npos);
        QVERIFY(svgText.find("GPU 0") != std::string::npos);

        const QString csv = dir.filePath(QStringLiteral("metrics.csv"));
        QVERIFY(w.exportMetricsTo(csv, false).isEmpty());
        const std::string csvText = moex::readFile(csv.toStdString());
        QVERIFY(std::count(csvText.begin(), csvText.end(), '\n') > G);
        const QString json = dir.filePath(QStringLiteral("metrics.json"));
        QVERIFY(w.exportMetricsTo(json, true).isEmpty());
        const std::string jsonText = moex::readFile(json.toStdString());
        for (const char* key : {"\"summary\"", "\"gpus\"", "\"links\"", "\"traffic\"", "\"layers\""})
            QVERIFY2(jsonText.find(key) != std::string::npos, key);

        const QString bad = dir.filePath(QStringLiteral("no-such-dir/metrics.csv"));
        QVERIFY(!w.exportMetricsTo(bad, false).isEmpty());
        QVERIFY(!QFile::exists(bad));
        QVERIFY(!w.exportViewTo(dir.filePath(QStringLiteral("no-such-dir/view.png")), false).isEmpty());
    }

    // Right-click a GPU > 0.80: the GPU runs at 0.8 in the document and the metrics, its compute
    // takes longer; undo restores speed 1 and every number exactly.
    void gpuSpeedMenuSlowsTheGpuAndUndoRestores()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        const MetricsPtr before = w.latestMetrics();
        QVERIFY(before);
        QCOMPARE(w.documentA()->scenario().speeds.of(5), 1.0);
        std::unique_ptr<QMenu> menu(w.canvas()->createSpeedMenu(GpuId(5), &w));
        QAction* slow = nullptr;
        for (QAction* a : menu->actions())
            if (a->text() == QStringLiteral("0.80"))
                slow = a;
        QVERIFY(slow);
        slow->trigger();
        QTRY_VERIFY(w.latestMetrics() != before);
        QCOMPARE(w.documentA()->scenario().speeds.of(5), 0.8);
        const MetricsPtr after = w.latestMetrics();
        QCOMPARE(after->gpus[5].speed, 0.8);
        QVERIFY(after->gpus[5].compute_us > before->gpus[5].compute_us);
        QVERIFY(w.undoStack()->canUndo());
        w.undoStack()->undo();
        QTRY_VERIFY(w.latestMetrics() != after);
        QCOMPARE(w.documentA()->scenario().speeds.of(5), 1.0);
        compareExactly(*w.latestMetrics(), *before);
    }

    void everySampleLoadsAndRendersWithoutWarnings()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        const auto list = moex::session::listSamples(samples() + QStringLiteral("/scenarios"));
        QVERIFY(list.size() >= 10);
        for (const auto& s : list) {
            QVERIFY2(w.openScenario(s.path, {}, false), qPrintable(s.path + QLatin1Char(' ') + w.documentA()->lastError()));
            QVERIFY(w.latestMetrics());
            QCOMPARE(static_cast<int>(w.latestMetrics()->gpus.size()), w.documentA()->scenario().topology.numGpus());
            QVERIFY(w.windowTitle().contains(w.documentA()->displayName()));
            QVERIFY(w.statusText().contains(QStringLiteral("tok/s")));
            const QImage img = w.grab().toImage();
            QVERIFY(!img.isNull());
            QVERIFY2(recordedWarnings().isEmpty(), qPrintable(s.name + QStringLiteral(": ") + recordedWarnings().join(QLatin1Char('\n'))));
        }
    }

    // Run > Source > Local engine: the real MoE layers run on the worker thread; the canvas shows
    // the engine's ranks (host-cpu) and layers; edits on that canvas are refused, the document and
    // its layout stay as they were; back to the model, its GPUs and numbers return.
    void localEngineRunsLiveWithoutTouchingTheDocument()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("small.yaml"));
        moex::writeFileAtomically(path.toStdString(),
                                  "name: small-engine\n"
                                  "model:\n"
                                  "  name: small-deepseek\n  hidden_size: 64\n  num_layers: 4\n  moe_layers: {first: 1, every: 1}\n"
                                  "  routed_experts: 16\n  experts_per_token: 4\n  shared_experts: 1\n  moe_intermediate_size: 32\n"
                                  "  shared_intermediate_size: 32\n  expert_groups: 4\n  groups_per_token: 2\n  scoring: sigmoid\n"
                                  "  routed_scaling_factor: 2.5\n  weight_dtype: fp8\n  vocab_size: 1000\n"
                                  "  attention: {kind: gqa, heads: 4, kv_heads: 2, head_dim: 16}\n"
                                  "topology: {builtin: hgx-h100}\n"
                                  "workload: {phase: decode, tokens_per_gpu: 24}\n");
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(path, {}, false));
        const moex::Placement before = w.documentA()->placement();
        QCOMPARE(w.latestMetrics()->source, std::string("sim"));

        w.setEngineSource(true);
        QVERIFY(w.engineSource());
        QTRY_VERIFY_WITH_TIMEOUT(w.latestMetrics() && w.latestMetrics()->source == "cpu", 60000);
        const MetricsPtr first = w.latestMetrics();
        QVERIFY2(first->num_gpus >= 2 && first->num_gpus <= 4,
                 qPrintable(QStringLiteral("%1 ranks, %2 gpu entries, %3 layers, step %4")
                                .arg(first->num_gpus)
                                .arg(first->gpus.size())
                                .arg(first->layers.size())
                                .arg(first->step)));
        QCOMPARE(first->layers.size(), std::size_t{1});  // the first MoE layer
        QCOMPARE(first->layers[0].decoder_layer, 1);
        QVERIFY(first->summary.moe_time_us > 0);
        QVERIFY(w.statusText().contains(QStringLiteral("source: cpu")));
        QVERIFY(w.action(QStringLiteral("actionSourceEngine"))->isChecked());
        // The panel still shows the scenario (the drawn system the model simulates) and says where
        // the engine runs it instead.
        QVERIFY2(w.scenarioPanel()->engineNote().contains(QStringLiteral("%1 CPU rank").arg(first->num_gpus)),
                 qPrintable(w.scenarioPanel()->engineNote()));
        // The charts and heatmaps call what they show ranks, as the canvas does.
        QVERIFY(w.breakdownChart()->chart()->title().contains(QStringLiteral("rank")));
        QVERIFY(w.heatmaps()->latency()->shownTitle().contains(QStringLiteral("rank")));
        QVERIFY(w.heatmaps()->traffic()->shownTitle().startsWith(QStringLiteral("Rank")));
        // Beside it, the simulator's prediction of that step: phases, then the one layer.
        QCOMPARE(w.predictionView()->table()->rowCount(), 5);
        QCOMPARE(w.predictionView()->table()->item(0, 0)->text(), QStringLiteral("MoE layers"));
        QVERIFY(w.predictionView()->table()->item(0, 2)->text().toDouble() > 0);
        // Ranks beyond this machine's hardware threads take turns on the cores: the view says so.
        const QLabel* status = w.predictionView()->findChild<QLabel*>();
        QVERIFY(status);
        QCOMPARE(status->text().contains(QStringLiteral("took turns")),
                 first->num_gpus > static_cast<int>(std::thread::hardware_concurrency()));

        // The engine's canvas is not the document's: a drag there is refused.
        const int edits = w.undoStack()->count();
        emit w.canvas()->expertMoveRequested(onlyLayer(0), ExpertId(0), GpuId(0), GpuId(1));
        QCOMPARE(w.undoStack()->count(), edits);
        QVERIFY(w.statusBar()->currentMessage().contains(QStringLiteral("local engine")));

        // Live: steps keep coming from the worker while this thread stays free.
        w.runner()->setStepsPerSecond(0);
        w.runner()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w.latestMetrics()->step >= first->step + 2, 60000);
        w.runner()->pause();
        QCOMPARE(w.latestMetrics()->source, std::string("cpu"));
        QVERIFY(w.documentA()->placement() == before);
        QVERIFY(!w.documentA()->isModified());

        w.setEngineSource(false);
        QTRY_VERIFY_WITH_TIMEOUT(w.latestMetrics() && w.latestMetrics()->source == "sim", 60000);
        QVERIFY(w.scenarioPanel()->engineNote().isEmpty());
        QVERIFY(w.breakdownChart()->chart()->title().contains(QStringLiteral("GPU")));
        QVERIFY(w.heatmaps()->latency()->shownTitle().contains(QStringLiteral("GPU")));
        QCOMPARE(w.latestMetrics()->num_gpus, w.documentA()->scenario().topology.numGpus());
        QVERIFY(w.documentA()->placement() == before);
    }

    void dragMovesExpertAndUndoRestoresExactly()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        w.setLayer(onlyLayer(0));
        QTest::qWait(50);
        moex::views::TopologyCanvas* canvas = w.canvas();
        const moex::Placement& p = w.documentA()->placement();
        const MetricsPtr before = w.latestMetrics();
        QVERIFY(before);

        // An expert chip that is shown and a GPU that does not hold that expert.
        int expert = -1, from = -1, to = -1;
        QPointF chip;
        for (int g = 0; g < p.numGpus() && expert < 0; ++g)
            for (auto e : p.layers[0].gpu_slots[static_cast<std::size_t>(g)]) {
                const QPointF pos = canvas->expertScenePos(GpuId(g), e);
                if (pos.isNull())
                    continue;
                for (int t = (g + 9) % p.numGpus(); t != g; t = (t + 1) % p.numGpus())
                    if (!holds(p, 0, t, e.value)) {
                        expert = e.value;
                        from = g;
                        to = t;
                        chip = pos;
                        break;
                    }
                if (expert >= 0)
                    break;
            }
        QVERIFY(expert >= 0);
        QWidget* vp = canvas->viewport();
        const QPoint start = canvas->mapFromScene(chip);
        const QPoint end = canvas->mapFromScene(canvas->gpuScenePos(GpuId(to)));
        QVERIFY(vp->rect().contains(start));
        QVERIFY(vp->rect().contains(end));
        QTest::mousePress(vp, Qt::LeftButton, Qt::NoModifier, start);
        QTest::mouseMove(vp, start + QPoint(6, 6));
        QTest::mouseMove(vp, (start + end) / 2);
        QTest::mouseMove(vp, end);
        QTest::mouseRelease(vp, Qt::LeftButton, Qt::NoModifier, end);
        QTRY_VERIFY(holds(w.documentA()->placement(), 0, to, expert));
        QVERIFY2(w.undoStack()->count() == 1,
                 qPrintable(QStringLiteral("%1 commands, index %2, stack %3 A %4, text '%5', from %6 to %7 expert %8")
                                .arg(w.undoStack()->count()).arg(w.undoStack()->index())
                                .arg(reinterpret_cast<quintptr>(w.undoStack())).arg(reinterpret_cast<quintptr>(w.documentA()))
                                .arg(w.undoStack()->undoText()).arg(from).arg(to).arg(expert)));
        QVERIFY(w.documentA()->isModified());
        QVERIFY(w.isWindowModified());
        // The re-simulation runs on the runner's worker and arrives as a new step.
        QTRY_VERIFY(w.latestMetrics() != before);
        const MetricsPtr after = w.latestMetrics();
        QVERIFY(after->layers[0].gpu_load != before->layers[0].gpu_load);

        w.action(QStringLiteral("actionUndo"))->trigger();
        QVERIFY(holds(w.documentA()->placement(), 0, from, expert));
        QVERIFY(!w.documentA()->isModified());
        QTRY_VERIFY(w.latestMetrics() != after);
        compareExactly(*w.latestMetrics(), *before);
        MetricsPtr undone = w.latestMetrics();
        w.action(QStringLiteral("actionRedo"))->trigger();
        QTRY_VERIFY(w.latestMetrics() != undone);
        compareExactly(*w.latestMetrics(), *after);
        undone = w.latestMetrics();
        w.action(QStringLiteral("actionUndo"))->trigger();
        QTRY_VERIFY(w.latestMetrics() != undone);

        // An edit end to end: command, document, re-simulation on the worker, every view updated.
        undone = w.latestMetrics();
        emit canvas->expertMoveRequested(onlyLayer(0), ExpertId(expert), GpuId(from), GpuId(to));
        QVERIFY(holds(w.documentA()->placement(), 0, to, expert));
        QTRY_VERIFY(w.latestMetrics() != undone);
        undone = w.latestMetrics();
        w.action(QStringLiteral("actionUndo"))->trigger();
        QTRY_VERIFY(w.latestMetrics() != undone);
        compareExactly(*w.latestMetrics(), *before);

        // A refused edit: a second replica on a GPU that has one.
        emit canvas->expertReplicateRequested(onlyLayer(0), ExpertId(expert), GpuId(from));
        QVERIFY2(canvas->feedbackText().contains(QStringLiteral("already holds")), qPrintable(canvas->feedbackText()));
        QCOMPARE(w.undoStack()->count(), 1);  // nothing pushed
        compareExactly(*w.latestMetrics(), *before);

        // A chip's right-click menu removes one replica of a replicated expert; undo puts it back.
        const moex::Placement original = w.documentA()->placement();
        const auto counts = original.layers[0].replicaCounts(original.num_experts);
        GpuId holder;
        ExpertId replicated;
        for (int g = 0; g < original.numGpus() && !replicated.valid(); ++g)
            for (ExpertId e : original.layers[0].gpu_slots[static_cast<std::size_t>(g)])
                if (counts[e.index()] > 1 && !canvas->expertScenePos(GpuId(g), e).isNull()) {
                    holder = GpuId(g);
                    replicated = e;
                    break;
                }
        QVERIFY(replicated.valid());
        std::unique_ptr<QMenu> chipMenu(canvas->createChipMenu(holder, replicated, &w));
        QAction* remove = chipMenu->actions().value(1);  // after the section heading
        QVERIFY(remove && remove->isEnabled() && remove->text() == QStringLiteral("Remove this replica"));
        undone = w.latestMetrics();
        remove->trigger();
        QVERIFY(!holds(w.documentA()->placement(), 0, holder.value, replicated.value));
        QCOMPARE(w.documentA()->placement().layers[0].replicaCounts(original.num_experts)[replicated.index()],
                 counts[replicated.index()] - 1);
        QVERIFY2(w.undoStack()->undoText().startsWith(QStringLiteral("Remove")), qPrintable(w.undoStack()->undoText()));
        QTRY_VERIFY(w.latestMetrics() != undone);
        w.action(QStringLiteral("actionUndo"))->trigger();
        QVERIFY(w.documentA()->placement() == original);
        w.documentA()->setModified(false);
    }

    void compareViewAfterDuplicateAsB()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("mixtral-8x7b-decode-hgx-h100.yaml"), {}, false));
        w.action(QStringLiteral("actionDuplicateAsB"))->trigger();
        QVERIFY(w.documentB()->hasScenario());
        QCOMPARE(w.document(), w.documentB());
        QVERIFY(!w.documentB()->isModified());  // an exact copy until it is edited
        // Change B through the panel's path (an undoable override, placed in the background).
        emit w.scenarioPanel()->overrideRequested(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("32"));
        QTRY_COMPARE(w.documentB()->scenario().workload.tokens_per_gpu, 32);
        QVERIFY(w.documentB()->isModified());
        QCOMPARE(w.documentA()->scenario().workload.tokens_per_gpu, 64);
        QTRY_VERIFY_WITH_TIMEOUT(w.compareView()->hasResult() && !w.compareRunner()->busy(), 30000);
        auto* model = w.compareView()->model();
        const auto& terms = model->terms();
        QCOMPARE(model->rowCount(), static_cast<int>(terms.size()));
        for (const char* key : {"dispatch_us", "overhead_us", "dp_sync_us", "step_time_us"})  // the Compare rows a user reads
            QVERIFY2(std::any_of(terms.begin(), terms.end(), [&](const auto& t) { return t.key == key; }), key);
        const auto step = std::find_if(terms.begin(), terms.end(), [](const auto& t) { return t.key == "step_time_us"; });
        QVERIFY(step != terms.end());
        QVERIFY(step->a != step->b);
        // A refused panel change shows the located error and changes nothing.
        emit w.scenarioPanel()->overrideRequested(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("many"));
        QTRY_VERIFY(!w.documentB()->isBusy());
        QVERIFY(w.scenarioPanel()->errorText().contains(QStringLiteral("tokens_per_gpu")));
        QCOMPARE(w.documentB()->scenario().workload.tokens_per_gpu, 32);
        QCOMPARE(w.undoStack()->count(), 1);
        w.setActiveDocument(0);
        QCOMPARE(w.document(), w.documentA());
        w.documentA()->setModified(false);
    }

    void everyModelPassesTheTester()
    {
        MainWindow w(samples());
        w.setInteractive(false);
        w.show();
        QVERIFY(w.openScenario(sample("mixtral-8x7b-decode-hgx-h100.yaml"), {}, false));
        w.duplicateAsB();
        QTRY_VERIFY_WITH_TIMEOUT(w.compareView()->hasResult(), 30000);
        const auto models = w.findChildren<QAbstractItemModel*>();
        QVERIFY(!models.isEmpty());
        std::vector<std::unique_ptr<QAbstractItemModelTester>> testers;
        for (QAbstractItemModel* m : models)
            testers.push_back(std::make_unique<QAbstractItemModelTester>(
                m, QAbstractItemModelTester::FailureReportingMode::QtTest));
        // Changes while the testers watch.
        QVERIFY(w.openScenario(sample("gpt-oss-120b-decode-hgx-h200.yaml"), {}, false));
        w.duplicateAsB();
        QTRY_VERIFY_WITH_TIMEOUT(w.compareView()->hasResult() && !w.compareRunner()->busy(), 30000);
        w.documentA()->setModified(false);
    }

    // Run > Speed speaks English: "1 step/s", "10 steps/s".
    void speedMenuWords()
    {
        MainWindow w(samples());
        QStringList texts;
        for (QAction* a : w.findChildren<QAction*>())
            texts << a->text();
        QVERIFY2(texts.contains(QStringLiteral("1 step/s")), qPrintable(texts.join(QLatin1Char('|'))));
        QVERIFY(!texts.contains(QStringLiteral("1 steps/s")));
        QVERIFY(texts.contains(QStringLiteral("10 steps/s")));
    }

    // Presentation mode enlarges what is on screen, not only the popup menus: the status bar, the
    // panel, the heatmaps, the charts' titles and axes, the canvas legend; and back exactly.
    void presentationModeEnlargesFonts()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("mixtral-8x7b-decode-hgx-h100.yaml"), {}, false));
        auto* status = w.statusBar()->findChildren<QLabel*>().value(0);
        auto* heatmap = w.heatmaps()->findChildren<QWidget*>().value(0);
        QVERIFY(status && heatmap);
        auto sizes = [&] {
            return std::vector<qreal>{QFontInfo(status->font()).pointSizeF(), QFontInfo(w.scenarioPanel()->font()).pointSizeF(),
                                      QFontInfo(heatmap->font()).pointSizeF(),
                                      w.findChild<moex::views::StepTimeChart*>()->chart()->titleFont().pointSizeF(),
                                      static_cast<qreal>(w.canvas()->legendSize().height())};
        };
        const auto normal = sizes();
        w.setPresentationMode(true);
        QApplication::processEvents();
        const auto big = sizes();
        for (std::size_t i = 0; i < normal.size(); ++i)
            QVERIFY2(big[i] > normal[i] * (i == 3 ? 1.2 : 1.3), qPrintable(QStringLiteral("size %1: %2 -> %3").arg(i).arg(normal[i]).arg(big[i])));
        w.setPresentationMode(false);
        QApplication::processEvents();
        const auto back = sizes();
        for (std::size_t i = 0; i < normal.size(); ++i)
            QCOMPARE(back[i], normal[i]);
    }

    // Small screens: at 1024 x 700 (normal and presentation mode) no dock is narrower than its
    // contents' minimum (the panel's fields, the heatmaps), and after growing back to 1600 x 1000
    // the panel is whole again.
    void smallScreenKeepsEveryDockUsable()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        auto check = [&](const char* when) {
            for (QDockWidget* dock : w.findChildren<QDockWidget*>()) {
                if (!dock->isVisible() || !dock->widget())
                    continue;
                const QSize min = dock->widget()->minimumSize();
                QVERIFY2(dock->widget()->width() >= min.width() && dock->widget()->height() >= min.height(),
                         qPrintable(QStringLiteral("%1: %2 is %3x%4, minimum %5x%6").arg(QLatin1String(when), dock->objectName())
                                        .arg(dock->widget()->width()).arg(dock->widget()->height())
                                        .arg(min.width()).arg(min.height())));
            }
            QVERIFY(w.scenarioPanel()->width() >= w.scenarioPanel()->minimumSizeHint().width());
            // The status bar's fields: whole and inside the window (the step time, tokens/s and the
            // imbalance always; the others where they fit).
            int shown = 0;
            for (QLabel* l : w.statusBar()->findChildren<QLabel*>()) {
                if (!l->isVisible() || l->text().isEmpty() || !l->text().contains(QLatin1Char(' ')))
                    continue;
                ++shown;
                QVERIFY2(l->mapTo(&w, QPoint(l->width(), 0)).x() <= w.width() && l->width() >= l->sizeHint().width(),
                         qPrintable(QStringLiteral("%1: '%2' %3 px of %4, right edge %5 of %6").arg(QLatin1String(when), l->text())
                                        .arg(l->width()).arg(l->sizeHint().width())
                                        .arg(l->mapTo(&w, QPoint(l->width(), 0)).x()).arg(w.width())));
            }
            QVERIFY(shown >= 3);
            QVERIFY(w.statusText().contains(QStringLiteral("imbalance")));
        };
        for (bool presentation : {false, true}) {
            w.setPresentationMode(presentation);
            w.resize(1024, 700);
            QTRY_VERIFY2(w.size() == QSize(1024, 700),
                         qPrintable(QStringLiteral("presentation %1: the window cannot be smaller than %2x%3")
                                        .arg(presentation).arg(w.minimumSizeHint().width()).arg(w.minimumSizeHint().height())));
            QApplication::processEvents();
            check(presentation ? "1024x700 presentation" : "1024x700");
            QVERIFY(!w.grab().isNull());
            w.resize(1600, 1000);
            QTRY_COMPARE(w.size(), QSize(1600, 1000));
            QApplication::processEvents();
            check(presentation ? "back to 1600x1000 presentation" : "back to 1600x1000");
        }
        w.setPresentationMode(false);
    }

    void saveAndRecent()
    {
        MainWindow w(samples());
        w.setInteractive(false);
        QVERIFY(w.openScenario(sample("mixtral-8x7b-decode-hgx-h100.yaml")));
        QVERIFY(w.findChild<QMenu*>(QStringLiteral("menuRecent"))->actions().size() >= 1);
        QTemporaryDir dir;
        QVERIFY(w.documentA()->setGpuSpeed(GpuId(2), 0.9).isEmpty());
        const QString saved = dir.filePath(QStringLiteral("s.yaml"));
        QVERIFY(w.documentA()->saveAs(saved));
        QVERIFY(!w.isWindowModified());
        const auto placementBefore = w.documentA()->placement();
        // Reopened, the file gives back what was saved: the edited speed, the rest unchanged.
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml")));
        QCOMPARE(w.documentA()->scenario().speeds.of(2), 1.0);
        QVERIFY(w.openScenario(saved));
        QCOMPARE(w.documentA()->scenario().speeds.of(2), 0.9);
        QCOMPARE(w.documentA()->scenario().speeds.of(1), 1.0);
        QCOMPARE(w.documentA()->scenario().model.name, std::string("Mixtral-8x7B"));
        QVERIFY(w.documentA()->placement() == placementBefore);
        // And it heads the recent files, by its full path.
        const QList<QAction*> recent = w.findChild<QMenu*>(QStringLiteral("menuRecent"))->actions();
        QVERIFY(!recent.isEmpty());
        QCOMPARE(recent.first()->toolTip(), QFileInfo(saved).absoluteFilePath());
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
