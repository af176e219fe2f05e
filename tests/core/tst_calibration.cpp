// Calibration files: the shipped samples are the built-in defaults, calibrationToYaml round-trips,
// malformed files give located errors, and a scenario's `calibration:` file reaches the simulator.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "common/number_text.h"
#include "metrics/step_metrics.h"
#include "scenario/scenario_yaml.h"
#include "sim/calibration.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"
#endif

#include <QtTest>

#include <cstdlib>
#include <string>

using namespace moex;

namespace {

const std::string kRoot = std::string(MOEX_SOURCE_DIR);
const std::string kCalibrationDir = kRoot + "/samples/calibration/";
const std::string kScenario = kRoot + "/samples/scenarios/deepseek-r1-decode-hgx-h200x8.yaml";

void compareCalibrations(const Calibration& got, const Calibration& want)
{
    QCOMPARE(got.name, want.name);
    QCOMPARE(got.nvlink_efficiency, want.nvlink_efficiency);
    QCOMPARE(got.network_efficiency, want.network_efficiency);
    QCOMPARE(got.pcie_efficiency, want.pcie_efficiency);
    QCOMPARE(got.dispatch_floor_us, want.dispatch_floor_us);
    QCOMPARE(got.combine_floor_us, want.combine_floor_us);
    QCOMPARE(got.ll_message_us, want.ll_message_us);
    QCOMPARE(got.overlap_sm_share, want.overlap_sm_share);
    QCOMPARE(got.ll_overlap_efficiency, want.ll_overlap_efficiency);
    QCOMPARE(got.gemm_efficiency, want.gemm_efficiency);
    QCOMPARE(got.gemm_tile_tokens, want.gemm_tile_tokens);
    QCOMPARE(got.gemm_launch_us, want.gemm_launch_us);
    QCOMPARE(got.small_kernel_us, want.small_kernel_us);
    QCOMPARE(got.hbm_efficiency, want.hbm_efficiency);
    QCOMPARE(got.attention_efficiency, want.attention_efficiency);
    QCOMPARE(got.activation_reserve_gb, want.activation_reserve_gb);
    QCOMPARE(got.power_comm_weight, want.power_comm_weight);
}

// A base that differs from both generations' defaults in every field, so that a file which leaves
// a key out is caught.
Calibration oddBase()
{
    Calibration c;
    c.name = "odd";
    c.nvlink_efficiency = 0.11;
    c.network_efficiency = 0.12;
    c.pcie_efficiency = 0.13;
    c.dispatch_floor_us = 1.5;
    c.combine_floor_us = 2.5;
    c.ll_message_us = 3.5;
    c.overlap_sm_share = 0.17;
    c.ll_overlap_efficiency = 0.19;
    c.gemm_efficiency = 0.14;
    c.gemm_tile_tokens = 7;
    c.gemm_launch_us = 4.5;
    c.small_kernel_us = 1.7;
    c.hbm_efficiency = 0.15;
    c.attention_efficiency = 0.16;
    c.activation_reserve_gb = 5.5;
    c.power_comm_weight = 0.18;
    return c;
}

// Dispatch time (all layers) of the first step of `s` with calibration `cal`.
double dispatchUs(const Scenario& s, const Calibration& cal)
{
    const Placement p = resolvePlacement(s);
    auto source = makeRoutingSource(s);
    RoutingSample sample;
    source->next(sample);
    Simulator sim(s, p, cal);
    StepMetrics m;
    sim.step(sample, m);
    return m.summary.dispatch_us;
}

}  // namespace

class TestCalibration : public QObject {
    Q_OBJECT
private slots:
    void samplesAreTheDefaults_data();
    void samplesAreTheDefaults();
    void yamlRoundTrips();
    void numbersAreWrittenAsNumbers();
    void missingKeysKeepTheBase();
    void malformed_data();
    void malformed();
    void scenarioFileResolves();
    void slowerNvlinkNeverSpeedsUpDispatch();
};

void TestCalibration::samplesAreTheDefaults_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("arch");
    QTest::addRow("hopper") << QStringLiteral("hopper.yaml") << static_cast<int>(GpuArch::hopper);
    QTest::addRow("blackwell") << QStringLiteral("blackwell.yaml") << static_cast<int>(GpuArch::blackwell);
}

void TestCalibration::samplesAreTheDefaults()
{
    QFETCH(QString, file);
    QFETCH(int, arch);
    const Calibration want = defaultCalibration(static_cast<GpuArch>(arch));
    // Loaded over a base that matches no default, so every field must come from the file.
    const Calibration got = loadCalibrationFile(kCalibrationDir + file.toStdString(), oddBase());
    compareCalibrations(got, want);
    // The sample sets every key calibrationToYaml writes, under the same names.
    const std::string text = readFile(kCalibrationDir + file.toStdString());
    const QString yaml = QString::fromStdString(calibrationToYaml(want));
    for (const QString& line : yaml.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QString key = line.section(QLatin1Char(':'), 0, 0);
        QVERIFY2(text.find("\n" + key.toStdString() + ":") != std::string::npos, qPrintable(key));
    }
}

