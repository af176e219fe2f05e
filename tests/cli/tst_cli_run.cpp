// moex-cli run: the real engine through the CLI contract. JSON with the keys of simulate plus
// `checksum` and `measured: true`; the same checksum for 1 and 4 ranks; flags and scenario keys that
// are wrong give exit 2 with what and where; the text summary names the engine.
#include "cli_runner.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>

using moex::test::CliResult;
using moex::test::runCli;

namespace {

// A DeepSeek-style model at small shapes (sigmoid router, groups, a shared expert), inline.
QString writeScenario(const QTemporaryDir& dir, const QString& engineExtra = QString())
{
    const QString path = dir.filePath(QStringLiteral("small.yaml"));
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return {};
    f.write(QStringLiteral(
                "name: small-engine\n"
                "model:\n"
                "  name: small-deepseek\n  hidden_size: 64\n  num_layers: 4\n  moe_layers: {first: 1, every: 1}\n"
                "  routed_experts: 16\n  experts_per_token: 4\n  shared_experts: 1\n  moe_intermediate_size: 32\n"
                "  shared_intermediate_size: 32\n  expert_groups: 4\n  groups_per_token: 2\n  scoring: sigmoid\n"
                "  routed_scaling_factor: 2.5\n  weight_dtype: fp8\n  vocab_size: 1000\n"
                "  attention: {kind: gqa, heads: 4, kv_heads: 2, head_dim: 16}\n"
                "topology: {builtin: hgx-h100}\n"
                "workload: {phase: decode, tokens_per_gpu: 24}\n"
                "engine:\n  backend: cpu\n")
                .toUtf8()
            + engineExtra.toUtf8());
    return path;
}

QJsonObject runJson(const QStringList& args)
{
    const CliResult r = runCli(args + QStringList{QStringLiteral("--json"), QStringLiteral("-")});
    if (r.exitCode != 0) {
        qWarning("%s", qPrintable(r.err));
        return {};
    }
    return QJsonDocument::fromJson(r.out.toUtf8()).object();
}

}  // namespace

