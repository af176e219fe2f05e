// moex-cli bench sim|fidelity|place [...]: benchmarks with their ratio to a ceiling measured in the same run.
//   moex-cli bench sim [--scenario S] [--steps N] [--routed-steps N] [--end-to-end-steps N] [--config-runs N]
//                      [--json OUT|-]
//   moex-cli bench fidelity [--json OUT|-]
//   moex-cli bench place [--budget-ms N] [--seed S] [--runs N] [--steps N] [--counts F] [--json OUT|-]
//                                (cmd_bench_place.cpp)
#include "cli_args.h"
#include "commands.h"
#include "format.h"
#include "sim_run.h"

#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"
#include "run/fidelity_e2e.h"
#include "run/fidelity_lopo.h"
#include "sim/fidelity.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"
#include "sim/summary_text.h"
#include "common/worker_pool.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <map>
#include <iostream>

#include <sys/resource.h>

namespace moex::cli {

namespace {

using Clock = std::chrono::steady_clock;

double threadCpuUs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

double peakRssMb()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

std::string defaultBenchScenario()
{
    return samplesDir() + "/scenarios/deepseek-r1-decode-nvl72.yaml";
}

// One streaming pass over a sample's counts, summed in 16-bit lanes (wrapping), the counts' own
// width, with GCC vectors (SSE2 width, two accumulators) so that it is vectorised at every
// optimisation level: a ceiling must be as fast as streaming the bytes allows, or the ratio flatters.
std::uint64_t streamCounts(const RoutingSample& sample)
{
    using V = std::uint16_t __attribute__((vector_size(16)));
    constexpr std::size_t kLanes = sizeof(V) / sizeof(RoutingSample::Count);
    V a = {}, b = {};
    std::uint64_t sum = 0;
    const RoutingSample::Count* p = sample.all_counts.data();
    const std::size_t n = sample.all_counts.size();
    std::size_t i = 0;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
        V x, y;
        std::memcpy(&x, p + i, sizeof x);
        std::memcpy(&y, p + i + kLanes, sizeof y);
        a += x;
        b += y;
    }
    for (; i < n; ++i)
        sum += p[i];
    a += b;
    for (std::size_t k = 0; k < kLanes; ++k)
        sum += a[k];
    return sum;
}

struct TimedSeries {
    std::vector<double> wall, cpu, ceilingWall, ceilingCpu;
    void reserve(std::size_t n)
    {
        for (auto* v : {&wall, &cpu, &ceilingWall, &ceilingCpu})
            v->reserve(n);
    }
};

constexpr int kSamples = 16;  // bench sim's cold condition: 2.1 MB each for the default scenario, 34 MB, more than L3

// What bench sim measures: the end-to-end step as simulate runs it, a whole configuration from cold,
// and the model alone in three cache conditions, each against its ceiling.
struct SimBench {
    std::string scenario;
    int gpus = 0, moe_layers = 0, experts = 0, slots_per_layer = 0, tokens_per_gpu = 0;
    std::string kernel;
    int steps = 0, routed_steps = 0, end_to_end_steps = 0, config_runs = 0;
    TimedSeries routed, warm, cold;
    std::vector<double> end_to_end, end_to_end_routing, cold_config, routing_ms;
    std::size_t summary_bytes = 0;
    std::uint64_t checksum = 0;
    double peak_rss_mb = 0;
};

SimBench measureSim(const Args& args)
{
    SimBench b;
    const std::string path = args.value("scenario").value_or(defaultBenchScenario());
    const int steps = args.intValue("steps", 200, 10, 1000000);
    const int routedSteps = args.intValue("routed-steps", 30, 1, 100000);
    const int endToEndSteps = args.intValue("end-to-end-steps", 100, 1, 100000);
    const int configRuns = args.intValue("config-runs", 5, 1, 1000);
    const Scenario s = loadScenarioFile(path, args.overrides());
    args.checkOutputsAgainst(s);
    const Calibration cal = resolveCalibration(s);
    auto routing = makeRoutingSource(s);
    const Placement placement = resolvePlacement(s);
    Simulator sim(s, placement, cal);

    // Routing samples for the warm and cold runs are generated up front (timed separately): the
    // figures are the model's own cost.
    std::vector<RoutingSample> samples(kSamples);
    for (auto& sample : samples) {
        const auto t0 = Clock::now();
        routing->next(sample);
        b.routing_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    StepMetrics m;
    RoutingSample fresh = samples[0];  // the working copy of the routed and warm runs
    sim.step(fresh, m);                // warm-up: buffers reach their size
    // Three conditions, each against a ceiling taken in the same condition (one streaming pass
    // over the step's routing counts: every model must read them once):
    //  - routed (the headline, and what simulate reports as sim_wall_us_per_step): as simulate
    //    and the GUI run, the routing source writes the step's sample right before the step; its
    //    work evicts the simulator's own data (plans, outputs, scratch) from the caches, and a
    //    step that follows other work runs slower even where nothing was evicted (PERFORMANCE.md).
    //    Odd runs time the ceiling on the sample just written instead of the step.
    //  - warm: steps back to back, each on a sample copied in (untimed) right before, as a
    //    placement search or an edit in the GUI re-simulates samples.
    //  - cold: the step reads one of 16 samples cycled (34 MB, more than this machine's L3); the
    //    ceiling reads another sample as cold.
    // Wall time and this thread's CPU time are both taken: on a shared machine the CPU time
    // excludes the time the thread waited for a core, and the ratio of the two CPU figures is the
    // robust number.
    TimedSeries& routed = b.routed;
    TimedSeries& warm = b.warm;
    TimedSeries& cold = b.cold;
    routed.reserve(static_cast<std::size_t>(routedSteps));
    warm.reserve(static_cast<std::size_t>(steps));
    cold.reserve(static_cast<std::size_t>(steps));
    auto timeStep = [&](const RoutingSample& sample, TimedSeries& series) {
        const double c0 = threadCpuUs();
        const auto t0 = Clock::now();
        sim.step(sample, m);
        series.wall.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        series.cpu.push_back(threadCpuUs() - c0);
    };
    auto timeCeiling = [&](const RoutingSample& sample, TimedSeries& series) {
        const double c1 = threadCpuUs();
        const auto t1 = Clock::now();
        b.checksum += streamCounts(sample);
        series.ceilingWall.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t1).count());
        series.ceilingCpu.push_back(threadCpuUs() - c1);
    };
    for (int i = 0; i < 2 * routedSteps; ++i) {
        const auto t0 = Clock::now();
        routing->next(fresh);  // same shape: no allocation
        b.routing_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (i % 2 == 0)
            timeStep(fresh, routed);
        else
            timeCeiling(fresh, routed);
    }
    for (int i = 0; i < steps; ++i) {
        const auto& source = samples[static_cast<std::size_t>(i % kSamples)];
        std::copy(source.all_counts.begin(), source.all_counts.end(), fresh.all_counts.begin());  // same size
        timeStep(fresh, warm);
        timeCeiling(fresh, warm);
        timeStep(samples[static_cast<std::size_t>((i + 1) % kSamples)], cold);
        timeCeiling(samples[static_cast<std::size_t>((i + 5) % kSamples)], cold);
    }
    // End to end, the headline: as simulate runs a step, the routing source's sample then the
    // model, back to back (wall time; the generator runs its layers on the machine's threads).
    for (int i = 0; i < endToEndSteps; ++i) {
        const auto t0 = Clock::now();
        routing->next(fresh);
        const auto t1 = Clock::now();
        sim.step(fresh, m);
        const auto t2 = Clock::now();
        b.end_to_end.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
        b.end_to_end_routing.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    // A whole configuration from cold, in this process: load the scenario, resolve its placement,
    // simulate kSummarySteps steps, write the summary (what simulate does, less process start).
    for (int r = 0; r < configRuns; ++r) {
        const auto t0 = Clock::now();
        const Scenario again = loadScenarioFile(path, args.overrides());
        const SimRun run = runSimulation(again, kSummarySteps, -1, "");
        b.summary_bytes += summaryText(run.scenario, run.mean).size();
        b.cold_config.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    b.scenario = s.name;
    b.gpus = s.topology.numGpus();
    b.moe_layers = s.model.numMoeLayers();
    b.experts = s.model.routed_experts;
    b.slots_per_layer = placement.layers.front().numSlots();
    b.tokens_per_gpu = s.workload.tokens_per_gpu;
    b.kernel = sim.routeKernelName();
    b.steps = steps;
    b.routed_steps = routedSteps;
    b.end_to_end_steps = endToEndSteps;
    b.config_runs = configRuns;
    b.peak_rss_mb = peakRssMb();
    return b;
}

int benchSim(const Args& args)
{
    const SimBench b = measureSim(args);
    const double e2e = median(b.end_to_end), e2eGen = median(b.end_to_end_routing), config = median(b.cold_config);
    auto p90of = [](std::vector<double> v) {  // nearest rank, rounded up: never below the median
        std::sort(v.begin(), v.end());
        return v[static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(v.size() - 1)))];
    };
    auto ratio = [](double num, double den) { return den > 0 ? num / den : 0.0; };
    struct Figures {
        double med, p90, cpu, ceiling, ceilingCpu, ratioCpu;
    };
    auto figures = [&](const TimedSeries& t) {
        const double cpu = median(t.cpu), ceilingCpu = median(t.ceilingCpu);
        return Figures{median(t.wall), p90of(t.wall), cpu, median(t.ceilingWall), ceilingCpu, ratio(cpu, ceilingCpu)};
    };
    const Figures fr = figures(b.routed), fw = figures(b.warm), fc = figures(b.cold);
    if (auto json = args.value("json")) {
        nlohmann::json j = {{"scenario", b.scenario},
                            {"end_to_end_us_per_step_median", e2e},
                            {"end_to_end_routing_us_median", e2eGen},
                            {"end_to_end_routing_share", ratio(e2eGen, e2e)},
                            {"end_to_end_steps", b.end_to_end_steps},
                            {"routing_threads", WorkerPool::hardwareThreads()},
                            {"cold_configuration_ms_median", config},
                            {"cold_configuration_runs", b.config_runs},
                            {"gpus", b.gpus},
                            {"moe_layers", b.moe_layers},
                            {"experts", b.experts},
                            {"slots_per_layer", b.slots_per_layer},
                            {"steps", b.steps},
                            {"routed_steps", b.routed_steps},
                            {"kernel", b.kernel},
                            {"us_per_step_median", fr.med},
                            {"us_per_step_p90", fr.p90},
                            {"cpu_us_per_step_median", fr.cpu},
                            {"ceiling_stream_counts_us", fr.ceiling},
                            {"ceiling_stream_counts_cpu_us", fr.ceilingCpu},
                            {"ratio_to_ceiling", fr.ratioCpu},
                            {"warm_us_per_step_median", fw.med},
                            {"warm_us_per_step_p90", fw.p90},
                            {"warm_cpu_us_per_step_median", fw.cpu},
                            {"warm_ceiling_stream_counts_cpu_us", fw.ceilingCpu},
                            {"warm_ratio_to_ceiling", fw.ratioCpu},
                            {"cold_us_per_step_median", fc.med},
                            {"cold_us_per_step_p90", fc.p90},
                            {"cold_cpu_us_per_step_median", fc.cpu},
                            {"cold_ceiling_stream_counts_cpu_us", fc.ceilingCpu},
                            {"cold_ratio_to_ceiling", fc.ratioCpu},
                            {"peak_rss_mb", b.peak_rss_mb},
                            {"routing_ms_per_step_median", median(b.routing_ms)},
                            {"cold_configuration_summary_bytes", b.summary_bytes / static_cast<std::size_t>(b.config_runs)},
                            {"checksum", b.checksum}};
        // Every timed step and ceiling pass, so that the figures above can be recomputed (and a
        // distribution plotted): each condition's wall and CPU microseconds, step and ceiling.
        auto seriesJson = [](const TimedSeries& t) {
            return nlohmann::json{{"wall_us", t.wall}, {"cpu_us", t.cpu}, {"ceiling_wall_us", t.ceilingWall}, {"ceiling_cpu_us", t.ceilingCpu}};
        };
        j["series"] = {{"routed", seriesJson(b.routed)}, {"warm", seriesJson(b.warm)}, {"cold", seriesJson(b.cold)},
                       {"end_to_end", {{"wall_us", b.end_to_end}, {"routing_wall_us", b.end_to_end_routing}}},
                       {"cold_configuration", {{"wall_ms", b.cold_config}}}};
        writeJson(*json, j.dump(1));
        if (*json == "-")
            return 0;
    }
    std::cout << "bench sim: " << b.scenario << " (" << b.moe_layers << " MoE layers, " << b.experts
              << " experts, " << b.slots_per_layer << " slots, " << b.gpus
              << " GPUs, " << b.tokens_per_gpu << " tokens/GPU), the model on one core, "
              << b.kernel << " routing kernel\n";
    auto line = [&](const char* label, const Figures& f, const std::string& what) {
        std::cout << "  " << std::left << std::setw(8) << label << std::right << fixed(f.med, 1) << " us/step median wall, "
                  << fixed(f.p90, 1) << " p90, " << fixed(f.cpu, 1) << " CPU; ceiling " << fixed(f.ceilingCpu, 1)
                  << " us CPU, " << fixed(f.ratioCpu, 1) << "x  (" << what << ")\n";
    };
    std::cout << "  end to end " << fixed(e2e, 1) << " us/step median wall, routing source " << fixed(e2eGen, 1)
              << " us of it (" << fixed(100 * ratio(e2eGen, e2e), 0) << "%, on " << WorkerPool::hardwareThreads()
              << " threads)  (" << b.end_to_end_steps << " steps as simulate runs them; target <= 5000 us, goal <= 1000)\n";
    std::cout << "  cold configuration " << fixed(config, 1) << " ms median of " << b.config_runs
              << " (load, resolve placement, " << kSummarySteps << " steps, summary; target <= 100 ms, goal <= 20)\n";
    std::cout << "  the model alone:\n";
    line("routed", fr, std::to_string(b.routed_steps) + " steps, each right after the routing source wrote its sample, as in simulate");
    line("warm", fw, std::to_string(b.steps) + " steps back to back, sample copied in before each");
    line("cold", fc, std::to_string(b.steps) + " steps over " + std::to_string(kSamples) + " samples cycled");
    std::cout << "  peak memory " << fixed(b.peak_rss_mb, 1)
              << " MB (whole process); routing generator " << fixed(median(b.routing_ms), 2) << " ms/step median (not in the model's figures)\n";
    return 0;
}

