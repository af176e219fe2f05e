// ScenarioDocument: the scenario being explored — Scenario + its resolved Placement + file path +
// modified flag. Every change goes through here and is all-or-nothing: a file that does not load,
// an override that does not validate or a placement edit that breaks a rule leaves the document
// exactly as it was and says why (located FILE:LINE:COL messages for scenario text).
//
// Two ways to change the scenario: applyOverride / load do everything on the caller's thread
// (tests, screenshots, start-up); requestOverride / requestLoad (the window) re-read and place on
// a background thread and adopt the result on the document's thread when it is ready, so the UI
// never waits for a placement (a `search` takes seconds). Requests queue in order; a newer value
// of the key being placed supersedes it (the running job is cancelled) and a load supersedes
// everything. Any other change of the state while a job runs (a placement edit, undo) makes the
// job start again from the new state, so an adopted result never discards an edit.
#pragma once

#include <QObject>
#include <QString>
#include <QThreadPool>

#ifndef Q_MOC_RUN
#include "common/cancel.h"
#include "document_changes.h"
#include "mailbox.h"
#include "placement/placement.h"
#include "placement_edits.h"
#include "scenario/scenario.h"
#include "scenario/scenario_yaml.h"

#include <deque>
#include <functional>
#include <optional>
#endif

namespace moex::session {

class ScenarioDocument : public QObject {
    Q_OBJECT
public:
    using State = DocumentState;

    // A change waiting for (or in) the background thread.
    struct PendingChange {
        QString key;    // an override's key; empty for a load
        QString value;  // an override's value, or the file to load
        Overrides overrides;  // a load's
        [[nodiscard]] bool isLoad() const { return key.isEmpty(); }
    };

    explicit ScenarioDocument(QObject* parent = nullptr);
    ~ScenarioDocument() override;

    // Loading: false (and errorOccurred with the located message) when refused; the current
    // scenario is kept then. Overrides are KEY=VALUE as in moex-cli --set (tours use them).
    bool load(const QString& path, const Overrides& overrides = {});
    bool loadFromText(const QString& yaml, const QString& fileName);
    // Atomic saves. An edited placement is written as explicit slots.
    bool save();
    bool saveAs(const QString& path);
    // The scenario's YAML text with KEY=VALUE applied, re-validated (same keys as moex-cli --set).
    bool applyOverride(const QString& key, const QString& value);

    // Background versions (see the top of this file). The outcome arrives as signals: for an
    // override overrideApplied (then scenarioChanged) or errorOccurred + overrideRefused; for a load
    // loaded (then scenarioChanged) or errorOccurred + loadFailed. busyChanged brackets the work.
    void requestOverride(const QString& key, const QString& value);
    void requestLoad(const QString& path, const Overrides& overrides = {});
    // Drops every queued and running change (their results are never adopted).
    void cancelPending();
    [[nodiscard]] bool isBusy() const { return m_running.has_value(); }
    // The running change first, then the queued ones, in order.
    [[nodiscard]] std::vector<PendingChange> pendingChanges() const;
    // The companion change the last adopted override made ("" = none), e.g. redundant slots rounded.
    [[nodiscard]] QString lastNote() const { return m_lastNote; }

    // Placement edits (placement_edits.h): "" when applied, else the refusal (and editRefused is
    // emitted).
    QString moveExpert(MoeLayers layers, ExpertId expert, GpuId fromGpu, GpuId toGpu);
    QString replicateExpert(MoeLayers layers, ExpertId expert, GpuId toGpu);
    QString swapExperts(MoeLayers layers, ExpertId expertA, GpuId gpuA, ExpertId expertB, GpuId gpuB);
    QString removeReplica(MoeLayers layers, ExpertId expert, GpuId gpu);
    QString setGpuSpeed(GpuId gpu, double speed);

    [[nodiscard]] bool hasScenario() const { return m_loaded; }
    [[nodiscard]] const Scenario& scenario() const { return m_state.scenario; }
    [[nodiscard]] const Placement& placement() const { return m_state.placement; }
    [[nodiscard]] const State& state() const { return m_state; }
    void restoreState(const State& state);  // undo/redo; emits what changed
    [[nodiscard]] const MemoryRule& memoryRule() const { return m_memory; }
    [[nodiscard]] bool placementEdited() const { return m_state.placement_edited; }

    [[nodiscard]] QString filePath() const { return m_path; }
    [[nodiscard]] QString displayName() const;  // scenario name, else the file name, else "untitled"
    [[nodiscard]] bool isModified() const { return m_modified; }
    void setModified(bool modified);
    [[nodiscard]] QString lastError() const { return m_lastError; }
    [[nodiscard]] QString lastWarning() const { return m_lastWarning; }  // from the last save

    // The document's YAML as it would be saved (edited placement as explicit slots).
    [[nodiscard]] QString toYaml() const;
    // Copies the whole state (What-if "Duplicate as B"); the copy has no file and is unmodified
    // until it is edited.
    void copyFrom(const ScenarioDocument& other);
    // Back to no scenario (B closed when A is replaced); emits scenarioChanged.
    void close();

signals:
    void scenarioChanged();   // new scenario: rebuild views and the simulator
    void placementChanged();  // placement or GPU speeds changed: same scenario shape
    void modifiedChanged(bool modified);
    void filePathChanged(const QString& path);
    void errorOccurred(const QString& message);
    void editRefused(const QString& message);
    void busyChanged(bool busy);
    void pendingChanged();  // pendingChanges() may say something else (a change queued, merged or done)
    // A background override was adopted: `before` and `after` are the states for its undo step.
    void overrideApplied(const QString& key, const QString& value, const moex::session::DocumentState& before,
                         const moex::session::DocumentState& after);
    void overrideRefused(const QString& key, const QString& value, const QString& message);
    void loaded(const QString& path);
    void loadFailed(const QString& path, const QString& message);

private:
    struct Running {
        PendingChange change;
        CancelSource cancel;
        quint64 id = 0;
        quint64 baseSerial = 0;  // m_serial when it started
    };
    struct Outcome;
    void startNext();
    void onJobDone(quint64 id, const std::shared_ptr<Outcome>& outcome);
    void finishJob();
    // Adopts a prepared change as the new state (a new scenario revision).
    void adoptPrepared(PreparedChange&& change);
    void touched() { ++m_serial; }
    void updateBusy();  // pendingChanged, and busyChanged when isBusy() differs from what was last said

    bool adopt(Scenario s, const QString& path, bool keepPath);
    bool fail(const QString& message);
    QString refuse(const std::string& reason);
    void editedPlacement();
    // One placement edit: refused without a scenario or when `edit` returns a reason (and then
    // leaves the placement as it was), else marks the document edited.
    QString editPlacement(const std::function<std::string(Placement&)>& edit);
    [[nodiscard]] Scenario scenarioForSave(std::string* warning) const;

    State m_state;
    MemoryRule m_memory;
    QString m_path;
    QString m_lastError;
    QString m_lastWarning;
    bool m_modified = false;
    bool m_loaded = false;
    quint64 m_nextRevision = 1;
    quint64 m_serial = 0;  // every change of m_state
    quint64 m_nextJob = 1;
    bool m_busySignalled = false;
    QString m_lastNote;
    std::optional<Running> m_running;
    std::deque<PendingChange> m_queue;
    Mailbox m_mailbox;   // the jobs' outcomes back to this thread
    QThreadPool m_pool;  // one thread: placements of this document, one at a time
};

}  // namespace moex::session
