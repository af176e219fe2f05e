// MainWindow: menus and actions — files, recent files, exports, run control, view, help, settings.
#include "main_window.h"

#include "compare_view.h"
#include "heatmap_panel.h"
#include "metrics_csv.h"
#include "qt_text.h"
#include "samples_catalog.h"
#include "samples_dialog.h"
#include "scenario_document.h"
#include "sim_runner.h"
#include "tour_bar.h"

#include "common/atomic_file.h"
#include "metrics/metrics_json.h"
#include "placement/exporters.h"
#include "views/topology_canvas.h"

#include <QActionGroup>
#include <QApplication>
#include <QBuffer>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QSaveFile>
#include <QSettings>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTextBrowser>
#include <QToolBar>
#include <QToolButton>
#include <QUndoGroup>
#include <QUndoStack>
#include <QVBoxLayout>

namespace moex::app {

namespace {

constexpr int kMaxRecent = 10;

QAction* named(QAction* a, const char* name)
{
    a->setObjectName(QString::fromLatin1(name));
    return a;
}

}  // namespace

QAction* MainWindow::action(const QString& name) const
{
    return findChild<QAction*>(name);
}

void MainWindow::buildMenus()
{
    // File
    QMenu* file = menuBar()->addMenu(tr("&File"));
    named(file->addAction(tr("&New from Sample\u2026"), QKeySequence::New, this, &MainWindow::newFromSample),
          "actionNewFromSample");
    named(file->addAction(tr("&Open\u2026"), QKeySequence::Open, this, &MainWindow::open), "actionOpen");
    named(file->addAction(tr("&Save"), QKeySequence::Save, this, &MainWindow::save), "actionSave");
    named(file->addAction(tr("Save &As\u2026"), QKeySequence::SaveAs, this, &MainWindow::saveAs), "actionSaveAs");
    named(file->addAction(tr("Open &Load Statistics\u2026"), this, &MainWindow::chooseLoadStatistics),
          "actionOpenLoadStats");
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName(QStringLiteral("menuRecent"));
    QMenu* tours = file->addMenu(tr("Guided &Tours"));
    for (const auto& t : session::listTours(m_samplesDir + QStringLiteral("/tours"))) {
        const QString path = t.path;
        tours->addAction(t.summary.isEmpty() ? t.name : t.summary, this, [this, path] { startTour(path); });
    }
    file->addSeparator();
    QMenu* exportPlacementMenu = file->addMenu(tr("Export &Placement"));
    for (ExportFormat f : allExportFormats()) {
        const QString name = session::qs(std::string(toString(f)));
        QAction* a = exportPlacementMenu->addAction(name + QStringLiteral("\u2026"), this,
                                                    [this, f] { exportPlacement(f); });
        a->setObjectName(QStringLiteral("actionExportPlacement_") + name);
    }
    QMenu* exportViewMenu = file->addMenu(tr("Export &View"));
    named(exportViewMenu->addAction(tr("As PNG\u2026"), this, [this] { exportView(false); }), "actionExportPng");
    named(exportViewMenu->addAction(tr("As SVG\u2026"), this, [this] { exportView(true); }), "actionExportSvg");
    QMenu* exportMetricsMenu = file->addMenu(tr("Export &Metrics"));
    named(exportMetricsMenu->addAction(tr("As CSV\u2026"), this, [this] { exportMetrics(false); }), "actionExportCsv");
    named(exportMetricsMenu->addAction(tr("As JSON\u2026"), this, [this] { exportMetrics(true); }), "actionExportJson");
    file->addSeparator();
    named(file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close), "actionQuit");

    // Edit
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* undo = m_undoGroup->createUndoAction(this, tr("&Undo"));
    undo->setShortcuts(QKeySequence::Undo);
    undo->setObjectName(QStringLiteral("actionUndo"));
    QAction* redo = m_undoGroup->createRedoAction(this, tr("&Redo"));
    redo->setShortcuts(QKeySequence::Redo);
    redo->setObjectName(QStringLiteral("actionRedo"));
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    named(edit->addAction(tr("&Duplicate as B"), QKeySequence(Qt::CTRL | Qt::Key_D), this, &MainWindow::duplicateAsB),
          "actionDuplicateAsB");
    named(edit->addAction(tr("Edit &A"), this, [this] { setActiveDocument(0); }), "actionEditA");
    named(edit->addAction(tr("Edit &B"), this, [this] { setActiveDocument(1); }), "actionEditB");

