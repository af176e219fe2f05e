#include "main_window.h"

#include "compare_runner.h"
#include "compare_view.h"
#include "heatmap_panel.h"
#include "prediction_view.h"
#include "qt_text.h"
#include "scenario_document.h"
#include "sim_runner.h"

#include "run/run_loop.h"
#include "tour_bar.h"
#include "undo_commands.h"

#include "metrics/gpu_busy.h"
#include "metrics/step_metrics.h"
#include "views/chart_axes.h"
#include "views/charts.h"
#include "views/elided_label.h"
#include "views/scenario_panel.h"
#include "views/topology_canvas.h"

#include <QApplication>
#include <QChart>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMessageBox>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QToolButton>
#include <QUndoGroup>
#include <QUndoStack>
#include <QVBoxLayout>

namespace moex::app {

using session::MetricsPtr;
using session::ScenarioDocument;

namespace {

// The layer box: "All layers" first, then each MoE layer by its ordinal.
MoeLayers layersAtComboIndex(int index)
{
    return index <= 0 ? MoeLayers::all() : MoeLayers::only(MoeLayerId(index - 1));
}

int comboIndexOf(MoeLayers layers)
{
    return layers.isAll() ? 0 : layers.layer().value + 1;
}

}  // namespace

MainWindow::MainWindow(const QString& samplesDir, QWidget* parent)
    : QMainWindow(parent),
      m_samplesDir(samplesDir),
      m_docA(new ScenarioDocument(this)),
      m_docB(new ScenarioDocument(this)),
      m_undoGroup(new QUndoGroup(this)),
      m_stackA(new QUndoStack(m_undoGroup)),
      m_stackB(new QUndoStack(m_undoGroup)),
      m_runner(new session::SimRunner(this)),
      m_compare(new session::CompareRunner(this))
{
    setObjectName(QStringLiteral("moexMainWindow"));
    setWindowIcon(QIcon(QStringLiteral(":/moex/moex.svg")));
    setDockNestingEnabled(true);
    m_normalFont = QApplication::font();
    m_undoGroup->setActiveStack(m_stackA);

    buildViews();
    buildMenus();
    buildStatusBar();
    connectDocument(m_docA, m_stackA);
    connectDocument(m_docB, m_stackB);

    connect(m_runner, &session::SimRunner::metricsReady, this, &MainWindow::onMetrics);
    connect(m_runner, &session::SimRunner::errorOccurred, this,
            [this](const QString& msg) {
                statusBar()->showMessage((m_engineSource ? tr("Local engine stopped: %1") : tr("Simulation stopped: %1")).arg(msg), 15000);
            });
    connect(m_runner, &session::SimRunner::runningChanged, this, [this](bool running) {
        m_runAction->setEnabled(!running);
        m_pauseAction->setEnabled(running);
    });
    connect(m_compare, &session::CompareRunner::ready, this, &MainWindow::onCompareReady);
    connect(m_compare, &session::CompareRunner::failed, this,
            [this](const QString& msg) { m_compareView->showMessage(tr("Comparison failed: %1").arg(msg)); });
    m_compareTimer.setSingleShot(true);
    m_compareTimer.setInterval(150);
    connect(&m_compareTimer, &QTimer::timeout, this, &MainWindow::runCompare);
    m_chartTimer.setSingleShot(true);
    m_chartTimer.setInterval(0);
    connect(&m_chartTimer, &QTimer::timeout, this, &MainWindow::updateCharts);
    connect(m_chartsDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible && m_chartsDirty)
            m_chartTimer.start(0);
    });

    restoreSettings();
    updateTitle();
    updateStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildViews()
{
    buildCentral();
    buildDocks();
    connectViews();
    // Model choices: the sample models.
    QStringList names, paths;
    const auto models = QDir(m_samplesDir + QStringLiteral("/models"))
                            .entryInfoList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name);
    for (const QFileInfo& fi : models) {
        names << fi.completeBaseName();
        paths << fi.absoluteFilePath();
    }
    m_panel->setModelChoices(names, paths);
}

