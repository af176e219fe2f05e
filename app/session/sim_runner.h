// SimRunner: live runs without blocking the UI. A worker QThread owns the MetricsSource (the
// analytical model, or the CPU engine: setSource) and steps it at the chosen speed; snapshots reach
// the UI thread as MetricsPtr, coalesced to at most maxUpdatesPerSecond() (30) signals a second.
// setSource/setScenario/setPlacement are queued to the worker and never wait for a step in progress
// (an engine step takes seconds); simulateOnce and simulateScenario are the synchronous paths for
// the analytical model's immediate re-simulation after an edit (same routing input as the last
// step, new placement), and wait for the worker's current step.
#pragma once

#include "metrics_ptr.h"

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#ifndef Q_MOC_RUN
#include "run/metrics_source.h"
#endif

#include <functional>
#include <memory>

class QThread;

namespace moex::session {

class Mailbox;
class SimWorker;
struct SimShared;

class SimRunner : public QObject {
    Q_OBJECT
public:
    explicit SimRunner(QObject* parent = nullptr);  // source "sim"
    ~SimRunner() override;

    // Replaces the source (e.g. an engine); reconfigured with the current scenario.
    void setSource(std::unique_ptr<MetricsSource> source);
    // Replaces the source and configures it for `scenario` in one request: the worker never sees
    // the new source with the old scenario (an engine built for the simulator's topology).
    void setSource(std::unique_ptr<MetricsSource> source, const Scenario& scenario, const Placement& placement);
    [[nodiscard]] QString sourceName() const;

    // Queued: the worker rebuilds, restarts at step 0 and publishes that step.
    void setScenario(const Scenario& scenario, const Placement& placement);
    // Queued: same scenario, new placement / speeds; the worker republishes the last step.
    void setPlacement(const Placement& placement, const GpuSpeeds& speeds);
    // Synchronous: applies anything pending, then the new placement, and re-simulates the last
    // step's input. Publishes the result at once (metricsReady) and returns it; null on error.
    MetricsPtr simulateOnce(const Placement& placement, const GpuSpeeds& speeds);
    // Synchronous full rebuild + step 0 (first paint, screenshots); null on error.
    MetricsPtr simulateScenario(const Scenario& scenario, const Placement& placement);

    void run();
    void pause();
    void step();   // one step (pauses a run first)
    void reset();  // back to step 0, publishes it
    // Steps per second of a run; 0 = as fast as the source goes.
    void setStepsPerSecond(double stepsPerSecond);
    [[nodiscard]] double stepsPerSecond() const { return m_stepsPerSecond; }
    [[nodiscard]] bool isRunning() const { return m_running; }
    [[nodiscard]] MetricsPtr latest() const { return m_latest; }
    void setMaxUpdatesPerSecond(int n);
    [[nodiscard]] int maxUpdatesPerSecond() const { return m_maxUpdates; }

signals:
    void metricsReady(moex::session::MetricsPtr metrics);
    void runningChanged(bool running);
    void errorOccurred(const QString& message);

private:
    void post(void (SimWorker::*method)());  // queued to the worker's thread (m_workerMailbox)
    void onProduced();
    void deliver(MetricsPtr m);
    MetricsPtr deliverNow(MetricsPtr result);
    MetricsPtr simulateNow(const std::function<bool(SimShared&)>& step);
    void flush();

    std::shared_ptr<SimShared> m_shared;
    QThread* m_thread = nullptr;
    SimWorker* m_worker = nullptr;
    Mailbox* m_workerMailbox = nullptr;  // the worker's thread's calls (mailbox.h)
    QTimer m_coalesce;
    QElapsedTimer m_sinceEmit;
    MetricsPtr m_pending;
    MetricsPtr m_latest;
    double m_stepsPerSecond = 10;
    int m_maxUpdates = 30;
    bool m_running = false;
};

}  // namespace moex::session
