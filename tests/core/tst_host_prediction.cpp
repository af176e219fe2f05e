// The host-cpu topology and the CPU calibration the simulator predicts the CPU engine with
// (run/host_prediction.h): the calibration file's CPU section reads back what was written and
// rejects what is malformed with a location; the curve interpolates as documented; host-cpu has the
// ranks asked for; and a predicted step is exactly the hand-computed one for a small model, so a
// wrong term (worker split, core sharing, copies, barrier) fails here.
#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "run/host_prediction.h"
#include "run/metrics_source.h"
#include "scenario/scenario_yaml.h"
#include "sim/calibration.h"
#include "topology/builtin_topologies.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace moex;

namespace {

Calibration smallCpu(int cores)
{
    Calibration c = defaultCalibration(GpuArch::cpu);
    c.name = "test-cpu";
    c.cpu.cpu = "test";
    c.cpu.kernel = "portable";
    c.cpu.cores = cores;
    c.cpu.expert = {{"bf16", {{1, 100}, {4, 400}, {8, 600}}}};
    c.cpu.router_gflops = 2;
    c.cpu.copy_gbs = 4;
    c.cpu.sync_us = 5;
    return c;
}

const char* kScenario =
    "name: tiny-engine\n"
    "model:\n"
    "  name: tiny\n  hidden_size: 64\n  num_layers: 2\n  moe_layers: {first: 0, every: 1}\n"
    "  routed_experts: 4\n  experts_per_token: 2\n  moe_intermediate_size: 32\n  weight_dtype: bf16\n"
    "  vocab_size: 100\n  attention: {kind: gqa, heads: 2, kv_heads: 1, head_dim: 16}\n"
    "topology: {builtin: hgx-h100}\n"
    "workload: {phase: decode, tokens_per_gpu: 4}\n"
    "engine:\n  backend: cpu\n  ranks: 2\n";

}  // namespace

class TestHostPrediction : public QObject {
    Q_OBJECT
private slots:
    void curveInterpolates()
    {
        const std::vector<std::pair<double, double>> curve{{1, 100}, {4, 400}, {8, 600}};
        QCOMPARE(cpuCurveUs(curve, 0), 0.0);
        QCOMPARE(cpuCurveUs(curve, 0.5), 100.0);  // below the first point: its value
        QCOMPARE(cpuCurveUs(curve, 1), 100.0);
        QCOMPARE(cpuCurveUs(curve, 2), 200.0);
        QCOMPARE(cpuCurveUs(curve, 6), 500.0);
        QCOMPARE(cpuCurveUs(curve, 16), 1000.0);  // the last slope (50 per token) beyond the last point
    }

    void curveForFollowsTheEngineFormats()
    {
        Calibration c = smallCpu(1);
        c.cpu.expert = {{"f32", {{1, 1}}}, {"bf16", {{1, 2}}}, {"fp8", {{1, 3}}}, {"mxfp4", {{1, 4}}}};
        QCOMPARE(c.cpu.curveFor(DType::fp32, 64, 64)->front().second, 1.0);
        QCOMPARE(c.cpu.curveFor(DType::fp16, 64, 64)->front().second, 2.0);
        QCOMPARE(c.cpu.curveFor(DType::fp8, 64, 64)->front().second, 3.0);
        QCOMPARE(c.cpu.curveFor(DType::mxfp4, 64, 64)->front().second, 4.0);
        QCOMPARE(c.cpu.curveFor(DType::mxfp4, 64, 48)->front().second, 2.0);  // 48 is no multiple of 32: bf16
    }

