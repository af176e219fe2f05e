// MainWindow: the scenario panel, the topology canvas in the centre, heatmaps, charts and the
// what-if comparison in docks; menus, status bar, undo, live runs (DESIGN.md section 8). It wires
// the views (moex_views) to the session (moex_session): views report intent through signals,
// edits become undo commands on the active document, the runner re-simulates, views repaint.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <QPointer>
#include <QTimer>

#include <functional>

#ifndef Q_MOC_RUN
#include "common/ids.h"
#include "metrics_ptr.h"
#include "placement/exporters.h"
#include "run/metrics_source.h"
#include "scenario/scenario_yaml.h"
#endif

class QAction;
class QActionGroup;
class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QToolBar;
class QUndoGroup;
class QUndoStack;

namespace moex::views {
class GpuBreakdownChart;
class LoadHistogramChart;
class ScenarioPanel;
class StepTimeChart;
class TopologyCanvas;
}  // namespace moex::views

namespace moex::session {
class CompareRunner;
class ScenarioDocument;
class SimRunner;
struct TourStep;
}  // namespace moex::session

namespace moex::app {

class CompareView;
class HeatmapPanel;
class PredictionView;
class LoadStatsView;
class TourBar;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const QString& samplesDir, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens a scenario file (with overrides, for tours) into A; false (message shown) on error.
    // Synchronous: the scenario and its first step are there when it returns (start-up, tests).
    bool openScenario(const QString& path, const Overrides& overrides = {}, bool addToRecent = true);
    // What the menus and tours use: read and placed in the background, the window stays live;
    // `message` goes to the status bar once it is shown. Errors are shown as openScenario's.
    void openScenarioInBackground(const QString& path, const Overrides& overrides = {}, bool addToRecent = true,
                                  const QString& message = {});
    bool startTour(const QString& tourFile);
    void duplicateAsB();
    // File > Open Load Statistics: analyses `path` (a recorder file, or a TensorRT-LLM folder or its
    // meta_info.json) for A's scenario in the background, in the Load statistics tab.
    void openLoadStatistics(const QString& path);
    // A point of that analysis (index into its curve) opened as B: A with the file as its routing
    // and the point's strategy and slots. False (and the reason shown) when B cannot take it.
    bool openReportPointAsB(int reportIndex);
    void setActiveDocument(int which);  // 0 = A, 1 = B (what the canvas, panel and edits act on)
    void setPresentationMode(bool on);
    void selectGpu(GpuId gpu);  // an invalid id: none
    // The File > Export actions without their file dialogs; each returns an error message, or an
    // empty string when the file was written (atomically).
    // Returns the error ("" = written); `note` says what was repaired.
    QString exportPlacementTo(ExportFormat format, const QString& path, QString* note = nullptr);
    QString exportViewTo(const QString& path, bool svg);
    QString exportMetricsTo(const QString& path, bool json);
    void setLayer(MoeLayers layers);  // what the canvas, the histogram and the layer box show
    // Run > Source: the analytical model (false) or the real MoE layers on this machine's CPU (true).
    // The engine runs on the runner's worker thread: the canvas shows the ranks it runs (host-cpu)
    // and the layers it runs; the document (A or B) and its layout stay as they are.
    void setEngineSource(bool on);
    [[nodiscard]] bool engineSource() const { return m_engineSource; }
    // When false, errors go to the status bar only (no modal boxes: screenshots, tests).
    void setInteractive(bool interactive) { m_interactive = interactive; }
    // Answers "discard the modified what-if B?" instead of a message box (tests); unset = ask.
    void setConfirmHandler(std::function<bool(const QString& question)> confirm) { m_confirm = std::move(confirm); }

    [[nodiscard]] session::ScenarioDocument* document() const;        // the active one
    [[nodiscard]] session::ScenarioDocument* documentA() const { return m_docA; }
    [[nodiscard]] session::ScenarioDocument* documentB() const { return m_docB; }
    [[nodiscard]] session::SimRunner* runner() const { return m_runner; }
    [[nodiscard]] session::CompareRunner* compareRunner() const { return m_compare; }
    [[nodiscard]] QUndoStack* undoStack() const;  // the active document's
    [[nodiscard]] views::TopologyCanvas* canvas() const { return m_canvas; }
    [[nodiscard]] views::ScenarioPanel* scenarioPanel() const { return m_panel; }
    [[nodiscard]] HeatmapPanel* heatmaps() const { return m_heatmaps; }
    [[nodiscard]] views::GpuBreakdownChart* breakdownChart() const { return m_breakdown; }
    [[nodiscard]] CompareView* compareView() const { return m_compareView; }
    [[nodiscard]] PredictionView* predictionView() const { return m_predictionView; }
    [[nodiscard]] LoadStatsView* loadStatsView() const { return m_loadStatsView; }
    [[nodiscard]] QDockWidget* compareDock() const { return m_compareDock; }
    [[nodiscard]] TourBar* tourBar() const { return m_tourBar; }
    [[nodiscard]] session::MetricsPtr latestMetrics() const { return m_latest; }
    [[nodiscard]] QString statusText() const;  // the status bar's fields, for tests
    [[nodiscard]] QAction* action(const QString& name) const;  // by objectName, e.g. "actionUndo"
    [[nodiscard]] double uiScale() const { return m_uiScale; }  // 1, or larger in presentation mode

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void buildViews();
    void buildCentral();
    void buildDocks();
    void connectViews();  // views -> intent -> undo commands on the active document
    void buildMenus();
    void buildStatusBar();
    void connectDocument(session::ScenarioDocument* doc, QUndoStack* stack);
    void restoreSettings();
    void saveSettings();
    void addRecent(const QString& path);
    void rebuildRecentMenu();

