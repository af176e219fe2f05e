#include "sim_runner.h"

#include "mailbox.h"
#include "qt_text.h"

#include <QThread>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <optional>
#include <utility>

namespace moex::session {

void registerSessionMetaTypes()
{
    static const bool once = [] {
        qRegisterMetaType<MetricsPtr>("moex::session::MetricsPtr");
        qRegisterMetaType<MetricsPtr>("MetricsPtr");
        return true;
    }();
    (void)once;
}

// State shared by the UI thread and the worker, under two locks. `mutex` guards the pending
// requests, the latest result and the source's name: the UI thread takes it for moments only.
// `sourceMutex` guards the source and its scratch for a whole step or rebuild (seconds for the
// engine): only the worker and the synchronous simulate* paths (the analytical model's immediate
// re-simulation after an edit) take it, so a slow source never blocks the UI thread's requests.
// Order: sourceMutex before mutex.
struct SimShared {
    // std::mutex, not QMutex: ThreadSanitizer sees pthread locks, not the futex inside libQt6Core.
    std::mutex mutex;
    std::mutex sourceMutex;
    std::unique_ptr<MetricsSource> source;         // sourceMutex
    StepMetrics scratch;                           // sourceMutex
    std::unique_ptr<MetricsSource> pendingSource;  // mutex
    std::optional<std::pair<Scenario, Placement>> pendingScenario;     // mutex
    std::optional<std::pair<Placement, GpuSpeeds>> pendingPlacement;   // mutex
    std::optional<std::pair<Scenario, Placement>> current;  // mutex; to reconfigure a new source
    MetricsPtr latest;                                      // mutex
    QString sourceName;                                     // mutex
    // Configurations: each setSource/setScenario request numbers one (requested); a step carries
    // the number of the one it ran (latestConfig), so the UI drops steps of a configuration that a
    // newer request has replaced (they would not fit the views it has already rebuilt).
    quint64 requestedConfig = 0;  // mutex
    quint64 appliedConfig = 0;    // sourceMutex
    quint64 latestConfig = 0;     // mutex
    std::atomic<bool> notifyPending{false};

    // What applyPending changed, from least to most.
    enum class Change { nothing, placement, scenario };

    // With sourceMutex held: takes the pending requests and applies them to the source, and says
    // what changed (a new source counts as a new scenario). Throws what the source throws; the
    // requests it was applying are then dropped and the last good configuration stays current.
    Change applyPending()
    {
        std::unique_ptr<MetricsSource> nextSource;
        std::optional<std::pair<Scenario, Placement>> nextScenario;
        std::optional<std::pair<Placement, GpuSpeeds>> nextPlacement;
        quint64 config = 0;
        {
            std::lock_guard lock(mutex);
            config = requestedConfig;
            nextSource = std::move(pendingSource);
            nextScenario = std::move(pendingScenario);
            pendingScenario.reset();
            nextPlacement = std::move(pendingPlacement);
            pendingPlacement.reset();
            if (nextSource && !nextScenario)
                nextScenario = current;
        }
        Change changed = Change::nothing;
        if (nextScenario) {
            // A new source is configured before it replaces the old one: when that fails, the old
            // source runs on with its configuration, and the request counts as answered (failed),
            // so that the old configuration's steps are shown again rather than dropped.
            MetricsSource& target = nextSource ? *nextSource : *source;
            try {
                target.configure(nextScenario->first, nextScenario->second);
                if (target.measured()) {
                    // A measured source's first step pays for cold caches and first-touch buffers:
                    // one warm-up step, not shown, as moex-cli run does.
                    target.next(scratch);
                    target.reset();
                }
            } catch (...) {
                appliedConfig = config;
                std::lock_guard lock(mutex);
                if (source)
                    sourceName = QString::fromStdString(source->name());
                throw;
            }
            if (nextSource)
                source = std::move(nextSource);
            appliedConfig = config;
            std::lock_guard lock(mutex);
            current = std::move(nextScenario);
            changed = Change::scenario;
        } else if (nextSource) {
            source = std::move(nextSource);
            appliedConfig = config;
        }
        if (nextPlacement && source->configured()) {
            source->setPlacement(nextPlacement->first, nextPlacement->second);
            std::lock_guard lock(mutex);
            if (current) {
                current->second = nextPlacement->first;
                current->first.speeds = nextPlacement->second;
            }
            changed = std::max(changed, Change::placement);
        }
        return changed;
    }

    // With sourceMutex held.
    MetricsPtr publish()
    {
        scratch.source = source->name();
        auto m = std::make_shared<const StepMetrics>(scratch);
        std::lock_guard lock(mutex);
        latest = m;
        latestConfig = appliedConfig;
        return m;
    }
};

class SimWorker : public QObject {
    Q_OBJECT
public:
    explicit SimWorker(std::shared_ptr<SimShared> shared) : m_shared(std::move(shared)), m_timer(new QTimer(this))
    {
        m_timer->setInterval(100);
        connect(m_timer, &QTimer::timeout, this, [this] {
            if (!produce(false)) {
                m_timer->stop();
                emit stopped();
            }
        });
    }

