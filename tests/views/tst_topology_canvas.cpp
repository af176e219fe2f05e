#include "views/topology_canvas.h"
#include "views/canvas_items.h"
#include "views/canvas_layout.h"
#include "views/canvas_overlay.h"
#include "topology/builtin_topologies.h"
#include "metrics/gpu_busy.h"

#include "views_fixture.h"

#include <QAction>
#include <QFontInfo>
#include <QMenu>
#include <QSignalSpy>
#include <QTest>

using moex::ExpertId;
using moex::GpuId;
using moex::MoeLayerId;
using moex::MoeLayers;
using moex::views::TopologyCanvas;
using namespace moex::views::test;

namespace {
MoeLayers onlyLayer(int moeLayer) { return MoeLayers::only(MoeLayerId(moeLayer)); }
// Argument i of a recorded signal, as its own type.
template <class T>
T arg(const QList<QVariant>& args, int i)
{
    return qvariant_cast<T>(args.at(i));
}

QStringList g_warnings;
QtMessageHandler g_previous = nullptr;

void recordWarnings(QtMsgType type, const QMessageLogContext& ctx, const QString& msg)
{
    if (type == QtWarningMsg || type == QtCriticalMsg || type == QtFatalMsg)
        g_warnings << msg;
    if (g_previous)
        g_previous(type, ctx, msg);
}
}  // namespace

class TestTopologyCanvas : public QObject {
    Q_OBJECT
private:
    Sample m_nvl;  // DeepSeek-R1 on one GB200 NVL72, EPLB with 32 redundant slots
    std::unique_ptr<TopologyCanvas> m_canvas;

    // The first chip of GPU `gpu` in MoE layer `moeLayer`: (gpu, expert).
    std::pair<GpuId, ExpertId> someChip(int moeLayer, int gpu) const
    {
        const auto& cells = m_nvl.placement.layers[static_cast<std::size_t>(moeLayer)].gpu_slots[static_cast<std::size_t>(gpu)];
        return {GpuId(gpu), cells.front()};
    }
    QPoint toView(QPointF scenePos) const { return m_canvas->mapFromScene(scenePos); }
    void drag(QPointF from, QPointF to, Qt::KeyboardModifiers mods = {})
    {
        QWidget* vp = m_canvas->viewport();
        const QPoint a = toView(from);
        const QPoint b = toView(to);
        QTest::mousePress(vp, Qt::LeftButton, {}, a);
        for (int i = 1; i <= 8; ++i)
            QTest::mouseMove(vp, a + (b - a) * i / 8);
        QTest::mouseRelease(vp, Qt::LeftButton, mods, b);
    }

private slots:
    void initTestCase()
    {
        g_previous = qInstallMessageHandler(recordWarnings);
        m_nvl = loadSample(samplePath("deepseek-r1-decode-nvl72.yaml"));
    }

