// Run > Source > Local engine: the active document's MoE layers run for real on this machine
// (core/run engine source) on the runner's worker thread, never the UI thread. The canvas shows
// what the engine runs: its ranks as the host-cpu topology, the experts laid out for them, and
// only the layers it runs; the document and its layout are not touched.
//
// Unless the scenario asks for the engine itself (engine.backend: cpu, with its ranks, layers and
// tokens), the window picks settings that keep a live view moving: up to 4 ranks (no more than
// this machine's cores, at least 2 where there are experts for them), the first MoE layer, 32
// tokens per step, and the scenario's workload routing so that the engine sees the expert loads
// the model sees.
#include "main_window.h"

#include "heatmap_panel.h"
#include "prediction_view.h"
#include "qt_text.h"
#include "scenario_document.h"
#include "sim_runner.h"

#include "common/diagnostics.h"
#include "common/plural.h"
#include "run/host_prediction.h"
#include "run/metrics_source.h"
#include "sim/calibration.h"
#include "views/charts.h"
#include "views/scenario_panel.h"
#include "views/topology_canvas.h"

#include <QAction>
#include <QComboBox>
#include <QSignalBlocker>
#include <QStatusBar>

#include <algorithm>
#include <thread>

namespace moex::app {

using session::ScenarioDocument;

namespace {

Scenario engineRunScenario(const Scenario& s)
{
    Scenario run = s;
    if (s.engine.backend == Backend::cpu)
        return run;  // the scenario's own engine settings
    run.engine.backend = Backend::cpu;
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    run.engine.ranks = std::max(1, std::min({4, std::max(2, cores), s.model.routed_experts}));
    if (run.engine.layers.empty() && !s.model.moe_layers.empty())
        run.engine.layers = {s.model.moe_layers.front()};
    if (run.engine.tokens <= 0)
        run.engine.tokens = std::max<std::int64_t>(run.engine.ranks, 32);
    run.engine.workload_routing = true;
    return run;
}

}  // namespace

const std::vector<int>& MainWindow::shownMoeLayers() const
{
    return m_engineSource ? m_engineView.model.moe_layers : document()->scenario().model.moe_layers;
}

void MainWindow::refillLayerCombo(const Scenario& s)
{
    {
        QSignalBlocker block(m_layerCombo);
        const int keep = m_layerCombo->currentIndex();
        m_layerCombo->clear();
        m_layerCombo->addItem(tr("All layers"));
        for (int i = 0; i < s.model.numMoeLayers(); ++i)
            m_layerCombo->addItem(tr("MoE layer %1 (L%2)").arg(i).arg(s.model.moe_layers[static_cast<std::size_t>(i)]));
        // Default: the first MoE layer, where chips can be dragged ("All layers" is an overview).
        m_layerCombo->setCurrentIndex(keep >= 0 && keep < m_layerCombo->count() ? keep : std::min(1, m_layerCombo->count() - 1));
    }
    m_canvas->setLayer(shownLayers());
}

bool MainWindow::showEngineScenario(std::unique_ptr<MetricsSource> newSource)
{
    ScenarioDocument* doc = document();
    if (!doc->hasScenario())
        return false;
    try {
        const Scenario run = engineRunScenario(doc->scenario());
        checkEngineSettings(run);  // what the engine would refuse, before the view changes
        const int ranks = run.engine.ranks;
        const Placement placement = engineRankPlacement(run, ranks);
        const std::vector<int> layers = run.engine.layers.empty() ? run.model.moe_layers : run.engine.layers;
        const std::int64_t tokens = run.engine.tokens > 0 ? run.engine.tokens : std::min<std::int64_t>(run.workload.tokens_per_gpu, 256);
        // What the canvas and heatmaps show: host-cpu with the engine's ranks, and a model whose MoE
        // layers are the ones the engine runs (they index layers by MoE ordinal).
        Scenario view = hostCpuScenario(run, ranks, tokens);
        Placement shown = placement;
        shown.layers.clear();
        for (int d : layers) {
            const auto it = std::find(run.model.moe_layers.begin(), run.model.moe_layers.end(), d);
            if (it == run.model.moe_layers.end())
                throw InputError(Location{run.file, run.engine.line, run.engine.column},
                                 "engine.layers: decoder layer " + std::to_string(d) + " is not an MoE layer of " + run.model.name);
            shown.layers.push_back(placement.layers[static_cast<std::size_t>(it - run.model.moe_layers.begin())]);
        }
        view.model.moe_layers = layers;
        m_engineView = view;
        m_engineRun = run;
        m_canvas->setScenario(view, shown);
        m_panel->setEngineNote(tr("The local engine runs it on this machine: %1, %2 tokens a step, %3. The topology and "
                                  "workload in this panel are what the analytical model simulates.")
                                   .arg(session::qs(countOf(ranks, "CPU rank")))
                                   .arg(tokens)
                                   .arg(session::qs(countOf(static_cast<long long>(layers.size()), "MoE layer"))));
        refillLayerCombo(view);
        if (m_selectedGpu.value >= ranks)
            m_selectedGpu = GpuId();
        m_latest.reset();
        updateStatus();
        statusBar()->showMessage(tr("Local engine: building the weights of %1 for %2 of %3, %4 tokens per step…")
                                     .arg(session::qs(countOf(ranks, "rank")))
                                     .arg(session::qs(countOf(static_cast<long long>(layers.size()), "MoE layer")))
                                     .arg(session::qs(run.model.name))
                                     .arg(tokens));
        // Queued: the worker builds and steps it (with the new source in the same request).
        if (newSource)
            m_runner->setSource(std::move(newSource), run, placement);
        else
            m_runner->setScenario(run, placement);
        selectGpu(m_selectedGpu);
        m_canvas->fitAll();
        return true;
    } catch (const std::exception& e) {
        statusBar()->showMessage(tr("Local engine: %1 (back to the analytical model)").arg(session::errorText(e)), 15000);
        showUnitsAsRanks(false);
        m_panel->setEngineNote({});
        if (m_simSourceAction)
            m_simSourceAction->setChecked(true);
        m_runner->setSource(makeSimSource(), doc->scenario(), doc->placement());
        return false;
    }
}

void MainWindow::showPrediction(const StepMetrics& measured)
{
    // The scenario's calibration file when it is a CPU one (moex-cli calibrate), else the default.
    Calibration cal = defaultCalibration(GpuArch::cpu);
    bool calibrated = false;
    try {
        if (!m_engineRun.calibration.empty()) {
            const Calibration file = loadCalibrationFile(m_engineRun.calibration, cal);
            calibrated = file.cpu.valid() && file.cpu.cpu != cal.cpu.cpu;
            if (calibrated)
                cal = file;
        }
        const StepMetrics predicted = predictEngineStep(m_engineRun, measured, cal);
        const std::string note = timeSharingNote(measured.num_gpus, static_cast<int>(std::thread::hardware_concurrency()));
        m_predictionView->setRows(predictionTable(measured.layers, predicted), session::qs(cal.name), calibrated,
                                  session::qs(note));
    } catch (const std::exception& e) {
        m_predictionView->showMessage(tr("No prediction: %1").arg(session::errorText(e)));
    }
}

void MainWindow::showUnitsAsRanks(bool engine)
{
    m_engineSource = engine;
    m_heatmaps->setUnitsAreRanks(engine);
    m_breakdown->setBarsAreRanks(engine);
}

void MainWindow::setEngineSource(bool on)
{
    if (on == m_engineSource)
        return;
    m_runner->pause();
    showUnitsAsRanks(on);
    (on ? m_engineSourceAction : m_simSourceAction)->setChecked(true);
    if (!document()->hasScenario()) {
        m_runner->setSource(on ? makeCpuEngineSource() : makeSimSource());
        return;
    }
    if (on) {
        m_heatmaps->clearHistory();
        m_stepChart->clear();
        m_lastChartStep = -1;
        if (!showEngineScenario(makeCpuEngineSource()))
            onScenarioChanged(document());  // the engine cannot run it: the model's view again
        return;
    }
    // Back to the model: queued, so that an engine step still running never blocks this thread.
    ScenarioDocument* doc = document();
    m_heatmaps->clearHistory();
    m_stepChart->clear();
    m_lastChartStep = -1;
    m_latest.reset();
    m_canvas->setScenario(doc->scenario(), doc->placement());
    m_panel->setEngineNote({});
    refillLayerCombo(doc->scenario());
    if (m_selectedGpu.value >= doc->scenario().topology.numGpus())
        m_selectedGpu = GpuId();
    m_runner->setSource(makeSimSource(), doc->scenario(), doc->placement());
    statusBar()->clearMessage();
    updateStatus();
    m_canvas->fitAll();
}

}  // namespace moex::app