    void curveForInterpolatesBetweenShapes()
    {
        // Short rows (2048 x 1024: rho = 6.51e-4) at 100 / 400 us, long rows (6144 x 2048: rho =
        // 2.71e-4) at 60 / 200 us, per million weights at 1 / 4 tokens.
        Calibration c = smallCpu(1);
        c.cpu.expert = {{"fp8", {{1, 100}, {4, 400}}}};
        c.cpu.expert_shape = {2048, 1024};
        c.cpu.longer = {{{6144, 2048}, {{"fp8", {{1, 60}, {2, 80}, {4, 200}}}}}};
        const double rhoA = c.cpu.expert_shape.rho(), rhoB = c.cpu.longer[0].shape.rho();
        QVERIFY(rhoB < rhoA);
        const auto at = [&](int hidden, int inter) { return *c.cpu.curveFor(DType::fp8, hidden, inter); };
        // Each shape's own curve, at the first curve's token counts.
        QCOMPARE(at(2048, 1024), (CpuCurve{{1, 100}, {4, 400}}));
        const CpuCurve longer = at(6144, 2048);
        QCOMPARE(longer[0].second, 60.0);
        QCOMPARE(longer[1].second, 200.0);
        // Between: linear in rho (DeepSeek's 7168 x 2048 lies beyond the long shape, gpt-oss's 2880 x 2880 between).
        const double w = (rhoA - CpuExpertShape{2880, 2880}.rho()) / (rhoA - rhoB);
        QVERIFY(w > 0 && w < 1);
        const CpuCurve between = at(2880, 2880);
        QCOMPARE(between[0].second, 100 + w * (60 - 100));
        QCOMPARE(between[1].second, 400 + w * (200 - 400));
        const double beyond = (rhoA - CpuExpertShape{7168, 2048}.rho()) / (rhoA - rhoB);
        QVERIFY(beyond > 1);
        QCOMPARE(at(7168, 2048)[0].second, 100 + beyond * (60 - 100));
        // Rows shorter than the first shape's: its curve, not an extrapolation.
        QCOMPARE(at(64, 32), (CpuCurve{{1, 100}, {4, 400}}));
        // Rows of any length: never below a quarter of the measured value, whatever the slope.
        c.cpu.longer[0].curves = {{"fp8", {{1, 5}, {4, 10}}}};
        QCOMPARE(at(1 << 20, 1 << 20)[0].second, 25.0);
        // Without the long curve of a format, or without longer shapes: the first curve.
        c.cpu.longer[0].curves = {{"bf16", {{1, 5}}}};
        QCOMPARE(at(6144, 2048), (CpuCurve{{1, 100}, {4, 400}}));
        c.cpu.longer.clear();
        QCOMPARE(at(6144, 2048), (CpuCurve{{1, 100}, {4, 400}}));
    }

    void curveForInterpolatesBetweenThreeShapes()
    {
        // A third, longest shape (8192 x 4096: rho = 1.63e-4) at 50 us a million weights at 1 token:
        // a model between the second and third shapes is read between them, not extrapolated from
        // the first two; beyond the third, along the last two.
        Calibration c = smallCpu(1);
        c.cpu.expert = {{"bf16", {{1, 100}, {8, 160}}}};
        c.cpu.expert_shape = {2048, 1024};
        c.cpu.longer = {{{6144, 2048}, {{"bf16", {{1, 60}, {8, 140}}}}},
                        {{8192, 4096}, {{"bf16", {{1, 56}, {4, 80}, {16, 150}}}}}};
        const double rho1 = c.cpu.longer[0].shape.rho(), rho2 = c.cpu.longer[1].shape.rho();
        const auto at = [&](int hidden, int inter) { return *c.cpu.curveFor(DType::bf16, hidden, inter); };
        // Mixtral's 4096 x 14336 lies between the two longer shapes.
        const double mixtral = CpuExpertShape{4096, 14336}.rho();
        QVERIFY(mixtral < rho1 && mixtral > rho2);
        const double w = (rho1 - mixtral) / (rho1 - rho2);
        const CpuCurve m = at(4096, 14336);
        QCOMPARE(m[0].second, 60 + w * (56 - 60));
        // At 8 tokens the third curve is read between its points (80 at 4, 150 at 16: 103.33).
        QCOMPARE(m[1].second, 140 + w * ((80 + (150.0 - 80) * 4 / 12) - 140));
        // Each longer shape's own value at it.
        QCOMPARE(at(8192, 4096)[0].second, 56.0);
        QCOMPARE(at(6144, 2048)[0].second, 60.0);
        // Between the first two shapes, the third does not count.
        const double w0 = (c.cpu.expert_shape.rho() - CpuExpertShape{2880, 2880}.rho()) / (c.cpu.expert_shape.rho() - rho1);
        QCOMPARE(at(2880, 2880)[0].second, 100 + w0 * (60 - 100));
        // Beyond the longest: along the last two shapes.
        const double rho = CpuExpertShape{16384, 16384}.rho();
        QCOMPARE(at(16384, 16384)[0].second, 60 + (rho1 - rho) / (rho1 - rho2) * (56 - 60));
        // A format missing at the middle shape: its neighbours are the first and the third.
        c.cpu.longer[0].curves = {{"fp8", {{1, 1}}}};
        const double rhoA = c.cpu.expert_shape.rho();
        QCOMPARE(at(4096, 14336)[0].second, 100 + (rhoA - mixtral) / (rhoA - rho2) * (56 - 100));
    }

