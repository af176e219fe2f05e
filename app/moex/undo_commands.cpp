#include "undo_commands.h"

#include <QDateTime>
#include <QUndoStack>

namespace moex::app {

namespace {

QString layerText(MoeLayers layers)
{
    return layers.isAll() ? QObject::tr("all layers") : QObject::tr("layer %1").arg(layers.layer().value);
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

MoveExpertCommand::MoveExpertCommand(session::ScenarioDocument* doc, MoeLayers layers, ExpertId expert,
                                     GpuId fromGpu, GpuId toGpu)
    : DocumentEditCommand(doc,
                          QObject::tr("Move expert %1 from GPU %2 to GPU %3 (%4)")
                              .arg(expert.value).arg(fromGpu.value).arg(toGpu.value).arg(layerText(layers)),
                          [=] { return doc->moveExpert(layers, expert, fromGpu, toGpu); })
{
}

ReplicateExpertCommand::ReplicateExpertCommand(session::ScenarioDocument* doc, MoeLayers layers,
                                               ExpertId expert, GpuId toGpu)
    : DocumentEditCommand(doc,
                          QObject::tr("Replicate expert %1 on GPU %2 (%3)")
                              .arg(expert.value).arg(toGpu.value).arg(layerText(layers)),
                          [=] { return doc->replicateExpert(layers, expert, toGpu); })
{
}

SwapExpertsCommand::SwapExpertsCommand(session::ScenarioDocument* doc, MoeLayers layers, ExpertId expertA,
                                       GpuId gpuA, ExpertId expertB, GpuId gpuB)
    : DocumentEditCommand(doc,
                          QObject::tr("Swap expert %1 (GPU %2) with expert %3 (GPU %4) (%5)")
                              .arg(expertA.value).arg(gpuA.value).arg(expertB.value).arg(gpuB.value).arg(layerText(layers)),
                          [=] { return doc->swapExperts(layers, expertA, gpuA, expertB, gpuB); })
{
}

RemoveReplicaCommand::RemoveReplicaCommand(session::ScenarioDocument* doc, MoeLayers layers, ExpertId expert,
                                           GpuId gpu)
    : DocumentEditCommand(doc,
                          QObject::tr("Remove replica of expert %1 from GPU %2 (%3)")
                              .arg(expert.value).arg(gpu.value).arg(layerText(layers)),
                          [=] { return doc->removeReplica(layers, expert, gpu); })
{
}

GpuSpeedCommand::GpuSpeedCommand(session::ScenarioDocument* doc, GpuId gpu, double speed)
    : DocumentEditCommand(doc, QObject::tr("Set GPU %1 speed to %2").arg(gpu.value).arg(speed, 0, 'g', 3),
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