// The centre: the canvas's bar (layer, active document, hint, fit) and the canvas. The tour bar
// is made here and spans the window in a tool bar row of its own (buildMenus).
void MainWindow::buildCentral()
{
    m_canvas = new views::TopologyCanvas;
    m_canvas->setObjectName(QStringLiteral("topologyCanvas"));
    m_thumbCanvas = new views::TopologyCanvas(this);
    m_thumbCanvas->hide();
    m_tourBar = new TourBar;

    m_layerCombo = new QComboBox;
    m_layerCombo->setObjectName(QStringLiteral("layerCombo"));
    m_layerCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_layerCombo->setToolTip(tr("The MoE layer whose placement and load the canvas shows"));
    m_activeCombo = new QComboBox;
    m_activeCombo->setObjectName(QStringLiteral("activeCombo"));
    m_activeCombo->addItems({tr("A (original)"), tr("B (what-if)")});
    m_activeCombo->setToolTip(tr("Which scenario the canvas, the panel and edits act on"));
    auto* activeLabel = new QLabel(tr("Editing:"));
    activeLabel->setObjectName(QStringLiteral("activeLabel"));
    auto* fit = new QToolButton;
    fit->setText(tr("Fit"));
    fit->setToolTip(tr("Fit the whole system in view (F)"));
    connect(fit, &QToolButton::clicked, m_canvas, &views::TopologyCanvas::fitAll);

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(6, 4, 6, 2);
    bar->addWidget(new QLabel(tr("Layer:")));
    bar->addWidget(m_layerCombo);
    bar->addSpacing(16);
    bar->addWidget(activeLabel);
    bar->addWidget(m_activeCombo);
    bar->addSpacing(16);
    auto* hint = new views::ElidedLabel(tr("Drag a chip: move \u00b7 Ctrl: replicate \u00b7 onto a chip: swap \u00b7 "
                                           "right-click: remove replica / speed"));
    hint->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    hint->setObjectName(QStringLiteral("canvasHint"));
    bar->addWidget(hint, 1);  // takes the free width (a stretch beside it would leave it none)
    bar->addSpacing(8);
    bar->addWidget(fit);
    activeLabel->setVisible(false);
    m_activeCombo->setVisible(false);
    connect(m_activeCombo, &QComboBox::currentIndexChanged, this, &MainWindow::setActiveDocument);

    auto* central = new QWidget;
    auto* v = new QVBoxLayout(central);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(0);
    v->addLayout(bar);
    v->addWidget(m_canvas, 1);
    setCentralWidget(central);
}

// The docks: scenario panel, heatmaps, charts, Compare, predicted vs measured, load statistics.
void MainWindow::buildDocks()
{
    m_panel = new views::ScenarioPanel;
    m_panelDock = new QDockWidget(tr("Scenario"), this);
    m_panelDock->setObjectName(QStringLiteral("scenarioDock"));
    auto* panelScroll = new QScrollArea;  // the panel is tall: it scrolls rather than squeezing the charts
    panelScroll->setWidget(m_panel);
    panelScroll->setWidgetResizable(true);
    panelScroll->setFrameShape(QFrame::NoFrame);
    panelScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_panelDock->setWidget(panelScroll);
    addDockWidget(Qt::LeftDockWidgetArea, m_panelDock);

    m_heatmaps = new HeatmapPanel;
    m_heatmapDock = new QDockWidget(tr("Heatmaps"), this);
    m_heatmapDock->setObjectName(QStringLiteral("heatmapDock"));
    m_heatmapDock->setWidget(m_heatmaps);
    addDockWidget(Qt::RightDockWidgetArea, m_heatmapDock);

    m_stepChart = new views::StepTimeChart;
    m_breakdown = new views::GpuBreakdownChart;
    m_histogram = new views::LoadHistogramChart;
    auto* charts = new QSplitter(Qt::Horizontal);
    charts->addWidget(m_stepChart);
    charts->addWidget(m_breakdown);
    charts->addWidget(m_histogram);
    charts->setStretchFactor(0, 2);
    charts->setStretchFactor(1, 3);
    charts->setStretchFactor(2, 2);
    m_chartsDock = new QDockWidget(tr("Charts"), this);
    m_chartsDock->setObjectName(QStringLiteral("chartsDock"));
    m_chartsDock->setWidget(charts);
    addDockWidget(Qt::BottomDockWidgetArea, m_chartsDock);

    m_compareView = new CompareView;
    m_compareDock = new QDockWidget(tr("Compare A / B"), this);
    m_compareDock->setObjectName(QStringLiteral("compareDock"));
    m_compareDock->setWidget(m_compareView);
    addDockWidget(Qt::BottomDockWidgetArea, m_compareDock);
    tabifyDockWidget(m_chartsDock, m_compareDock);
    m_predictionView = new PredictionView;
    m_predictionDock = new QDockWidget(tr("Predicted vs measured"), this);
    m_predictionDock->setObjectName(QStringLiteral("predictionDock"));
    m_predictionDock->setWidget(m_predictionView);
    addDockWidget(Qt::BottomDockWidgetArea, m_predictionDock);
    tabifyDockWidget(m_compareDock, m_predictionDock);
    buildLoadStatsDock();
    m_chartsDock->raise();
    updateDockMinimums();
}