class TestCliRun : public QObject {
    Q_OBJECT
private slots:
    void jsonContractAndChecksum()
    {
        QTemporaryDir dir;
        const QString s = writeScenario(dir);
        const QJsonObject one = runJson({QStringLiteral("run"), s, QStringLiteral("--ranks"), QStringLiteral("1")});
        const QJsonObject four = runJson({QStringLiteral("run"), s, QStringLiteral("--ranks"), QStringLiteral("4")});
        QVERIFY(!one.isEmpty() && !four.isEmpty());
        for (const char* key : {"summary", "gpus", "links", "traffic", "layers", "sim_wall_us_per_step", "checksum", "measured"})
            QVERIFY2(four.contains(QLatin1String(key)), key);
        QCOMPARE(four[QStringLiteral("measured")].toBool(), true);
        QCOMPARE(four[QStringLiteral("source")].toString(), QStringLiteral("cpu"));
        QCOMPARE(four[QStringLiteral("checksum")].toDouble(), one[QStringLiteral("checksum")].toDouble());
        QVERIFY(one[QStringLiteral("checksum")].toDouble() != 0);
        QCOMPARE(four[QStringLiteral("gpus")].toArray().size(), 4);
        QCOMPARE(four[QStringLiteral("layers")].toArray().size(), 3);  // every MoE layer by default
        const QJsonObject summary = four[QStringLiteral("summary")].toObject();
        QVERIFY(summary[QStringLiteral("step_time_us")].toDouble() > 0);
        QVERIFY(summary[QStringLiteral("tokens_per_s")].toDouble() > 0);
        // 24 tokens x top-4 in each layer.
        double pairs = 0;
        for (const auto v : four[QStringLiteral("layers")].toArray().first().toObject()[QStringLiteral("expert_load")].toArray())
            pairs += v.toDouble();
        QCOMPARE(pairs, 24.0 * 4);
        // Another seed, other weights and tokens: another checksum.
        const QJsonObject seeded = runJson({QStringLiteral("run"), s, QStringLiteral("--set"), QStringLiteral("engine.seed=9")});
        QVERIFY(seeded[QStringLiteral("checksum")].toDouble() != one[QStringLiteral("checksum")].toDouble());
        // Through OpenBLAS (engine.gemm: openblas, where it loads): the same checksum on 1 and 4
        // ranks, and the run says what multiplied.
        const QStringList viaBlas{QStringLiteral("--set"), QStringLiteral("engine.gemm=openblas")};
        const CliResult blas = runCli(QStringList{QStringLiteral("run"), s, QStringLiteral("--ranks"), QStringLiteral("1")} + viaBlas);
        if (blas.exitCode == 0) {
            QVERIFY2(blas.out.contains(QStringLiteral("expert GEMMs on OpenBLAS,")), qPrintable(blas.out));
            const QJsonObject b1 = runJson(QStringList{QStringLiteral("run"), s, QStringLiteral("--ranks"), QStringLiteral("1")} + viaBlas);
            const QJsonObject b4 = runJson(QStringList{QStringLiteral("run"), s, QStringLiteral("--ranks"), QStringLiteral("4")} + viaBlas);
            QCOMPARE(b4[QStringLiteral("checksum")].toDouble(), b1[QStringLiteral("checksum")].toDouble());
            QVERIFY(b1[QStringLiteral("checksum")].toDouble() != 0);
        } else {
            // Without OpenBLAS: an error at the scenario's engine line that says why, exit 2.
            QCOMPARE(blas.exitCode, 2);
            QVERIFY2(blas.err.contains(QStringLiteral("engine.gemm: openblas, but OpenBLAS")), qPrintable(blas.err));
        }
        const CliResult engineKernels = runCli({QStringLiteral("run"), s, QStringLiteral("--set"), QStringLiteral("engine.gemm=engine")});
        QCOMPARE(engineKernels.exitCode, 0);
        QVERIFY2(engineKernels.out.contains(QStringLiteral("expert GEMMs on the engine's ")), qPrintable(engineKernels.out));
    }

