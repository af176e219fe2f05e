#include "undo_commands.h"

#include <QDateTime>
#include <QUndoStack>

namespace moex::app {

namespace {

QString layerText(int layer)
{
    return layer < 0 ? QObject::tr("all layers") : QObject::tr("layer %1").arg(layer);
}

}  // namespace

DocumentEditCommand::DocumentEditCommand(session::ScenarioDocument* doc, const QString& text,
                                         std::function<QString()> apply)
    : m_doc(doc), m_apply(std::move(apply))
{
    setText(text);
}

DocumentEditCommand::DocumentEditCommand(session::ScenarioDocument* doc, const QString& text,
                                         session::ScenarioDocument::State before, session::ScenarioDocument::State after)
    : m_doc(doc), m_before(std::move(before)), m_after(std::move(after)), m_done(true), m_skipRedo(true)
{
    setText(text);
}

QString DocumentEditCommand::apply()
{
    m_before = m_doc->state();
    m_refusal = m_apply();
    if (m_refusal.isEmpty()) {
        m_after = m_doc->state();
        m_done = true;
        m_skipRedo = true;
    }
    return m_refusal;
}

void DocumentEditCommand::redo()
{
    if (m_skipRedo) {
        m_skipRedo = false;  // pushEdit applied it already
        return;
    }
    if (m_done) {
        m_doc->restoreState(m_after);
        return;
    }
    if (!apply().isEmpty())
        setObsolete(true);
    m_skipRedo = false;
}

QString pushEdit(QUndoStack* stack, DocumentEditCommand* cmd)
{
    const QString refusal = cmd->apply();
    if (!refusal.isEmpty()) {
        delete cmd;
        return refusal;
    }
    stack->push(cmd);
    return {};
}

void DocumentEditCommand::undo()
{
    if (m_done)
        m_doc->restoreState(m_before);
}

MoveExpertCommand::MoveExpertCommand(session::ScenarioDocument* doc, int layer, int expert, int fromGpu, int toGpu)
    : DocumentEditCommand(doc,
                          QObject::tr("Move expert %1 from GPU %2 to GPU %3 (%4)")
                              .arg(expert).arg(fromGpu).arg(toGpu).arg(layerText(layer)),
                          [=] { return doc->moveExpert(layer, expert, fromGpu, toGpu); })
{
}

ReplicateExpertCommand::ReplicateExpertCommand(session::ScenarioDocument* doc, int layer, int expert, int toGpu)
    : DocumentEditCommand(doc,
                          QObject::tr("Replicate expert %1 on GPU %2 (%3)").arg(expert).arg(toGpu).arg(layerText(layer)),
                          [=] { return doc->replicateExpert(layer, expert, toGpu); })
{
}

SwapExpertsCommand::SwapExpertsCommand(session::ScenarioDocument* doc, int layer, int expertA, int gpuA, int expertB,
                                       int gpuB)
    : DocumentEditCommand(doc,
                          QObject::tr("Swap expert %1 (GPU %2) with expert %3 (GPU %4) (%5)")
                              .arg(expertA).arg(gpuA).arg(expertB).arg(gpuB).arg(layerText(layer)),
                          [=] { return doc->swapExperts(layer, expertA, gpuA, expertB, gpuB); })
{
}

RemoveReplicaCommand::RemoveReplicaCommand(session::ScenarioDocument* doc, int layer, int expert, int gpu)
    : DocumentEditCommand(doc,
                          QObject::tr("Remove replica of expert %1 from GPU %2 (%3)").arg(expert).arg(gpu).arg(layerText(layer)),
                          [=] { return doc->removeReplica(layer, expert, gpu); })
{
}

GpuSpeedCommand::GpuSpeedCommand(session::ScenarioDocument* doc, int gpu, double speed)
    : DocumentEditCommand(doc, QObject::tr("Set GPU %1 speed to %2").arg(gpu).arg(speed, 0, 'g', 3),
                          [=] { return doc->setGpuSpeed(gpu, speed); })
{
}

OverrideCommand::OverrideCommand(session::ScenarioDocument* doc, const QString& key, const QString& value,
                                 session::ScenarioDocument::State before, session::ScenarioDocument::State after)
    : DocumentEditCommand(doc, QObject::tr("Set %1 = %2").arg(key, value), std::move(before), std::move(after)),
      m_key(key), m_at(QDateTime::currentMSecsSinceEpoch())
{
}

bool OverrideCommand::mergeWith(const QUndoCommand* other)
{
    const auto* o = dynamic_cast<const OverrideCommand*>(other);
    if (o == nullptr || o->m_doc != m_doc || o->m_key != m_key || !o->m_done || !m_done || o->m_at - m_at > kMergeMs)
        return false;
    m_after = o->m_after;
    m_at = o->m_at;
    setText(o->text());
    return true;
}

}  // namespace moex::app