    void run() { m_timer->start(); }
    void pause() { m_timer->stop(); }
    void stepOnce()
    {
        m_timer->stop();
        produce(false);
    }
    void setIntervalMs(int ms) { m_timer->setInterval(ms); }
    void reset()
    {
        {
            std::lock_guard lock(m_shared->sourceMutex);
            if (m_shared->source->configured())
                m_shared->source->reset();
        }
        produce(false);
    }
    void applyPending()
    {
        std::unique_lock lock(m_shared->sourceMutex);
        using Change = SimShared::Change;
        Change changed = Change::nothing;
        try {
            changed = m_shared->applyPending();
            if (changed == Change::scenario)
                m_shared->source->next(m_shared->scratch);
            else if (changed == Change::placement)
                m_shared->source->repeat(m_shared->scratch);
            if (changed != Change::nothing)
                m_shared->publish();
        } catch (const std::exception& e) {
            lock.unlock();
            emit failed(errorText(e));
            return;
        }
        lock.unlock();
        if (changed != Change::nothing)
            notify();
    }

signals:
    void produced();
    void failed(const QString& message);
    void stopped();  // a run's timer stopped by itself: nothing to step (no scenario) or a failure

private:
    bool produce(bool repeat)
    {
        std::unique_lock lock(m_shared->sourceMutex);
        try {
            m_shared->applyPending();
            if (!m_shared->source->configured())
                return false;
            if (repeat)
                m_shared->source->repeat(m_shared->scratch);
            else
                m_shared->source->next(m_shared->scratch);
            m_shared->publish();
        } catch (const std::exception& e) {
            lock.unlock();
            emit failed(errorText(e));
            return false;
        }
        lock.unlock();
        notify();
        return true;
    }

    void notify()
    {
        // One notification in flight at a time: a fast source never floods the UI's event queue.
        if (!m_shared->notifyPending.exchange(true))
            emit produced();
    }

    std::shared_ptr<SimShared> m_shared;
    QTimer* m_timer;
};

SimRunner::SimRunner(QObject* parent) : QObject(parent), m_shared(std::make_shared<SimShared>())
{
    registerSessionMetaTypes();
    m_shared->source = makeSimSource();
    m_shared->sourceName = qs(m_shared->source->name());
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("moex-sim"));
    m_worker = new SimWorker(m_shared);
    m_workerMailbox = new Mailbox(m_worker);  // moves with its parent
    m_worker->moveToThread(m_thread);
    connect(m_worker, &SimWorker::produced, this, &SimRunner::onProduced, Qt::QueuedConnection);
    connect(m_worker, &SimWorker::failed, this, [this](const QString& message) {
        if (m_running) {
            m_running = false;
            emit runningChanged(false);
        }
        emit errorOccurred(message);
    }, Qt::QueuedConnection);
    connect(m_worker, &SimWorker::stopped, this, [this] {
        if (m_running) {
            m_running = false;
            emit runningChanged(false);
        }
    }, Qt::QueuedConnection);
    m_coalesce.setSingleShot(true);
    connect(&m_coalesce, &QTimer::timeout, this, &SimRunner::flush);
    m_thread->start();
    setStepsPerSecond(m_stepsPerSecond);
}

SimRunner::~SimRunner()
{
    // The worker's last call stops its timer and its thread; once the thread has finished, the
    // worker is deleted here (no event can reach it any more), with the edge stated to TSan.
    m_workerMailbox->post([w = m_worker] {
        w->pause();
        handoffRelease(w);
        QThread::currentThread()->quit();
    });
    m_thread->wait();
    handoffAcquire(m_worker);
    delete m_worker;
}

void SimRunner::post(void (SimWorker::*method)())
{
    m_workerMailbox->post([w = m_worker, method] { (w->*method)(); });
}

void SimRunner::setSource(std::unique_ptr<MetricsSource> source)
{
    {
        std::lock_guard lock(m_shared->mutex);
        m_shared->sourceName = qs(source->name());
        m_shared->pendingSource = std::move(source);
        ++m_shared->requestedConfig;
    }
    post(&SimWorker::applyPending);
}

void SimRunner::setSource(std::unique_ptr<MetricsSource> source, const Scenario& scenario, const Placement& placement)
{
    {
        std::lock_guard lock(m_shared->mutex);
        m_shared->sourceName = qs(source->name());
        m_shared->pendingSource = std::move(source);
        m_shared->pendingScenario.emplace(scenario, placement);
        m_shared->pendingPlacement.reset();
        ++m_shared->requestedConfig;
    }
    post(&SimWorker::applyPending);
}

