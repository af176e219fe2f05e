// ScenarioDocument: the scenario being explored — Scenario + its resolved Placement + file path +
// modified flag. Every change goes through here and is all-or-nothing: a file that does not load,
// an override that does not validate or a placement edit that breaks a rule leaves the document
// exactly as it was and says why (located FILE:LINE:COL messages for scenario text).
#pragma once

#include <QObject>
#include <QString>

#ifndef Q_MOC_RUN
#include "placement/placement.h"
#include "placement_edits.h"
#include "scenario/scenario.h"
#include "scenario/scenario_yaml.h"

#include <functional>
#endif

namespace moex::session {

class ScenarioDocument : public QObject {
    Q_OBJECT
public:
    // Everything an undo step needs to put the document back exactly.
    struct State {
        Scenario scenario;          // placement.explicit_slots holds hand edits once there are any
        Placement placement;        // what the simulator runs
        PlacementSpec base_spec;    // the placement spec before hand edits (strategy, slots)
        bool placement_edited = false;
        quint64 scenario_revision = 0;  // changes when a rebuild is needed (not for placement/speed edits)
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

    // Placement edits: "" when applied, else the refusal (and editRefused is emitted). layer -1:
    // every MoE layer where the edit applies.
    QString moveExpert(int layer, int expert, int fromGpu, int toGpu);
    QString replicateExpert(int layer, int expert, int toGpu);
    QString swapExperts(int layer, int expertA, int gpuA, int expertB, int gpuB);
    QString removeReplica(int layer, int expert, int gpu);
    QString setGpuSpeed(int gpu, double speed);

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
    // Copies the whole state (What-if "Duplicate as B"); the copy has no file and is modified.
    void copyFrom(const ScenarioDocument& other);

signals:
    void scenarioChanged();   // new scenario: rebuild views and the simulator
    void placementChanged();  // placement or GPU speeds changed: same scenario shape
    void modifiedChanged(bool modified);
    void filePathChanged(const QString& path);
    void errorOccurred(const QString& message);
    void editRefused(const QString& message);

private:
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
};

}  // namespace moex::session