    // MOEX_OPENBLAS names the library to load; one that does not load is, for engine.gemm: openblas,
    // an error that names the variable and the file (exit 2), and for auto the engine's kernels,
    // said so in the run's detail. This is also the path of a machine without libopenblas0.
    void openblasThatDoesNotLoad()
    {
        QTemporaryDir dir;
        const QString s = writeScenario(dir);
        const QString missing = dir.filePath(QStringLiteral("no-such-libopenblas.so"));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("MOEX_OPENBLAS"), missing);
        const CliResult blas = runCli({QStringLiteral("run"), s, QStringLiteral("--set"), QStringLiteral("engine.gemm=openblas")},
                                      QString(), 300000, env);
        QCOMPARE(blas.exitCode, 2);
        QVERIFY2(blas.err.contains(QStringLiteral("engine.gemm: openblas, but OpenBLAS could not be loaded from MOEX_OPENBLAS=")
                                   + missing),
                 qPrintable(blas.err));
        // Where: the flag that set it (a setting of the scenario's file is blamed on its engine line).
        QVERIFY2(blas.err.startsWith(QStringLiteral("--set engine.gemm=openblas: error:")), qPrintable(blas.err));
        QVERIFY(blas.out.isEmpty());
        const CliResult automatic = runCli({QStringLiteral("run"), s}, QString(), 300000, env);
        QCOMPARE(automatic.exitCode, 0);
        QVERIFY2(automatic.out.contains(QStringLiteral("kernels (OpenBLAS not loaded)")), qPrintable(automatic.out));
        // The same checksum as a run that never asks for OpenBLAS: the engine's kernels ran.
        env.remove(QStringLiteral("MOEX_OPENBLAS"));
        const CliResult engineKernels = runCli({QStringLiteral("run"), s, QStringLiteral("--set"), QStringLiteral("engine.gemm=engine")},
                                               QString(), 300000, env);
        QCOMPARE(engineKernels.exitCode, 0);
        const auto checksum = [](const QString& out) {
            const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("checksum\\s+([-0-9.e+]+)")).match(out);
            return m.hasMatch() ? m.captured(1) : QString();
        };
        QVERIFY(!checksum(automatic.out).isEmpty());
        QCOMPARE(checksum(automatic.out), checksum(engineKernels.out));
    }

    void textSummary()
    {
        QTemporaryDir dir;
        const CliResult r = runCli({QStringLiteral("run"), writeScenario(dir), QStringLiteral("--layers"), QStringLiteral("2"),
                                    QStringLiteral("--ranks"), QStringLiteral("2")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains(QStringLiteral("2 ranks, 1 MoE layer,")), qPrintable(r.out));
        QVERIFY(r.out.contains(QStringLiteral("fp8-e4m3")));
        QVERIFY(r.out.contains(QStringLiteral("checksum")));
        // Progress on stderr: the warm-up step (not counted) and each measured one (default 1 + 3).
        QVERIFY2(r.err.contains(QStringLiteral("moex-cli run: warm-up 1/1: ")), qPrintable(r.err));
        QVERIFY(r.err.contains(QStringLiteral("(not counted)")));
        QCOMPARE(r.err.count(QStringLiteral("moex-cli run: step ")), 3);
    }

    // calibrate writes a CPU calibration; a run's JSON carries what compare --measured needs to
    // simulate it on host-cpu; the table's measured column is the run's per-layer means.
    void predictedVsMeasured()
    {
        QTemporaryDir dir;
        const QString s = writeScenario(dir);
        const QString cal = dir.filePath(QStringLiteral("cal.yaml"));
        // '-o -': the calibration on stdout (it wrote a file named '-'), kept here as cal.yaml.
        const CliResult c = runCli({QStringLiteral("calibrate"), QStringLiteral("--backend"), QStringLiteral("cpu"),
                                    QStringLiteral("--quick"), QStringLiteral("--threads"), QStringLiteral("1"),
                                    QStringLiteral("-o"), QStringLiteral("-")});
        QVERIFY2(c.exitCode == 0, qPrintable(c.err));
        QVERIFY(!QFileInfo::exists(QStringLiteral("-")));
        QFile calFile(cal);
        QVERIFY(calFile.open(QIODevice::WriteOnly));
        calFile.write(c.out.toUtf8());
        calFile.close();
        const QString calText = c.out;
        for (const char* key : {"expert_us_per_mweight", "bf16:", "fp8:", "mxfp4:", "router_gflops", "copy_gbs", "cores: 1"})
            QVERIFY2(calText.contains(QLatin1String(key)), key);

        const QString runFile = dir.filePath(QStringLiteral("run.json"));
        const CliResult r = runCli({QStringLiteral("run"), s, QStringLiteral("--ranks"), QStringLiteral("2"), QStringLiteral("--set"),
                                    QStringLiteral("engine.routing=workload"), QStringLiteral("--json"), runFile});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QFile f(runFile);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject run = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(run[QStringLiteral("run")].toObject()[QStringLiteral("ranks")].toInt(), 2);
        QVERIFY(run[QStringLiteral("run")].toObject()[QStringLiteral("hardware_threads")].toInt() >= 1);
        const QJsonArray means = run[QStringLiteral("layers_mean")].toArray();
        const QJsonArray medians = run[QStringLiteral("layers_median")].toArray();
        QCOMPARE(means.size(), 3);
        QCOMPARE(medians.size(), 3);
        double measured = 0, measuredMean = 0;
        for (const auto v : medians)
            measured += v.toObject()[QStringLiteral("time_us")].toDouble();
        for (const auto v : means)
            measuredMean += v.toObject()[QStringLiteral("time_us")].toDouble();

        // compare predicts against the per-layer medians over the steps (robust to a preempted step).
        const CliResult cmp = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), runFile, QStringLiteral("--calibration"),
                                      cal, QStringLiteral("--json"), QStringLiteral("-")});
        QVERIFY2(cmp.exitCode == 0, qPrintable(cmp.err));
        const QJsonObject cmpObject = QJsonDocument::fromJson(cmp.out.toUtf8()).object();
        QCOMPARE(cmpObject[QStringLiteral("measured_statistic")].toString(), QStringLiteral("median"));
        const QJsonArray rows = cmpObject[QStringLiteral("rows")].toArray();
        QCOMPARE(rows.size(), 4 + 3);  // four phases, three layers
        QCOMPARE(rows[0].toObject()[QStringLiteral("what")].toString(), QStringLiteral("MoE layers"));
        QCOMPARE(rows[0].toObject()[QStringLiteral("measured_us")].toDouble(), measured);
        // A variant of the run file, written beside it.
        const auto writeVariant = [&dir](const QString& name, const QJsonObject& object) {
            const QString path = dir.filePath(name);
            QFile o(path);
            if (!o.open(QIODevice::WriteOnly) || o.write(QJsonDocument(object).toJson()) < 0)
                return QString();
            return path;
        };
        {  // A run file of an earlier version, with means only: those are compared.
            QJsonObject old = run;
            old.remove(QStringLiteral("layers_median"));
            const QString oldFile = writeVariant(QStringLiteral("old.json"), old);
            QVERIFY(!oldFile.isEmpty());
            const CliResult m = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), oldFile, QStringLiteral("--json"),
                                        QStringLiteral("-")});
            QVERIFY2(m.exitCode == 0, qPrintable(m.err));
            const QJsonObject mo = QJsonDocument::fromJson(m.out.toUtf8()).object();
            QCOMPARE(mo[QStringLiteral("measured_statistic")].toString(), QStringLiteral("mean"));
            QCOMPARE(mo[QStringLiteral("rows")].toArray()[0].toObject()[QStringLiteral("measured_us")].toDouble(), measuredMean);
        }
        for (const auto v : rows)
            QVERIFY(v.toObject()[QStringLiteral("predicted_us")].toDouble() > 0);
        {  // The same run as if on one hardware thread: the two ranks took turns, and compare says so.
            for (const int threads : {1, 64}) {
                QJsonObject shared = run;
                QJsonObject settings = shared[QStringLiteral("run")].toObject();
                settings[QStringLiteral("hardware_threads")] = threads;
                shared[QStringLiteral("run")] = settings;
                const QString sharedFile = writeVariant(QStringLiteral("threads%1.json").arg(threads), shared);
                QVERIFY(!sharedFile.isEmpty());
                const CliResult js = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), sharedFile, QStringLiteral("--json"),
                                             QStringLiteral("-")});
                QVERIFY2(js.exitCode == 0, qPrintable(js.err));
                QCOMPARE(QJsonDocument::fromJson(js.out.toUtf8()).object()[QStringLiteral("time_shared")].toBool(), threads == 1);
                const CliResult tx = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), sharedFile});
                QCOMPARE(tx.exitCode, 0);
                QCOMPARE(tx.out.contains(QStringLiteral("note: 2 ranks ran on 1 hardware thread and took turns")), threads == 1);
            }
        }
        // Calibrations before and after the run: the prediction is the mean of the two, each shown.
        // The second is the first with every expert timing doubled.
        QString slowText;
        const QRegularExpression point(QStringLiteral("\\[(\\d+), ([0-9.eE+-]+)\\]"));
        qsizetype at = 0;
        for (auto it = point.globalMatch(calText); it.hasNext();) {
            const auto m = it.next();
            slowText += calText.mid(at, m.capturedStart() - at)
                + QStringLiteral("[%1, %2]").arg(m.captured(1)).arg(2 * m.captured(2).toDouble(), 0, 'g', 17);
            at = m.capturedEnd();
        }
        slowText += calText.mid(at);
        QVERIFY(slowText != calText);
        const QString slow = dir.filePath(QStringLiteral("slow.yaml"));
        QFile slowFile(slow);
        QVERIFY(slowFile.open(QIODevice::WriteOnly));
        slowFile.write(slowText.toUtf8());
        slowFile.close();
        const CliResult two = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), runFile, QStringLiteral("--calibration"), cal,
                                      QStringLiteral("--calibration"), slow, QStringLiteral("--json"), QStringLiteral("-")});
        QVERIFY2(two.exitCode == 0, qPrintable(two.err));
        const QJsonArray bracket = QJsonDocument::fromJson(two.out.toUtf8()).object()[QStringLiteral("rows")].toArray();
        QCOMPARE(bracket.size(), rows.size());
        for (int i = 0; i < rows.size(); ++i) {
            const QJsonObject b = bracket[i].toObject();
            const double before = b[QStringLiteral("predicted_us_before")].toDouble(), after = b[QStringLiteral("predicted_us_after")].toDouble();
            QCOMPARE(before, rows[i].toObject()[QStringLiteral("predicted_us")].toDouble());  // the first alone
            QCOMPARE(b[QStringLiteral("predicted_us")].toDouble(), 0.5 * (before + after));
        }
        const QJsonObject experts = bracket[2].toObject();  // "experts": twice the time per weight
        QCOMPARE(experts[QStringLiteral("what")].toString(), QStringLiteral("experts"));
        QVERIFY(experts[QStringLiteral("predicted_us_after")].toDouble() > 1.5 * experts[QStringLiteral("predicted_us_before")].toDouble());
        const CliResult three = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), runFile, QStringLiteral("--calibration"), cal,
                                        QStringLiteral("--calibration"), cal, QStringLiteral("--calibration"), cal});
        QCOMPARE(three.exitCode, 2);
        QVERIFY2(three.err.contains(QStringLiteral("at most two")), qPrintable(three.err));

        // A calibration without the run's format (fp8) or without a CPU section: refused (the
        // built-in default's numbers were used under the file's name).
        const auto calWithout = [&](const std::function<bool(const QString&)>& drop, const QString& name) {
            QStringList kept;
            bool dropping = false;
            for (const QString& line : calText.split(QLatin1Char('\n'))) {
                dropping = drop(line) || (dropping && line.startsWith(QLatin1Char(' ')));
                if (!dropping)
                    kept << line;
            }
            const QString path = dir.filePath(name);
            QFile out(path);
            if (out.open(QIODevice::WriteOnly))
                out.write(kept.join(QLatin1Char('\n')).toUtf8());
            return path;
        };
        const QString noFp8 = calWithout([](const QString& l) { return l.trimmed().startsWith(QLatin1String("fp8:")); },
                                         QStringLiteral("no-fp8.yaml"));
        const CliResult missingCurve = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), runFile, QStringLiteral("--calibration"), noFp8});
        QCOMPARE(missingCurve.exitCode, 2);
        QVERIFY2(missingCurve.err.contains(QStringLiteral("no-fp8.yaml: error: has no expert_us_per_mweight curve for fp8")),
                 qPrintable(missingCurve.err));
        const QString noCpu = calWithout([](const QString& l) { return l == QLatin1String("cpu:"); }, QStringLiteral("no-cpu.yaml"));
        const CliResult missingCpu = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), runFile, QStringLiteral("--calibration"), noCpu});
        QCOMPARE(missingCpu.exitCode, 2);
        QVERIFY2(missingCpu.err.contains(QStringLiteral("has no measured cpu: section")), qPrintable(missingCpu.err));

        const CliResult text = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), runFile});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains(QStringLiteral("not measured: run moex-cli calibrate")), qPrintable(text.out));

        // A simulation's JSON, a broken file: exit 2, saying why.
        const QString simFile = dir.filePath(QStringLiteral("sim.json"));
        QCOMPARE(runCli({QStringLiteral("simulate"), s, QStringLiteral("--steps"), QStringLiteral("1"), QStringLiteral("--json"), simFile}).exitCode, 0);
        const CliResult notMeasured = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), simFile});
        QCOMPARE(notMeasured.exitCode, 2);
        QVERIFY2(notMeasured.err.contains(QStringLiteral("not a measured run")), qPrintable(notMeasured.err));
        QFile broken(dir.filePath(QStringLiteral("broken.json")));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("{\"measured\": true, \"run\": ");
        broken.close();
        const CliResult bad = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), broken.fileName()});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains(QStringLiteral("not valid JSON")), qPrintable(bad.err));
        // A real run file edited by hand or cut short: refused, saying which field (it printed a
        // full table, or stopped with an internal error on a "measured" that was a string).
        QFile runIn(runFile);
        QVERIFY(runIn.open(QIODevice::ReadOnly));
        const QJsonObject real = QJsonDocument::fromJson(runIn.readAll()).object();
        const auto edited = [&](const std::function<void(QJsonObject&)>& edit, const QString& needle) {
            QJsonObject o = real;
            edit(o);
            QFile editedFile(dir.filePath(QStringLiteral("edited.json")));
            QVERIFY(editedFile.open(QIODevice::WriteOnly | QIODevice::Truncate));
            editedFile.write(QJsonDocument(o).toJson());
            editedFile.close();
            const CliResult refused = runCli({QStringLiteral("compare"), QStringLiteral("--measured"), editedFile.fileName()});
            QVERIFY2(refused.exitCode == 2 && refused.err.contains(needle), qPrintable(needle + QStringLiteral(" / ") + refused.err));
        };
        const auto inRun = [](const char* key, const QJsonValue& v) {
            return [key, v](QJsonObject& o) {
                QJsonObject runObject = o[QStringLiteral("run")].toObject();
                runObject[QLatin1String(key)] = v;
                o[QStringLiteral("run")] = runObject;
            };
        };
        const auto firstTime = [](const QJsonValue& v) {
            return [v](QJsonObject& o) {
                const QString key = o.contains(QStringLiteral("layers_median")) ? QStringLiteral("layers_median") : QStringLiteral("layers_mean");
                QJsonArray layerRows = o[key].toArray();
                QJsonObject first = layerRows[0].toObject();
                first[QStringLiteral("time_us")] = v;
                layerRows[0] = first;
                o[key] = layerRows;
            };
        };
        edited([](QJsonObject& o) { o[QStringLiteral("measured")] = QStringLiteral("true"); }, QStringLiteral("not a measured run"));
        edited(inRun("ranks", 0), QStringLiteral("\"run\".ranks = 0"));
        edited(inRun("ranks", 99), QStringLiteral("\"run\".ranks = 99"));
        // Integers that nlohmann's get<int>() would wrap (2^32 + 1 -> 1) or truncate (1.5 -> 1).
        edited(inRun("ranks", 4294967297.0), QStringLiteral("'ranks' = 4294967297 is out of range"));
        edited(inRun("ranks", 1.5), QStringLiteral("'ranks' must be an integer, not 1.5"));
        edited(inRun("layers", QJsonArray{4294967297.0}), QStringLiteral("'layers'[0] = 4294967297 is out of range"));
        edited([](QJsonObject& o) { o[QStringLiteral("steps")] = 4294967297.0; }, QStringLiteral("\"steps\" = 4294967297"));
        edited(inRun("layers", QJsonArray{1, 500}), QStringLiteral("decoder layer 500 is not an MoE layer"));
        edited(inRun("layers", QJsonArray{1, 1}), QStringLiteral("listed twice"));
        edited(firstTime(-5.0), QStringLiteral("times are 0 to an hour"));
        edited(firstTime(1e300), QStringLiteral("1e+300 us"));
        edited([](QJsonObject& o) { o[QStringLiteral("steps")] = -1; }, QStringLiteral("\"steps\""));
        edited([](QJsonObject& o) { o[QStringLiteral("layers")] = QJsonArray(); }, QStringLiteral("cut short"));
        // Files that contradict themselves: each moved the prediction and was taken as measured.
        edited(firstTime(0.0), QStringLiteral("has a time_us of 0"));
        edited(firstTime(0.5), QStringLiteral("a phase is part of its layer"));
        edited([](QJsonObject& o) {
            QJsonArray layerRows = o[QStringLiteral("layers")].toArray();
            QJsonObject first = layerRows[0].toObject();
            QJsonArray load = first[QStringLiteral("expert_load")].toArray();
            load[0] = load[0].toInt() + 1000;
            first[QStringLiteral("expert_load")] = load;
            layerRows[0] = first;
            o[QStringLiteral("layers")] = layerRows;
        }, QStringLiteral("expert_load sums to"));
        edited([](QJsonObject& o) {
            QJsonArray g = o[QStringLiteral("gpus")].toArray();
            QJsonObject first = g[0].toObject();
            first[QStringLiteral("tokens")] = 0;
            g[0] = first;
            o[QStringLiteral("gpus")] = g;
        }, QStringLiteral("expert_load sums to"));
        edited([](QJsonObject& o) { o[QStringLiteral("gpus")] = QJsonObject{{QStringLiteral("tokens"), 8}}; },
               QStringLiteral("\"gpus\" must be a list, not object"));
        edited([](QJsonObject& o) { o[QStringLiteral("engine")] = 5; }, QStringLiteral("\"engine\" must be a string"));
        edited(inRun("hardware_threads", -5), QStringLiteral("\"run\".hardware_threads = -5"));
        // A scenario or model file edited since the run: it was predicted as if it had run.
        edited(inRun("model", QStringLiteral("small: hidden 64, experts 8 x 32, top-2, bf16 weights")),
               QStringLiteral("the scenario or its model changed since the run"));
        // The run's own settings are blamed on the run file, not on a --set this command never had.
        edited(inRun("set", QJsonArray{QStringLiteral("engine.ranks=abc")}), QStringLiteral("\"run\".set entry 'engine.ranks=abc':"));
        const CliResult badCal = runCli({QStringLiteral("calibrate"), QStringLiteral("--backend"), QStringLiteral("cuda"),
                                         QStringLiteral("-o"), cal});
        QCOMPARE(badCal.exitCode, 2);
        const CliResult noDir = runCli({QStringLiteral("calibrate"), QStringLiteral("--backend"), QStringLiteral("cpu"),
                                        QStringLiteral("-o"), dir.filePath(QStringLiteral("missing/cal.yaml"))});
        QCOMPARE(noDir.exitCode, 2);
        QVERIFY2(noDir.err.contains(QStringLiteral("there is no directory")), qPrintable(noDir.err));
        QVERIFY2(!noDir.err.contains(QStringLiteral("expert")), qPrintable(noDir.err));  // refused before measuring
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("engineExtra");
        QTest::addColumn<QString>("needle");
        QTest::newRow("more ranks than experts") << QStringList{QStringLiteral("--ranks"), QStringLiteral("17")} << QString()
                                                 << QStringLiteral("--ranks 17: error: engine.ranks = 17");  // the flag, not the file
        QTest::newRow("--ranks 0") << QStringList{QStringLiteral("--ranks"), QStringLiteral("0")} << QString()
                                   << QStringLiteral("--ranks");
        QTest::newRow("dense layer") << QStringList{QStringLiteral("--layers"), QStringLiteral("0")} << QString()
                                     << QStringLiteral("decoder layer 0 is not an MoE layer");
        QTest::newRow("bad --layers") << QStringList{QStringLiteral("--layers"), QStringLiteral("1,x")} << QString()
                                      << QStringLiteral("'x' is not a decoder-layer index");
        // Read by stoi: " 2", "+1" and "01" were layer 2, 1 and 1.
        QTest::newRow("--layers with a blank") << QStringList{QStringLiteral("--layers"), QStringLiteral("1, 2")} << QString()
                                               << QStringLiteral("' 2' is not a decoder-layer index");
        QTest::newRow("--layers with a leading zero") << QStringList{QStringLiteral("--layers"), QStringLiteral("01")} << QString()
                                                      << QStringLiteral("'01' is not a decoder-layer index");
        // A flag and a --set of the same key: the flag won without a word.
        QTest::newRow("--ranks and --set engine.ranks")
            << QStringList{QStringLiteral("--ranks"), QStringLiteral("2"), QStringLiteral("--set"), QStringLiteral("engine.ranks=3")}
            << QString() << QStringLiteral("--ranks and --set engine.ranks both given");
        QTest::newRow("--layers twice") << QStringList{QStringLiteral("--layers"), QStringLiteral("1,1")} << QString()
                                        << QStringLiteral("--layers 1,1: the layers must ascend, each once (1 after 1)");
        QTest::newRow("--layers descending") << QStringList{QStringLiteral("--layers"), QStringLiteral("3,1")} << QString()
                                             << QStringLiteral("(1 after 3)");
        QTest::newRow("--layers trailing comma") << QStringList{QStringLiteral("--layers"), QStringLiteral("1,")} << QString()
                                                 << QStringLiteral("--layers 1,: a comma with no layer after it");
        QTest::newRow("a list through --set") << QStringList{QStringLiteral("--set"), QStringLiteral("engine.layers=[1,2]")} << QString()
                                              << QStringLiteral("--set gives scalars only");
        QTest::newRow("--layers empty") << QStringList{QStringLiteral("--layers"), QString()} << QString()
                                        << QStringLiteral("option '--layers' is given an empty value");
        QTest::newRow("unknown backend") << QStringList{QStringLiteral("--backend"), QStringLiteral("tpu")} << QString()
                                         << QStringLiteral("known backends are cpu and cuda");
        QTest::newRow("weights beyond memory") << QStringList() << QStringLiteral("  memory_gb: 0.00001\n")
                                               << QStringLiteral("small.yaml:22:12: error: the engine's weights need");
        QTest::newRow("tokens beyond memory") << QStringList{QStringLiteral("--tokens"), QStringLiteral("1048576")}
                                              << QStringLiteral("  memory_gb: 2\n")
                                              << QStringLiteral("--tokens 1048576: error: a step's buffers at 1048576 tokens need up to");
        // Outputs that cannot be written are refused before the engine is built (not after the run).
        QTest::newRow("empty --json") << QStringList{QStringLiteral("--json"), QString()} << QString()
                                      << QStringLiteral("--json \"\": the output's file name is empty");
        QTest::newRow("--json where no file can be made") << QStringList{QStringLiteral("--json"), QStringLiteral("/proc/moex-run.json")}
                                                          << QString() << QStringLiteral("cannot write a file in /proc");
        // A --set of another engine key is not to blame: the file's line is.
        QTest::newRow("weights beyond memory, another key set") << QStringList{QStringLiteral("--set"), QStringLiteral("engine.seed=3")}
                                                                << QStringLiteral("  memory_gb: 0.00001\n")
                                                                << QStringLiteral("small.yaml:22:12: error: the engine's weights need");
        QTest::newRow("yaml: unknown weights mode") << QStringList() << QStringLiteral("  weights: everywhere\n")
                                                    << QStringLiteral("small.yaml:");
        QTest::newRow("yaml: layers out of order") << QStringList() << QStringLiteral("  layers: [3, 1]\n")
                                                   << QStringLiteral("engine.layers must ascend");
    }

    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, engineExtra);
        QFETCH(QString, needle);
        QTemporaryDir dir;
        const CliResult r = runCli(QStringList{QStringLiteral("run"), writeScenario(dir, engineExtra)} + args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(needle), qPrintable(r.err));
        QVERIFY(!r.err.contains(QStringLiteral("internal error")));
        QVERIFY2(!r.err.contains(QStringLiteral("set up in")), qPrintable(r.err));  // refused before the engine was built
    }
};

QTEST_GUILESS_MAIN(TestCliRun)
#include "tst_cli_run.moc"
