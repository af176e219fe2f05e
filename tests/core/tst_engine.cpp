// The CPU engine (issue 15): the routers of each family, expert-parallel ranks that give the
// one-rank output bit for bit, measured metrics, and the run API. The layer against the NumPy
// reference is tst_engine_reference; number formats and kernels are tst_weight_formats and
// tst_engine_kernels.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "engine/ep_engine.h"
#include "engine/moe_layer.h"
#include "engine/quant_matrix.h"
#include "engine/row_kernels.h"
#include "placement/strategies.h"
#include "run/run_loop.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <fstream>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>
#endif

#include "engine_fixtures.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace moex;
using namespace moex::engine;
using moex::test::smallModel;
using moex::test::placementFor;
using moex::test::smallConfig;

class TestEngine : public QObject {
    Q_OBJECT
private slots:
    void routersFollowTheirFamily();
    void groupLimitedRoutingStaysInItsGroups();
    void ranksGiveTheOneRankOutput_data();
    void ranksGiveTheOneRankOutput();
    void metricsAreMeasuredAndConsistent();
    void sharedWeightsRunEveryLayerOnTheFirstOnes();
    void aFailingRankFailsTheStepNotTheProcess();
    void runApiSelectsTheBackend();
    void simSourceKeepsItsRoutingAcrossEdits();
    void workloadRoutingGivesTheScenarioLoads();
    void badEngineInputIsLocated();
};

void TestEngine::routersFollowTheirFamily()
{
    // One token routed by each family: four distinct experts, and weights that sum
    // to 1 (renormalised softmax, gpt-oss), to the top-k's share (no renormalisation), or to
    // routed_scaling_factor (sigmoid, renormalised then scaled).
    for (const char* fam : {"mixtral", "qwen-no-renorm", "gpt-oss", "deepseek"}) {
        const LayerShape s = layerShape(smallModel(fam), DType::fp32);
        const RouterWeights w = makeRouterWeights(s, 7, 1);
        std::vector<float> x(64);
        makeTokenHidden(7, 0, 3, 64, x.data());
        std::vector<int> ids(4);
        std::vector<float> wt(4);
        route(s, w, x.data(), 1, ids.data(), wt.data());
        QCOMPARE(std::set<int>(ids.begin(), ids.end()).size(), std::size_t{4});
        const std::string family = fam;
        // Top-k order is the weights' order, except for sigmoid: it selects on score + correction
        // bias and weighs with the unbiased score.
        for (int j = 1; j < 4 && family != "deepseek"; ++j)
            QVERIFY(wt[static_cast<std::size_t>(j - 1)] >= wt[static_cast<std::size_t>(j)]);
        const float sum = wt[0] + wt[1] + wt[2] + wt[3];
        if (family == "qwen-no-renorm")
            QVERIFY(sum < 0.999f);
        else if (family == "deepseek")
            QVERIFY(std::fabs(sum - 2.5f) < 1e-5f);
        else
            QVERIFY(std::fabs(sum - 1.0f) < 1e-6f);
    }
}

void TestEngine::groupLimitedRoutingStaysInItsGroups()
{
    const LayerShape s = layerShape(smallModel("deepseek"), DType::fp32);  // 4 groups of 4, 2 kept
    const RouterWeights w = makeRouterWeights(s, 7, 1);
    const int T = 200;
    std::vector<float> x(static_cast<std::size_t>(T) * 64);
    for (int t = 0; t < T; ++t)
        makeTokenHidden(7, 0, t, 64, x.data() + static_cast<std::size_t>(t) * 64);
    std::vector<int> ids(static_cast<std::size_t>(T) * 4);
    std::vector<float> wt(ids.size());
    route(s, w, x.data(), T, ids.data(), wt.data());
    std::set<int> groupsSeen;
    for (int t = 0; t < T; ++t) {
        std::set<int> groups;
        for (int j = 0; j < 4; ++j)
            groups.insert(ids[static_cast<std::size_t>(t * 4 + j)] / 4);
        QVERIFY2(groups.size() <= 2, qPrintable(QStringLiteral("token %1 uses %2 groups").arg(t).arg(groups.size())));
        groupsSeen.insert(groups.begin(), groups.end());
    }
    QCOMPARE(groupsSeen.size(), std::size_t{4});  // the limit is per token, not a fixed pair
}