void MainWindow::connectViews()
{
    // Views -> intent -> undo commands on the active document. The local engine's canvas shows its
    // own ranks' layout: edits there would be the document's GPUs in name only, so they are refused.
    const auto refuseEngineEdit = [this] {
        if (m_engineSource)
            statusBar()->showMessage(tr("The local engine lays the experts out for its own ranks: edit the layout "
                                        "with the simulated source (Run ▸ Source)"), 8000);
        return m_engineSource;
    };
    connect(m_canvas, &views::TopologyCanvas::expertMoveRequested, this,
            [this, refuseEngineEdit](MoeLayers layers, ExpertId e, GpuId from, GpuId to) {
                if (!refuseEngineEdit())
                    pushEdit(undoStack(), new MoveExpertCommand(document(), layers, e, from, to));
            });
    connect(m_canvas, &views::TopologyCanvas::expertReplicateRequested, this,
            [this, refuseEngineEdit](MoeLayers layers, ExpertId e, GpuId to) {
                if (!refuseEngineEdit())
                    pushEdit(undoStack(), new ReplicateExpertCommand(document(), layers, e, to));
            });
    connect(m_canvas, &views::TopologyCanvas::expertSwapRequested, this,
            [this, refuseEngineEdit](MoeLayers layers, ExpertId ea, GpuId ga, ExpertId eb, GpuId gb) {
                if (!refuseEngineEdit())
                    pushEdit(undoStack(), new SwapExpertsCommand(document(), layers, ea, ga, eb, gb));
            });
    connect(m_canvas, &views::TopologyCanvas::replicaRemoveRequested, this,
            [this, refuseEngineEdit](MoeLayers layers, ExpertId e, GpuId g) {
                if (!refuseEngineEdit())
                    pushEdit(undoStack(), new RemoveReplicaCommand(document(), layers, e, g));
            });
    connect(m_canvas, &views::TopologyCanvas::gpuSpeedRequested, this, [this, refuseEngineEdit](GpuId g, double s) {
        if (!refuseEngineEdit())
            pushEdit(undoStack(), new GpuSpeedCommand(document(), g, s));
    });
    connect(m_canvas, &views::TopologyCanvas::gpuSelected, this, &MainWindow::selectGpu);
    connect(m_canvas, &views::TopologyCanvas::layerChanged, this, [this](MoeLayers layers) {
        QSignalBlocker block(m_layerCombo);
        m_layerCombo->setCurrentIndex(comboIndexOf(layers));
        if (m_latest)
            m_histogram->setMetrics(*m_latest, layers);
    });
    connect(m_layerCombo, &QComboBox::currentIndexChanged, this, [this](int i) { setLayer(layersAtComboIndex(i)); });
    // Panel changes are placed in the background (ScenarioDocument::requestOverride); the undo
    // step is pushed when the document adopts the result (connectDocument).
    connect(m_panel, &views::ScenarioPanel::overrideRequested, this, [this](const QString& key, const QString& value) {
        m_panel->clearError();
        document()->requestOverride(key, value);
    });
    connect(m_breakdown, &views::GpuBreakdownChart::gpuSelected, this, &MainWindow::selectGpu);
    connect(m_heatmaps, &HeatmapPanel::gpuSelected, this, &MainWindow::selectGpu);
    connect(m_heatmaps, &HeatmapPanel::layerSelected, this, &MainWindow::setLayer);
    connect(m_tourBar, &TourBar::stepRequested, this, &MainWindow::onTourStep);
    connect(m_tourBar, &TourBar::activeChanged, this, [this](bool active) {
        if (!active)
            m_panel->highlightKeys({});
    });
}

