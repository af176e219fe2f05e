// ScenarioDocument: loading, refused overrides, placement edits with their rules, atomic saves.
#include "scenario_document.h"

#include "scenario/scenario_yaml.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>

using moex::session::ScenarioDocument;
using moex::ExpertId;
using moex::GpuId;
using moex::MoeLayerId;
using moex::MoeLayers;

namespace {

QString sample(const char* name)
{
    return QStringLiteral(MOEX_SOURCE_DIR "/samples/scenarios/") + QLatin1String(name);
}

int replicas(const moex::Placement& p, int layer, int expert)
{
    int n = 0;
    for (const auto& g : p.layers[static_cast<std::size_t>(layer)].gpu_slots)
        n += static_cast<int>(std::count(g.begin(), g.end(), moex::ExpertId(expert)));
    return n;
}

bool holds(const moex::Placement& p, int layer, int gpu, int expert)
{
    const auto& g = p.layers[static_cast<std::size_t>(layer)].gpu_slots[static_cast<std::size_t>(gpu)];
    return std::find(g.begin(), g.end(), moex::ExpertId(expert)) != g.end();
}

// An expert with exactly one replica in the layer, and its GPU.
std::pair<int, int> singleReplica(const moex::Placement& p, int layer)
{
    const auto& l = p.layers[static_cast<std::size_t>(layer)];
    for (int g = 0; g < l.numGpus(); ++g)
        for (auto e : l.gpu_slots[static_cast<std::size_t>(g)])
            if (replicas(p, layer, e.value) == 1)
                return {e.value, g};
    return {-1, -1};
}

}  // namespace

class TestScenarioDocument : public QObject {
    Q_OBJECT
private slots:
    // The background paths: nothing changes on the caller's thread; the result is adopted in one
    // piece with its undo states; a refusal leaves the scenario and says so; a newer value of the
    // key supersedes the running job; cancelPending drops everything.
    void backgroundLoadAndOverride()
    {
        ScenarioDocument doc;
        QSignalSpy loaded(&doc, &ScenarioDocument::loaded);
        QSignalSpy busy(&doc, &ScenarioDocument::busyChanged);
        doc.requestLoad(sample("mixtral-8x7b-decode-hgx-h100.yaml"));
        QVERIFY(!doc.hasScenario());  // read and placed on the document's thread pool
        QVERIFY(doc.isBusy());
        QTRY_COMPARE(loaded.count(), 1);
        QVERIFY(doc.hasScenario());
        QVERIFY(!doc.isBusy());
        QCOMPARE(busy.count(), 2);
        QVERIFY(!doc.isModified());
        const int tokens = doc.scenario().workload.tokens_per_gpu;

        QSignalSpy applied(&doc, &ScenarioDocument::overrideApplied);
        doc.requestOverride(QStringLiteral("workload.tokens_per_gpu"), QString::number(tokens / 2));
        QCOMPARE(doc.scenario().workload.tokens_per_gpu, tokens);
        QTRY_COMPARE(applied.count(), 1);
        QCOMPARE(doc.scenario().workload.tokens_per_gpu, tokens / 2);
        const auto before = applied.first().at(2).value<moex::session::DocumentState>();
        QCOMPARE(before.scenario.workload.tokens_per_gpu, tokens);
        QVERIFY(doc.isModified());

        QSignalSpy refused(&doc, &ScenarioDocument::overrideRefused);
        doc.requestOverride(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("-3"));
        QTRY_COMPARE(refused.count(), 1);
        QVERIFY(refused.first().at(2).toString().contains(QStringLiteral("tokens_per_gpu")));
        QCOMPARE(doc.scenario().workload.tokens_per_gpu, tokens / 2);

        // Three values of one key in a row: one result, the last value.
        applied.clear();
        for (int v : {3, 5, 7})
            doc.requestOverride(QStringLiteral("workload.routing.seed"), QString::number(v));
        QTRY_VERIFY(!doc.isBusy());
        QVERIFY(applied.count() >= 1);
        QCOMPARE(static_cast<int>(doc.scenario().workload.routing.seed), 7);

        applied.clear();
        doc.requestOverride(QStringLiteral("workload.routing.seed"), QStringLiteral("11"));
        doc.cancelPending();
        QVERIFY(!doc.isBusy());
        QTest::qWait(300);  // a dropped job must never be adopted later
        QCOMPARE(applied.count(), 0);
        QCOMPARE(static_cast<int>(doc.scenario().workload.routing.seed), 7);

        QSignalSpy failed(&doc, &ScenarioDocument::loadFailed);
        doc.requestLoad(QStringLiteral("/nonexistent/scenario.yaml"));
        QTRY_COMPARE(failed.count(), 1);
        QVERIFY(doc.hasScenario());  // the previous scenario stays
        QCOMPARE(static_cast<int>(doc.scenario().workload.routing.seed), 7);
    }