    // View
    m_viewMenu = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : {m_panelDock, m_heatmapDock, m_chartsDock, m_compareDock})
        m_viewMenu->addAction(d->toggleViewAction());
    m_viewMenu->addSeparator();
    named(m_viewMenu->addAction(tr("&Fit Topology"), QKeySequence(Qt::Key_F), m_canvas, &views::TopologyCanvas::fitAll),
          "actionFit");
    m_presentationAction = m_viewMenu->addAction(tr("&Presentation Mode"));
    m_presentationAction->setObjectName(QStringLiteral("actionPresentation"));
    m_presentationAction->setCheckable(true);
    m_presentationAction->setShortcut(QKeySequence(Qt::Key_F11));
    connect(m_presentationAction, &QAction::toggled, this, &MainWindow::setPresentationMode);

    // Run
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    m_runAction = named(run->addAction(tr("&Run"), QKeySequence(Qt::Key_F5), m_runner, &session::SimRunner::run), "actionRun");
    m_pauseAction = named(run->addAction(tr("&Pause"), QKeySequence(Qt::SHIFT | Qt::Key_F5), m_runner,
                                         &session::SimRunner::pause),
                          "actionPause");
    m_pauseAction->setEnabled(false);
    named(run->addAction(tr("&Step"), QKeySequence(Qt::Key_F10), m_runner, &session::SimRunner::step), "actionStep");
    named(run->addAction(tr("R&eset"), QKeySequence(Qt::CTRL | Qt::Key_R), m_runner, &session::SimRunner::reset),
          "actionReset");
    QMenu* speed = run->addMenu(tr("S&peed"));
    auto* speeds = new QActionGroup(this);
    for (double sps : {1.0, 5.0, 10.0, 30.0, 0.0}) {
        QAction* a = speed->addAction(sps > 0 ? (sps == 1 ? tr("1 step/s") : tr("%1 steps/s").arg(sps)) : tr("As fast as possible"));
        a->setCheckable(true);
        a->setChecked(sps == m_runner->stepsPerSecond());
        speeds->addAction(a);
        connect(a, &QAction::triggered, this, [this, sps] { m_runner->setStepsPerSecond(sps); });
    }
    QMenu* source = run->addMenu(tr("S&ource"));
    auto* sources = new QActionGroup(this);
    m_simSourceAction = named(source->addAction(tr("Simulated (analytical model)")), "actionSourceSim");
    m_simSourceAction->setCheckable(true);
    m_simSourceAction->setChecked(true);
    sources->addAction(m_simSourceAction);
    connect(m_simSourceAction, &QAction::triggered, this, [this] { setEngineSource(false); });
    m_engineSourceAction = named(source->addAction(tr("Local engine (real MoE layers on this CPU)")), "actionSourceEngine");
    m_engineSourceAction->setCheckable(true);
    m_engineSourceAction->setToolTip(tr("Runs the scenario's MoE layers for real on this machine's cores, as expert-parallel ranks"));
    sources->addAction(m_engineSourceAction);
    connect(m_engineSourceAction, &QAction::triggered, this, [this] { setEngineSource(true); });
    QAction* remote = source->addAction(tr("Remote worker (not built yet)"));
    remote->setEnabled(false);

    // Help
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    named(help->addAction(tr("&Keyboard Shortcuts"), QKeySequence::HelpContents, this, &MainWindow::shortcuts),
          "actionShortcuts");
    named(help->addAction(tr("&About moex"), this, &MainWindow::about), "actionAbout");

    // Run toolbar
    QToolBar* tb = addToolBar(tr("Run"));
    tb->setObjectName(QStringLiteral("runToolBar"));
    tb->setMovable(false);
    tb->addAction(m_runAction);
    tb->addAction(m_pauseAction);
    tb->addAction(action(QStringLiteral("actionStep")));
    tb->addAction(action(QStringLiteral("actionReset")));
    tb->addSeparator();
    tb->addAction(undo);
    tb->addAction(redo);
    tb->addSeparator();
    tb->addAction(action(QStringLiteral("actionDuplicateAsB")));
    // Where a first-time user starts: the samples and the guided tours, in sight rather than only
    // in the File menu.
    tb->addSeparator();
    QAction* samples = action(QStringLiteral("actionNewFromSample"));
    samples->setIconText(tr("Samples\u2026"));
    samples->setToolTip(tr("Open one of the sample deployments (DeepSeek-R1 on NVL72, Kimi K2 on HGX, \u2026)"));
    tb->addAction(samples);
    if (!tours->isEmpty()) {
        auto* tourButton = new QToolButton;
        tourButton->setObjectName(QStringLiteral("tourButton"));
        tourButton->setText(tr("Guided tour"));
        tourButton->setToolTip(tr("A few steps through a sample, each with what to look at"));
        tourButton->setMenu(tours);
        tourButton->setPopupMode(QToolButton::InstantPopup);
        tb->addWidget(tourButton);
    }

    // The guided tour's bar: a row of its own under the Run toolbar, the window's whole width
    // (its caption reads in a few lines even in a 1024-pixel window), shown while a tour runs.
    addToolBarBreak();
    m_tourToolBar = addToolBar(tr("Guided tour"));
    m_tourToolBar->setObjectName(QStringLiteral("tourToolBar"));
    m_tourToolBar->setMovable(false);
    m_tourToolBar->setFloatable(false);
    m_tourToolBar->toggleViewAction()->setVisible(false);  // not in the toolbars' context menu
    m_tourToolBar->setContentsMargins(0, 0, 0, 0);
    m_tourToolBar->layout()->setContentsMargins(0, 0, 0, 0);
    m_tourToolBar->addWidget(m_tourBar);
    m_tourToolBar->hide();
    connect(m_tourBar, &TourBar::activeChanged, m_tourToolBar, &QToolBar::setVisible);
}