void MainWindow::onScenarioChanged(ScenarioDocument* doc)
{
    scheduleCompare();
    if (doc != document())
        return;
    const Scenario& s = doc->scenario();
    showScenarioInPanel(doc);
    m_panel->clearError();
    m_panel->setBusy(doc->isBusy(), pendingText(doc));  // A and B place on their own
    setStatusBusy(doc->isBusy());
    m_heatmaps->clearHistory();
    m_stepChart->clear();
    m_lastChartStep = -1;
    if (m_engineSource && showEngineScenario()) {
        updateTitle();
        return;
    }
    m_panel->setEngineNote({});
    m_canvas->setScenario(s, doc->placement());
    refillLayerCombo(s);
    if (m_selectedGpu.value >= s.topology.numGpus())
        m_selectedGpu = GpuId();
    // The worker rebuilds and publishes step 0 (never on this thread); openScenario's callers get
    // it at once, for the first paint and screenshots.
    if (m_syncSimulation)
        m_runner->simulateScenario(s, doc->placement());
    else
        m_runner->setScenario(s, doc->placement());
    selectGpu(m_selectedGpu);
    m_canvas->fitAll();
    updateTitle();
}

void MainWindow::onPlacementChanged(ScenarioDocument* doc)
{
    scheduleCompare();
    if (doc != document())
        return;
    // An undo may have dropped a change still being placed: the panel shows the scenario again.
    showScenarioInPanel(doc);
    if (!m_engineSource) {  // the engine lays its experts out for its own ranks
        m_canvas->setPlacement(doc->placement());
        m_runner->setPlacement(doc->placement(), doc->scenario().speeds);  // re-simulated on the worker
    }
    updateTitle();
}

void MainWindow::onMetrics(const MetricsPtr& m)
{
    // A step of the source just switched away from can still arrive: it would not fit the canvas.
    if (!m || (m->source == "cpu") != m_engineSource)
        return;
    m_latest = m;
    m_canvas->setMetrics(*m);
    m_heatmaps->setMetrics(*m, shownMoeLayers());
    if (m_engineSource) {
        statusBar()->clearMessage();
        showPrediction(*m);
    }
    updateStatus();
    // Qt Charts rebuild their series (tens of ms for 72 GPUs): they follow in the next event-loop
    // pass, so the canvas, heatmaps and numbers of an edit paint first; hidden charts wait.
    if (m->step != m_lastChartStep) {
        m_stepChart->addStep(*m);
        m_lastChartStep = m->step;
    }
    // During live runs they refresh at most 5 times a second so that input stays responsive.
    m_chartsDirty = true;
    if (!m_chartTimer.isActive()) {
        const qint64 since = m_sinceCharts.isValid() ? m_sinceCharts.elapsed() : 1000;
        m_chartTimer.start(static_cast<int>(std::max<qint64>(0, 200 - since)));
    }
}

