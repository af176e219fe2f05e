// Test helper: a sample scenario with its resolved placement and one simulated step.
#pragma once

#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"

#include <QDir>
#include <QString>
#include <QStringList>

#include <string>

namespace moex::views::test {

struct Sample {
    Scenario scenario;
    Placement placement;
    StepMetrics metrics;
};

inline QString samplesDir() { return QStringLiteral(MOEX_SOURCE_DIR "/samples/scenarios"); }

inline QStringList sampleFiles()
{
    QStringList out;
    for (const QString& f : QDir(samplesDir()).entryList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name))
        out << samplesDir() + QLatin1Char('/') + f;
    return out;
}

inline std::string samplePath(const char* name) { return std::string(MOEX_SOURCE_DIR "/samples/scenarios/") + name; }

inline Sample loadSample(const std::string& path, bool simulate = true)
{
    Sample s;
    s.scenario = loadScenarioFile(path);
    s.placement = resolvePlacement(s.scenario);
    if (simulate) {
        auto routing = makeRoutingSource(s.scenario);
        RoutingSample sample;
        routing->next(sample);
        Simulator sim(s.scenario, s.placement, resolveCalibration(s.scenario));
        sim.step(sample, s.metrics);
    }
    return s;
}

// The step with every GPU's phases and the step's times scaled by f (a faster or slower machine).
inline StepMetrics scaledStep(StepMetrics m, double f)
{
    for (GpuMetrics& g : m.gpus) {
        g.compute_us *= f;
        g.attention_us *= f;
        g.dispatch_us *= f;
        g.combine_us *= f;
        g.idle_us *= f;
    }
    for (double* t : {&m.summary.step_time_us, &m.summary.comm_exposed_us, &m.summary.dispatch_us, &m.summary.combine_us})
        *t *= f;
    return m;
}

}  // namespace moex::views::test
