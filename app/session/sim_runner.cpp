#include "sim_runner.h"

#include "qt_text.h"

#include <QMutex>
#include <QMutexLocker>
#include <QThread>

#include <algorithm>
#include <atomic>
#include <cmath>
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

// State shared by the UI thread and the worker; every access to `source` holds `mutex`.
struct SimShared {
    QMutex mutex;
    std::unique_ptr<MetricsSource> source;
    std::optional<std::pair<Scenario, Placement>> pendingScenario;
    std::optional<std::pair<Placement, GpuSpeeds>> pendingPlacement;
    std::optional<std::pair<Scenario, Placement>> current;  // to reconfigure a new source
    StepMetrics scratch;
    MetricsPtr latest;
    std::atomic<bool> notifyPending{false};

    // With the mutex held. Returns what changed: 0 nothing, 1 placement, 2 scenario. Throws.
    int applyPendingLocked()
    {
        int changed = 0;
        if (pendingScenario) {
            auto next = std::move(*pendingScenario);
            pendingScenario.reset();
            source->configure(next.first, next.second);
            current = std::move(next);
            changed = 2;
        }
        if (pendingPlacement) {
            auto next = std::move(*pendingPlacement);
            pendingPlacement.reset();
            if (source->configured()) {
                source->setPlacement(next.first, next.second);
                if (current) {
                    current->second = next.first;
                    current->first.speeds = next.second;
                }
                changed = std::max(changed, 1);
            }
        }
        return changed;
    }

    MetricsPtr publishLocked()
    {
        scratch.source = source->name();
        latest = std::make_shared<const StepMetrics>(scratch);
        return latest;
    }
};

class SimWorker : public QObject {
    Q_OBJECT
public:
    explicit SimWorker(std::shared_ptr<SimShared> shared) : m_shared(std::move(shared)), m_timer(new QTimer(this))
    {
        m_timer->setInterval(100);
        connect(m_timer, &QTimer::timeout, this, [this] {
            if (!produce(false))
                m_timer->stop();
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
            QMutexLocker lock(&m_shared->mutex);
            if (m_shared->source->configured())
                m_shared->source->reset();
        }
        produce(false);
    }
    void applyPending()
    {
        QMutexLocker lock(&m_shared->mutex);
        int changed = 0;
        try {
            changed = m_shared->applyPendingLocked();
            if (changed == 2)
                m_shared->source->next(m_shared->scratch);
            else if (changed == 1)
                m_shared->source->repeat(m_shared->scratch);
            if (changed)
                m_shared->publishLocked();
        } catch (const std::exception& e) {
            lock.unlock();
            emit failed(errorText(e));
            return;
        }
        lock.unlock();
        if (changed)
            notify();
    }

signals:
    void produced();
    void failed(const QString& message);

private:
    bool produce(bool repeat)
    {
        QMutexLocker lock(&m_shared->mutex);
        try {
            m_shared->applyPendingLocked();
            if (!m_shared->source->configured())
                return false;
            if (repeat)
                m_shared->source->repeat(m_shared->scratch);
            else
                m_shared->source->next(m_shared->scratch);
            m_shared->publishLocked();
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
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("moex-sim"));
    m_worker = new SimWorker(m_shared);
    m_worker->moveToThread(m_thread);
    connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &SimWorker::produced, this, &SimRunner::onProduced, Qt::QueuedConnection);
    connect(m_worker, &SimWorker::failed, this, [this](const QString& message) {
        if (m_running) {
            m_running = false;
            emit runningChanged(false);
        }
        emit errorOccurred(message);
    }, Qt::QueuedConnection);
    m_coalesce.setSingleShot(true);
    connect(&m_coalesce, &QTimer::timeout, this, &SimRunner::flush);
    m_thread->start();
    setStepsPerSecond(m_stepsPerSecond);
}

SimRunner::~SimRunner()
{
    m_thread->quit();
    m_thread->wait();
}

void SimRunner::setSource(std::unique_ptr<MetricsSource> source)
{
    {
        QMutexLocker lock(&m_shared->mutex);
        m_shared->source = std::move(source);
        if (m_shared->current && !m_shared->pendingScenario)
            m_shared->pendingScenario = m_shared->current;
    }
    QMetaObject::invokeMethod(m_worker, &SimWorker::applyPending, Qt::QueuedConnection);
}

QString SimRunner::sourceName() const
{
    QMutexLocker lock(&m_shared->mutex);
    return qs(m_shared->source->name());
}

void SimRunner::setScenario(const Scenario& scenario, const Placement& placement)
{
    {
        QMutexLocker lock(&m_shared->mutex);
        m_shared->pendingScenario.emplace(scenario, placement);
        m_shared->pendingPlacement.reset();
    }
    QMetaObject::invokeMethod(m_worker, &SimWorker::applyPending, Qt::QueuedConnection);
}

void SimRunner::setPlacement(const Placement& placement, const GpuSpeeds& speeds)
{
    {
        QMutexLocker lock(&m_shared->mutex);
        m_shared->pendingPlacement.emplace(placement, speeds);
    }
    QMetaObject::invokeMethod(m_worker, &SimWorker::applyPending, Qt::QueuedConnection);
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
        QMutexLocker lock(&m_shared->mutex);
        try {
            if (!step(*m_shared))
                return nullptr;
            result = m_shared->publishLocked();
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
        shared.pendingPlacement.emplace(placement, speeds);
        shared.applyPendingLocked();
        if (!shared.source->configured())
            return false;
        shared.source->repeat(shared.scratch);
        return true;
    });
}

MetricsPtr SimRunner::simulateScenario(const Scenario& scenario, const Placement& placement)
{
    return simulateNow([&](SimShared& shared) {
        shared.pendingPlacement.reset();
        shared.pendingScenario.emplace(scenario, placement);
        shared.applyPendingLocked();
        shared.source->next(shared.scratch);
        return true;
    });
}

void SimRunner::run()
{
    QMetaObject::invokeMethod(m_worker, &SimWorker::run, Qt::QueuedConnection);
    if (!m_running) {
        m_running = true;
        emit runningChanged(true);
    }
}

void SimRunner::pause()
{
    QMetaObject::invokeMethod(m_worker, &SimWorker::pause, Qt::QueuedConnection);
    if (m_running) {
        m_running = false;
        emit runningChanged(false);
    }
}

void SimRunner::step()
{
    pause();
    QMetaObject::invokeMethod(m_worker, &SimWorker::stepOnce, Qt::QueuedConnection);
}

void SimRunner::reset()
{
    QMetaObject::invokeMethod(m_worker, &SimWorker::reset, Qt::QueuedConnection);
}

void SimRunner::setStepsPerSecond(double stepsPerSecond)
{
    m_stepsPerSecond = std::max(0.0, stepsPerSecond);
    const int ms = m_stepsPerSecond > 0 ? static_cast<int>(std::lround(1000.0 / m_stepsPerSecond)) : 0;
    QMetaObject::invokeMethod(m_worker, [w = m_worker, ms] { w->setIntervalMs(ms); }, Qt::QueuedConnection);
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
        QMutexLocker lock(&m_shared->mutex);
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