    void loadsSample()
    {
        ScenarioDocument doc;
        QSignalSpy changed(&doc, &ScenarioDocument::scenarioChanged);
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        QCOMPARE(changed.count(), 1);
        QVERIFY(doc.hasScenario());
        QCOMPARE(doc.placement().numGpus(), 72);
        QCOMPARE(doc.placement().numLayers(), doc.scenario().model.numMoeLayers());
        QVERIFY(!doc.isModified());
        QCOMPARE(doc.displayName(), QStringLiteral("deepseek-r1-decode-nvl72"));
    }

    void badFileKeepsScenario()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        const auto before = doc.placement();
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("bad.yaml"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("name: bad\nmodel: ../models/deepseek-r1.yaml\ntopology: {builtin: gb200-nvl72}\nworkload: {tokens_per_gpu: many}\n");
        f.close();
        QSignalSpy errors(&doc, &ScenarioDocument::errorOccurred);
        QVERIFY(!doc.load(bad));
        QCOMPARE(errors.count(), 1);
        const QString msg = errors.first().first().toString();
        QVERIFY2(msg.contains(QStringLiteral("bad.yaml:")), qPrintable(msg));
        QVERIFY2(msg.contains(QStringLiteral("error")), qPrintable(msg));
        QCOMPARE(doc.displayName(), QStringLiteral("deepseek-r1-decode-nvl72"));
        QVERIFY(doc.placement() == before);
        QVERIFY(!doc.load(dir.filePath(QStringLiteral("missing.yaml"))));
        QCOMPARE(doc.displayName(), QStringLiteral("deepseek-r1-decode-nvl72"));
    }