void MainWindow::restoreSettings()
{
    QSettings s;
    m_recent = s.value(QStringLiteral("recentFiles")).toStringList();
    rebuildRecentMenu();
    if (QGuiApplication::platformName() == QLatin1String("offscreen"))
        return;  // screenshots and tests use the default layout
    restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    m_restoredLayout = restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    m_tourToolBar->setVisible(m_tourBar->active());  // a saved state never brings back an empty bar
}

void MainWindow::saveSettings()
{
    QSettings s;
    s.setValue(QStringLiteral("recentFiles"), m_recent);
    if (QGuiApplication::platformName() == QLatin1String("offscreen"))
        return;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
}

void MainWindow::addRecent(const QString& path)
{
    m_recent.removeAll(path);
    m_recent.prepend(path);
    while (m_recent.size() > kMaxRecent)
        m_recent.removeLast();
    QSettings().setValue(QStringLiteral("recentFiles"), m_recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    for (const QString& path : m_recent)
        m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] {
            if (maybeSave())
                openScenarioInBackground(path);
        })->setToolTip(path);
    if (m_recent.isEmpty())
        m_recentMenu->addAction(tr("(none yet)"))->setEnabled(false);
    else {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear List"), this, [this] {
            m_recent.clear();
            QSettings().setValue(QStringLiteral("recentFiles"), m_recent);
            rebuildRecentMenu();
        });
    }
}