int benchFidelity(const Args& args)
{
    // The communication points (core/sim/fidelity.cpp), then the end-to-end check points
    // (core/run/fidelity_e2e.cpp) on the sample models.
    auto points = runFidelity();
    for (auto& p : runEndToEndFidelity(samplesDir() + "/models"))
        points.push_back(std::move(p));
    // Worst |error| per kind and role; the targets: every communication point within 25%, every
    // end-to-end check point within 30%.
    std::map<std::pair<std::string, std::string>, std::pair<double, int>> worst;  // (kind, role) -> (worst |error|, points)
    bool met = true;
    for (const auto& p : points) {
        auto& [w, n] = worst[{p.kind, p.role}];
        w = std::max(w, std::abs(p.error()));
        ++n;
        const double target = p.kind == "end-to-end" ? kEndToEndTarget : kCommunicationTarget;
        if ((p.kind != "end-to-end" || p.role == "check") && std::abs(p.error()) > target)
            met = false;
    }
    if (auto json = args.value("json")) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& p : points)
            j.push_back({{"name", p.name}, {"measured", p.measured}, {"predicted", p.predicted}, {"unit", p.unit},
                         {"error", p.error()}, {"source", p.source}, {"role", p.role}, {"kind", p.kind},
                         {"bound_by", p.bound_by}});
        writeJson(*json, j.dump(1));
        if (*json == "-")
            return met ? 0 : 1;
    }
    std::cout << std::left << std::setw(40) << "measurement" << std::right << std::setw(11) << "measured" << std::setw(11)
              << "predicted" << std::setw(10) << "unit" << std::setw(9) << "error" << std::setw(7) << "role" << "\n";
    for (const auto& p : points) {
        const int digits = p.unit == "x" ? 3 : 1;  // ratios
        std::cout << std::left << std::setw(40) << p.name << std::right << std::setw(11) << fixed(p.measured, digits)
                  << std::setw(11) << fixed(p.predicted, digits) << std::setw(10) << p.unit << std::setw(8)
                  << fixed(100 * p.error(), 1) << "%" << std::setw(7) << p.role << "\n";
    }
    for (const auto& p : points)
        if (!p.bound_by.empty())
            std::cout << p.name << ": bounded by " << p.bound_by << "\n";
    for (const auto& [key, wn] : worst)
        std::cout << "worst |error| on " << wn.second << " " << key.first << " " << key.second << " points "
                  << fixed(100 * wn.first, 1) << "% (target " << fixed(100 * (key.first == "end-to-end" ? kEndToEndTarget : kCommunicationTarget), 0)
                  << "%)\n";
    std::cout << (met ? "every target met\n" : "a target is missed (see the points above)\n");
    // Leave one publication out: its values chosen again without it, its points predicted.
    std::cout << "\nleave one publication out (worst |error| of its points: with the defaults -> chosen without it)\n";
    for (const LopoFold& f : leaveOnePublicationOut(points, samplesDir() + "/models")) {
        std::cout << "  " << f.publication << ", " << f.points << " points: " << fixed(100 * f.in_sample, 1) << "% -> "
                  << fixed(100 * f.left_out, 1) << "%\n    chosen again: " << f.refit << "\n";
    }
    return met ? 0 : 1;
}

}  // namespace

