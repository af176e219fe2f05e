// The step's terms beyond GEMMs, attention and communication (issue 20 item 3, docs/MODEL.md section 9):
// the small kernels (norms, top-k, activation quantisation, the activation between the expert
// GEMMs, sampling), each costing the calibration's small_kernel_us plus its bytes, and the
// data-parallel attention wait where ranks' decode batches differ in context. Written out from the
// model's shapes and checked against the simulator's step, its breakdown and layerTimeUs.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers
#include "metrics/step_metrics.h"
#include "scenario/scenario_yaml.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"
#include "workload/routing_sample.h"
#endif

#include <QtTest>

#include <cmath>
#include <random>

using namespace moex;

namespace {

const std::string kScenarios = std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/";

Scenario load(const std::string& name, const Overrides& overrides = {})
{
    return loadScenarioFile(kScenarios + name + ".yaml", overrides);
}

RoutingSample sampleOf(const Scenario& s)
{
    auto source = makeRoutingSource(s);
    RoutingSample r;
    source->next(r);
    return r;
}

bool near(double a, double b, double rel = 1e-9)
{
    return std::abs(a - b) <= rel * std::max({1.0, std::abs(a), std::abs(b)});
}

// One step of `s` with `cal`, its placement fitted to `r`.
StepMetrics stepOf(const Scenario& s, const RoutingSample& r, const Placement& p, const Calibration& cal)
{
    Simulator sim(s, p, cal);
    StepMetrics m;
    sim.step(r, m);
    return m;
}

int attentionLayers(const ModelSpec& m)
{
    int n = 0;
    for (int l = 0; l < m.num_layers; ++l)
        n += m.layerKind(l).mixer == MixerKind::attention ? 1 : 0;
    return n;
}

}  // namespace

class TestStepOverheads : public QObject {
    Q_OBJECT
private slots:
    void maxOfNormalsMatchesClosedFormsAndSampling();
    void smallKernelsAsWrittenOut();
    void eachSmallKernelCostsItsFixedTime_data();
    void eachSmallKernelCostsItsFixedTime();
    void breakdownAddsUpToTheStep_data();
    void breakdownAddsUpToTheStep();
    void dpWaitIsTheSlowestRanksExcess();
    void layerTimeKeepsTheNewTermsUnderOverlap();
};

void TestStepOverheads::maxOfNormalsMatchesClosedFormsAndSampling()
{
    const double pi = 3.14159265358979323846;
    QCOMPARE(expectedMaxOfNormals(1), 0.0);
    QVERIFY(near(expectedMaxOfNormals(2), 1.0 / std::sqrt(pi), 1e-9));
    QVERIFY(near(expectedMaxOfNormals(3), 3.0 / (2.0 * std::sqrt(pi)), 1e-9));
    // Grows with n, ever more slowly (about sqrt(2 ln n)).
    double prev = 0;
    for (int n : {2, 4, 8, 16, 32, 64, 128, 256, 1024, 65536}) {
        const double e = expectedMaxOfNormals(n);
        QVERIFY(e > prev);
        QVERIFY(e < std::sqrt(2.0 * std::log(static_cast<double>(n))));
        prev = e;
    }
    // Sampled: 72 ranks, 20,000 draws of the maximum.
    std::mt19937_64 rng(11);
    std::normal_distribution<double> normal;
    double sum = 0;
    const int draws = 20000;
    for (int d = 0; d < draws; ++d) {
        double most = -1e9;
        for (int g = 0; g < 72; ++g)
            most = std::max(most, normal(rng));
        sum += most;
    }
    const double sampled = sum / draws;  // standard error about 0.003
    QVERIFY2(std::abs(sampled - expectedMaxOfNormals(72)) < 0.015,
             qPrintable(QStringLiteral("sampled %1, quadrature %2").arg(sampled).arg(expectedMaxOfNormals(72))));
}