bool MainWindow::maybeSave()
{
    // A change still being placed counts as unsaved: closing or opening another file drops it.
    if ((!m_docA->isModified() && !m_docA->isBusy()) || !m_interactive)
        return true;
    const auto answer = QMessageBox::warning(
        this, tr("Unsaved changes"),
        tr("%1 has unsaved changes. Save them?").arg(m_docA->displayName()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return save();
    return answer == QMessageBox::Discard;
}

bool MainWindow::save()
{
    if (m_docA->filePath().isEmpty() || m_docA->filePath().startsWith(m_samplesDir))
        return saveAs();  // never overwrite a shipped sample silently
    if (!m_docA->save()) {
        showError(tr("Cannot save"), m_docA->lastError());
        return false;
    }
    m_stackA->setClean();
    if (!m_docA->lastWarning().isEmpty())
        statusBar()->showMessage(tr("Saved; note: %1").arg(m_docA->lastWarning()), 10000);
    else
        statusBar()->showMessage(tr("Saved %1").arg(m_docA->filePath()), 5000);
    return true;
}

bool MainWindow::saveAs()
{
    const QString suggested = m_docA->displayName() + QStringLiteral(".yaml");
    const QString path = QFileDialog::getSaveFileName(this, tr("Save Scenario As"), suggested,
                                                      tr("Scenario files (*.yaml *.yml)"));
    if (path.isEmpty())
        return false;
    if (!m_docA->saveAs(path)) {
        showError(tr("Cannot save"), m_docA->lastError());
        return false;
    }
    m_stackA->setClean();
    addRecent(m_docA->filePath());
    statusBar()->showMessage(m_docA->lastWarning().isEmpty() ? tr("Saved %1").arg(path)
                                                               : tr("Saved; note: %1").arg(m_docA->lastWarning()),
                             8000);
    return true;
}

void MainWindow::open()
{
    if (!maybeSave())
        return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Scenario"), m_samplesDir + QStringLiteral("/scenarios"),
                                                      tr("Scenario files (*.yaml *.yml);;All files (*)"));
    if (!path.isEmpty())
        openScenarioInBackground(path);
}

void MainWindow::newFromSample()
{
    if (!maybeSave())
        return;
    SamplesDialog dialog(m_samplesDir, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    if (!dialog.chosenTour().isEmpty())
        startTour(dialog.chosenTour());
    else if (!dialog.chosenScenario().isEmpty())
        openScenarioInBackground(dialog.chosenScenario());
}

bool MainWindow::startTour(const QString& tourFile)
{
    try {
        m_tourBar->start(session::loadTour(tourFile));
        return true;
    } catch (const std::exception& e) {
        showError(tr("Cannot start the tour"), session::errorText(e));
        return false;
    }
}

// The document's placement as `format` carries it: copies of one expert on one GPU separated where the
// format's consumer cannot load them, judged by the latest step's expert loads.
Placement MainWindow::placementForFormat(ExportFormat format, QString* note) const
{
    const session::ScenarioDocument* doc = document();
    const Placement& p = doc->placement();
    std::vector<std::vector<double>> load;
    if (m_latest && static_cast<int>(m_latest->layers.size()) == p.numLayers())
        for (const auto& layer : m_latest->layers)
            load.emplace_back(layer.expert_load.begin(), layer.expert_load.end());
    const auto& topo = doc->scenario().topology;
    std::optional<SeparationReport> separated;
    Placement out = placementForExport(p, format, load,
                                       topo.numGpus() / std::max(1, topo.numDomains()), separated);
    if (note)
        *note = separated ? session::qs(describeSeparation(*separated)) : QString();
    return out;
}

QString MainWindow::exportPlacementTo(ExportFormat fmt, const QString& path, QString* note)
{
    const session::ScenarioDocument* doc = document();
    if (!doc->hasScenario())
        return tr("No scenario is loaded");
    const Placement placement = placementForFormat(fmt, note);
    const auto problems = exportProblems(placement, doc->scenario().model, fmt);
    if (!problems.empty()) {
        QStringList lines;
        for (const auto& p : problems)
            lines << session::qs(p);
        return lines.join(QLatin1Char('\n'));
    }
    try {
        writePlacementExport(session::ss(path), placement, doc->scenario().model, fmt);
    } catch (const std::exception& e) {
        return session::errorText(e);
    }
    return {};
}

void MainWindow::exportPlacement(ExportFormat fmt)
{
    const session::ScenarioDocument* doc = document();
    if (!doc->hasScenario())
        return;
    const QString name = session::qs(std::string(toString(fmt)));
    // Refuse before asking for a file name when the placement cannot be written in this format.
    if (const auto problems = exportProblems(placementForFormat(fmt, nullptr), doc->scenario().model, fmt);
        !problems.empty()) {
        showError(tr("This placement cannot be exported as %1").arg(name), exportPlacementTo(fmt, QString()));
        return;
    }
    const bool yaml = fmt == ExportFormat::native || fmt == ExportFormat::trtllm;
    const QString suggested = doc->displayName() + QStringLiteral("-") + name + (yaml ? QStringLiteral(".yaml") : QStringLiteral(".json"));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Placement (%1)").arg(name), suggested);
    if (path.isEmpty())
        return;
    QString note;
    if (const QString error = exportPlacementTo(fmt, path, &note); !error.isEmpty())
        showError(tr("Export failed"), error);
    else
        statusBar()->showMessage(tr("Exported the placement as %1 to %2").arg(name, path)
                                     + (note.isEmpty() ? QString() : QStringLiteral(" (") + note + QStringLiteral(")")),
                                 10000);
}

QString MainWindow::exportViewTo(const QString& path, bool svg)
{
    QWidget* view = m_canvas;
    QSaveFile out(path);
    bool ok = out.open(QIODevice::WriteOnly);
    if (ok && svg) {
        QSvgGenerator gen;
        gen.setOutputDevice(&out);
        gen.setSize(view->size());
        gen.setViewBox(QRect(QPoint(0, 0), view->size()));
        gen.setTitle(document()->displayName());
        gen.setDescription(tr("moex topology view"));
        QPainter p(&gen);
        view->render(&p);
        p.end();
    } else if (ok) {
        ok = view->grab().save(&out, "PNG");
    }
    ok = ok && out.commit();
    return ok ? QString() : tr("Cannot write %1: %2").arg(path, out.errorString());
}

void MainWindow::exportView(bool svg)
{
    const QString path = QFileDialog::getSaveFileName(this, svg ? tr("Export View as SVG") : tr("Export View as PNG"),
                                                      document()->displayName() + (svg ? QStringLiteral(".svg") : QStringLiteral(".png")),
                                                      svg ? tr("SVG images (*.svg)") : tr("PNG images (*.png)"));
    if (path.isEmpty())
        return;
    if (const QString error = exportViewTo(path, svg); !error.isEmpty())
        showError(tr("Export failed"), error);
    else
        statusBar()->showMessage(tr("Exported %1").arg(path), 5000);
}

QString MainWindow::exportMetricsTo(const QString& path, bool json)
{
    if (!m_latest)
        return tr("No metrics yet: run or step the simulation first");
    try {
        std::string text;
        if (json) {
            std::vector<std::string> names;
            for (const auto& n : document()->scenario().topology.nodes())
                names.push_back(n.name);
            nlohmann::json j = metricsToJson(*m_latest, names);
            j["scenario"] = document()->scenario().name;
            text = j.dump(1) + "\n";
        } else {
            text = session::metricsToCsv(*m_latest);
        }
        writeFileAtomically(session::ss(path), text);
    } catch (const std::exception& e) {
        return session::errorText(e);
    }
    return {};
}

void MainWindow::exportMetrics(bool json)
{
    if (!m_latest)
        return;
    const QString path = QFileDialog::getSaveFileName(this, json ? tr("Export Metrics as JSON") : tr("Export Metrics as CSV"),
                                                      document()->displayName() + (json ? QStringLiteral(".json") : QStringLiteral(".csv")));
    if (path.isEmpty())
        return;
    if (const QString error = exportMetricsTo(path, json); !error.isEmpty())
        showError(tr("Export failed"), error);
    else
        statusBar()->showMessage(tr("Exported %1").arg(path), 5000);
}

void MainWindow::about()
{
    QMessageBox::about(this, tr("About moex"),
                       tr("<h3>moex %1</h3><p>An explorer for Mixture-of-Experts deployments: lay experts out on "
                          "NVL72 racks and HGX nodes, watch load, traffic and latency, compare what-ifs, and export "
                          "placements for SGLang, TensorRT-LLM, vllm-ascend and DeepSeek EPLB.</p>"
                          "<p>Numbers come from the analytical model (source &ldquo;sim&rdquo;).</p>")
                           .arg(QApplication::applicationVersion()));
}

void MainWindow::shortcuts()
{
    const QList<QPair<QString, QString>> rows = {
        {QKeySequence(QKeySequence::New).toString(QKeySequence::NativeText), tr("New from sample")},
        {QKeySequence(QKeySequence::Open).toString(QKeySequence::NativeText), tr("Open a scenario")},
        {QKeySequence(QKeySequence::Save).toString(QKeySequence::NativeText), tr("Save")},
        {QKeySequence(QKeySequence::Undo).toString(QKeySequence::NativeText), tr("Undo the last edit")},
        {QKeySequence(QKeySequence::Redo).toString(QKeySequence::NativeText), tr("Redo")},
        {QStringLiteral("Ctrl+D"), tr("Duplicate as B (what-if)")},
        {QStringLiteral("F5 / Shift+F5"), tr("Run / pause the live simulation")},
        {QStringLiteral("F10"), tr("One step")},
        {QStringLiteral("Ctrl+R"), tr("Reset to step 0")},
        {QStringLiteral("F"), tr("Fit the topology in view")},
        {QStringLiteral("F11"), tr("Presentation mode (larger fonts)")},
        {tr("Drag a chip"), tr("Move an expert to another GPU")},
        {tr("Ctrl+drag"), tr("Replicate an expert on another GPU")},
        {tr("Drop on a chip"), tr("Swap two experts")},
        {tr("Right-click a GPU"), tr("Set its speed")},
        {tr("Right-click a chip"), tr("Remove that replica (an expert with another copy in the layer)")},
        {tr("Wheel / drag empty space"), tr("Zoom / pan")},
    };
    QString html = QStringLiteral("<table cellpadding='4'>");
    for (const auto& [key, what] : rows)
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(key.toHtmlEscaped(), what.toHtmlEscaped());
    html += QStringLiteral("</table>");
    QMessageBox box(QMessageBox::Information, tr("Keyboard shortcuts"), html, QMessageBox::Ok, this);
    box.setTextFormat(Qt::RichText);
    box.exec();
}

}  // namespace moex::app