    void init()
    {
        m_canvas = std::make_unique<TopologyCanvas>();
        m_canvas->resize(1400, 1000);
        m_canvas->setScenario(m_nvl.scenario, m_nvl.placement);
        m_canvas->setMetrics(m_nvl.metrics);
        m_canvas->setLayer(onlyLayer(3));
        m_canvas->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_canvas.get()));
        m_canvas->fitAll();
    }

    void cleanup() { m_canvas.reset(); }

    void hostCpuDrawingIsTheNodeAlone()
    {
        // host-cpu (the CPU engine's ranks) has no NICs and no network: its drawing must not keep
        // the network band's room above the node, or the fitted node is drawn small in a corner.
        // An HGX node keeps the band (its leaves and spines are drawn there).
        moex::TopologyParams host;
        host.builtin = "host-cpu";
        host.ranks = 2;
        const moex::views::CanvasLayout cpu = moex::views::layoutTopology(moex::buildTopology(host), 4);
        QRectF drawn;
        for (const auto& b : cpu.boxes)
            drawn |= b.rect;
        for (const QRectF& g : cpu.gpuRects)
            drawn |= g;
        QVERIFY(!drawn.isEmpty());
        QVERIFY2(cpu.sceneRect.height() <= drawn.height() + 30,
                 qPrintable(QStringLiteral("scene %1 high for a drawing %2 high").arg(cpu.sceneRect.height()).arg(drawn.height())));
        moex::TopologyParams hgx;
        hgx.builtin = "hgx-h100";
        const moex::views::CanvasLayout gpu = moex::views::layoutTopology(moex::buildTopology(hgx), 4);
        QRectF gpus;
        for (const QRectF& g : gpu.gpuRects)
            gpus |= g;
        QVERIFY(gpu.sceneRect.top() < gpus.top() - 100);  // the band above the node
    }

    void everySampleBuildsWithoutWarnings_data()
    {
        QTest::addColumn<QString>("file");
        for (const QString& f : sampleFiles())
            QTest::addRow("%s", qPrintable(f.section(QLatin1Char('/'), -1))) << f;
    }
    // Fitted into a small view (the 1024 x 700 window's canvas is about 320 x 330), the drawing
    // keeps clear of the legend, wide topologies included: no GPU and no expert chip under it.
    void legendNeverCoversTheFittedDrawing_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QSize>("size");
        for (const char* f : {"kimi-k2-thinking-decode-hgx-h200x8.yaml", "deepseek-r1-decode-nvl72.yaml",
                              "mixtral-8x7b-decode-hgx-h100.yaml"})
            for (const QSize size : {QSize(320, 330), QSize(330, 700), QSize(900, 300), QSize(1400, 1000)})
                QTest::newRow(qPrintable(QStringLiteral("%1 %2x%3").arg(QLatin1String(f)).arg(size.width()).arg(size.height())))
                    << QString::fromStdString(samplePath(f)) << size;
    }
    void legendNeverCoversTheFittedDrawing()
    {
        QFETCH(QString, file);
        QFETCH(QSize, size);
        const Sample s = loadSample(file.toStdString());
        TopologyCanvas canvas;
        canvas.resize(size);
        canvas.setScenario(s.scenario, s.placement);
        canvas.setMetrics(s.metrics);
        canvas.setLayer(onlyLayer(0));
        canvas.show();
        QVERIFY(QTest::qWaitForWindowExposed(&canvas));
        canvas.fitAll();
        QWidget* found = nullptr;
        for (QWidget* w : canvas.findChildren<QWidget*>())
            if (QLatin1String(w->metaObject()->className()).endsWith(QLatin1String("CanvasLegend")))
                found = w;
        QVERIFY(found && found->isVisible());
        // The legend in the viewport's coordinates.
        const QRect legendRect(canvas.viewport()->mapFrom(&canvas, found->geometry().topLeft()), found->size());
        // The first GPU header or expert chip outside the view or under the legend ("" when none).
        auto where = [&](const QPointF& scenePos) {
            const QPoint p = canvas.mapFromScene(scenePos);
            return !canvas.viewport()->rect().contains(p) ? QStringLiteral(" outside the view")
                   : legendRect.contains(p)               ? QStringLiteral(" under the legend")
                                                          : QString();
        };
        QString first;
        for (int g = 0; g < s.scenario.topology.numGpus() && first.isEmpty(); ++g) {
            if (const QString w = where(canvas.gpuScenePos(GpuId(g))); !w.isEmpty())
                first = QStringLiteral("GPU %1").arg(g) + w;
            for (auto e : s.placement.layers[0].gpu_slots[static_cast<std::size_t>(g)])
                if (const QString w = where(canvas.expertScenePos(GpuId(g), e)); first.isEmpty() && !w.isEmpty())
                    first = QStringLiteral("GPU %1 expert %2").arg(g).arg(e.value) + w;
        }
        QVERIFY2(first.isEmpty(), qPrintable(first));
    }

    void everySampleBuildsWithoutWarnings()
    {
        QFETCH(QString, file);
        const Sample s = loadSample(file.toStdString());
        g_warnings.clear();
        TopologyCanvas canvas;
        canvas.resize(1200, 800);
        canvas.setScenario(s.scenario, s.placement);
        canvas.setMetrics(s.metrics);
        canvas.setLayer(onlyLayer(0));
        canvas.setLayer(MoeLayers::all());
        canvas.setSelectedGpu(GpuId(1));
        const QImage shot = canvas.grab().toImage();
        QVERIFY(!shot.isNull());
        QCOMPARE(canvas.gpuItemCount(), s.scenario.topology.numGpus());
        // Every GPU has its own place, and every expert of layer 0 has a chip on its GPU.
        canvas.setLayer(onlyLayer(0));
        for (int g = 0; g < s.scenario.topology.numGpus(); ++g) {
            QVERIFY(!canvas.gpuScenePos(GpuId(g)).isNull());
            for (auto e : s.placement.layers[0].gpu_slots[static_cast<std::size_t>(g)])
                QVERIFY2(!canvas.expertScenePos(GpuId(g), e).isNull(), qPrintable(QStringLiteral("gpu %1 expert %2").arg(g).arg(e.value)));
        }
        QVERIFY2(g_warnings.isEmpty(), qPrintable(g_warnings.join(QLatin1Char('\n'))));
    }

    void dragMovesAnExpert()
    {
        QSignalSpy move(m_canvas.get(), &TopologyCanvas::expertMoveRequested);
        QSignalSpy swap(m_canvas.get(), &TopologyCanvas::expertSwapRequested);
        const auto [gpu, expert] = someChip(3, 5);
        drag(m_canvas->expertScenePos(gpu, expert), m_canvas->gpuScenePos(GpuId(40)));
        QCOMPARE(swap.count(), 0);
        QCOMPARE(move.count(), 1);
        QVERIFY(arg<MoeLayers>(move.at(0), 0) == onlyLayer(3));
        QCOMPARE(arg<ExpertId>(move.at(0), 1).value, expert.value);
        QCOMPARE(arg<GpuId>(move.at(0), 2).value, 5);
        QCOMPARE(arg<GpuId>(move.at(0), 3).value, 40);
    }

    void ctrlDragReplicates()
    {
        QSignalSpy rep(m_canvas.get(), &TopologyCanvas::expertReplicateRequested);
        QSignalSpy move(m_canvas.get(), &TopologyCanvas::expertMoveRequested);
        const auto [gpu, expert] = someChip(3, 7);
        drag(m_canvas->expertScenePos(gpu, expert), m_canvas->gpuScenePos(GpuId(12)), Qt::ControlModifier);
        QCOMPARE(move.count(), 0);
        QCOMPARE(rep.count(), 1);
        QVERIFY(arg<MoeLayers>(rep.at(0), 0) == onlyLayer(3));
        QCOMPARE(arg<ExpertId>(rep.at(0), 1).value, expert.value);
        QCOMPARE(arg<GpuId>(rep.at(0), 2).value, 12);
    }

    void dropOnAChipSwaps()
    {
        QSignalSpy swap(m_canvas.get(), &TopologyCanvas::expertSwapRequested);
        const auto [ga, ea] = someChip(3, 2);
        const auto& other = m_nvl.placement.layers[3].gpu_slots[60];
        const ExpertId eb = other.back();
        drag(m_canvas->expertScenePos(ga, ea), m_canvas->expertScenePos(GpuId(60), eb));
        QCOMPARE(swap.count(), 1);
        const QList<QVariant> args = swap.at(0);
        QVERIFY(arg<MoeLayers>(args, 0) == onlyLayer(3));
        QCOMPARE(arg<ExpertId>(args, 1).value, ea.value);
        QCOMPARE(arg<GpuId>(args, 2).value, ga.value);
        QCOMPARE(arg<ExpertId>(args, 3).value, eb.value);
        QCOMPARE(arg<GpuId>(args, 4).value, 60);
    }

    void dropOnOwnGpuOrEmptySpaceDoesNothing()
    {
        QSignalSpy move(m_canvas.get(), &TopologyCanvas::expertMoveRequested);
        QSignalSpy swap(m_canvas.get(), &TopologyCanvas::expertSwapRequested);
        QSignalSpy rep(m_canvas.get(), &TopologyCanvas::expertReplicateRequested);
        const auto [gpu, expert] = someChip(3, 9);
        drag(m_canvas->expertScenePos(gpu, expert), m_canvas->gpuScenePos(GpuId(9)));
        // Empty space: left of the rack, in the scene margin.
        drag(m_canvas->expertScenePos(gpu, expert), m_canvas->gpuScenePos(GpuId(0)) - QPointF(200, 0));
        QCOMPARE(move.count() + swap.count() + rep.count(), 0);
    }

    void allLayersRefusesDrags()
    {
        m_canvas->setLayer(MoeLayers::all());
        QVERIFY(m_canvas->layer().isAll());
        QSignalSpy move(m_canvas.get(), &TopologyCanvas::expertMoveRequested);
        QSignalSpy swap(m_canvas.get(), &TopologyCanvas::expertSwapRequested);
        // Any chip shown on GPU 5 in the all-layers view.
        ExpertId expert;
        for (int e = 0; e < m_nvl.placement.num_experts && !expert.valid(); ++e)
            if (!m_canvas->expertScenePos(GpuId(5), ExpertId(e)).isNull())
                expert = ExpertId(e);
        QVERIFY(expert.valid());
        drag(m_canvas->expertScenePos(GpuId(5), expert), m_canvas->gpuScenePos(GpuId(40)));
        QCOMPARE(move.count() + swap.count(), 0);
        QVERIFY(m_canvas->feedbackText().contains(QStringLiteral("layer")));
    }

    void clickSelectsGpu()
    {
        QSignalSpy sel(m_canvas.get(), &TopologyCanvas::gpuSelected);
        QTest::mouseClick(m_canvas->viewport(), Qt::LeftButton, {}, toView(m_canvas->gpuScenePos(GpuId(33))));
        QCOMPARE(sel.count(), 1);
        QCOMPARE(arg<GpuId>(sel.at(0), 0).value, 33);
    }

    void setMetricsRecoloursChips()
    {
        const auto [gpu, expert] = someChip(3, 11);
        const QColor before = m_canvas->expertColor(gpu, expert);
        QVERIFY(before.isValid());
        moex::StepMetrics m = m_nvl.metrics;
        auto& load = m.layers[3].expert_load;
        const auto maxLoad = *std::max_element(load.begin(), load.end());
        const auto minLoad = *std::min_element(load.begin(), load.end());
        // Make this expert the least loaded, then the most loaded: the chip goes to the map's ends.
        load[expert.index()] = minLoad;
        m_canvas->setMetrics(m);
        QCOMPARE(m_canvas->expertColor(gpu, expert), QColor(0x44, 0x01, 0x54));
        load[expert.index()] = maxLoad + 100;
        m_canvas->setMetrics(m);
        QCOMPARE(m_canvas->expertColor(gpu, expert), QColor(0xfd, 0xe7, 0x25));
        QVERIFY(m_canvas->expertColor(gpu, expert) != before || before == QColor(0xfd, 0xe7, 0x25));
    }

    // The busy-time scale in ms where the busiest GPU reaches 10 ms (the rack's 18 ms step read
    // "15.4k – 15.6k µs"), in µs below; the range is the GPUs' busy times (step less idle).
    void legendBusyTimeInItsUnit()
    {
        const auto busyRange = [](const moex::StepMetrics& m, double unit) -> QString {
            double lo = 1e300;
            double hi = 0;
            for (std::size_t g = 0; g < m.gpus.size(); ++g) {
                lo = std::min(lo, moex::gpuBusyUs(m, g));
                hi = std::max(hi, moex::gpuBusyUs(m, g));
            }
            return moex::views::formatRange(lo / unit, hi / unit);
        };
        const moex::StepMetrics rackStep = m_nvl.metrics;
        QVERIFY(rackStep.summary.step_time_us > 10000);
        const QString rack = m_canvas->legendText();
        const QString rackRange = QStringLiteral("GPU busy time (ms): ") + busyRange(rackStep, 1000);
        QVERIFY2(rack.contains(rackRange), qPrintable(rack));
        double hi = 0;
        for (std::size_t g = 0; g < rackStep.gpus.size(); ++g)
            hi = std::max(hi, moex::gpuBusyUs(rackStep, g));
        // The rack's step scaled so that its busiest GPU takes `busiestUs`.
        const auto scaled = [&](double busiestUs) { return moex::views::test::scaledStep(rackStep, busiestUs / hi); };
        // Between 8 and 10 ms the unit stays what it was (ms after the rack, µs after a small step),
        // as the breakdown chart's axis: a step hovering at 10 ms does not flip the legend.
        const moex::StepMetrics edge = scaled(9000), small = scaled(4500);
        m_canvas->setMetrics(edge);
        QVERIFY2(m_canvas->legendText().contains(QStringLiteral("GPU busy time (ms): ") + busyRange(edge, 1000)), qPrintable(m_canvas->legendText()));
        m_canvas->setMetrics(small);
        QVERIFY2(m_canvas->legendText().contains(QStringLiteral("GPU busy time (µs): ") + busyRange(small, 1)), qPrintable(m_canvas->legendText()));
        m_canvas->setMetrics(edge);
        QVERIFY2(m_canvas->legendText().contains(QStringLiteral("GPU busy time (µs): ") + busyRange(edge, 1)), qPrintable(m_canvas->legendText()));
        m_canvas->setMetrics(rackStep);
        QVERIFY2(m_canvas->legendText().contains(rackRange), qPrintable(m_canvas->legendText()));
    }

    // The straggler is outlined only where it is slower than the others: with every GPU taking
    // the same time (and the layer balanced) no GPU is marked.
    void stragglerOnlyWhenSomeGpuIsSlower()
    {
        QVERIFY(m_canvas->outlinedStraggler().valid());  // the sample's eplb layout is not perfectly even
        moex::StepMetrics m = m_nvl.metrics;
        for (auto& g : m.gpus) {
            g.compute_us = 1000;
            g.attention_us = 500;
            g.dispatch_us = 100;
            g.combine_us = 100;
            g.idle_us = 0;
            g.speed = 1.0;
        }
        m.summary.step_time_us = 1700;
        for (auto& l : m.layers)
            l.imbalance = 1.0;
        m_canvas->setMetrics(m);
        QVERIFY(!m_canvas->outlinedStraggler().valid());
        m_canvas->setLayer(MoeLayers::all());
        QVERIFY(!m_canvas->outlinedStraggler().valid());
        m.gpus[17].compute_us = 1100;  // one GPU 5% slower: it is the straggler, the others wait
        m.summary.step_time_us = 1800;
        for (std::size_t g = 0; g < m.gpus.size(); ++g)
            m.gpus[g].idle_us = g == 17 ? 0 : 100;
        m.summary.straggler_gpu = 17;
        m_canvas->setMetrics(m);
        QCOMPARE(m_canvas->outlinedStraggler().value, 17);
        // In one layer's view too the outline is on the busiest GPU of the step, the one the tint
        // shows hottest, whatever GPU was that layer's slowest or slowest in the most layers.
        m_canvas->setLayer(onlyLayer(3));
        m.layers[3].slowest_gpu = 5;
        m.summary.straggler_gpu = 5;
        m_canvas->setMetrics(m);
        QCOMPARE(m_canvas->outlinedStraggler().value, 17);
        QVERIFY2(m_canvas->legendText().contains(QStringLiteral("GPU busy time (µs): 1700 – 1800 (spread 5.9%)")), qPrintable(m_canvas->legendText()));
        m_canvas->setLayer(MoeLayers::all());
    }

    // The tint's colours span at least 5% of busy time: GPUs within 0.2% of each other are all
    // near the cool end, not spread from green to red; a GPU 10% busier gets the hot end.
    void busyTintNeedsARealSpread()
    {
        moex::StepMetrics m = m_nvl.metrics;
        for (auto& g : m.gpus)
            g.idle_us = 0;
        m.summary.step_time_us = 10000;
        m.gpus[17].idle_us = 20;  // 0.2% less busy than the rest
        m_canvas->setMetrics(m);
        const QColor cool = m_canvas->gpuColor(GpuId(17));
        const QColor busiest = m_canvas->gpuColor(GpuId(3));
        const auto distance = [](const QColor& a, const QColor& b) {
            return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
        };
        const int near = distance(cool, busiest);
        QVERIFY2(m_canvas->legendText().contains(QStringLiteral("(spread 0.2%)")), qPrintable(m_canvas->legendText()));
        QVERIFY2(m_canvas->legendText().contains(QStringLiteral("GPU busy time (ms): 9.98 – 10.00")), qPrintable(m_canvas->legendText()));
        m.gpus[17].idle_us = 1000;  // 10%: the whole map
        m_canvas->setMetrics(m);
        const int far = distance(m_canvas->gpuColor(GpuId(17)), m_canvas->gpuColor(GpuId(3)));
        QVERIFY2(near * 10 < far, qPrintable(QStringLiteral("%1 %2 %3 %4").arg(near).arg(far).arg(cool.name(), busiest.name())));
        m_canvas->setMetrics(m_nvl.metrics);
    }

    // Readable at fit: the 72-GPU rack draws its chips about 10 px wide, so a selected GPU gets a
    // card with each of its experts and its load at the widget's font size; it follows the
    // layer and the metrics, and goes with the selection.
    void selectedGpuDetailIsReadable()
    {
        QVERIFY(m_canvas->gpuDetailText().isEmpty());
        m_canvas->setSelectedGpu(GpuId(17));
        const QString text = m_canvas->gpuDetailText();
        QVERIFY2(text.startsWith(QStringLiteral("GPU 17")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("MoE layer 3")));
        const auto& cells = m_nvl.placement.layers[3].gpu_slots[17];
        QCOMPARE(text.count(QLatin1Char('\n')), static_cast<int>(cells.size()));
        for (auto e : cells) {
            const auto load = m_nvl.metrics.layers[3].expert_load[static_cast<std::size_t>(e.value)];
            QVERIFY2(text.contains(QStringLiteral("expert %1").arg(e.value)), qPrintable(text));
            QVERIFY2(text.contains(QStringLiteral(": %1").arg(moex::views::formatQuantity(static_cast<double>(load)))),
                     qPrintable(text));
        }
        auto* card = m_canvas->findChild<moex::views::CanvasGpuDetail*>();
        QVERIFY(card && card->isVisible());
        QVERIFY(QFontInfo(card->font()).pixelSize() >= 11);
        QVERIFY(m_canvas->viewport()->geometry().contains(card->geometry()));
        m_canvas->setLayer(onlyLayer(5));
        QVERIFY(m_canvas->gpuDetailText().contains(QStringLiteral("MoE layer 5")));
        m_canvas->setSelectedGpu(GpuId());
        QVERIFY(m_canvas->gpuDetailText().isEmpty());
    }

    // The straggler's mark on a GPU header is a whole word or the legend's flag, never a
    // clipped word ("strag." on Mixtral's narrow GPUs), and it fits beside the GPU's name.
    void stragglerMarkIsWholeAndFits()
    {
        for (double w = 30; w <= 220; w += 5) {
            moex::views::GpuItem item(7, QRectF(0, 0, w, 30));
            item.setLabel(QStringLiteral("GPU 7"));
            item.setNote(QString(), true);
            const QString mark = item.right.text();
            QVERIFY2(mark == QStringLiteral("straggler") || mark == QStringLiteral("\u2691 slowest")
                         || mark == QStringLiteral("\u2691"),
                     qPrintable(mark));
            if (mark != QStringLiteral("\u2691"))
                QVERIFY(item.right.width() <= w - 6 - item.label.width() - 6);
        }
    }

    void tooltipsDescribeGpusAndLinks()
    {
        const QString gpu = m_canvas->toolTipAt(m_canvas->gpuScenePos(GpuId(17)));
        QVERIFY2(gpu.contains(QStringLiteral("GPU 17")), qPrintable(gpu));
        QVERIFY(gpu.contains(QStringLiteral("HBM used")));
        QVERIFY(gpu.contains(QStringLiteral("dispatch")));
        const auto [g, e] = someChip(3, 17);
        QVERIFY(m_canvas->toolTipAt(m_canvas->expertScenePos(g, e)).contains(QStringLiteral("Expert %1").arg(e.value)));
    }

    void speedMenuEmitsGpuSpeed()
    {
        QSignalSpy speed(m_canvas.get(), &TopologyCanvas::gpuSpeedRequested);
        QMenu* menu = m_canvas->createSpeedMenu(GpuId(17));
        QAction* pick = nullptr;
        for (QAction* a : menu->actions())
            if (a->text() == QStringLiteral("0.85"))
                pick = a;
        QVERIFY(pick);
        pick->trigger();
        QCOMPARE(speed.count(), 1);
        QCOMPARE(arg<GpuId>(speed.at(0), 0).value, 17);
        QCOMPARE(speed.at(0).at(1).toDouble(), 0.85);
        delete menu;
    }

    // Right-click on a chip: "Remove this replica", enabled only where the expert has another copy
    // in the shown layer; it asks for the removal of that chip's replica and nothing else.
    void chipMenuRemovesOnlyAnExtraReplica()
    {
        const moex::LayerPlacement& lp = m_nvl.placement.layers[3];
        const auto counts = lp.replicaCounts(m_nvl.placement.num_experts);
        GpuId replicaGpu, singleGpu;
        ExpertId replicated, single;
        for (int g = 0; g < lp.numGpus(); ++g)
            for (ExpertId e : lp.gpu_slots[static_cast<std::size_t>(g)]) {
                if (counts[e.index()] > 1 && !replicated.valid())
                    replicaGpu = GpuId(g), replicated = e;
                if (counts[e.index()] == 1 && !single.valid())
                    singleGpu = GpuId(g), single = e;
            }
        QVERIFY(replicated.valid() && single.valid());  // EPLB with 32 redundant slots has both
        const auto removeAction = [](QMenu* menu) -> QAction* {
            for (QAction* a : menu->actions())
                if (a->text().startsWith(QStringLiteral("Remove this replica")))
                    return a;
            return nullptr;
        };
        QSignalSpy remove(m_canvas.get(), &TopologyCanvas::replicaRemoveRequested);
        QSignalSpy speed(m_canvas.get(), &TopologyCanvas::gpuSpeedRequested);

        std::unique_ptr<QMenu> onlyCopy(m_canvas->createChipMenu(singleGpu, single));
        QAction* a = removeAction(onlyCopy.get());
        QVERIFY(a && !a->isEnabled());
        QVERIFY2(a->text().contains(QStringLiteral("only copy")), qPrintable(a->text()));

        std::unique_ptr<QMenu> extra(m_canvas->createChipMenu(replicaGpu, replicated));
        a = removeAction(extra.get());
        QVERIFY(a && a->isEnabled());
        a->trigger();
        QCOMPARE(remove.count(), 1);
        QVERIFY(arg<MoeLayers>(remove.at(0), 0) == onlyLayer(3));
        QCOMPARE(arg<ExpertId>(remove.at(0), 1).value, replicated.value);
        QCOMPARE(arg<GpuId>(remove.at(0), 2).value, replicaGpu.value);
        // The same menu still sets the GPU's speed.
        for (QAction* s : extra->actions())
            if (s->text() == QStringLiteral("0.90"))
                s->trigger();
        QCOMPARE(speed.count(), 1);
        QCOMPARE(arg<GpuId>(speed.at(0), 0).value, replicaGpu.value);

        m_canvas->setLayer(MoeLayers::all());  // the summed view edits nothing
        std::unique_ptr<QMenu> summed(m_canvas->createChipMenu(replicaGpu, replicated));
        a = removeAction(summed.get());
        QVERIFY(a && !a->isEnabled());
        QCOMPARE(remove.count(), 1);
    }

    void placementUpdateMovesChips()
    {
        moex::Placement p = m_nvl.placement;
        auto& cells = p.layers[3].gpu_slots;
        const moex::ExpertId e = cells[5].front();
        cells[5].erase(cells[5].begin());
        cells[40].push_back(e);  // one more slot than the layout had: the scene is laid out again
        m_canvas->setPlacement(p);
        QVERIFY(m_canvas->expertScenePos(GpuId(5), e).isNull() || std::count(cells[5].begin(), cells[5].end(), e) > 0);
        QVERIFY(!m_canvas->expertScenePos(GpuId(40), e).isNull());
        QCOMPARE(m_canvas->gpuItemCount(), 72);
    }

    void cleanupTestCase() { qInstallMessageHandler(g_previous); }
};

QTEST_MAIN(TestTopologyCanvas)
#include "tst_topology_canvas.moc"