    void onScenarioChanged(session::ScenarioDocument* doc);
    // The engine's view of the active document (main_window_engine.cpp): what it runs, shown on
    // host-cpu; false (error shown, back to the model) when the engine cannot run it.
    // `newSource`: the engine to switch to with it (null: the runner keeps its source).
    bool showEngineScenario(std::unique_ptr<MetricsSource> newSource = nullptr);
    void showUnitsAsRanks(bool engine);
    void fitStatusFields();  // main_window_status.cpp: the fields that fit the bar's width  // m_engineSource, and what the charts and heatmaps call a bar / row
    void refillLayerCombo(const Scenario& s);
    [[nodiscard]] const std::vector<int>& shownMoeLayers() const;
    void showPrediction(const StepMetrics& measured);
    void onPlacementChanged(session::ScenarioDocument* doc);
    void showScenarioInPanel(const session::ScenarioDocument* doc);
    [[nodiscard]] QString pendingText(const session::ScenarioDocument* doc) const;
    void setStatusBusy(bool busy);
    void updateDockMinimums();  // at start and for presentation mode
    // true: B is unmodified (or `evenUnmodified`: B has edits still being placed) or the user agreed to lose it
    bool confirmDiscardB(bool evenUnmodified = false);
    void closeB(const QString& why);    // B closed (a new A); the status bar says why  // the status bar's numbers greyed while a change is placed
    void onMetrics(const session::MetricsPtr& m);
    void updateCharts();
    void updateTitle();
    void updateStatus();
    void scheduleCompare();
    void runCompare();
    void onCompareReady();
    void showError(const QString& title, const QString& message);
    void onTourStep(const session::TourStep& step);

    bool save();
    bool saveAs();
    void open();
    void newFromSample();
    void exportPlacement(ExportFormat format);
    [[nodiscard]] Placement placementForFormat(ExportFormat format, QString* note) const;
    void exportView(bool svg);
    void exportMetrics(bool json);
    void about();
    void shortcuts();
    bool maybeSave();

    QString m_samplesDir;
    session::ScenarioDocument* m_docA;
    session::ScenarioDocument* m_docB;
    QUndoGroup* m_undoGroup;
    QUndoStack* m_stackA;
    QUndoStack* m_stackB;
    int m_active = 0;
    session::SimRunner* m_runner;
    session::CompareRunner* m_compare;
    QTimer m_compareTimer;
    QTimer m_chartTimer;
    QElapsedTimer m_sinceCharts;
    bool m_chartsDirty = false;

    views::TopologyCanvas* m_canvas = nullptr;
    views::TopologyCanvas* m_thumbCanvas = nullptr;  // offscreen, renders the other document's thumbnail
    views::ScenarioPanel* m_panel = nullptr;
    views::StepTimeChart* m_stepChart = nullptr;
    views::GpuBreakdownChart* m_breakdown = nullptr;
    views::LoadHistogramChart* m_histogram = nullptr;
    HeatmapPanel* m_heatmaps = nullptr;
    CompareView* m_compareView = nullptr;
    TourBar* m_tourBar = nullptr;
    QToolBar* m_tourToolBar = nullptr;  // holds m_tourBar
    QComboBox* m_layerCombo = nullptr;
    QComboBox* m_activeCombo = nullptr;
    QDockWidget* m_panelDock = nullptr;
    QDockWidget* m_heatmapDock = nullptr;
    QDockWidget* m_chartsDock = nullptr;
    QDockWidget* m_compareDock = nullptr;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_viewMenu = nullptr;
    QAction* m_presentationAction = nullptr;
    QAction* m_runAction = nullptr;
    QAction* m_pauseAction = nullptr;

    QLabel* m_statusSource = nullptr;
    QLabel* m_statusStep = nullptr;
    QLabel* m_statusStepTime = nullptr;
    QLabel* m_statusTokens = nullptr;
    QLabel* m_statusPerKw = nullptr;
    QLabel* m_statusImbalance = nullptr;

    session::MetricsPtr m_latest;
    int m_lastChartStep = -1;
    GpuId m_selectedGpu;
    QStringList m_recent;
    QFont m_normalFont;
    bool m_interactive = true;
    [[nodiscard]] MoeLayers shownLayers() const;  // the layer box's choice
    bool m_docksSized = false;
    bool m_restoredLayout = false;
    bool m_engineSource = false;
    static constexpr double kPresentationScale = 1.45;  // View > Presentation mode
    double m_uiScale = 1.0;
    bool m_syncSimulation = false;    // openScenario: the first step on this thread
    bool m_addLoadedToRecent = false;  // openScenarioInBackground's
    // B's undo index when a new A was asked for (and B's loss agreed to): an edit of B made while A
    // loads in the background is asked about again when A arrives, never dropped silently.
    int m_bIndexAtNewA = -1;
    QString m_loadMessage;
    std::function<bool(const QString&)> m_confirm;
    Scenario m_engineView;  // host-cpu, the engine's ranks and layers (engine source only)
    Scenario m_engineRun;   // the scenario as the engine runs it
    PredictionView* m_predictionView = nullptr;
    QDockWidget* m_predictionDock = nullptr;
    LoadStatsView* m_loadStatsView = nullptr;
    QDockWidget* m_loadStatsDock = nullptr;
    void buildLoadStatsDock();
    void presentB();  // B (just filled) shown: edit B, the Compare tab, a fresh comparison
    void chooseLoadStatistics();
    QAction* m_simSourceAction = nullptr;
    QAction* m_engineSourceAction = nullptr;
};

}  // namespace moex::app