void MainWindow::updateCharts()
{
    if (!m_latest || !m_chartsDirty)
        return;
    if (m_chartsDock->isHidden() || m_chartsDock->visibleRegion().isEmpty())
        return;  // updated when shown again
    m_chartsDirty = false;
    m_sinceCharts.restart();
    m_breakdown->setMetrics(*m_latest);
    m_histogram->setMetrics(*m_latest, shownLayers());
}

void MainWindow::selectGpu(GpuId gpu)
{
    m_selectedGpu = gpu;
    m_canvas->setSelectedGpu(gpu);
    m_breakdown->setSelectedGpu(gpu);
    m_heatmaps->setSelectedGpu(gpu);
    if (gpu.valid() && m_latest && gpu.index() < m_latest->gpus.size()) {
        const GpuMetrics& g = m_latest->gpus[gpu.index()];
        // The per-GPU chart's terms, which add up to the step (its communication not hidden), in
        // its unit: ms from 10 ms steps, else µs.
        const GpuStepSplit split = gpuStepSplit(*m_latest, gpu.index());
        const double unit = views::timeUnitFor(m_latest->summary.step_time_us, 1000.0);
        const auto time = [unit](double us) {
            return unit > 1 ? QStringLiteral("%1 ms").arg(us / 1000, 0, 'f', 2) : QStringLiteral("%1 \u00b5s").arg(us, 0, 'f', 0);
        };
        statusBar()->showMessage(tr("%1 %2: expert compute %3, attention + dense %4, dispatch (not hidden) %5, combine (not "
                                    "hidden) %6, idle %7, HBM %8 GB, speed %9")
                                     .arg(m_engineSource ? tr("Rank") : tr("GPU"))
                                     .arg(gpu.value)
                                     .arg(time(split.compute_us), time(split.attention_us), time(split.dispatch_us),
                                          time(split.combine_us), time(split.idle_us))
                                     .arg(g.hbm_used_gb, 0, 'f', 1)
                                     .arg(g.speed, 0, 'g', 3),
                                 10000);
    }
}

void MainWindow::setLayer(MoeLayers layers)
{
    const int index = comboIndexOf(layers);
    if (index < 0 || index >= m_layerCombo->count())
        return;
    {
        QSignalBlocker block(m_layerCombo);
        m_layerCombo->setCurrentIndex(index);
    }
    m_canvas->setLayer(layers);
    if (m_latest)
        m_histogram->setMetrics(*m_latest, layers);
}

MoeLayers MainWindow::shownLayers() const
{
    return layersAtComboIndex(m_layerCombo->currentIndex());
}

void MainWindow::scheduleCompare()
{
    if (m_docB->hasScenario())
        m_compareTimer.start();
}

void MainWindow::runCompare()
{
    if (!m_docA->hasScenario() || !m_docB->hasScenario())
        return;
    m_compareView->setNames(m_docA->displayName(), m_docB->displayName() + tr(" (what-if)"));
    m_compareView->setBusy(true);
    m_compare->request(m_docA->scenario(), m_docA->placement(), m_docB->scenario(), m_docB->placement(), kSummarySteps);
}

void MainWindow::onCompareReady()
{
    const auto r = m_compare->result();
    if (!r)
        return;
    m_compareView->setResult(*r);
    auto thumb = [this](const ScenarioDocument* doc, const StepMetrics& m) {
        m_thumbCanvas->setScenario(doc->scenario(), doc->placement());
        m_thumbCanvas->setLayer(shownLayers());
        m_thumbCanvas->setMetrics(m);
        QGraphicsScene* scene = m_thumbCanvas->scene();
        const QRectF src = scene ? scene->itemsBoundingRect() : QRectF();
        QSize size(1400, 1000);
        if (!src.isEmpty())
            size = QSizeF(src.size()).scaled(QSizeF(1400, 1000), Qt::KeepAspectRatio).toSize().expandedTo(QSize(64, 64));
        QPixmap pm(size);
        pm.fill(palette().color(QPalette::Base));
        if (scene) {
            QPainter p(&pm);
            p.setRenderHint(QPainter::Antialiasing);
            scene->render(&p, QRectF(pm.rect()), src, Qt::KeepAspectRatio);
        }
        return pm;
    };
    m_compareView->setThumbnails(thumb(m_docA, r->a.last), thumb(m_docB, r->b.last));
}

