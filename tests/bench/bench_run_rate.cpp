// The window's Run as a user meets it: SimRunner (the GUI's worker) stepping the analytical model
// over the scenario's routing source while a canvas and two heatmaps repaint every delivered step.
//   QT_QPA_PLATFORM=offscreen build/dev/tests/bench/bench_run_rate [scenario.yaml] [--seconds S]
// Prints, for Run ▸ Speed 10 steps/s and "As fast as possible": steps advanced per second (the
// metrics' step index over the wall clock) and deliveries painted per second (SimRunner coalesces
// to at most 30 a second); then an edit's re-simulation: SimRunner::simulateOnce with two experts
// swapped between GPUs (what a drag does), median of 20, with and without the repaint.
#include "sim_runner.h"
#include "views/heatmap_widget.h"
#include "views/topology_canvas.h"

#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    std::string path = MOEX_SOURCE_DIR "/samples/scenarios/deepseek-r1-decode-nvl72.yaml";
    double seconds = 4.0;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = std::max(0.5, std::atof(argv[++i]));
        else
            path = argv[i];
    }
    QApplication app(argc, argv);
    const moex::Scenario s = moex::loadScenarioFile(path);
    const moex::Placement placement = moex::resolvePlacement(s);

    QWidget window;
    window.resize(1600, 1000);
    auto* canvas = new moex::views::TopologyCanvas;
    auto* loadMap = new moex::views::HeatmapWidget;
    auto* trafficMap = new moex::views::HeatmapWidget;
    auto* lay = new QHBoxLayout(&window);
    lay->addWidget(canvas, 3);
    auto* right = new QVBoxLayout;
    right->addWidget(loadMap);
    right->addWidget(trafficMap);
    lay->addLayout(right, 2);
    canvas->setScenario(s, placement);
    canvas->setLayer(moex::MoeLayers::only(moex::MoeLayerId(3)));
    window.show();

    moex::session::SimRunner runner;
    std::int64_t lastStep = -1;
    int delivered = 0;
    std::vector<double> loads, traffic;
    auto paint = [&](const moex::StepMetrics& m) {
        canvas->setMetrics(m);
        const int L = static_cast<int>(m.layers.size());
        const int E = s.model.routed_experts;
        loads.assign(static_cast<std::size_t>(L) * static_cast<std::size_t>(E), 0.0);
        for (int l = 0; l < L; ++l)
            for (int e = 0; e < E; ++e)
                loads[static_cast<std::size_t>(l * E + e)] =
                    static_cast<double>(m.layers[static_cast<std::size_t>(l)].expert_load[static_cast<std::size_t>(e)]);
        loadMap->setMatrix(L, E, loads);
        traffic.assign(m.traffic.begin(), m.traffic.end());
        trafficMap->setMatrix(m.num_gpus, m.num_gpus, traffic);
        canvas->viewport()->repaint();
        loadMap->repaint();
        trafficMap->repaint();
    };
    QObject::connect(&runner, &moex::session::SimRunner::metricsReady, [&](const moex::session::MetricsPtr& m) {
        if (!m)
            return;
        lastStep = m->step;
        ++delivered;
        paint(*m);
    });
    if (!runner.simulateScenario(s, placement)) {
        std::fprintf(stderr, "bench_run_rate: the scenario did not simulate\n");
        return 1;
    }
    std::printf("bench_run_rate: %s, canvas + 2 heatmaps repainted on every delivery, %.1f s per speed\n",
                s.name.c_str(), seconds);
    for (const double sps : {10.0, 0.0}) {
        runner.setStepsPerSecond(sps);
        runner.reset();
        QElapsedTimer settle;
        settle.start();
        while (settle.elapsed() < 300)
            app.processEvents(QEventLoop::AllEvents, 20);
        const std::int64_t firstStep = lastStep;
        delivered = 0;
        runner.run();
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < static_cast<qint64>(seconds * 1000))
            app.processEvents(QEventLoop::AllEvents, 20);
        const double elapsed = static_cast<double>(t.elapsed()) / 1000.0;
        runner.pause();
        std::printf("  speed %-22s %6.1f steps/s advanced, %5.1f deliveries/s painted\n",
                    sps > 0 ? (std::to_string(static_cast<int>(sps)) + " steps/s").c_str() : "as fast as possible",
                    static_cast<double>(lastStep - firstStep) / elapsed, delivered / elapsed);
    }
    // An edit: two experts of layer 0 swap GPUs, re-simulated and repainted; then swapped back.
    moex::Placement edited = placement;
    auto& gpuSlots = edited.layers.front().gpu_slots;
    std::vector<double> simMs, paintMs;
    for (int i = 0; i < 20; ++i) {
        std::swap(gpuSlots.front().front(), gpuSlots.back().front());
        const auto t0 = Clock::now();
        const moex::session::MetricsPtr m = runner.simulateOnce(edited, s.speeds);
        const auto t1 = Clock::now();
        if (m)
            paint(*m);
        const auto t2 = Clock::now();
        simMs.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        paintMs.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
    }
    std::printf("  edit (swap two experts): %.1f ms re-simulation, %.1f ms with the repaint (medians of 20; target < 50)\n",
                median(simMs), median(paintMs));
    return 0;
}
