// ScenarioDocument's background changes (requestOverride, requestLoad): the queue, the job on the
// document's one-thread pool, and adopting its result back on the document's thread.
#include "scenario_document.h"

#include "mailbox.h"
#include "qt_text.h"

#include <QFileInfo>
#include <QPointer>

#include <exception>
#include <utility>

namespace moex::session {

struct ScenarioDocument::Outcome {
    std::optional<PreparedChange> change;
    QString error;
    bool cancelled = false;
};

void ScenarioDocument::requestOverride(const QString& key, const QString& value)
{
    if (!m_loaded && !m_running) {
        fail(tr("No scenario is loaded."));
        return;
    }
    const QString k = key.trimmed();
    PendingChange change{k, value, {}};
    if (m_running && !m_running->change.isLoad() && m_running->change.key == k && m_queue.empty()) {
        // A newer value of the key being placed: the running job is pointless.
        m_running->cancel.cancel();
        m_running.reset();
        m_queue.push_back(std::move(change));
        startNext();
        updateBusy();
        return;
    }
    for (PendingChange& queued : m_queue)
        if (!queued.isLoad() && queued.key == k) {
            queued.value = value;
            updateBusy();
            return;
        }
    m_queue.push_back(std::move(change));
    startNext();
    updateBusy();
}

void ScenarioDocument::updateBusy()
{
    const bool busy = isBusy();
    if (busy != m_busySignalled) {
        m_busySignalled = busy;
        emit busyChanged(busy);
    }
    emit pendingChanged();
}

void ScenarioDocument::requestLoad(const QString& path, const Overrides& overrides)
{
    if (m_running)
        m_running->cancel.cancel();
    m_running.reset();
    m_queue.clear();
    m_queue.push_back(PendingChange{QString(), path, overrides});
    startNext();
    updateBusy();
}

void ScenarioDocument::cancelPending()
{
    if (m_running)
        m_running->cancel.cancel();
    m_running.reset();
    m_queue.clear();
    updateBusy();
}

std::vector<ScenarioDocument::PendingChange> ScenarioDocument::pendingChanges() const
{
    std::vector<PendingChange> out;
    if (m_running)
        out.push_back(m_running->change);
    out.insert(out.end(), m_queue.begin(), m_queue.end());
    return out;
}

void ScenarioDocument::startNext()
{
    if (m_running || m_queue.empty())
        return;
    Running run;
    run.change = std::move(m_queue.front());
    m_queue.pop_front();
    run.id = m_nextJob++;
    run.baseSerial = m_serial;
    const quint64 id = run.id;
    const CancelToken token = run.cancel.token();
    const PendingChange change = run.change;
    const State base = m_state;  // the job's own copy: the document may change meanwhile
    m_running = std::move(run);
    QPointer<ScenarioDocument> self(this);
    startJob(m_pool, [self, id, token, change, base] {
        auto outcome = std::make_shared<Outcome>();
        try {
            if (change.isLoad())
                outcome->change = prepareLoad(ss(change.value), change.overrides, token);
            else
                outcome->change = prepareOverride(base, ss(change.key), ss(change.value), token);
        } catch (const Cancelled&) {
            outcome->cancelled = true;
        } catch (const std::exception& e) {
            outcome->error = errorText(e);
        }
        if (token.requested())
            return;  // superseded: nobody waits for it
        if (ScenarioDocument* doc = self.data())  // alive: its destructor waits for this job
            doc->m_mailbox.post([self, id, outcome] {
                if (self)
                    self->onJobDone(id, outcome);
            });
    });
}

void ScenarioDocument::finishJob()
{
    m_running.reset();
    startNext();
    updateBusy();
}

void ScenarioDocument::onJobDone(quint64 id, const std::shared_ptr<Outcome>& outcome)
{
    if (!m_running || m_running->id != id || outcome->cancelled)
        return;  // superseded or dropped
    const PendingChange change = m_running->change;
    if (!outcome->change) {
        m_lastError = outcome->error;
        finishJob();
        emit errorOccurred(outcome->error);
        if (change.isLoad())
            emit loadFailed(change.value, outcome->error);
        else
            emit overrideRefused(change.key, change.value, outcome->error);
        return;
    }
    if (!change.isLoad() && m_running->baseSerial != m_serial) {
        // The document changed while this was placed (a placement edit): place it again on top.
        m_running.reset();
        m_queue.push_front(change);
        startNext();
        return;
    }
    const State before = m_state;
    m_lastNote = qs(outcome->change->note);
    adoptPrepared(std::move(*outcome->change));
    if (change.isLoad()) {
        const QString abs = QFileInfo(change.value).absoluteFilePath();
        if (m_path != abs) {
            m_path = abs;
            emit filePathChanged(m_path);
        }
        finishJob();
        emit scenarioChanged();
        setModified(false);
        emit loaded(abs);
        return;
    }
    finishJob();
    emit scenarioChanged();
    setModified(true);
    emit overrideApplied(change.key, change.value, before, m_state);
}

}  // namespace moex::session