void MainWindow::onTourStep(const session::TourStep& step)
{
    openScenarioInBackground(step.scenario, step.overrides, false, step.title);
    // What the step changed, marked in the panel and scrolled into view (the placement strategy
    // sat below the panel's fold, so a step that changed it showed no change).
    QStringList keys;
    for (const auto& [key, value] : step.overrides)
        keys << session::qs(key);
    if (QWidget* control = m_panel->highlightKeys(keys))
        if (auto* scroll = qobject_cast<QScrollArea*>(m_panelDock->widget()))
            scroll->ensureWidgetVisible(control, 10, 40);
}

void MainWindow::showError(const QString& title, const QString& message)
{
    statusBar()->showMessage(message.section(QLatin1Char('\n'), 0, 0), 10000);
    if (!m_interactive || !isVisible())
        return;
    QMessageBox box(QMessageBox::Warning, title, title, QMessageBox::Ok, this);
    box.setInformativeText(message);
    box.exec();
}

void MainWindow::updateDockMinimums()
{
    // No dock narrower than its contents need to be read: on a small screen the canvas gives way
    // (it zooms), and a dock squeezed by a smaller window is whole again when it grows.
    m_panel->ensurePolished();
    const auto* scroll = qobject_cast<QScrollArea*>(m_panelDock->widget());
    const int bar = scroll ? scroll->verticalScrollBar()->sizeHint().width() : 16;
    m_panelDock->widget()->setMinimumWidth(m_panel->minimumSizeHint().width() + bar + 2);
    // The heatmaps and charts draw their own axes: these are the sizes below which they clip
    // (the charts' fonts grow by at most 1.25 in presentation mode, so does their height), small
    // enough that the window still fits 1024 x 700 in presentation mode.
    m_heatmapDock->widget()->setMinimumWidth(230);
    m_chartsDock->widget()->setMinimumHeight(static_cast<int>(std::lround(175 * std::min(m_uiScale, 1.25))));
}

void MainWindow::setPresentationMode(bool on)
{
    const double scale = on ? kPresentationScale : 1.0;
    QFont f = m_normalFont;
    if (on) {
        const qreal base = f.pointSizeF() > 0 ? f.pointSizeF() : 10.0;
        f.setPointSizeF(base * scale);
    }
    QApplication::setFont(f);
    // A style sheet keeps the fonts of the widgets it has polished: polish them again so that
    // every label, heatmap and the status bar takes the new font.
    if (!qApp->styleSheet().isEmpty())
        qApp->setStyleSheet(qApp->styleSheet());
    // Charts are dense (three side by side): their fonts grow by at most 1.25 so that the axes
    // still have room for their labels.
    const double chartFactor = std::min(scale, 1.25) / std::min(m_uiScale, 1.25);
    for (QChart* chart : {m_stepChart->chart(), m_breakdown->chart(), m_histogram->chart()})
        views::scaleChartFonts(chart, chartFactor);
    m_uiScale = scale;
    m_canvas->setUiScale(scale);
    updateDockMinimums();
    fitStatusFields();
    if (m_presentationAction && m_presentationAction->isChecked() != on)
        m_presentationAction->setChecked(on);
    m_canvas->fitAll();
}

void MainWindow::showEvent(QShowEvent* event)
{
    QMainWindow::showEvent(event);
    if (m_docksSized)
        return;
    m_docksSized = true;
    if (!m_restoredLayout) {
        // Default proportions, once the window has its size: panel | canvas | heatmaps, charts below.
        resizeDocks({m_panelDock, m_heatmapDock}, {300, 460}, Qt::Horizontal);
        resizeDocks({m_chartsDock}, {std::max(260, height() * 3 / 10)}, Qt::Vertical);
    }
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    m_runner->pause();
    saveSettings();
    event->accept();
}

}  // namespace moex::app