void TestStepOverheads::smallKernelsAsWrittenOut()
{
    const Scenario s = load("deepseek-r1-decode-hgx-h200x8");
    const Calibration cal = resolveCalibration(s);
    const ComputeModel cm(s.model, s.topology.gpu, cal, s.precision.weights);
    const double k = cal.small_kernel_us;
    QVERIFY(k > 0);
    const double bytesPerUs = s.topology.gpu.hbm_bw_gbs * 1e9 * cal.hbm_efficiency / 1e6;
    const double T = 128, h = s.model.hidden_size;
    // Fused add + RMSNorm: 4 bf16 vectors of the hidden size per token; two per layer.
    const double norm = k + T * h * 2 * 4 / bytesPerUs;
    const OverheadTimes o = cm.overheadTimes(T, 0.0);
    QVERIFY(near(o.per_layer, 2 * norm));
    // Top-k over 256 fp32 scores per token.
    QVERIFY(near(o.per_moe_layer, k + T * 256 * 4 / bytesPerUs));
    // With a quantisation kernel: reads bf16, writes one byte and a thirty-second per element.
    const OverheadTimes q = cm.overheadTimes(T, 1.0 + 1.0 / 32.0);
    QVERIFY(near(q.per_moe_layer - o.per_moe_layer, k + T * h * (2 + 1 + 1.0 / 32.0) / bytesPerUs));
    // The final norm, then two passes over 129,280 fp32 logits per token.
    QCOMPARE(s.model.vocab_size, 129280);
    QVERIFY(near(o.per_step, norm + 2 * (k + T * 129280 * 4 / bytesPerUs)));
    // SwiGLU between the GEMMs: gate and up read, one written, bf16, at the expert width.
    QVERIFY(near(cm.activationUs(1000), k + 1000.0 * s.model.moe_intermediate_size * 2 * 3 / bytesPerUs));
    QCOMPARE(cm.activationUs(0), 0.0);
    // Nothing for no tokens.
    const OverheadTimes none = cm.overheadTimes(0, 1.0);
    QCOMPARE(none.per_layer + none.per_moe_layer + none.per_step, 0.0);
}

void TestStepOverheads::eachSmallKernelCostsItsFixedTime_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("kernel");
    QTest::addColumn<int>("perMoeLayer");
    // DeepEP's low-latency dispatch quantises as it sends: top-k and the activation per MoE layer.
    QTest::newRow("hgx, deepep") << QStringLiteral("deepseek-r1-decode-hgx-h200x8") << QStringLiteral("deepep") << 2;
    // One-sided kernels send what a quantisation kernel wrote.
    QTest::newRow("hgx, one-sided") << QStringLiteral("deepseek-r1-decode-hgx-h200x8") << QStringLiteral("one-sided") << 3;
    QTest::newRow("nvl72, deepep") << QStringLiteral("deepseek-r1-decode-nvl72") << QStringLiteral("deepep") << 2;
}

void TestStepOverheads::eachSmallKernelCostsItsFixedTime()
{
    // One microsecond more per small kernel lengthens a step without overlap by the number of
    // kernels on its critical path: two norms per decoder layer, the MoE layers' kernels, the
    // final norm and two sampling passes.
    QFETCH(QString, scenario);
    QFETCH(QString, kernel);
    QFETCH(int, perMoeLayer);
    const Scenario s = load(scenario.toStdString(), {{"overlap", "none"}, {"a2a_kernel", kernel.toStdString()}});
    const RoutingSample r = sampleOf(s);
    const Placement p = resolvePlacement(s);
    Calibration a = resolveCalibration(s);
    Calibration b = a;
    b.small_kernel_us = a.small_kernel_us + 1.0;
    const StepMetrics ma = stepOf(s, r, p, a), mb = stepOf(s, r, p, b);
    const double kernels = 2.0 * s.model.num_layers + perMoeLayer * s.model.numMoeLayers() + 3.0;
    QVERIFY2(near(mb.summary.step_time_us - ma.summary.step_time_us, kernels, 1e-6),
             qPrintable(QStringLiteral("%1 us more, %2 kernels").arg(mb.summary.step_time_us - ma.summary.step_time_us).arg(kernels)));
    // The activation is part of each GPU's expert compute; the rest is the overhead term.
    QVERIFY(near(mb.summary.expert_compute_us - ma.summary.expert_compute_us, s.model.numMoeLayers(), 1e-6));
    QVERIFY(near(mb.summary.overhead_us - ma.summary.overhead_us, kernels - s.model.numMoeLayers(), 1e-6));
    QCOMPARE(mb.summary.attention_us, ma.summary.attention_us);
    QCOMPARE(mb.summary.dispatch_us, ma.summary.dispatch_us);
}

void TestStepOverheads::breakdownAddsUpToTheStep_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::newRow("deepseek decode hgx") << QStringLiteral("deepseek-r1-decode-hgx-h200x8");
    QTest::newRow("deepseek prefill nvl72") << QStringLiteral("deepseek-r1-prefill-nvl72");
    QTest::newRow("mixtral") << QStringLiteral("mixtral-8x7b-decode-hgx-h100");
    QTest::newRow("qwen3.5 hybrid") << QStringLiteral("qwen3.5-397b-a17b-decode-nvl72");
    QTest::newRow("gpt-oss sliding") << QStringLiteral("gpt-oss-120b-decode-hgx-h200");
}