void TestEngine::ranksGiveTheOneRankOutput_data()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("redundant");
    QTest::addColumn<bool>("viaOpenBlas");
    for (const char* fam : {"mixtral", "qwen-no-renorm", "qwen-next", "deepseek", "gpt-oss", "nemotron", "gemma"})
        for (DType t : {DType::fp32, DType::bf16, DType::fp8, DType::mxfp4})
            QTest::addRow("%s %s", fam, std::string(toString(t)).c_str())
                << QString::fromLatin1(fam) << static_cast<int>(t) << QStringLiteral("contiguous") << 0 << false;
    // Replicas: a token's expert may run on another rank's copy.
    QTest::newRow("deepseek fp8 eplb +8 replicas") << QStringLiteral("deepseek") << static_cast<int>(DType::fp8)
                                                   << QStringLiteral("eplb") << 8 << false;
    // OpenBLAS's sgemm (engine.gemm: openblas) gives each expert's batch the same result on any rank too.
    for (const char* fam : {"mixtral", "deepseek", "gpt-oss"})
        for (DType t : {DType::fp32, DType::bf16, DType::fp8})
            QTest::addRow("%s %s openblas", fam, std::string(toString(t)).c_str())
                << QString::fromLatin1(fam) << static_cast<int>(t) << QStringLiteral("contiguous") << 0 << true;
}

void TestEngine::ranksGiveTheOneRankOutput()
{
    QFETCH(QString, family);
    QFETCH(int, dtype);
    QFETCH(QString, strategy);
    QFETCH(int, redundant);
    QFETCH(bool, viaOpenBlas);
    if (viaOpenBlas && !openblas::library().loaded())
        QSKIP(qPrintable(QString::fromStdString(openblas::library().error)));
    const ModelSpec m = smallModel(family.toStdString());
    EngineConfig cfg = smallConfig(m);
    if (viaOpenBlas)
        cfg.gemm = openblas::GemmChoice::openblas;
    StepMetrics metrics;
    std::vector<float> one, many;
    EpEngine single(m, static_cast<DType>(dtype), placementFor(m, 1), cfg);
    const double c1 = single.step(2, metrics, &one);
    QVERIFY(std::isfinite(c1) && c1 != 0);
    for (int ranks : {2, 3, 4}) {
        if (strategy != QLatin1String("contiguous") && (m.routed_experts + redundant) % ranks != 0)
            continue;
        EpEngine ep(m, static_cast<DType>(dtype), placementFor(m, ranks, strategy.toStdString(), redundant), cfg);
        QCOMPARE(ep.ranks(), ranks);
        // auto: the measured choice, but never OpenBLAS where an expert has copies (its batch splits).
        QCOMPARE(ep.shape().openblas_from_tokens,
                 viaOpenBlas ? 1 : redundant > 0 ? 0 : openblas::fromTokens(openblas::GemmChoice::automatic, activeKernel(), ep.shape().format));
        const double c = ep.step(2, metrics, &many);
        QCOMPARE(c, c1);      // bit for bit
        QCOMPARE(many, one);  // every element
    }
    // Another step gives other hidden states, hence another checksum.
    QVERIFY(single.step(3, metrics) != c1);
}

void TestEngine::sharedWeightsRunEveryLayerOnTheFirstOnes()
{
    // eplb lays each layer out differently; with shared weights every layer takes the first one's
    // experts and layout, so ranks still agree, and each layer is the first layer's computation.
    const ModelSpec m = smallModel("deepseek");
    EngineConfig cfg = smallConfig(m);
    cfg.shared_weights = true;
    StepMetrics metrics;
    std::vector<float> one, many;
    EpEngine single(m, DType::bf16, placementFor(m, 1), cfg);
    const double c1 = single.step(1, metrics, &one);
    EpEngine four(m, DType::bf16, placementFor(m, 4, "eplb", 8), cfg);
    QCOMPARE(four.step(1, metrics, &many), c1);
    QCOMPARE(many, one);
    // Half the weights of own weights for two layers.
    cfg.shared_weights = false;
    EpEngine own(m, DType::bf16, placementFor(m, 4, "eplb", 8), cfg);
    QCOMPARE(four.weightBytes() * 2, own.weightBytes());
    QVERIFY(own.step(1, metrics) != c1);  // the second layer's own weights differ
}

