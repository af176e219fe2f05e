#include "scenario_document.h"

#include "mailbox.h"
#include "qt_text.h"

#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"

#include <QFileInfo>

#include <cmath>

namespace moex::session {

namespace {

bool uniformShares(const Placement& p)
{
    for (const auto& l : p.layers)
        if (l.shares != p.layers.front().shares)
            return false;
    return true;
}

}  // namespace

ScenarioDocument::ScenarioDocument(QObject* parent) : QObject(parent)
{
    m_pool.setMaxThreadCount(1);
}

ScenarioDocument::~ScenarioDocument()
{
    cancelPending();
    waitForJobs(m_pool);
}

bool ScenarioDocument::fail(const QString& message)
{
    m_lastError = message;
    emit errorOccurred(message);
    return false;
}

QString ScenarioDocument::refuse(const std::string& reason)
{
    const QString r = qs(reason);
    m_lastError = r;
    emit editRefused(r);
    return r;
}

void ScenarioDocument::adoptPrepared(PreparedChange&& change)
{
    change.state.scenario_revision = m_nextRevision++;
    m_state = std::move(change.state);
    m_memory = std::move(change.memory);
    m_loaded = true;
    m_lastError.clear();
    touched();
}

bool ScenarioDocument::adopt(Scenario s, const QString& path, bool keepPath)
{
    cancelPending();
    PreparedChange next;
    try {
        next = prepareScenario(std::move(s));
    } catch (const std::exception& e) {
        return fail(errorText(e));
    }
    adoptPrepared(std::move(next));
    if (!keepPath && m_path != path) {
        m_path = path;
        emit filePathChanged(m_path);
    }
    emit scenarioChanged();
    return true;
}

bool ScenarioDocument::load(const QString& path, const Overrides& overrides)
{
    Scenario s;
    try {
        s = loadScenarioFile(ss(path), overrides);
    } catch (const std::exception& e) {
        return fail(errorText(e));
    }
    const QString abs = QFileInfo(path).absoluteFilePath();
    if (!adopt(std::move(s), abs, false))
        return false;
    setModified(false);
    return true;
}

bool ScenarioDocument::loadFromText(const QString& yaml, const QString& fileName)
{
    Scenario s;
    try {
        s = loadScenarioText(ss(yaml), ss(fileName));
    } catch (const std::exception& e) {
        return fail(errorText(e));
    }
    if (!adopt(std::move(s), QString(), false))
        return false;
    setModified(false);
    return true;
}

Scenario ScenarioDocument::scenarioForSave(std::string* warning) const
{
    Scenario s = m_state.scenario;
    if (m_state.placement_edited) {
        Placement p = m_state.placement;
        // A scenario file holds one set of replica shares for every layer; per-layer shares (gem)
        // cannot be written, so such a placement is saved with the default replica split.
        if (!uniformShares(p)) {
            for (auto& l : p.layers)
                l.shares.clear();
            if (warning)
                *warning = "the replica shares differ between layers, which a scenario file cannot hold; "
                           "the file uses the default split (nearest replica first)";
        }
        s.placement.strategy = "explicit";
        s.placement.explicit_slots = std::move(p);
    }
    return s;
}

QString ScenarioDocument::toYaml() const
{
    if (!m_loaded)
        return {};
    return qs(scenarioToYaml(scenarioForSave(nullptr)));
}

bool ScenarioDocument::save()
{
    if (m_path.isEmpty())
        return fail(tr("This scenario has no file yet: use Save As."));
    return saveAs(m_path);
}

bool ScenarioDocument::saveAs(const QString& path)
{
    if (!m_loaded)
        return fail(tr("Nothing to save: no scenario is loaded."));
    std::string warning;
    const Scenario s = scenarioForSave(&warning);
    const QString abs = QFileInfo(path).absoluteFilePath();
    try {
        saveScenarioFile(s, ss(abs));
    } catch (const std::exception& e) {
        return fail(errorText(e));
    }
    m_lastWarning = qs(warning);
    m_state.scenario.file = ss(abs);
    if (m_path != abs) {
        m_path = abs;
        emit filePathChanged(m_path);
    }
    setModified(false);
    return true;
}

bool ScenarioDocument::applyOverride(const QString& key, const QString& value)
{
    if (!m_loaded)
        return fail(tr("No scenario is loaded."));
    PreparedChange next;
    try {
        next = prepareOverride(m_state, ss(key.trimmed()), ss(value));
    } catch (const std::exception& e) {
        return fail(errorText(e));
    }
    m_lastNote = qs(next.note);
    adoptPrepared(std::move(next));
    emit scenarioChanged();
    setModified(true);
    return true;
}

void ScenarioDocument::editedPlacement()
{
    m_state.placement_edited = true;
    m_state.scenario.placement.strategy = "explicit";
    m_state.scenario.placement.explicit_slots = m_state.placement;
    m_lastError.clear();
    touched();
    emit placementChanged();
    setModified(true);
}

QString ScenarioDocument::editPlacement(const std::function<std::string(Placement&)>& edit)
{
    if (!m_loaded)
        return refuse("no scenario is loaded");
    if (auto r = edit(m_state.placement); !r.empty())
        return refuse(r);
    editedPlacement();
    return {};
}

QString ScenarioDocument::moveExpert(MoeLayers layers, ExpertId expert, GpuId fromGpu, GpuId toGpu)
{
    return editPlacement([&](Placement& p) { return session::moveExpert(p, m_memory, layers, expert, fromGpu, toGpu); });
}

QString ScenarioDocument::replicateExpert(MoeLayers layers, ExpertId expert, GpuId toGpu)
{
    return editPlacement([&](Placement& p) { return session::replicateExpert(p, m_memory, layers, expert, toGpu); });
}

QString ScenarioDocument::swapExperts(MoeLayers layers, ExpertId expertA, GpuId gpuA, ExpertId expertB, GpuId gpuB)
{
    return editPlacement([&](Placement& p) { return session::swapExperts(p, layers, expertA, gpuA, expertB, gpuB); });
}

QString ScenarioDocument::removeReplica(MoeLayers layers, ExpertId expert, GpuId gpu)
{
    return editPlacement([&](Placement& p) { return session::removeReplica(p, layers, expert, gpu); });
}

QString ScenarioDocument::setGpuSpeed(GpuId gpu, double speed)
{
    if (!m_loaded)
        return refuse("no scenario is loaded");
    if (!gpu.valid() || gpu.value >= m_state.scenario.topology.numGpus())
        return refuse("GPU " + std::to_string(gpu.value) + " does not exist (0.."
                      + std::to_string(m_state.scenario.topology.numGpus() - 1) + ")");
    if (!std::isfinite(speed) || speed < 0.01 || speed > 10.0)
        return refuse("a GPU's speed factor must be between 0.01 and 10 (1 = nominal, slower < 1)");
    GpuSpeeds& speeds = m_state.scenario.speeds;
    if (speeds.of(gpu.value) == speed)
        return refuse("GPU " + std::to_string(gpu.value) + " already runs at that speed");
    if (speed == speeds.default_speed)
        speeds.per_gpu.erase(gpu.value);
    else
        speeds.per_gpu[gpu.value] = speed;
    m_lastError.clear();
    touched();
    emit placementChanged();
    setModified(true);
    return {};
}

void ScenarioDocument::restoreState(const State& state)
{
    cancelPending();  // an undo or redo drops what was still being placed
    const bool rebuild = !m_loaded || state.scenario_revision != m_state.scenario_revision;
    if (rebuild) {
        try {
            m_memory = memoryRuleOf(state.scenario);
        } catch (const std::exception& e) {
            fail(errorText(e));
            return;
        }
    }
    m_state = state;
    m_loaded = true;
    touched();
    if (rebuild)
        emit scenarioChanged();
    else
        emit placementChanged();
}

QString ScenarioDocument::displayName() const
{
    if (m_loaded && !m_state.scenario.name.empty())
        return qs(m_state.scenario.name);
    if (!m_path.isEmpty())
        return QFileInfo(m_path).completeBaseName();
    return tr("untitled");
}

void ScenarioDocument::setModified(bool modified)
{
    if (m_modified == modified)
        return;
    m_modified = modified;
    emit modifiedChanged(modified);
}

void ScenarioDocument::copyFrom(const ScenarioDocument& other)
{
    cancelPending();
    m_state = other.m_state;
    touched();
    m_state.scenario_revision = m_nextRevision++;
    m_memory = other.m_memory;
    m_loaded = other.m_loaded;
    m_lastError.clear();
    if (!m_path.isEmpty()) {
        m_path.clear();
        emit filePathChanged(m_path);
    }
    emit scenarioChanged();
    setModified(false);  // an exact copy: modified once it is edited
}

void ScenarioDocument::close()
{
    cancelPending();
    m_state = State{};
    m_memory = MemoryRule{};
    m_loaded = false;
    m_lastError.clear();
    touched();
    if (!m_path.isEmpty()) {
        m_path.clear();
        emit filePathChanged(m_path);
    }
    setModified(false);
    emit scenarioChanged();
}

}  // namespace moex::session