    void cpuCalibrationRoundTrips()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("cal.yaml")).toStdString();
        const Calibration c = smallCpu(3);
        writeFileAtomically(path, calibrationToYaml(c));
        const Calibration back = loadCalibrationFile(path, defaultCalibration(GpuArch::cpu));
        QCOMPARE(back.name, c.name);
        QCOMPARE(back.cpu.cores, 3);
        QCOMPARE(back.cpu.router_gflops, c.cpu.router_gflops);
        QCOMPARE(back.cpu.copy_gbs, c.cpu.copy_gbs);
        QCOMPARE(back.cpu.sync_us, c.cpu.sync_us);
        QCOMPARE(back.cpu.expert.size(), std::size_t{1});
        QCOMPARE(back.cpu.expert[0].first, std::string("bf16"));
        QVERIFY(back.cpu.expert[0].second == c.cpu.expert[0].second);
        QCOMPARE(back.cpu.expert_shape.hidden, 2048);  // a calibration without shapes: the one they were measured at
        QCOMPARE(back.cpu.expert_shape.inter, 1024);
        QVERIFY(back.cpu.longer.empty());
        // With the long-row curves: every shape and every set of curves comes back, in order.
        Calibration three = smallCpu(2);
        three.cpu.expert_shape = {1024, 512};
        three.cpu.longer = {{{8192, 2048}, {{"bf16", {{1, 50}, {8, 300}}}, {"fp8", {{1, 40}}}}},
                            {{16384, 4096}, {{"bf16", {{1, 45}, {8, 290}}}}}};
        writeFileAtomically(path, calibrationToYaml(three));
        const Calibration threeBack = loadCalibrationFile(path, defaultCalibration(GpuArch::cpu));
        QCOMPARE(threeBack.cpu.expert_shape.hidden, 1024);
        QCOMPARE(threeBack.cpu.expert_shape.inter, 512);
        QVERIFY(threeBack.cpu.longer == three.cpu.longer);
        // A file of one shape read over a base of three keeps nothing of the base's long curves.
        writeFileAtomically(path, calibrationToYaml(c));
        const Calibration over = loadCalibrationFile(path, threeBack);
        QVERIFY(over.cpu.longer.empty());
        QCOMPARE(over.cpu.expert_shape.hidden, 2048);
        // A file written before expert_longer (one long shape, keys expert_long_*) reads as one entry.
        writeFileAtomically(path, "name: old\ncpu: {cores: 1, router_gflops: 1, copy_gbs: 1, "
                                  "expert_us_per_mweight: {bf16: [[1, 2]]}, expert_shape: [2048, 1024], "
                                  "expert_long_us_per_mweight: {bf16: [[1, 1.5]]}, expert_long_shape: [6144, 2048]}\n");
        const Calibration old = loadCalibrationFile(path, defaultCalibration(GpuArch::cpu));
        QCOMPARE(old.cpu.longer.size(), std::size_t{1});
        QVERIFY(old.cpu.longer[0].shape == (CpuExpertShape{6144, 2048}));
        QVERIFY(old.cpu.longer[0].curves == (CpuCurves{{"bf16", {{1, 1.5}}}}));
        // A GPU calibration writes no CPU section and reads back without one.
        writeFileAtomically(path, calibrationToYaml(defaultCalibration(GpuArch::hopper)));
        QVERIFY(!loadCalibrationFile(path, defaultCalibration(GpuArch::hopper)).cpu.valid());
    }

    void malformedCpuSection_data()
    {
        QTest::addColumn<QString>("cpu");
        QTest::addColumn<QString>("needle");
        QTest::newRow("no cores") << "{router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}}"
                                  << "missing required key 'cores'";
        QTest::newRow("unknown format") << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf17: [[1, 2]]}}"
                                        << "bf17";
        QTest::newRow("falling tokens") << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[4, 2], [2, 3]]}}"
                                        << "tokens must rise";
        QTest::newRow("point not a pair") << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1]]}}"
                                          << "[tokens, microseconds]";
        QTest::newRow("long curves without their shape")
            << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}, expert_long_us_per_mweight: {bf16: [[1, 2]]}}"
            << "go together";
        QTest::newRow("shape not a pair")
            << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}, expert_shape: [2048]}"
            << "[hidden, inter]";
        QTest::newRow("long shape of shorter rows")
            << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}, expert_long_us_per_mweight: {bf16: [[1, 2]]}, expert_long_shape: [1024, 512]}"
            << "must be longer";
        QTest::newRow("longer shapes out of order")
            << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}, expert_longer: "
               "[{shape: [8192, 4096], us_per_mweight: {bf16: [[1, 2]]}}, {shape: [6144, 2048], us_per_mweight: {bf16: [[1, 2]]}}]}"
            << "must be longer";
        QTest::newRow("longer entry without curves")
            << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}, expert_longer: [{shape: [6144, 2048]}]}"
            << "needs 'shape' and 'us_per_mweight'";
        QTest::newRow("longer not a list")
            << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}, expert_longer: {shape: [6144, 2048]}}"
            << "must be a list";
        QTest::newRow("old and new long keys")
            << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, 2]]}, expert_long_us_per_mweight: {bf16: [[1, 2]]}, "
               "expert_long_shape: [6144, 2048], expert_longer: [{shape: [8192, 4096], us_per_mweight: {bf16: [[1, 2]]}}]}"
            << "give one of them";
        // A key that is a list, not a format's name: yaml-cpp's "bad conversion", an internal error.
        QTest::newRow("curve key a list") << "{cores: 2, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {[f32]: [[1, 2]]}}"
                                          << "keys of expert_us_per_mweight must be plain names";
        QTest::newRow("negative time") << "{cores: 1, router_gflops: 1, copy_gbs: 1, expert_us_per_mweight: {bf16: [[1, -2]]}}"
                                       << "microseconds per million weights";
    }

    void malformedCpuSection()
    {
        QFETCH(QString, cpu);
        QFETCH(QString, needle);
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("cal.yaml")).toStdString();
        writeFileAtomically(path, "name: broken\ncpu: " + cpu.toStdString() + "\n");
        try {
            (void)loadCalibrationFile(path, defaultCalibration(GpuArch::cpu));
            QFAIL("a malformed CPU section was accepted");
        } catch (const InputError& e) {
            const QString text = QString::fromStdString(e.diagnostics().format());
            QVERIFY2(text.contains(needle), qPrintable(text));
            QVERIFY2(text.contains(QStringLiteral("cal.yaml:2:")), qPrintable(text));
        }
    }

    void hostCpuTopology()
    {
        TopologyParams p;
        p.builtin = "host-cpu";
        p.ranks = 3;
        const Topology t = buildTopology(p);
        QCOMPARE(t.numGpus(), 3);
        QVERIFY(t.gpu.arch == GpuArch::cpu);
        QCOMPARE(t.numDomains(), 1);
        QVERIFY(t.gpu.hbm_gb > 0);
        p.ranks = 0;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildTopology(p));
        p.ranks = 2;
        p.nodes = 2;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildTopology(p));
        TopologyParams hgx;
        hgx.builtin = "hgx-h100";
        hgx.ranks = 4;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, buildTopology(hgx));
    }

    void predictionIsTheHandComputedStep_data()
    {
        QTest::addColumn<int>("cores");
        QTest::newRow("2 ranks share 1 core") << 1;
        QTest::newRow("2 ranks on 4 cores: 2 workers each") << 4;
    }

    void predictionIsTheHandComputedStep()
    {
        QFETCH(int, cores);
        const Scenario s = loadScenarioText(kScenario, "/tmp/tiny.yaml");
        const Calibration cal = smallCpu(cores);
        StepMetrics measured;
        measured.num_gpus = 2;
        measured.gpus.resize(2);
        measured.gpus[0].tokens = 4;
        measured.gpus[1].tokens = 4;
        LayerMetrics lm;
        lm.decoder_layer = 1;
        lm.expert_load = {6, 4, 4, 2};  // 8 tokens x top-2
        measured.layers.push_back(lm);
        const StepMetrics p = predictEngineStep(s, measured, cal);
        QCOMPARE(p.layers.size(), std::size_t{1});
        QCOMPARE(p.layers[0].decoder_layer, 1);

        // By hand: each rank's slots from the engine's placement, slot j to worker j mod w.
        const Placement placement = engineRankPlacement(s, 2);
        const double share = std::max(1.0, 2.0 / cores);
        // A slot's FFN runs over its rows in the receive buffer: the curve alone, no copies.
        const auto slotUs = [&](double t) { return 3.0 * 64 * 32 / 1e6 * cpuCurveUs(cal.cpu.expert[0].second, t); };
        double compute = 0, dispatch = 0, allWork = 0;
        for (int g = 0; g < 2; ++g) {
            const auto& held = placement.layers[1].gpu_slots[static_cast<std::size_t>(g)];
            const int workers = std::max(1, std::min(static_cast<int>(held.size()), cores / 2));
            double pairs = 0, busiest = 0;
            for (int k = 0; k < workers; ++k) {
                double sum = 0;
                for (std::size_t j = static_cast<std::size_t>(k); j < held.size(); j += static_cast<std::size_t>(workers))
                    sum += slotUs(static_cast<double>(lm.expert_load[held[j].index()]));
                busiest = std::max(busiest, sum);
            }
            for (const auto e : held)
                pairs += static_cast<double>(lm.expert_load[e.index()]);
            compute = std::max(compute, busiest);
            allWork += busiest;
            // The router reads its matrix once per block of 8 tokens: a rank's 4 tokens cost a block.
            const double router = 2.0 * 8 * 64 * 4 / (cal.cpu.router_gflops * 1e3) * share;
            // Each row the rank receives is copied once (into its slot's block).
            const double copies = pairs * 64 * 4 / (cal.cpu.copy_gbs * 1e3) * share;
            dispatch = std::max(dispatch, router + copies);
        }
        // Two ranks on one core share it: the experts end when the core has done both ranks' work.
        if (share > 1)
            compute = std::max(compute, allWork / cores);
        // Combine reads each of a rank's 4 x 2 result rows once.
        const double combine = 4.0 * 2 * 64 * 4 / (cal.cpu.copy_gbs * 1e3) * share;
        QCOMPARE(p.layers[0].compute_us, compute);
        QCOMPARE(p.layers[0].dispatch_us, dispatch + cal.cpu.sync_us);
        QCOMPARE(p.layers[0].combine_us, combine + cal.cpu.sync_us);
        QCOMPARE(p.layers[0].time_us, p.layers[0].dispatch_us + compute + p.layers[0].combine_us);
        QCOMPARE(p.summary.moe_time_us, p.layers[0].time_us);

        // The table sums the compared layers and reports the relative error.
        LayerMetrics m = lm;
        m.time_us = 2 * p.layers[0].time_us;
        const auto rows = predictionTable({m}, p);
        QCOMPARE(rows.size(), std::size_t{5});
        QCOMPARE(rows[0].what, std::string("MoE layers"));
        QCOMPARE(rows[0].error(), -0.5);
        QCOMPARE(rows[4].what, std::string("layer 1"));
    }

    // More ranks than hardware threads: the note names both counts and what it means; none where
    // each rank had a thread, or where the count is unknown (a run file of an earlier version).
    void timeSharingIsSaid()
    {
        const std::string note = moex::timeSharingNote(4, 2);
        QVERIFY2(note.starts_with("4 ranks ran on 2 hardware threads"), note.c_str());
        QVERIFY(note.find("router+dispatch") != std::string::npos);
        QVERIFY(note.find("at most 2 ranks") != std::string::npos);
        QVERIFY(moex::timeSharingNote(2, 2).empty());
        QVERIFY(moex::timeSharingNote(1, 64).empty());
        QVERIFY(moex::timeSharingNote(8, 0).empty());
        QVERIFY(!moex::timeSharingNote(3, 2).empty());
    }

    void predictionRejectsAStepOfAnotherModel()
    {
        const Scenario s = loadScenarioText(kScenario, "/tmp/tiny.yaml");
        StepMetrics measured;
        measured.num_gpus = 1;
        measured.gpus.resize(1);
        measured.gpus[0].tokens = 4;
        LayerMetrics lm;
        lm.decoder_layer = 7;  // no such layer
        lm.expert_load = {2, 2, 2, 2};
        measured.layers.push_back(lm);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, predictEngineStep(s, measured, smallCpu(1)));
        measured.layers[0].decoder_layer = 1;
        measured.layers[0].expert_load = {8};
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, predictEngineStep(s, measured, smallCpu(1)));
    }
};

QTEST_APPLESS_MAIN(TestHostPrediction)
#include "tst_host_prediction.moc"