// A rank or one of its expert workers that throws (std::bad_alloc at large --tokens ended the
// process with std::terminate, exit 134): step() throws that error, no rank is left waiting at a
// barrier, and the next step runs as if nothing had happened.
void TestEngine::aFailingRankFailsTheStepNotTheProcess()
{
    const ModelSpec m = smallModel("deepseek");
    EngineConfig cfg = smallConfig(m, 40);
    StepMetrics metrics;
    EpEngine clean(m, DType::bf16, placementFor(m, 4), cfg);
    const double expected = clean.step(5, metrics);
    std::atomic<int> failRank{-1};
    std::atomic<int> failWorker{0};
    std::atomic<bool> outOfMemory{false};
    cfg.before_experts = [&](int rank, int worker) {
        if (rank != failRank.load() || worker != failWorker.load())
            return;
        if (outOfMemory.load())
            throw std::bad_alloc();
        throw std::runtime_error("rank " + std::to_string(rank) + " failed");
    };
    EpEngine ep(m, DType::bf16, placementFor(m, 4), cfg);
    for (int rank : {0, 3, 1}) {
        failRank = rank;
        try {
            ep.step(5, metrics);
            QFAIL("the failing rank's error was lost");
        } catch (const std::runtime_error& e) {
            QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("rank %1 failed").arg(rank));
        }
    }
    outOfMemory = true;
    failRank = 2;
    QVERIFY_THROWS_EXCEPTION(std::bad_alloc, ep.step(5, metrics));
    failRank = -1;
    QCOMPARE(ep.step(5, metrics), expected);
    // A rank's second expert worker (its own thread where the machine has two cores for the rank).
    if (std::thread::hardware_concurrency() >= 2) {
        EngineConfig one = cfg;
        EpEngine single(m, DType::bf16, placementFor(m, 1), one);
        failRank = 0;
        failWorker = 1;
        QVERIFY_THROWS_EXCEPTION(std::bad_alloc, single.step(5, metrics));
        failRank = -1;
        QVERIFY(std::isfinite(single.step(5, metrics)));
    }
    // Every rank fails at once: one error, no deadlock.
    outOfMemory = false;
    cfg.before_experts = [](int rank, int) { throw std::runtime_error("all fail, rank " + std::to_string(rank)); };
    EpEngine all(m, DType::bf16, placementFor(m, 4), cfg);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, all.step(5, metrics));
}

void TestEngine::metricsAreMeasuredAndConsistent()
{
    const ModelSpec m = smallModel("deepseek");
    const int ranks = 4;
    EpEngine ep(m, DType::bf16, placementFor(m, ranks), smallConfig(m, 40));
    StepMetrics s;
    ep.step(0, s);
    QCOMPARE(s.source, std::string("cpu"));
    QCOMPARE(s.num_gpus, ranks);
    QCOMPARE(static_cast<int>(s.layers.size()), 2);
    std::int64_t tokens = 0;
    for (const auto& g : s.gpus)
        tokens += g.tokens;
    QCOMPARE(tokens, std::int64_t{40});
    for (const auto& l : s.layers) {
        // Every token chose k experts; ranks computed exactly those pairs (no replicas here).
        std::int64_t pairs = 0, computed = 0;
        for (auto v : l.expert_load)
            pairs += v;
        for (auto v : l.gpu_load)
            computed += v;
        QCOMPARE(pairs, std::int64_t{40 * 4});
        QCOMPARE(computed, pairs);
        // Contiguous placement: rank r holds experts 4r..4r+3, so its load is theirs.
        for (int r = 0; r < ranks; ++r) {
            std::int64_t mine = 0;
            for (int e = 4 * r; e < 4 * r + 4; ++e)
                mine += l.expert_load[static_cast<std::size_t>(e)];
            QCOMPARE(l.gpu_load[static_cast<std::size_t>(r)], mine);
        }
        QVERIFY(l.time_us > 0 && l.time_us >= l.compute_us);
    }
    // Traffic: rows between rank pairs, both ways, H floats each; the total is every routed pair twice.
    double bytes = 0;
    for (double b : s.traffic)
        bytes += b;
    QCOMPARE(bytes, 2.0 * 2 * 40 * 4 * 64 * 4);
    QVERIFY(s.summary.step_time_us > 0);
    QCOMPARE(s.summary.step_time_us, s.layers[0].time_us + s.layers[1].time_us);
    // The exchange (bench engine's a2a): every rank copied rows, within its dispatch and combine.
    const std::vector<double> exchange = ep.lastExchangeUs();
    QCOMPARE(static_cast<int>(exchange.size()), ranks);
    for (int r = 0; r < ranks; ++r) {
        const GpuMetrics& g = s.gpus[static_cast<std::size_t>(r)];
        QVERIFY2(exchange[static_cast<std::size_t>(r)] > 0, qPrintable(QString::number(r)));
        QVERIFY2(exchange[static_cast<std::size_t>(r)] <= g.dispatch_us + g.combine_us,
                 qPrintable(QStringLiteral("rank %1: %2 > %3 + %4").arg(r).arg(exchange[static_cast<std::size_t>(r)]).arg(g.dispatch_us).arg(g.combine_us)));
    }
    QVERIFY(s.sim_wall_us >= s.summary.step_time_us * 0.5);
}