void TestCalibration::yamlRoundTrips()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("cal.yaml")).toStdString();
    for (const Calibration& c : {defaultCalibration(GpuArch::hopper), defaultCalibration(GpuArch::blackwell), oddBase()}) {
        writeFileAtomically(path, calibrationToYaml(c));
        compareCalibrations(loadCalibrationFile(path, defaultCalibration(GpuArch::hopper)), c);
    }
}

void TestCalibration::numbersAreWrittenAsNumbers()
{
    // The files moex writes give each number its shortest exact text, in a form every YAML reader
    // takes for a number: whole numbers without an exponent ("1e+01" is a string to PyYAML, the
    // YAML 1.1 reader most scripts use), an exponent only after a decimal point.
    QCOMPARE(shortestNumber(10.0), std::string("10"));
    QCOMPARE(shortestNumber(900.0), std::string("900"));
    QCOMPARE(shortestNumber(128.0), std::string("128"));
    QCOMPARE(shortestNumber(0.1), std::string("0.1"));
    QCOMPARE(shortestNumber(-2.5), std::string("-2.5"));
    QCOMPARE(shortestNumber(1e-05), std::string("1.0e-05"));
    QCOMPARE(shortestNumber(1.5e-07), std::string("1.5e-07"));
    QCOMPARE(shortestNumber(1e21), std::string("1.0e+21"));
    for (double v : {1.0 / 3.0, 2.0 / 3.0 * 1e-9, 162.15875654509574, 9007199254740993.0, 6.02214076e23, 5e-324, 1.7976931348623157e308})
        QCOMPARE(std::strtod(shortestNumber(v).c_str(), nullptr), v);

    // A measured calibration's curves at whole token counts: "[10, 162.2]", as written.
    Calibration c = defaultCalibration(GpuArch::cpu);
    c.cpu.cores = 2;
    c.cpu.expert = {{"bf16", {{1, 148.5}, {10, 162.25}, {100, 300.0}}}};
    const std::string text = calibrationToYaml(c);
    QVERIFY2(text.find("[10, 162.25]") != std::string::npos && text.find("[100, 300]") != std::string::npos, text.c_str());
    QVERIFY2(text.find("e+") == std::string::npos, text.c_str());
}

void TestCalibration::missingKeysKeepTheBase()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("partial.yaml")).toStdString();
    writeFileAtomically(path, "# only one key\nnvlink_efficiency: 0.5\n");
    Calibration want = defaultCalibration(GpuArch::blackwell);
    const Calibration got = loadCalibrationFile(path, want);
    want.nvlink_efficiency = 0.5;
    compareCalibrations(got, want);
}

void TestCalibration::malformed_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("fragment");
    auto row = [](const char* name, const char* text, int line, const char* fragment) {
        QTest::addRow("%s", name) << QString::fromUtf8(text) << line << QString::fromUtf8(fragment);
    };
    row("unknown key", "name: broken\nnvlink_eficiency: 0.5\n", 2, "did you mean 'nvlink_efficiency'");
    row("unknown key far off", "name: broken\ngemm_efficiency: 0.7\ncolour: blue\n", 3,
        "unknown key 'colour' in calibration");
    row("efficiency zero", "name: broken\ngemm_efficiency: 0\n", 2, "'gemm_efficiency' = 0 is out of range [0.01, 1]");
    row("efficiency above one", "name: broken\nnvlink_efficiency: 0.7\nnetwork_efficiency: 1.2\n", 3,
        "'network_efficiency' = 1.2 is out of range");
    row("negative floor", "name: broken\ndispatch_floor_us: -5\n", 2, "'dispatch_floor_us' = -5 is out of range");
    row("negative reserve", "name: broken\nactivation_reserve_gb: -1\n", 2, "out of range");
    row("NaN", "name: broken\nhbm_efficiency: .nan\n", 2, "got NaN");
    row("infinity", "name: broken\ncombine_floor_us: .inf\n", 2, "got infinity");
    row("number a string", "name: broken\nattention_efficiency: high\n", 2, "must be a number, got 'high'");
    row("number a list", "name: broken\ncombine_floor_us: [1, 2]\n", 2, "'combine_floor_us' must be a number");
    row("tile not an integer", "name: broken\ngemm_tile_tokens: 64.5\n", 2, "must be an integer");
    row("tile zero", "name: broken\ngemm_tile_tokens: 0\n", 2, "'gemm_tile_tokens' = 0 is out of range [1, 1024]");
    row("name a list", "name: [a, b]\n", 1, "'name' must be a string");
    row("not a mapping", "- 0.7\n- 0.9\n", 1, "calibration must be a mapping");
    row("syntax error", "name: broken\nnvlink_efficiency: [0.5\ngemm_efficiency: 0.7\n", 3, "YAML syntax");
    row("bad indentation", "name: broken\n  nvlink_efficiency: 0.5\n", 2, "YAML syntax");
}

