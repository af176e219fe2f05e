#include "screenshot.h"

#include "compare_runner.h"
#include "compare_view.h"
#include "heatmap_panel.h"
#include "main_window.h"
#include "qt_text.h"
#include "samples_catalog.h"
#include "scenario_document.h"
#include "sim_runner.h"
#include "load_stats_view.h"
#include "tour_bar.h"

#include "common/atomic_file.h"
#include "metrics/step_metrics.h"
#include "views/topology_canvas.h"

#include <QApplication>
#include <QDeadlineTimer>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QFile>
#include <QImage>
#include <QBuffer>
#include <QTimer>
#include <QVBoxLayout>

#include <cstdio>

static void moexInitResources()
{
    Q_INIT_RESOURCE(moex);
}

namespace moex::app {

namespace {

void settle(int ms)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

template <class Pred>
bool waitFor(Pred done, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QEventLoop loop;
        QTimer::singleShot(10, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return true;
}

QImage render(QWidget* part, QSize size)
{
    QWidget host;
    host.setAttribute(Qt::WA_DontShowOnScreen);
    auto* layout = new QVBoxLayout(&host);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(part);
    part->show();
    host.resize(size);
    host.show();
    settle(250);
    if (auto* canvas = qobject_cast<views::TopologyCanvas*>(part))
        canvas->fitAll();
    settle(100);
    QImage img = host.grab().toImage();
    layout->removeWidget(part);
    part->setParent(nullptr);
    return img;
}

}  // namespace

void initResources()
{
    moexInitResources();
}

QString styleSheet()
{
    QFile f(QStringLiteral(":/moex/moex.qss"));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

int runScreenshot(const CommandLine& cmd, const QString& samplesDir, const QString& scenario)
{
    MainWindow w(samplesDir);
    w.setInteractive(false);
    w.resize(cmd.size);
    w.show();
    if (cmd.presentation)
        w.setPresentationMode(true);
    if (!cmd.tour.isEmpty()) {
        session::Tour tour;
        try {
            tour = session::loadTour(cmd.tour);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "moex: %s\n", qPrintable(session::errorText(e)));
            return 2;
        }
        if (cmd.tourStep > static_cast<int>(tour.steps.size())) {
            std::fprintf(stderr, "moex: --tour-step %d: the tour has %zu steps\n", cmd.tourStep, tour.steps.size());
            return 2;
        }
        // A step whose scenario or settings fail to load is bad input, as a scenario given alone:
        // exit 2 at once (it waited out the two minutes below and exited 0 on an empty window).
        QString stepError;
        QObject::connect(w.documentA(), &session::ScenarioDocument::errorOccurred,
                         [&stepError](const QString& message) { stepError = message; });
        if (!w.startTour(cmd.tour))
            return 2;
        for (int s = 1; s < cmd.tourStep; ++s)
            w.tourBar()->next();
        const bool arrived = waitFor(
            [&] { return !stepError.isEmpty() || (!w.documentA()->isBusy() && w.tourBar()->hasFigures() && w.latestMetrics()); },
            120000);
        if (!stepError.isEmpty()) {
            std::fprintf(stderr, "moex: --tour %s: a step's scenario failed to load: %s\n", qPrintable(cmd.tour),
                         qPrintable(stepError));
            return 2;
        }
        if (!arrived)
            std::fprintf(stderr, "moex: warning: the tour's step or its figures did not arrive within 2 minutes; the "
                                 "screenshot shows what there was\n");
    } else if (!w.openScenario(scenario, {}, false)) {  // bad input: exit 2, as moex-cli
        std::fprintf(stderr, "moex: %s\n", qPrintable(w.documentA()->lastError()));
        return 2;
    }
    // The engine builds its ranks' weights and runs real layers: minutes at most for a sample.
    const int stepTimeoutMs = cmd.engine ? 600000 : 10000;
    if (cmd.engine) {
        w.setEngineSource(true);
        if (!waitFor([&] { return w.latestMetrics() != nullptr; }, stepTimeoutMs)) {
            std::fprintf(stderr, "moex: the local engine produced no step\n");
            return 1;
        }
    }
    // A few steps so the charts and the latency heatmap have a history.
    for (int i = 0; i < (cmd.engine ? 3 : 8); ++i) {
        const int want = w.latestMetrics() ? w.latestMetrics()->step + 1 : 1;
        w.runner()->step();
        waitFor([&] { return w.latestMetrics() && w.latestMetrics()->step >= want; }, stepTimeoutMs);
    }
    if (cmd.view == QLatin1String("compare") || cmd.view == QLatin1String("all")) {
        if (cmd.view == QLatin1String("compare")) {
            w.duplicateAsB();
            // B: the serving systems' default layout instead of the scenario's strategy.
            const bool contiguous = w.documentA()->scenario().placement.strategy == "contiguous";
            w.documentB()->applyOverride(QStringLiteral("placement.strategy"),
                                         contiguous ? QStringLiteral("eplb") : QStringLiteral("contiguous"));
            waitFor([&] { return w.compareView()->hasResult() && !w.compareRunner()->busy(); }, 60000);
        }
    }
    if (cmd.gpu >= 0) {
        if (cmd.gpu >= w.documentA()->scenario().topology.numGpus()) {
            std::fprintf(stderr, "moex: --gpu %d: the topology has %d GPUs\n", cmd.gpu,
                         w.documentA()->scenario().topology.numGpus());
            return 2;
        }
        w.selectGpu(GpuId(cmd.gpu));
    }
    if (!cmd.loadStats.isEmpty()) {
        bool done = false, failed = false;
        QObject::connect(w.loadStatsView(), &LoadStatsView::ready, [&done] { done = true; });
        QObject::connect(w.loadStatsView(), &LoadStatsView::failed, [&failed](const QString& message) {
            std::fprintf(stderr, "moex: --load-stats: %s\n", qPrintable(message));
            failed = true;
        });
        w.openLoadStatistics(QFileInfo(cmd.loadStats).absoluteFilePath());
        waitFor([&] { return done || failed; }, 300000);
        if (failed || !done)
            return 2;
    }
    settle(300);
    QImage image;
    if (cmd.view == QLatin1String("all")) {
        w.canvas()->fitAll();
        settle(100);
        image = w.grab().toImage();
    } else if (cmd.view == QLatin1String("topology")) {
        image = render(w.canvas(), cmd.size);
    } else if (cmd.view == QLatin1String("heatmaps")) {
        w.heatmaps()->setTiled(true);
        image = render(w.heatmaps(), cmd.size);
    } else {
        image = render(w.compareView(), cmd.size);
    }
    if (image.size() != cmd.size)
        image = image.scaled(cmd.size, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
    // Written as moex-cli writes its outputs (common/atomic_file.h): a regular file atomically, a
    // device or FIFO straight through (/dev/full is an error, not replaced by a PNG).
    QByteArray png;
    QBuffer buffer(&png);
    if (!buffer.open(QIODevice::WriteOnly) || !image.save(&buffer, "PNG")) {
        std::fprintf(stderr, "moex: cannot encode the screenshot as PNG\n");
        return 1;
    }
    try {
        writeFileAtomically(cmd.screenshot.toStdString(), std::string_view(png.constData(), static_cast<std::size_t>(png.size())));
    } catch (const FileWriteError& e) {
        std::fprintf(stderr, "moex: %s\n", e.what());
        return 2;  // an output path the user gave, as moex-cli
    }
    return 0;
}

}  // namespace moex::app
