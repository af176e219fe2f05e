// Paint cost of the views at the DeepSeek-R1 / GB200 NVL72 shape (72 GPUs, 288 slots).
//   QT_QPA_PLATFORM=offscreen bench_views [scenario.yaml] [--runs 50] [--layer 3] [--shots DIR]
// Loads the scenario, resolves its placement, simulates one step, and shows the topology canvas
// at 1600x1000 and a 1600x1000 window with the canvas beside the expert-load (layer x expert) and
// GPU x GPU traffic heatmaps. Every number is a median over `runs` synchronous full repaints
// (QWidget::repaint(), steady_clock), in ms; the budget is one 60 Hz frame, 16.7 ms.
//   first frame  = process start to the end of the first full paint of the window
//   setMetrics   = recolouring the canvas for a new step (no scene rebuild)
//   peak RSS     = getrusage ru_maxrss
#include "views/charts.h"
#include "views/heatmap_widget.h"
#include "views/scenario_panel.h"
#include "views/topology_canvas.h"

#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"

#include <QApplication>
#include <QDir>
#include <QSplitter>
#include <QVBoxLayout>

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

double threadCpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Median wall time and median thread CPU time (the CPU figure is what the paint costs when the
// machine is shared; the wall figure is what a user sees on this machine now).
struct Timing {
    double wall = 0;
    double cpu = 0;
};

Timing medianMs(int runs, const std::function<void()>& f)
{
    std::vector<double> wall, cpu;
    f();  // warm-up: glyph caches, first layout
    for (int i = 0; i < runs; ++i) {
        const double c = threadCpuMs();
        const auto a = Clock::now();
        f();
        wall.push_back(ms(a, Clock::now()));
        cpu.push_back(threadCpuMs() - c);
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

void settle()
{
    for (int i = 0; i < 5; ++i)
        QCoreApplication::processEvents();
}

}  // namespace

int main(int argc, char** argv)
{
    const auto start = Clock::now();
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    std::string path = MOEX_SOURCE_DIR "/samples/scenarios/deepseek-r1-decode-nvl72.yaml";
    int runs = 50;
    int layer = 3;
    QString shots;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--layer") && i + 1 < argc)
            layer = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--shots") && i + 1 < argc)
            shots = QString::fromLocal8Bit(argv[++i]);
        else
            path = argv[i];
    }
    QApplication app(argc, argv);

    const auto t0 = Clock::now();
    const moex::Scenario s = moex::loadScenarioFile(path);
    const moex::Placement placement = moex::resolvePlacement(s);
    auto routing = moex::makeRoutingSource(s);
    moex::RoutingSample sample;
    routing->next(sample);
    moex::Simulator sim(s, placement, moex::resolveCalibration(s));
    moex::StepMetrics m;
    sim.step(sample, m);
    const auto t1 = Clock::now();

    const int G = m.num_gpus;
    const int L = static_cast<int>(m.layers.size());
    const int E = s.model.routed_experts;
    std::vector<double> load(static_cast<std::size_t>(L) * static_cast<std::size_t>(E));
    for (int l = 0; l < L; ++l)
        for (int e = 0; e < E; ++e)
            load[static_cast<std::size_t>(l * E + e)] = static_cast<double>(m.layers[static_cast<std::size_t>(l)].expert_load[static_cast<std::size_t>(e)]);
    std::vector<double> traffic(m.traffic.size());
    std::transform(m.traffic.begin(), m.traffic.end(), traffic.begin(), [](double b) { return b / 1e6; });

    QWidget window;
    window.resize(1600, 1000);
    auto* split = new QSplitter(Qt::Horizontal);
    auto* canvas = new moex::views::TopologyCanvas;
    auto* right = new QWidget;
    auto* col = new QVBoxLayout(right);
    auto* loadMap = new moex::views::HeatmapWidget;
    loadMap->setTitle(QStringLiteral("Expert load"));
    loadMap->setAxisTitles(QStringLiteral("MoE layer"), QStringLiteral("expert"));
    loadMap->setUnit(QStringLiteral("pairs"));
    loadMap->setMatrix(L, E, load);
    auto* trafficMap = new moex::views::HeatmapWidget;
    trafficMap->setTitle(QStringLiteral("GPU x GPU traffic (dispatch + combine)"));
    trafficMap->setAxisTitles(QStringLiteral("from GPU"), QStringLiteral("to GPU"));
    trafficMap->setUnit(QStringLiteral("MB"));
    trafficMap->setMatrix(G, G, traffic);
    col->addWidget(loadMap);
    col->addWidget(trafficMap);
    split->addWidget(canvas);
    split->addWidget(right);
    split->setSizes({1000, 600});
    auto* lay = new QVBoxLayout(&window);
    lay->setContentsMargins(0, 0, 0, 0);
    lay->addWidget(split);
    canvas->setScenario(s, placement);
    canvas->setMetrics(m);
    canvas->setLayer(moex::MoeLayers::only(moex::MoeLayerId(layer)));
    window.show();
    settle();
    window.repaint();
    const auto firstFrame = Clock::now();

    const Timing windowMs = medianMs(runs, [&] {
        canvas->viewport()->repaint();
        loadMap->repaint();
        trafficMap->repaint();
    });
    const Timing loadMs = medianMs(runs, [&] { loadMap->repaint(); });
    const Timing trafficMs = medianMs(runs, [&] { trafficMap->repaint(); });
    const Timing recolourMs = medianMs(runs, [&] {
        m.step += 1;
        canvas->setMetrics(m);
    });
    if (!shots.isEmpty()) {
        QDir().mkpath(shots);
        window.grab().save(shots + QStringLiteral("/window.png"));
        loadMap->grab().save(shots + QStringLiteral("/heatmap-load.png"));
        trafficMap->grab().save(shots + QStringLiteral("/heatmap-traffic.png"));
    }

    // The canvas alone at 1600x1000.
    auto* alone = new moex::views::TopologyCanvas;
    alone->resize(1600, 1000);
    alone->setScenario(s, placement);
    alone->setMetrics(m);
    alone->setLayer(moex::MoeLayers::only(moex::MoeLayerId(layer)));
    alone->show();
    settle();
    alone->fitAll();
    const Timing canvasMs = medianMs(runs, [&] { alone->viewport()->repaint(); });
    const Timing canvasAllMs = [&] {
        alone->setLayer(moex::MoeLayers::all());
        settle();
        return medianMs(runs, [&] { alone->viewport()->repaint(); });
    }();
    if (!shots.isEmpty()) {
        alone->setLayer(moex::MoeLayers::only(moex::MoeLayerId(layer)));
        alone->setSelectedGpu(moex::GpuId(17));
        settle();
        alone->grab().save(shots + QStringLiteral("/canvas.png"));
        alone->setTransform(QTransform::fromScale(2.2, 2.2));
        alone->centerOn(alone->gpuScenePos(moex::GpuId(17)) + QPointF(120, 60));
        settle();
        alone->grab().save(shots + QStringLiteral("/canvas-zoom.png"));
        alone->setLayer(moex::MoeLayers::all());
        alone->fitAll();
        settle();
        alone->grab().save(shots + QStringLiteral("/canvas-all-layers.png"));
    }

    if (!shots.isEmpty()) {  // the other views, for looking at
        moex::views::StepTimeChart steps;
        moex::views::GpuBreakdownChart breakdown;
        moex::views::LoadHistogramChart histogram;
        moex::views::ScenarioPanel panel;
        steps.resize(700, 320);
        breakdown.resize(1100, 380);
        histogram.resize(700, 320);
        panel.resize(340, 900);
        moex::StepMetrics mm = m;
        for (int i = 0; i < 60; ++i) {
            mm.step = i;
            mm.summary.step_time_us = m.summary.step_time_us * (1 + 0.05 * std::sin(i / 5.0));
            mm.summary.tokens_per_s = m.summary.tokens_per_s / (1 + 0.05 * std::sin(i / 5.0));
            steps.addStep(mm);
        }
        breakdown.setMetrics(m);
        breakdown.setSelectedGpu(moex::GpuId(17));
        histogram.setMetrics(m, moex::MoeLayers::only(moex::MoeLayerId(layer)));
        panel.setScenario(s);
        panel.showError(QStringLiteral("placement.redundant_slots: eplb needs a multiple of 72 (example error)"));
        for (QWidget* w : std::initializer_list<QWidget*>{&steps, &breakdown, &histogram, &panel})
            w->show();
        settle();
        steps.grab().save(shots + QStringLiteral("/chart-steps.png"));
        breakdown.grab().save(shots + QStringLiteral("/chart-breakdown.png"));
        histogram.grab().save(shots + QStringLiteral("/chart-histogram.png"));
        panel.grab().save(shots + QStringLiteral("/scenario-panel.png"));
    }

    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("bench_views  %s  (%d GPUs, %d experts, %d slots/GPU, %d MoE layers), median of %d repaints\n",
                s.name.c_str(), G, E, placement.maxSlotsPerGpu(), L, runs);
    std::printf("  load + placement + 1 simulated step   %8.1f ms\n", ms(t0, t1));
    std::printf("  start to first painted frame          %8.1f ms\n", ms(start, firstFrame));
    std::printf("                                            wall ms   thread CPU ms   (budget 16.7)\n");
    auto row = [](const char* what, Timing t) { std::printf("  %-40s %8.2f  %8.2f\n", what, t.wall, t.cpu); };
    char buf[96];
    std::snprintf(buf, sizeof buf, "canvas 1600x1000, MoE layer %d", layer);
    row(buf, canvasMs);
    row("canvas 1600x1000, all layers", canvasAllMs);
    row("window 1600x1000 (canvas + 2 heatmaps)", windowMs);
    std::snprintf(buf, sizeof buf, "expert-load heatmap %dx%d", L, E);
    row(buf, loadMs);
    std::snprintf(buf, sizeof buf, "traffic heatmap %dx%d", G, G);
    row(buf, trafficMs);
    row("canvas setMetrics (recolour only)", recolourMs);
    std::printf("  peak RSS                              %8.1f MB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
    delete alone;
    return 0;
}