void TestStepOverheads::breakdownAddsUpToTheStep()
{
    // Without overlap and at equal speeds the step is the sum of its terms, new ones included.
    QFETCH(QString, scenario);
    const Scenario s = load(scenario.toStdString(), {{"overlap", "none"}, {"workload.context_cv", "0.8"}});
    const RoutingSample r = sampleOf(s);
    const StepMetrics m = stepOf(s, r, resolvePlacement(s), resolveCalibration(s));
    const StepTotals& t = m.summary;
    QVERIFY(t.overhead_us > 0);
    QCOMPARE(t.dp_sync_us > 0, s.workload.phase == Phase::decode);
    const double sum = t.dispatch_us + t.combine_us + t.expert_compute_us + t.attention_us + t.overhead_us + t.dp_sync_us;
    QVERIFY2(near(sum, t.step_time_us, 1e-9),
             qPrintable(QStringLiteral("terms %1 us, step %2 us").arg(sum).arg(t.step_time_us)));
}

void TestStepOverheads::dpWaitIsTheSlowestRanksExcess()
{
    // cv / sqrt(B) x E[max of G normals] of every full-attention layer's time, and exactly what
    // the step gains over equal contexts.
    const Overrides base{{"overlap", "none"}};
    for (const char* name : {"deepseek-r1-decode-hgx-h200x8", "qwen3.5-397b-a17b-decode-nvl72"}) {
        const Scenario even = load(name, base);
        Overrides spread = base;
        spread.emplace_back("workload.context_cv", "0.6");
        const Scenario uneven = load(name, spread);
        const RoutingSample r = sampleOf(even);
        const Placement p = resolvePlacement(even);
        const Calibration cal = resolveCalibration(even);
        const StepMetrics a = stepOf(even, r, p, cal), b = stepOf(uneven, r, p, cal);
        QCOMPARE(a.summary.dp_sync_us, 0.0);
        const double B = static_cast<double>(b.summary.batch_per_gpu);
        const int G = uneven.topology.numGpus();
        const ComputeModel cm(uneven.model, uneven.topology.gpu, cal, uneven.precision.weights);
        const double attention = cm.mixerUs(MixerKind::attention, B, uneven.workload.context_tokens, Phase::decode);
        const double want = 0.6 / std::sqrt(B) * expectedMaxOfNormals(G) * attentionLayers(uneven.model) * attention;
        QVERIFY(want > 0);
        QVERIFY2(near(b.summary.dp_sync_us, want, 1e-9),
                 qPrintable(QStringLiteral("%1: %2 us, written out %3 us").arg(QLatin1String(name)).arg(b.summary.dp_sync_us).arg(want)));
        QVERIFY(near(b.summary.step_time_us - a.summary.step_time_us, want, 1e-9));
        // Idle waiting, not work: no GPU's own busy time grows.
        for (std::size_t g = 0; g < a.gpus.size(); ++g)
            QCOMPARE(b.gpus[g].attention_us, a.gpus[g].attention_us);
    }
    // Chunked prefill balances tokens, not contexts: no wait modelled.
    const Scenario prefill = load("deepseek-r1-prefill-nvl72", {{"workload.context_cv", "0.6"}});
    QCOMPARE(stepOf(prefill, sampleOf(prefill), resolvePlacement(prefill), resolveCalibration(prefill)).summary.dp_sync_us, 0.0);
}

void TestStepOverheads::layerTimeKeepsTheNewTermsUnderOverlap()
{
    // layerTimeUs (placement search's objective) is the step's layer time with every term, under
    // two-batch overlap and without; more small-kernel time or context spread never shortens it.
    for (const char* overlap : {"two-batch", "none"}) {
        const Scenario s = load("deepseek-r1-decode-nvl72", {{"overlap", overlap}, {"workload.context_cv", "1.5"}});
        const RoutingSample r = sampleOf(s);
        const Placement p = resolvePlacement(s);
        Calibration cal = resolveCalibration(s);
        Simulator sim(s, p, cal);
        StepMetrics m;
        sim.step(r, m);
        for (int l = 0; l < s.model.numMoeLayers(); ++l)
            QCOMPARE(sim.layerTimeUs(r, l), m.layers[static_cast<std::size_t>(l)].time_us);
        cal.small_kernel_us *= 4;
        Simulator slower(s, p, cal);
        StepMetrics ms;
        slower.step(r, ms);
        QVERIFY(ms.summary.step_time_us > m.summary.step_time_us);
        const Scenario even = load("deepseek-r1-decode-nvl72", {{"overlap", overlap}});
        QVERIFY(stepOf(even, r, p, resolveCalibration(s)).summary.step_time_us < m.summary.step_time_us);
    }
}

QTEST_MAIN(TestStepOverheads)
#include "tst_step_overheads.moc"