// An edit that keeps the routing (overlap, precision, placement) keeps the steps: the source is not redrawn;
// one that changes it (the seed) draws new ones.
void TestEngine::simSourceKeepsItsRoutingAcrossEdits()
{
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    auto source = makeSource(s);
    const Placement p = resolvePlacement(s);
    StepMetrics first, again, reseeded;
    source->configure(s, p);
    source->next(first);
    source->next(first);  // the second step of the window
    Scenario edited = s;
    edited.overlap = s.overlap == Overlap::none ? Overlap::two_batch : Overlap::none;
    source->configure(edited, p);
    source->next(again);
    source->next(again);
    QCOMPARE(again.layers[0].expert_load, first.layers[0].expert_load);
    QVERIFY(again.summary.step_time_us != first.summary.step_time_us);  // the edit itself took effect
    Scenario seeded = edited;
    seeded.workload.routing.seed += 1;
    source->configure(seeded, p);
    source->next(reseeded);
    source->next(reseeded);
    QVERIFY(reseeded.layers[0].expert_load != first.layers[0].expert_load);
    // A refused configuration leaves the running one and its place in the steps alone.
    Placement wrong = p;
    wrong.layers.pop_back();
    QVERIFY_THROWS_EXCEPTION(std::exception, source->configure(s, wrong));
    StepMetrics third;
    source->next(third);
    QCOMPARE(third.step, 2);
}

void TestEngine::runApiSelectsTheBackend()
{
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    // The analytical model by default.
    QCOMPARE(makeSource(s)->name(), std::string("sim"));
    // The engine on a scaled-down Mixtral so the test stays fast; 1 and 4 ranks agree.
    s.model.hidden_size = 64;
    s.model.moe_intermediate_size = 32;
    s.engine.backend = Backend::cpu;
    s.engine.layers = {0, 5};
    s.engine.tokens = 16;
    double checksum = 0;
    for (int ranks : {1, 4}) {
        s.engine.ranks = ranks;
        const RunResult r = runScenario(s, 2, {}, 1);
        QCOMPARE(r.source, std::string("cpu"));
        QVERIFY(r.measured);
        QCOMPARE(static_cast<int>(r.steps.size()), 2);
        QCOMPARE(r.last.num_gpus, ranks);
        QCOMPARE(r.last.step, 1);  // warm-up not counted
        QVERIFY(r.mean.moe_time_us > 0);
        if (ranks == 1)
            checksum = r.checksum;
        else
            QCOMPARE(r.checksum, checksum);
    }
    // A new layout through setPlacement: the ranks rebuild their experts; the output (a function of
    // the experts and tokens, not of where they run) stays, the per-rank loads follow the layout.
    s.engine.ranks = 4;
    auto source = makeSource(s);
    PlacementRequest rq;
    rq.strategy = "contiguous";
    rq.num_experts = 8;
    rq.num_gpus = 4;
    rq.num_layers = s.model.numMoeLayers();
    const Placement contiguous = makePlacement(rq);
    source->configure(s, contiguous);
    StepMetrics before, after;
    source->next(before);
    Placement swapped = contiguous;
    for (auto& layer : swapped.layers)
        std::swap(layer.gpu_slots[0][0], layer.gpu_slots[3][1]);  // experts 0 and 7 trade ranks
    source->setPlacement(swapped, s.speeds);
    source->repeat(after);
    QCOMPARE(after.step, before.step);
    QVERIFY(after.layers[0].gpu_load != before.layers[0].gpu_load || before.layers[0].expert_load[0] == before.layers[0].expert_load[7]);
    const double c = source->checksum();
    source->setPlacement(contiguous, s.speeds);
    source->repeat(after);
    QCOMPARE(source->checksum(), c);
    QCOMPARE(after.layers[0].gpu_load, before.layers[0].gpu_load);
}