    void overrideAppliesAndRefusalKeepsScenario()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        QVERIFY(doc.applyOverride(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("64")));
        QCOMPARE(doc.scenario().workload.tokens_per_gpu, 64);
        QVERIFY(doc.isModified());
        QSignalSpy errors(&doc, &ScenarioDocument::errorOccurred);
        QSignalSpy changed(&doc, &ScenarioDocument::scenarioChanged);
        QVERIFY(!doc.applyOverride(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("lots")));
        QCOMPARE(errors.count(), 1);
        QVERIFY2(errors.first().first().toString().contains(QStringLiteral("tokens_per_gpu")),
                 qPrintable(errors.first().first().toString()));
        QVERIFY(!doc.applyOverride(QStringLiteral("workload.tokens_per_gpuu"), QStringLiteral("3")));
        QCOMPARE(changed.count(), 0);
        QCOMPARE(doc.scenario().workload.tokens_per_gpu, 64);
    }

    void overrideKeepsHandEditsUnlessPlacementChanges()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        auto [e, g] = singleReplica(doc.placement(), 0);
        QVERIFY(e >= 0);
        const int to = (g + 1) % 72;
        QVERIFY(doc.moveExpert(MoeLayers::only(MoeLayerId(0)), ExpertId(e), GpuId(g), GpuId(to)).isEmpty());
        QVERIFY(doc.applyOverride(QStringLiteral("workload.context_tokens"), QStringLiteral("8192")));
        QVERIFY(doc.placementEdited());
        QVERIFY(holds(doc.placement(), 0, to, e));
        QVERIFY(doc.applyOverride(QStringLiteral("placement.strategy"), QStringLiteral("round-robin")));
        QVERIFY(!doc.placementEdited());
        QCOMPARE(QString::fromStdString(doc.scenario().placement.strategy), QStringLiteral("round-robin"));
    }

    void moveReplicateSwapAndTheirRules()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        QSignalSpy placementChanged(&doc, &ScenarioDocument::placementChanged);
        QSignalSpy refused(&doc, &ScenarioDocument::editRefused);
        const int layer = 3;
        auto [e, g] = singleReplica(doc.placement(), layer);
        QVERIFY(e >= 0);
        const int to = (g + 5) % 72;

        // Move.
        QVERIFY(doc.moveExpert(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(g), GpuId(to)).isEmpty());
        QVERIFY(holds(doc.placement(), layer, to, e));
        QVERIFY(!holds(doc.placement(), layer, g, e));
        QCOMPARE(placementChanged.count(), 1);
        QVERIFY(doc.isModified());

        // Moving from a GPU that does not hold it is refused, and the refusal names the layer asked
        // for; asked for every layer, it says that no layer has it there.
        const QString notThere = doc.moveExpert(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(g), GpuId(to));
        QCOMPARE(notThere, QStringLiteral("GPU %1 holds no replica of expert %2 in MoE layer %3").arg(g).arg(e).arg(layer));
        int without = -1;  // a GPU that holds e in no layer
        for (int gg = 0; gg < 72 && without < 0; ++gg) {
            bool any = false;
            for (int l = 0; l < doc.placement().numLayers(); ++l)
                any = any || holds(doc.placement(), l, gg, e);
            if (!any)
                without = gg;
        }
        QVERIFY(without >= 0);
        const auto beforeAll = doc.placement();
        const QString nowhere = doc.moveExpert(MoeLayers::all(), ExpertId(e), GpuId(without), GpuId((without + 1) % 72));
        QCOMPARE(nowhere, QStringLiteral("GPU %1 holds no replica of expert %2 in any layer").arg(without).arg(e));
        QVERIFY(beforeAll == doc.placement());
        QCOMPARE(doc.moveExpert(MoeLayers::only(MoeLayerId(99)), ExpertId(e), GpuId(g), GpuId(to)),
                 QStringLiteral("MoE layer 99 does not exist (0..%1)").arg(doc.placement().numLayers() - 1));
        QCOMPARE(doc.moveExpert(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(-1), GpuId(to)),
                 QStringLiteral("GPU -1 does not exist (0..71)"));

        // Replicate, then a duplicate replica on the same GPU is refused.
        QVERIFY(doc.replicateExpert(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(g)).isEmpty());
        QCOMPARE(replicas(doc.placement(), layer, e), 2);
        const auto beforeDup = doc.placement();
        const QString dup = doc.replicateExpert(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(g));
        QVERIFY2(dup.contains(QStringLiteral("already holds")), qPrintable(dup));
        QVERIFY(beforeDup == doc.placement());
        // Moving a replica onto a GPU that has one is refused too.
        QVERIFY(!doc.moveExpert(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(g), GpuId(to)).isEmpty());

        // Remove one replica; removing the last is refused.
        QVERIFY(doc.removeReplica(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(g)).isEmpty());
        QCOMPARE(replicas(doc.placement(), layer, e), 1);
        const QString last = doc.removeReplica(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(to));
        QVERIFY2(last.contains(QStringLiteral("at least one slot")), qPrintable(last));
        QCOMPARE(replicas(doc.placement(), layer, e), 1);

        // Swap with an expert on another GPU.
        const auto& gpuSlots = doc.placement().layers[layer].gpu_slots;
        int other = -1, og = -1;
        for (int gg = 0; gg < 72 && other < 0; ++gg)
            for (auto x : gpuSlots[static_cast<std::size_t>(gg)])
                if (gg != to && !holds(doc.placement(), layer, to, x.value) && !holds(doc.placement(), layer, gg, e)) {
                    other = x.value;
                    og = gg;
                    break;
                }
        QVERIFY(other >= 0);
        QVERIFY(doc.swapExperts(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(to), ExpertId(other), GpuId(og)).isEmpty());
        QVERIFY(holds(doc.placement(), layer, og, e));
        QVERIFY(holds(doc.placement(), layer, to, other));
        QVERIFY(!doc.swapExperts(MoeLayers::only(MoeLayerId(layer)), ExpertId(e), GpuId(og), ExpertId(other), GpuId(og)).isEmpty());  // same GPU
        QVERIFY(refused.count() >= 4);
        QVERIFY(moex::checkPlacement(doc.placement(), doc.scenario().model.routed_experts, 72).empty());
    }

    void allLayersMove()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("mixtral-8x7b-decode-hgx-h100.yaml")));
        const auto& p = doc.placement();
        // Mixtral: 8 experts on 8 GPUs; find expert 0's GPU in layer 0.
        int g0 = -1;
        for (int g = 0; g < p.numGpus(); ++g)
            if (holds(p, 0, g, 0))
                g0 = g;
        QVERIFY(g0 >= 0);
        const int to = (g0 + 1) % p.numGpus();
        QVERIFY(doc.moveExpert(MoeLayers::all(), ExpertId(0), GpuId(g0), GpuId(to)).isEmpty());
        int moved = 0;
        for (int l = 0; l < doc.placement().numLayers(); ++l)
            moved += holds(doc.placement(), l, to, 0) ? 1 : 0;
        QVERIFY(moved > 0);
    }

    void memoryRuleRefusesOverfullGpu()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("mixtral-8x7b-decode-hgx-h100.yaml")));
        const long long limit = doc.memoryRule().maxSlotsPerGpu();
        QVERIFY(limit > 0);
        // Replicating every expert on GPU 0 in every layer eventually has to stop at the limit.
        QString refusal;
        for (int e = 0; e < doc.scenario().model.routed_experts && refusal.isEmpty(); ++e) {
            const auto before = doc.placement();
            refusal = doc.replicateExpert(MoeLayers::all(), ExpertId(e), GpuId(0));
            if (refusal.contains(QStringLiteral("already holds")))
                refusal.clear();
            if (!refusal.isEmpty())
                QVERIFY(before == doc.placement());
        }
        QVERIFY(moex::session::slotsOnGpu(doc.placement(), GpuId(0)) <= limit);
        if (!refusal.isEmpty())
            QVERIFY2(refusal.contains(QStringLiteral("memory")), qPrintable(refusal));
    }

    void gpuSpeed()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        QVERIFY(doc.setGpuSpeed(GpuId(17), 0.8).isEmpty());
        QCOMPARE(doc.scenario().speeds.of(17), 0.8);
        QVERIFY(!doc.setGpuSpeed(GpuId(17), 0.0).isEmpty());
        QVERIFY(!doc.setGpuSpeed(GpuId(99), 0.9).isEmpty());
        QCOMPARE(doc.scenario().speeds.of(17), 0.8);
    }

    void undoStateRestoresExactly()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        const ScenarioDocument::State before = doc.state();
        auto [e, g] = singleReplica(doc.placement(), 0);
        QVERIFY(doc.moveExpert(MoeLayers::only(MoeLayerId(0)), ExpertId(e), GpuId(g), GpuId((g + 1) % 72)).isEmpty());
        QVERIFY(doc.setGpuSpeed(GpuId(3), 0.7).isEmpty());
        QSignalSpy scen(&doc, &ScenarioDocument::scenarioChanged);
        doc.restoreState(before);
        QCOMPARE(scen.count(), 0);  // same scenario: a placement update, no rebuild
        QVERIFY(doc.placement() == before.placement);
        QCOMPARE(doc.scenario().speeds.of(3), 1.0);
        QVERIFY(!doc.placementEdited());
    }

    void saveLoadRoundTripOfEditedPlacement()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        auto [e, g] = singleReplica(doc.placement(), 5);
        QVERIFY(doc.moveExpert(MoeLayers::only(MoeLayerId(5)), ExpertId(e), GpuId(g), GpuId((g + 7) % 72)).isEmpty());
        QVERIFY(doc.setGpuSpeed(GpuId(11), 0.85).isEmpty());
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("edited.yaml"));
        QVERIFY2(doc.saveAs(path), qPrintable(doc.lastError()));
        QVERIFY(!doc.isModified());
        QCOMPARE(doc.filePath(), QFileInfo(path).absoluteFilePath());

        ScenarioDocument back;
        QVERIFY2(back.load(path), qPrintable(back.lastError()));
        QVERIFY(back.placement() == doc.placement());
        QCOMPARE(back.scenario().speeds.of(11), 0.85);
        QCOMPARE(back.scenario().model.name, doc.scenario().model.name);

        // An unedited scenario saves its strategy, not slots.
        ScenarioDocument plain;
        QVERIFY(plain.load(sample("deepseek-r1-decode-nvl72.yaml")));
        QVERIFY(plain.toYaml().contains(QStringLiteral("eplb")));
        QVERIFY(!plain.toYaml().contains(QStringLiteral("explicit")));
    }

    void gemEditsSaveLoadable()
    {
        // gem gives every layer its own replica shares, which a scenario file cannot hold: the
        // save must still load back (default split) and say so.
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72-slow-gpus.yaml")));
        auto [e, g] = singleReplica(doc.placement(), 0);
        QVERIFY(e >= 0);
        QVERIFY(doc.moveExpert(MoeLayers::only(MoeLayerId(0)), ExpertId(e), GpuId(g), GpuId((g + 1) % 72)).isEmpty());
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("gem-edited.yaml"));
        QVERIFY2(doc.saveAs(path), qPrintable(doc.lastError()));
        ScenarioDocument back;
        QVERIFY2(back.load(path), qPrintable(back.lastError()));
        for (int l = 0; l < back.placement().numLayers(); ++l)
            QCOMPARE(back.placement().layers[l].gpu_slots, doc.placement().layers[l].gpu_slots);
    }

    void saveIsAtomicAndFailureKeepsState()
    {
        ScenarioDocument doc;
        QVERIFY(doc.load(sample("deepseek-r1-decode-nvl72.yaml")));
        QVERIFY(doc.applyOverride(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("96")));
        QSignalSpy errors(&doc, &ScenarioDocument::errorOccurred);
        QVERIFY(!doc.saveAs(QStringLiteral("/nonexistent-dir/x/y.yaml")));
        QCOMPARE(errors.count(), 1);
        QVERIFY(doc.isModified());
    }
};

QTEST_GUILESS_MAIN(TestScenarioDocument)
#include "tst_scenario_document.moc"
