// One tree's simulator behind C entry points, so that two trees' builds live in one process
// (sim_ab.sh compiles each tree's core/ with -Dmoex=moexA or -Dmoex=moexB and this file with
// -DSIM_AB_ENTRY(n)=A_##n or B_##n).
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"

#include <chrono>
#include <memory>

namespace moex {
namespace {
struct Bench {
    Scenario s;
    std::unique_ptr<RoutingSource> source;
    std::unique_ptr<Simulator> sim;
    RoutingSample sample;
    StepMetrics out;
};
}  // namespace
}  // namespace moex

extern "C" void* SIM_AB_ENTRY(make)(const char* scenarioPath)
{
    auto b = std::make_unique<moex::Bench>();
    b->s = moex::loadScenarioFile(scenarioPath, {});
    b->source = moex::makeRoutingSource(b->s);
    b->sim = std::make_unique<moex::Simulator>(b->s, moex::resolvePlacement(b->s), moex::resolveCalibration(b->s));
    b->source->next(b->sample);
    b->sim->step(b->sample, b->out);  // warm-up: buffers reach their size
    return b.release();
}

// The routing source writes the next sample (as simulate runs it between steps).
extern "C" void SIM_AB_ENTRY(next)(void* bench)
{
    auto* b = static_cast<moex::Bench*>(bench);
    b->source->next(b->sample);
}

// One step on the current sample; wall microseconds.
extern "C" double SIM_AB_ENTRY(step)(void* bench)
{
    auto* b = static_cast<moex::Bench*>(bench);
    const auto t0 = std::chrono::steady_clock::now();
    b->sim->step(b->sample, b->out);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// The last step's simulated time: the two trees must agree on it.
extern "C" double SIM_AB_ENTRY(stepTimeUs)(void* bench)
{
    return static_cast<moex::Bench*>(bench)->out.summary.step_time_us;
}