void TestEngine::workloadRoutingGivesTheScenarioLoads()
{
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    auto routing = makeRoutingSource(s);
    startRunWindow(*routing);  // the step a run shows first
    RoutingSample sample;
    routing->next(sample);
    const int E = s.model.routed_experts, K = s.model.experts_per_token;
    for (std::int64_t T : {std::int64_t{16}, std::int64_t{37}}) {
        for (int layer : {0, 7}) {
            const auto ids = forcedChoices(sample, layer, T, K);
            QCOMPARE(static_cast<std::int64_t>(ids.size()), T * K);
            std::vector<std::int64_t> mine(static_cast<std::size_t>(E), 0);
            for (std::int64_t t = 0; t < T; ++t) {
                std::set<int> distinct;
                for (int j = 0; j < K; ++j) {
                    const int e = ids[static_cast<std::size_t>(t * K + j)];
                    QVERIFY(e >= 0 && e < E);
                    distinct.insert(e);
                    ++mine[static_cast<std::size_t>(e)];
                }
                QCOMPARE(static_cast<int>(distinct.size()), K);  // a token picks an expert once
            }
            // Each expert's share of the pairs is the sample's, within the rounding of one pair.
            std::vector<double> theirs(static_cast<std::size_t>(E), 0.0);
            double total = 0;
            const auto counts = sample.layer(layer);
            for (int src = 0; src < sample.num_gpus; ++src)
                for (int e = 0; e < E; ++e) {
                    theirs[static_cast<std::size_t>(e)] += counts[static_cast<std::size_t>(src * E + e)];
                    total += counts[static_cast<std::size_t>(src * E + e)];
                }
            for (int e = 0; e < E; ++e)
                QVERIFY2(std::fabs(static_cast<double>(mine[static_cast<std::size_t>(e)]) - theirs[static_cast<std::size_t>(e)] / total * static_cast<double>(T * K)) < 1.0,
                         qPrintable(QStringLiteral("T %1 layer %2 expert %3").arg(T).arg(layer).arg(e)));
        }
    }
    // Through the run API: the engine's expert loads are the forced ones, the same on 1 and 4 ranks.
    s.model.hidden_size = 64;
    s.model.moe_intermediate_size = 32;
    s.engine.backend = Backend::cpu;
    s.engine.workload_routing = true;
    s.engine.layers = {0, 7};
    s.engine.tokens = 32;
    double checksum = 0;
    for (int ranks : {1, 4}) {
        s.engine.ranks = ranks;
        const RunResult r = runScenario(s, 1);
        QVERIFY(r.detail.find("workload routing") != std::string::npos);
        for (std::size_t li = 0; li < 2; ++li) {
            const auto want = forcedChoices(sample, li == 0 ? 0 : 7, 32, K);
            std::vector<std::int64_t> load(static_cast<std::size_t>(E), 0);
            for (int e : want)
                ++load[static_cast<std::size_t>(e)];
            QCOMPARE(r.last.layers[li].expert_load, load);
        }
        if (ranks == 1)
            checksum = r.checksum;
        else
            QCOMPARE(r.checksum, checksum);
    }
}

void TestEngine::badEngineInputIsLocated()
{
    auto message = [](Scenario s) -> std::string {
        try {
            runScenario(s, 1);
        } catch (const InputError& e) {
            return e.what();
        }
        return "(accepted)";
    };
    Scenario s = loadScenarioFile(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml");
    s.model.hidden_size = 64;
    s.model.moe_intermediate_size = 32;
    s.engine.backend = Backend::cpu;
    s.engine.ranks = 9;  // 8 experts
    QVERIFY2(message(s).find("engine.ranks = 9") != std::string::npos, message(s).c_str());
    s.engine.ranks = 2;
    s.engine.memory_gb = 1e-6;  // a kilobyte: nothing fits
    const std::string tooBig = message(s);
    QVERIFY2(tooBig.find("weights need") != std::string::npos && tooBig.find("engine.memory_gb") != std::string::npos,
             tooBig.c_str());
    // Automatic weights already fell back to one shared layer: the hint is not to share them.
    QVERIFY2(tooBig.find("one layer's weights alone do not fit") != std::string::npos
                 && tooBig.find("engine.weights: shared") == std::string::npos,
             tooBig.c_str());
    s.engine.weights = EngineWeights::own;  // every layer its own: fewer layers, or sharing, would help
    QVERIFY2(message(s).find("engine.weights: shared") != std::string::npos, message(s).c_str());
    s.engine.weights = EngineWeights::automatic;
    s.engine.memory_gb = 0;
    s.engine.backend = Backend::cuda;
    QVERIFY2(message(s).find("no CUDA engine backend") != std::string::npos, message(s).c_str());
    // From YAML: the error points at engine.backend's line.
    const std::string yaml = "name: x\nmodel: " MOEX_SOURCE_DIR "/samples/models/mixtral-8x7b.yaml\n"
                             "topology: {builtin: hgx-h100}\nworkload: {phase: decode, tokens_per_gpu: 8}\n"
                             "engine:\n  backend: remote\n  host: 127.0.0.1:1\n";
    const Scenario remote = loadScenarioText(yaml, "/tmp/engine-test.yaml");
    const std::string where = message(remote);
    QVERIFY2(where.find("engine-test.yaml:6:") != std::string::npos, where.c_str());
}

QTEST_GUILESS_MAIN(TestEngine)
#include "tst_engine.moc"
