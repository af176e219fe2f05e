// Undo commands for every edit of a ScenarioDocument. apply() calls the document's edit method
// before the command is pushed (pushEdit), so a refused edit never reaches the stack and never
// discards the redo history; later redo()/undo() put back the exact states after and before, so
// the numbers after an undo equal the originals.
#pragma once

#include <QString>
#include <QUndoCommand>

#include <functional>

#include "scenario_document.h"

namespace moex::app {

class DocumentEditCommand : public QUndoCommand {
public:
    // `apply` performs the edit and returns "" or the refusal.
    DocumentEditCommand(session::ScenarioDocument* doc, const QString& text, std::function<QString()> apply);
    // An edit the document has already made (a background override): the states before and after.
    DocumentEditCommand(session::ScenarioDocument* doc, const QString& text, session::ScenarioDocument::State before,
                        session::ScenarioDocument::State after);
    // Performs the edit now: "" when applied (the next redo() is then a no-op), else the refusal.
    QString apply();
    void redo() override;
    void undo() override;
    [[nodiscard]] QString refusal() const { return m_refusal; }

protected:
    session::ScenarioDocument* m_doc;
    std::function<QString()> m_apply;
    session::ScenarioDocument::State m_before;
    session::ScenarioDocument::State m_after;
    bool m_done = false;
    bool m_skipRedo = false;
    QString m_refusal;
};

// Applies `cmd` and pushes it when the document accepted it; deletes it when refused (the
// document has already said why). Returns the refusal ("" = pushed).
QString pushEdit(QUndoStack* stack, DocumentEditCommand* cmd);

class MoveExpertCommand : public DocumentEditCommand {
public:
    MoveExpertCommand(session::ScenarioDocument* doc, MoeLayers layers, ExpertId expert, GpuId fromGpu,
                      GpuId toGpu);
};

class ReplicateExpertCommand : public DocumentEditCommand {
public:
    ReplicateExpertCommand(session::ScenarioDocument* doc, MoeLayers layers, ExpertId expert, GpuId toGpu);
};

class SwapExpertsCommand : public DocumentEditCommand {
public:
    SwapExpertsCommand(session::ScenarioDocument* doc, MoeLayers layers, ExpertId expertA, GpuId gpuA,
                       ExpertId expertB, GpuId gpuB);
};

class RemoveReplicaCommand : public DocumentEditCommand {
public:
    RemoveReplicaCommand(session::ScenarioDocument* doc, MoeLayers layers, ExpertId expert, GpuId gpu);
};

class GpuSpeedCommand : public DocumentEditCommand {
public:
    GpuSpeedCommand(session::ScenarioDocument* doc, GpuId gpu, double speed);
};

class OverrideCommand : public DocumentEditCommand {
public:
    // A scenario change the document has made in the background (ScenarioDocument::overrideApplied).
    OverrideCommand(session::ScenarioDocument* doc, const QString& key, const QString& value,
                    session::ScenarioDocument::State before, session::ScenarioDocument::State after);
    // Consecutive changes of one key less than kMergeMs apart (spin-box steps, a held arrow) are
    // one undo step: undo goes back to the value before the first of them.
    static constexpr qint64 kMergeMs = 2000;
    [[nodiscard]] int id() const override { return 0x6d6f; }
    bool mergeWith(const QUndoCommand* other) override;

private:
    QString m_key;
    qint64 m_at = 0;  // when the last change merged into this one was made (ms since the epoch)
};

}  // namespace moex::app