QString SimRunner::sourceName() const
{
    std::lock_guard lock(m_shared->mutex);
    return m_shared->sourceName;
}

void SimRunner::setScenario(const Scenario& scenario, const Placement& placement)
{
    {
        std::lock_guard lock(m_shared->mutex);
        m_shared->pendingScenario.emplace(scenario, placement);
        m_shared->pendingPlacement.reset();
        ++m_shared->requestedConfig;
    }
    post(&SimWorker::applyPending);
}

void SimRunner::setPlacement(const Placement& placement, const GpuSpeeds& speeds)
{
    {
        std::lock_guard lock(m_shared->mutex);
        m_shared->pendingPlacement.emplace(placement, speeds);
    }
    post(&SimWorker::applyPending);
}

// A synchronous result replaces whatever was waiting to be coalesced and is delivered at once.
MetricsPtr SimRunner::deliverNow(MetricsPtr result)
{
    m_latest = result;
    m_pending.reset();
    m_coalesce.stop();
    m_sinceEmit.restart();
    emit metricsReady(result);
    return result;
}

// Runs `step` on the shared state under its lock (false: nothing to simulate) and delivers the
// published metrics at once; an exception becomes errorOccurred and no metrics.
MetricsPtr SimRunner::simulateNow(const std::function<bool(SimShared&)>& step)
{
    MetricsPtr result;
    {
        std::unique_lock lock(m_shared->sourceMutex);
        try {
            if (!step(*m_shared))
                return nullptr;
            result = m_shared->publish();
        } catch (const std::exception& e) {
            lock.unlock();
            emit errorOccurred(errorText(e));
            return nullptr;
        }
    }
    return deliverNow(std::move(result));
}

MetricsPtr SimRunner::simulateOnce(const Placement& placement, const GpuSpeeds& speeds)
{
    return simulateNow([&](SimShared& shared) {
        {
            std::lock_guard lock(shared.mutex);
            shared.pendingPlacement.emplace(placement, speeds);
        }
        shared.applyPending();
        if (!shared.source->configured())
            return false;
        shared.source->repeat(shared.scratch);
        return true;
    });
}

MetricsPtr SimRunner::simulateScenario(const Scenario& scenario, const Placement& placement)
{
    return simulateNow([&](SimShared& shared) {
        {
            std::lock_guard lock(shared.mutex);
            shared.pendingPlacement.reset();
            shared.pendingScenario.emplace(scenario, placement);
            ++shared.requestedConfig;
        }
        shared.applyPending();
        shared.source->next(shared.scratch);
        return true;
    });
}

void SimRunner::run()
{
    post(&SimWorker::run);
    if (!m_running) {
        m_running = true;
        emit runningChanged(true);
    }
}

void SimRunner::pause()
{
    post(&SimWorker::pause);
    if (m_running) {
        m_running = false;
        emit runningChanged(false);
    }
}

void SimRunner::step()
{
    pause();
    post(&SimWorker::stepOnce);
}

void SimRunner::reset()
{
    post(&SimWorker::reset);
}

void SimRunner::setStepsPerSecond(double stepsPerSecond)
{
    m_stepsPerSecond = std::max(0.0, stepsPerSecond);
    const int ms = m_stepsPerSecond > 0 ? static_cast<int>(std::lround(1000.0 / m_stepsPerSecond)) : 0;
    m_workerMailbox->post([w = m_worker, ms] { w->setIntervalMs(ms); });
}

void SimRunner::setMaxUpdatesPerSecond(int n)
{
    m_maxUpdates = std::max(1, n);
}

void SimRunner::onProduced()
{
    m_shared->notifyPending = false;
    MetricsPtr m;
    {
        std::lock_guard lock(m_shared->mutex);
        if (m_shared->latestConfig < m_shared->requestedConfig)
            return;  // a step of a configuration already replaced
        m = m_shared->latest;
    }
    if (!m || m == m_latest)
        return;
    deliver(std::move(m));
}

void SimRunner::deliver(MetricsPtr m)
{
    m_latest = m;
    m_pending = std::move(m);
    const qint64 minGap = 1000 / m_maxUpdates + (1000 % m_maxUpdates ? 1 : 0);
    if (!m_sinceEmit.isValid() || m_sinceEmit.elapsed() >= minGap) {
        m_coalesce.stop();
        flush();
    } else if (!m_coalesce.isActive()) {
        m_coalesce.start(static_cast<int>(minGap - m_sinceEmit.elapsed()));
    }
}

void SimRunner::flush()
{
    if (!m_pending)
        return;
    MetricsPtr m = std::move(m_pending);
    m_pending.reset();
    m_sinceEmit.restart();
    emit metricsReady(m);
}

}  // namespace moex::session

#include "sim_runner.moc"