void TestCalibration::malformed()
{
    QFETCH(QString, text);
    QFETCH(int, line);
    QFETCH(QString, fragment);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("bad.yaml")).toStdString();
    writeFileAtomically(path, text.toStdString());
    try {
        (void)loadCalibrationFile(path, defaultCalibration(GpuArch::hopper));
        QFAIL("expected an InputError");
    } catch (const InputError& e) {
        const auto& items = e.diagnostics().items();
        QVERIFY(!items.empty());
        bool found = false;
        for (const auto& d : items)
            found = found
                || (d.where.file == path && d.where.line == line && QString::fromStdString(d.message).contains(fragment));
        if (!found)
            qWarning().noquote() << QString::fromStdString(e.diagnostics().format());
        QVERIFY2(found, qPrintable(QStringLiteral("no error at line %1 containing '%2'").arg(line).arg(fragment)));
    }
}

void TestCalibration::scenarioFileResolves()
{
    // A scenario beside the samples naming the shipped Hopper file by a relative path.
    const std::string base = readFile(kScenario);
    const std::string file = kRoot + "/samples/scenarios/with-calibration.yaml";
    const Scenario s = loadScenarioText(base + "calibration: ../calibration/hopper.yaml\n", file);
    QCOMPARE(s.calibration, kCalibrationDir + "hopper.yaml");
    compareCalibrations(resolveCalibration(s), defaultCalibration(GpuArch::hopper));

    // A modified copy in a folder of its own: the scenario's file is used, and an explicit file
    // (--calibration) wins over it.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("calibration")));
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("scenarios")));
    const std::string mine = dir.filePath(QStringLiteral("calibration/mine.yaml")).toStdString();
    writeFileAtomically(mine, "name: mine\nnvlink_efficiency: 0.35\n");
    const std::string inDir = dir.filePath(QStringLiteral("scenarios/x.yaml")).toStdString();
    std::string text = base;
    const std::string modelKey = "model: ../models/deepseek-r1.yaml";
    const auto at = text.find(modelKey);
    QVERIFY(at != std::string::npos);
    text.replace(at, modelKey.size(), "model: " + kRoot + "/samples/models/deepseek-r1.yaml");
    const Scenario t = loadScenarioText(text + "calibration: ../calibration/mine.yaml\n", inDir);
    Calibration want = defaultCalibration(GpuArch::hopper);
    want.name = "mine";
    want.nvlink_efficiency = 0.35;
    compareCalibrations(resolveCalibration(t), want);
    compareCalibrations(resolveCalibration(t, kCalibrationDir + "blackwell.yaml"), defaultCalibration(GpuArch::blackwell));
}

void TestCalibration::slowerNvlinkNeverSpeedsUpDispatch()
{
    const Scenario s = loadScenarioFile(kScenario);
    const Calibration base = resolveCalibration(s);
    QCOMPARE(base.name, std::string("hopper-default"));

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string slowNvlink = dir.filePath(QStringLiteral("slow-nvlink.yaml")).toStdString();
    writeFileAtomically(slowNvlink, "nvlink_efficiency: " + std::to_string(base.nvlink_efficiency / 2) + "\n");
    const std::string slowNic = dir.filePath(QStringLiteral("slow-nic.yaml")).toStdString();
    writeFileAtomically(slowNic, "network_efficiency: " + std::to_string(base.network_efficiency / 2) + "\n");

    const double reference = dispatchUs(s, base);
    const double nvlink = dispatchUs(s, resolveCalibration(s, slowNvlink));
    const double nic = dispatchUs(s, resolveCalibration(s, slowNic));
    QVERIFY(reference > 0);
    QVERIFY2(nvlink >= reference, qPrintable(QStringLiteral("%1 < %2").arg(nvlink).arg(reference)));
    // EP64 over 8 nodes: decode dispatch is bound by the NICs, so halving their efficiency shows.
    QVERIFY2(nic > reference * 1.2, qPrintable(QStringLiteral("%1 vs %2").arg(nic).arg(reference)));
}

QTEST_APPLESS_MAIN(TestCalibration)
#include "tst_calibration.moc"