int benchPlace(const Args& args);   // cmd_bench_place.cpp
int benchEngine(const Args& args);  // cmd_bench_engine.cpp

int cmdBench(const Argv& argv)
{
    static const std::vector<OptionSpec> kSpecs = {{"scenario"}, {"steps"}, {"routed-steps"}, {"end-to-end-steps"},
                                                   {"config-runs"}, {"json"}, {"set", true, true}, {"budget-ms"},
                                                   {"seed"}, {"runs"}, {"counts"}, {"kernel"}};
    Args args("bench", argv, kSpecs);
    args.requirePositionals(1, 1,
                            "moex-cli bench sim|fidelity|place|engine [--scenario S] [--steps N] [--json OUT|-] "
                            "(sim: [--routed-steps N] [--end-to-end-steps N] [--config-runs N]) "
                            "(place: [--budget-ms N] [--seed S] [--runs N] [--counts FILE]) "
                            "(engine: [--runs N] [--kernel portable|avx2|avx512|avx512-bf16|amx-bf16])");
    const std::string what = args.positionals().front();
    // Each benchmark's own options: one given to another benchmark would be ignored in silence.
    static const std::map<std::string, std::vector<std::string>> kOptions = {
        {"sim", {"scenario", "steps", "routed-steps", "end-to-end-steps", "config-runs", "set", "json"}},
        {"fidelity", {"json"}},
        {"place", {"budget-ms", "seed", "runs", "steps", "counts", "set", "json"}},
        {"engine", {"runs", "kernel", "json"}},
    };
    if (const auto it = kOptions.find(what); it != kOptions.end()) {
        for (const OptionSpec& spec : kSpecs) {
            const std::string& option = spec.name;
            if (!args.has(option) || std::find(it->second.begin(), it->second.end(), option) != it->second.end())
                continue;
            std::string takes;
            for (const auto& o : it->second)
                takes += (takes.empty() ? "--" : ", --") + o;
            throw InputError(Location{"moex-cli bench", 0, 0}, "--" + option + " is not an option of bench "
                                 + what + ", which takes " + takes);
        }
    }
    if (what == "sim")
        return benchSim(args);
    if (what == "fidelity")
        return benchFidelity(args);
    if (what == "place")
        return benchPlace(args);
    if (what == "engine")
        return benchEngine(args);
    throw InputError(Location{"moex-cli bench", 0, 0},
                     "unknown benchmark '" + what + "'; expected sim, fidelity, place or engine");
}

}  // namespace moex::cli
