// The moex-cli contract (DESIGN.md section 4): commands, exit codes 0/2/1, located errors.
#include "cli_runner.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <algorithm>

namespace {

using Result = moex::test::CliResult;
using moex::test::runCli;

QString src(const QString& rel)
{
    return QStringLiteral(MOEX_SOURCE_DIR) + QLatin1Char('/') + rel;
}

QString testData(const QString& rel)
{
    return QStringLiteral(MOEX_TEST_DATA_DIR) + QLatin1Char('/') + rel;
}

QStringList samples(const QString& folder)
{
    QStringList out;
    const QDir dir(src(QStringLiteral("samples/")) + folder);
    for (const auto& f : dir.entryList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name))
        out << dir.filePath(f);
    return out;
}

}  // namespace

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void everySampleValidates();
    void brokenFilesGiveLocatedErrorsAndExit2();
    void unknownCommandAndOptions();
    void showReportsParameters();
    void importHfRealConfigs_data();
    void importHfRealConfigs();
    void importHfErrors();
    void topologyWritesLoadableYaml();
    void setOverrides();
    void unwritableOutputIsBadInput();
    void outputThatIsTheInputIsRefused();
    void outputThatTheScenarioReadsIsRefused();
    void standardOutputThatFailsIsAnError();
    void placeToStdout();
    void filesFromPipesAreReadOnce();
    void versionIsPrinted();
    void flagsThatWouldBeIgnoredAreRefused();
};

void TestCli::everySampleValidates()
{
    QStringList files = samples(QStringLiteral("scenarios")) + samples(QStringLiteral("models"))
        + samples(QStringLiteral("topologies"));
    QVERIFY(files.size() >= 10 + 8 + 6);
    const Result r = runCli(QStringList{QStringLiteral("validate")} + files);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(r.out.count(QStringLiteral(": ok (")), files.size());
}

void TestCli::brokenFilesGiveLocatedErrorsAndExit2()
{
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.yaml"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("name: bad\n"
            "model: " + src(QStringLiteral("samples/models/mixtral-8x7b.yaml")).toUtf8() + "\n"
            "topology: {builtin: hgx-h100}\n"
            "workload: {tokens_per_gpu: -4}\n"
            "overlpa: none\n");
    f.close();
    const QString good = src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml"));
    const Result r = runCli({QStringLiteral("validate"), good, bad});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(bad + QStringLiteral(":4:")), qPrintable(r.err));
    QVERIFY(r.err.contains(bad + QStringLiteral(":5:1: error: unknown key 'overlpa'")));
    QVERIFY(r.err.contains(QStringLiteral("did you mean 'overlap'")));
    QVERIFY(r.out.contains(good + QStringLiteral(": ok")));  // the valid file is still reported
    QVERIFY(r.err.contains(QStringLiteral("1 of 2 files invalid")));

    const Result missing = runCli({QStringLiteral("validate"), dir.filePath(QStringLiteral("nope.yaml"))});
    QCOMPARE(missing.exitCode, 2);
    QVERIFY(missing.err.contains(QStringLiteral("cannot open file")));

    // What simulate refuses before its first step, validate refuses too: a calibration file it
    // cannot read, a counts file that is not the model's (validate said ok, simulate exit 2).
    const QString cal = dir.filePath(QStringLiteral("nan.yaml"));
    QFile c(cal);
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write("nvlink_efficiency: .nan\n");
    c.close();
    Result r2 = runCli({QStringLiteral("validate"), good, QStringLiteral("--set"), QStringLiteral("calibration=") + cal});
    QCOMPARE(r2.exitCode, 2);
    QVERIFY2(r2.err.contains(cal + QStringLiteral(":1:")), qPrintable(r2.err));
    const QString counts = dir.filePath(QStringLiteral("m6.json"));
    QFile m(counts);
    QVERIFY(m.open(QIODevice::WriteOnly));
    m.write("[[10, 20, 30, 40, 50, 60]]\n");
    m.close();
    r2 = runCli({QStringLiteral("validate"), good, QStringLiteral("--set"), QStringLiteral("workload.routing.kind=counts"),
                 QStringLiteral("--set"), QStringLiteral("workload.routing.file=") + counts});
    QCOMPARE(r2.exitCode, 2);
    QVERIFY2(r2.err.contains(QStringLiteral("row 0 has 6 counts, the model has 8 experts")), qPrintable(r2.err));
    // And the engine section that run refuses: more ranks than experts, a backend this build lacks.
    r2 = runCli({QStringLiteral("validate"), good, QStringLiteral("--set"), QStringLiteral("engine.backend=cpu"), QStringLiteral("--set"),
                 QStringLiteral("engine.ranks=9")});
    QCOMPARE(r2.exitCode, 2);
    QVERIFY2(r2.err.contains(QStringLiteral("engine.ranks = 9: give 1 to 8 ranks")), qPrintable(r2.err));
    r2 = runCli({QStringLiteral("validate"), good, QStringLiteral("--set"), QStringLiteral("engine.backend=cuda")});
    QCOMPARE(r2.exitCode, 2);
    QVERIFY2(r2.err.contains(QStringLiteral("this build has no CUDA engine backend")), qPrintable(r2.err));
}

void TestCli::unknownCommandAndOptions()
{
    Result r = runCli({QStringLiteral("valdiate")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains(QStringLiteral("did you mean 'validate'")));
    r = runCli({QStringLiteral("validate"), QStringLiteral("--sett"), QStringLiteral("a=b"), QStringLiteral("x.yaml")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("did you mean '--set'")), qPrintable(r.err));
    r = runCli({QStringLiteral("validate")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains(QStringLiteral("usage")));
    // A command's own usage: "help CMD" and "CMD --help" (both of compare's forms), exit 0; an
    // unknown command's help is an error (it printed the general help and exit 0).
    for (const QStringList& args : {QStringList{QStringLiteral("help"), QStringLiteral("compare")},
                                    QStringList{QStringLiteral("compare"), QStringLiteral("--help")}}) {
        r = runCli(args);
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.count(QStringLiteral("usage: moex-cli compare")) == 2 && r.out.contains(QStringLiteral("--measured"))
                     && !r.out.contains(QStringLiteral("place")),
                 qPrintable(r.out));
    }
    r = runCli({QStringLiteral("help"), QStringLiteral("nope")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains(QStringLiteral("unknown command 'nope'")));
    r = runCli({QStringLiteral("topology"), QStringLiteral("hgx-h200"), QStringLiteral("--nodes"), QStringLiteral("zero")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains(QStringLiteral("needs an integer")));
    // An integer too large for any type is out of range, not "not an integer".
    r = runCli({QStringLiteral("topology"), QStringLiteral("hgx-h200"), QStringLiteral("--nodes"),
                QStringLiteral("99999999999999999999999")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("'--nodes' = 99999999999999999999999 is out of range")), qPrintable(r.err));
    // A missing value is named as typed.
    r = runCli({QStringLiteral("import-hf"), QStringLiteral("config.json"), QStringLiteral("-o")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("option '-o' (--output) needs a value")), qPrintable(r.err));
    r = runCli({});
    QCOMPARE(r.exitCode, 2);
    r = runCli({QStringLiteral("help")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains(QStringLiteral("moex-cli validate")));
}

void TestCli::showReportsParameters()
{
    const Result r = runCli({QStringLiteral("show"), src(QStringLiteral("samples/scenarios/deepseek-r1-decode-nvl72.yaml"))});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(QStringLiteral("total")));
    QVERIFY(r.out.contains(QStringLiteral("active per token")));
    // One DeepSeek-R1 expert: 3 x 7168 x 2048 parameters in fp8 with 128x128 block scales.
    const qint64 expertBytes = qint64(3) * 7168 * 2048 + (qint64(3) * 7168 * 2048) / (128 * 128) * 4;
    QVERIFY2(r.out.contains(QString::number(expertBytes) + QStringLiteral(" bytes")), qPrintable(r.out));
    QVERIFY(r.out.contains(QStringLiteral("72 × ")));
    QVERIFY(r.out.contains(QStringLiteral("4 expert slots per GPU")));
}

void TestCli::importHfRealConfigs_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("topk");
    for (auto [f, e, k] : {std::tuple{"deepseek-ai--DeepSeek-R1.json", 256, 8},
                           std::tuple{"moonshotai--Kimi-K2-Instruct.json", 384, 8},
                           std::tuple{"mistralai--Mixtral-8x7B-v0.1.json", 8, 2},
                           std::tuple{"openai--gpt-oss-120b.json", 128, 4},
                           std::tuple{"Qwen--Qwen3-235B-A22B.json", 128, 8}})
        QTest::addRow("%s", f) << QString::fromUtf8(f) << e << k;
}

void TestCli::importHfRealConfigs()
{
    QFETCH(QString, file);
    QFETCH(int, experts);
    QFETCH(int, topk);
    const QString config = testData(QStringLiteral("hf-configs/") + file);
    QVERIFY2(QFile::exists(config), qPrintable(config));
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("model.yaml"));
    Result r = runCli({QStringLiteral("import-hf"), config, QStringLiteral("-o"), out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString yaml = QString::fromUtf8(f.readAll());
    QVERIFY(yaml.contains(QStringLiteral("routed_experts: %1\n").arg(experts)));
    QVERIFY(yaml.contains(QStringLiteral("experts_per_token: %1\n").arg(topk)));
    r = runCli({QStringLiteral("validate"), out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
}

void TestCli::importHfErrors()
{
    QTemporaryDir dir;
    const QString dense = dir.filePath(QStringLiteral("dense.json"));
    QFile f(dense);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 14336})");
    f.close();
    Result r = runCli({QStringLiteral("import-hf"), dense});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(dense) && r.err.contains(QStringLiteral("num_local_experts")), qPrintable(r.err));
    // The output file is never half-written: a failed import leaves no file.
    const QString out = dir.filePath(QStringLiteral("out.yaml"));
    r = runCli({QStringLiteral("import-hf"), dense, QStringLiteral("-o"), out});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(!QFile::exists(out));
}

void TestCli::topologyWritesLoadableYaml()
{
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("t.yaml"));
    Result r = runCli({QStringLiteral("topology"), QStringLiteral("hgx-h200"), QStringLiteral("--nodes"),
                       QStringLiteral("2"), QStringLiteral("-o"), out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    r = runCli({QStringLiteral("validate"), out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(QStringLiteral("16 GPUs, 2 NVLink domains")));
    r = runCli({QStringLiteral("topology"), QStringLiteral("dgx-a100")});
    QCOMPARE(r.exitCode, 2);
    // Twelve NVL72 racks written out hold more than moex reads back from a file: nothing is
    // written, and the error gives the built-in form a scenario loads at any size.
    const QString big = dir.filePath(QStringLiteral("big.yaml"));
    r = runCli({QStringLiteral("topology"), QStringLiteral("gb200-nvl72"), QStringLiteral("--racks"), QStringLiteral("12"),
                QStringLiteral("-o"), big});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("topology: {builtin: gb200-nvl72, racks: 12}")), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(big));
}

void TestCli::setOverrides()
{
    const QString s = src(QStringLiteral("samples/scenarios/deepseek-r1-decode-nvl72.yaml"));
    Result r = runCli({QStringLiteral("show"), s, QStringLiteral("--set"), QStringLiteral("placement.redundant_slots=64")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(QStringLiteral("5 expert slots per GPU")));
    r = runCli({QStringLiteral("validate"), s, QStringLiteral("--set"), QStringLiteral("workload.tokens_per_gpu=-1")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains(QStringLiteral("out of range")));
    // The error names the flag that set the value, not the file's line that holds a good one.
    QVERIFY2(r.err.contains(QStringLiteral("--set workload.tokens_per_gpu=-1: error:")) && !r.err.contains(s),
             qPrintable(r.err));
    // --set on a file it cannot edit (a model, a config.json) was ignored, even an unknown key.
    const QString model = src(QStringLiteral("samples/models/mixtral-8x7b.yaml"));
    for (const QString& command : {QStringLiteral("validate"), QStringLiteral("show")}) {
        r = runCli({command, model, QStringLiteral("--set"), QStringLiteral("routed_experts=3")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("--set edits scenarios; this is a model file")), qPrintable(r.err));
    }
    // A directory where a model file belongs is named as one, not as missing.
    r = runCli({QStringLiteral("validate"), src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml")),
                QStringLiteral("--set"), QStringLiteral("model=../models")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("model file '../models' is a directory, not a file")), qPrintable(r.err));
    // What simulate refuses before its first step, validate refuses too (it said "ok"): 289 slots
    // for eplb on 72 GPUs, with the multiples on either side and the redundant slots each means,
    // blamed on the flag that made the count (it was the file's placement line, which holds 32).
    r = runCli({QStringLiteral("validate"), s, QStringLiteral("--set"), QStringLiteral("placement.redundant_slots=33")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--set placement.redundant_slots=33: error: placement: eplb needs the slots to divide "
                                           "evenly over the GPUs: 289 slots on 72 GPUs (try 288 or 360 slots: redundant slots 32 or 104)")),
             qPrintable(r.err));
    r = runCli({QStringLiteral("validate"), s, QStringLiteral("--set"), QStringLiteral("topology.racks=16"), QStringLiteral("--set"),
                QStringLiteral("placement.budget_ms=5")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--set topology.racks=16: error: placement: eplb needs")), qPrintable(r.err));
    r = runCli({QStringLiteral("validate"), s, QStringLiteral("--set"), QStringLiteral("placement.redundant_slots=33"),
                QStringLiteral("--set"), QStringLiteral("placement.strategy=contiguous")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));  // contiguous takes any count
    // Weights that do not fit because of a flag: blamed on the flag (it was the file's placement line).
    const QString mixtral = src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml"));
    r = runCli({QStringLiteral("validate"), mixtral, QStringLiteral("--set"), QStringLiteral("placement.redundant_slots=128")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.startsWith(QStringLiteral("--set placement.redundant_slots=128: error: weights do not fit: 17 expert slots"))
                 && r.err.contains(QStringLiteral("with that flag)")),
             qPrintable(r.err));
}

// An output path that cannot be written is the user's input, not an internal failure: exit 2, the
// path and the reason in the message, said before the command does its work (a run or a
// calibration takes minutes), and nothing left behind (the directory that stood in the way
// untouched). A write that fails later is tst_scenario's atomicSaveKeepsOldFileOnFailure.
void TestCli::unwritableOutputIsBadInput()
{
    QTemporaryDir dir;
    const QString scenario = src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml"));
    const QString missingDir = dir.filePath(QStringLiteral("no-such-dir/out.json"));
    Result r = runCli({QStringLiteral("simulate"), scenario, QStringLiteral("--steps"), QStringLiteral("1"), QStringLiteral("--json"), missingDir});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("error: --json ") + missingDir + QStringLiteral(": there is no directory ")
                            + dir.filePath(QStringLiteral("no-such-dir"))),
             qPrintable(r.err));
    QVERIFY2(r.out.isEmpty(), qPrintable(r.out));  // refused before the simulation's summary
    QVERIFY(!r.err.contains(QStringLiteral("internal error")));
    // A directory where the file should go.
    const QString blocker = dir.filePath(QStringLiteral("taken"));
    QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("taken")));
    r = runCli({QStringLiteral("topology"), QStringLiteral("hgx-h200"), QStringLiteral("-o"), blocker});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("-o ") + blocker + QStringLiteral(": is a directory")), qPrintable(r.err));
    QVERIFY(QFileInfo(blocker).isDir());
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList());
    // The same for run's --json, before any weights are built.
    r = runCli({QStringLiteral("run"), scenario, QStringLiteral("--json"), missingDir});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("there is no directory")), qPrintable(r.err));
    QVERIFY2(!r.err.contains(QStringLiteral("warm-up")), qPrintable(r.err));
}

void TestCli::outputThatIsTheInputIsRefused()
{
    // The same file by another name (./, a link): exit 2 naming both, the input byte for byte.
    QTemporaryDir dir;
    const QString scenario = dir.filePath(QStringLiteral("s.yaml"));
    QVERIFY(QFile::copy(src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml")), scenario));
    QFile in(scenario);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const QByteArray before = in.readAll();
    in.close();
    // (Refused before the scenario is read: its relative model path need not resolve here.)
    QVERIFY(QFile::link(scenario, dir.filePath(QStringLiteral("link.yaml"))));
    for (const QString& out : {QStringLiteral("./s.yaml"), QStringLiteral("link.yaml")}) {
        const Result r = runCli({QStringLiteral("simulate"), QStringLiteral("s.yaml"), QStringLiteral("--steps"), QStringLiteral("1"),
                                 QStringLiteral("--json"), out},
                                dir.path());
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("is the input file s.yaml")), qPrintable(r.err));
    }
    const QString config = dir.filePath(QStringLiteral("config.json"));
    QVERIFY(QFile::copy(src(QStringLiteral("tests/data/hf-configs/MiniMaxAI--MiniMax-M2.5.json")), config));
    const Result hf = runCli({QStringLiteral("import-hf"), config, QStringLiteral("-o"), config});
    QCOMPARE(hf.exitCode, 2);
    QVERIFY2(hf.err.contains(QStringLiteral("'-o ")) && hf.err.contains(QStringLiteral("is the input file")), qPrintable(hf.err));
    QVERIFY(in.open(QIODevice::ReadOnly));
    QCOMPARE(in.readAll(), before);
}

void TestCli::outputThatTheScenarioReadsIsRefused()
{
    // Not only the file named on the command line: the model, topology and routing file the
    // scenario points to are inputs too. simulate, compare and place refuse to write over them,
    // by any name, and leave them byte for byte.
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("scenarios")));
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("models")));
    const QString scenario = dir.filePath(QStringLiteral("scenarios/s.yaml"));
    const QString model = dir.filePath(QStringLiteral("models/mixtral-8x7b.yaml"));
    QVERIFY(QFile::copy(src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml")), scenario));
    QVERIFY(QFile::copy(src(QStringLiteral("samples/models/mixtral-8x7b.yaml")), model));
    const QString counts = dir.filePath(QStringLiteral("counts.json"));
    {
        QFile f(counts);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QByteArray rows = "[";
        for (int l = 0; l < 32; ++l)
            rows += QByteArray(l ? "," : "") + "[10,20,30,40,50,60,70,80]";
        f.write(rows + "]\n");
    }
    const auto bytes = [](const QString& path) {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    };
    const QByteArray modelBefore = bytes(model);
    const QByteArray countsBefore = bytes(counts);
    const QStringList steps = {QStringLiteral("--steps"), QStringLiteral("2")};
    const QStringList countsSets = {QStringLiteral("--set"), QStringLiteral("workload.routing.kind=counts"), QStringLiteral("--set"),
                                    QStringLiteral("workload.routing.file=") + counts};
    struct Case {
        QStringList args;
        QString role;
    };
    const QList<Case> cases = {
        {QStringList{QStringLiteral("simulate"), scenario} + steps + QStringList{QStringLiteral("--json"), QStringLiteral("models/mixtral-8x7b.yaml")},
         QStringLiteral("is its model")},
        {QStringList{QStringLiteral("simulate"), scenario} + steps + QStringList{QStringLiteral("--json"), QStringLiteral("./models/../models/mixtral-8x7b.yaml")},
         QStringLiteral("is its model")},
        {QStringList{QStringLiteral("compare"), scenario, scenario} + steps + QStringList{QStringLiteral("--json"), model},
         QStringLiteral("is its model")},
        {QStringList{QStringLiteral("place"), scenario, QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--format"),
                     QStringLiteral("native"), QStringLiteral("-o"), model},
         QStringLiteral("is its model")},
        {QStringList{QStringLiteral("simulate"), scenario} + steps + countsSets + QStringList{QStringLiteral("--json"), QStringLiteral("counts.json")},
         QStringLiteral("is its routing file")},
    };
    for (const Case& c : cases) {
        const Result r = runCli(c.args, dir.path());
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(c.role) && r.err.contains(QStringLiteral("writing it would replace that input")), qPrintable(r.err));
    }
    QCOMPARE(bytes(model), modelBefore);
    QCOMPARE(bytes(counts), countsBefore);
    // The same run with an output of its own writes it.
    const Result ok = runCli(QStringList{QStringLiteral("simulate"), scenario} + steps + countsSets + QStringList{QStringLiteral("--json"), QStringLiteral("out.json")},
                             dir.path());
    QCOMPARE(ok.exitCode, 0);
    QVERIFY(bytes(dir.filePath(QStringLiteral("out.json"))).contains("\"summary\""));
}

void TestCli::standardOutputThatFailsIsAnError()
{
    // `--json -`, `-o -` or the summary written to a standard output that takes nothing (a full
    // disk, here /dev/full): exit 2 and a message, not exit 0 with the output lost.
    if (!QFileInfo::exists(QStringLiteral("/dev/full")))
        QSKIP("no /dev/full on this system");
    const QString scenario = src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml"));
    const QList<QStringList> commands = {
        {QStringLiteral("simulate"), scenario, QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--json"), QStringLiteral("-")},
        {QStringLiteral("simulate"), scenario, QStringLiteral("--steps"), QStringLiteral("2")},
        {QStringLiteral("place"), scenario, QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--format"),
         QStringLiteral("sglang"), QStringLiteral("-o"), QStringLiteral("-")},
        {QStringLiteral("import-hf"), src(QStringLiteral("tests/data/hf-configs/MiniMaxAI--MiniMax-M2.5.json"))},
    };
    for (const QStringList& args : commands) {
        QProcess p;
        p.setStandardOutputFile(QStringLiteral("/dev/full"));
        p.start(QStringLiteral(MOEX_CLI_PATH), args);
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == 2, qPrintable(args.front() + QStringLiteral(": exit %1, ").arg(p.exitCode()) + err));
        QVERIFY2(err.contains(QStringLiteral("cannot write to standard output")), qPrintable(err));
    }
}

void TestCli::placeToStdout()
{
    // '-o -': the placement file on stdout (no file named '-'), the summary on stderr.
    QTemporaryDir dir;
    const Result r = runCli({QStringLiteral("place"), src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml")),
                             QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--format"), QStringLiteral("sglang"),
                             QStringLiteral("-o"), QStringLiteral("-")},
                            dir.path());
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith(QStringLiteral("{\"physical_to_logical_map\"")), qPrintable(r.out.left(200)));
    QVERIFY2(r.err.contains(QStringLiteral("wrote the file to stdout (sglang)")), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("-"))));
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"

// `validate <(cat f)` and `show <(cat f)`: a pipe gives its bytes once, so the kind detection and
// the loader must share one read (the loader used to find the pipe empty).
void TestCli::filesFromPipesAreReadOnce()
{
    QTemporaryDir dir;
    const QString scenario = dir.filePath(QStringLiteral("s.yaml"));
    QFile f(scenario);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("name: piped\n"
            "model: " + src(QStringLiteral("samples/models/mixtral-8x7b.yaml")).toUtf8() + "\n"
            "topology: {builtin: hgx-h100}\n");
    f.close();
    const QString model = src(QStringLiteral("samples/models/deepseek-r1.yaml"));
    const QString topology = src(QStringLiteral("samples/topologies/hgx-h100.yaml"));
    QProcess bash;
    bash.start(QStringLiteral("/bin/bash"),
               {QStringLiteral("-c"), QStringLiteral("\"$0\" validate <(cat \"$1\") <(cat \"$2\") <(cat \"$3\")"),
                QStringLiteral(MOEX_CLI_PATH), scenario, model, topology});
    QVERIFY(bash.waitForFinished(120000));
    const QString out = QString::fromUtf8(bash.readAllStandardOutput());
    const QString err = QString::fromUtf8(bash.readAllStandardError());
    QVERIFY2(bash.exitCode() == 0, qPrintable(err));
    QVERIFY2(out.contains(QStringLiteral(": ok (scenario: Mixtral-8x7B on hgx-h100, 8 GPUs, 1 expert slot per GPU")),
             qPrintable(out));
    QVERIFY(out.contains(QStringLiteral(": ok (model: DeepSeek-R1")));
    QVERIFY(out.contains(QStringLiteral(": ok (topology: hgx-h100, 8 GPUs, 1 NVLink domain)")));

    bash.start(QStringLiteral("/bin/bash"), {QStringLiteral("-c"), QStringLiteral("\"$0\" show <(cat \"$1\")"),
                                             QStringLiteral(MOEX_CLI_PATH), scenario});
    QVERIFY(bash.waitForFinished(120000));
    QCOMPARE(bash.exitCode(), 0);
    QVERIFY(QString::fromUtf8(bash.readAllStandardOutput()).contains(QStringLiteral("in 1 NVLink domain,")));
}

// Flags a command would have dropped or misread in silence (exit 0): each an error, exit 2.
void TestCli::flagsThatWouldBeIgnoredAreRefused()
{
    const QString s = src(QStringLiteral("samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml"));
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("p.yaml"));
    const struct {
        QStringList args;
        const char* error;
    } rows[] = {
        // The output's name left out: the next option was taken as the file name (a file "--seed").
        {{QStringLiteral("simulate"), s, QStringLiteral("--json"), QStringLiteral("--seed"), QStringLiteral("3")},
         "option '--json' needs a value, but '--seed' follows it, which is an option"},
        {{QStringLiteral("simulate"), s, QStringLiteral("--steps"), QStringLiteral(" 3")}, "'--steps' needs an integer, got ' 3'"},
        // The last of two values won.
        {{QStringLiteral("simulate"), s, QStringLiteral("--set"), QStringLiteral("workload.tokens_per_gpu=8"), QStringLiteral("--set"),
          QStringLiteral("workload.tokens_per_gpu=16")},
         "--set workload.tokens_per_gpu given twice (=8 and =16)"},
        // Read as "no calibration": the built-in default.
        {{QStringLiteral("simulate"), s, QStringLiteral("--calibration"), QString()}, "option '--calibration' is given an empty value"},
        // The run file says what ran: these were ignored.
        {{QStringLiteral("compare"), QStringLiteral("--measured"), dir.filePath(QStringLiteral("run.json")), QStringLiteral("--steps"),
          QStringLiteral("5")},
         "--steps is not an option of compare --measured"},
        // A placement the H100s cannot hold was exported (17 slots a GPU need 195 GB).
        {{QStringLiteral("place"), s, QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--slots"),
          QStringLiteral("136"), QStringLiteral("--format"), QStringLiteral("native"), QStringLiteral("-o"), out},
         "--slots 136: weights do not fit: 17 expert slots per GPU"},
        // --slots and --strategy decide; a --set of them was overridden.
        {{QStringLiteral("place"), s, QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--format"),
          QStringLiteral("native"), QStringLiteral("-o"), out, QStringLiteral("--set"), QStringLiteral("placement.redundant_slots=8")},
         "--set placement.redundant_slots=8: place takes the placement from --strategy, --slots and --budget-ms"},
        {{QStringLiteral("place"), s, QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--budget-ms"),
          QStringLiteral("5"), QStringLiteral("--format"), QStringLiteral("native"), QStringLiteral("-o"), out},
         "--budget-ms applies to --strategy search only, not eplb"},
    };
    for (const auto& row : rows) {
        const Result r = runCli(row.args);
        QVERIFY2(r.exitCode == 2 && r.err.contains(QString::fromUtf8(row.error)),
                 qPrintable(row.args.join(QLatin1Char(' ')) + QStringLiteral(" -> ") + QString::number(r.exitCode) + QStringLiteral(": ") + r.err));
        QVERIFY(!QFileInfo::exists(out));
        QVERIFY(!QFileInfo::exists(QStringLiteral("--seed")));
    }

    // compare: no ratio where A's term is 0 (it was 0.00x, and "ratio": 0 in JSON: "B has none").
    const QString b = dir.filePath(QStringLiteral("b.yaml"));
    QFile in(s);
    QVERIFY(in.open(QIODevice::ReadOnly));
    QString text = QString::fromUtf8(in.readAll());
    text.replace(QStringLiteral("model: ../models/"), QStringLiteral("model: ") + src(QStringLiteral("samples/models/")));
    text.replace(QStringLiteral("\nworkload:\n"), QStringLiteral("\nworkload:\n  context_cv: 0.5\n"));
    QFile outB(b);
    QVERIFY(outB.open(QIODevice::WriteOnly));
    outB.write(text.toUtf8());
    outB.close();
    Result r = runCli({QStringLiteral("compare"), s, b, QStringLiteral("--steps"), QStringLiteral("1"), QStringLiteral("--json"),
                       QStringLiteral("-")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject ratios = QJsonDocument::fromJson(r.out.toUtf8()).object().value(QStringLiteral("ratio")).toObject();
    QVERIFY2(ratios.value(QStringLiteral("dp_sync_us")).isNull() && ratios.contains(QStringLiteral("dp_sync_us")), qPrintable(r.out));
    QVERIFY(ratios.value(QStringLiteral("step_time_us")).toDouble() > 1.0);
    r = runCli({QStringLiteral("compare"), s, b, QStringLiteral("--steps"), QStringLiteral("1")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QStringList lines = r.out.split(QLatin1Char('\n'));
    const auto dp = std::find_if(lines.begin(), lines.end(), [](const QString& l) { return l.startsWith(QStringLiteral("DP attention wait")); });
    QVERIFY(dp != lines.end());
    QVERIFY2(dp->contains(QStringLiteral("  –  ")) && !dp->contains(QStringLiteral("0.00x")), qPrintable(*dp));
    // Every row as wide as the header: the widest label no longer pushes its row out.
    const auto header = std::find_if(lines.begin(), lines.end(), [](const QString& l) { return l.endsWith(QStringLiteral("B-A")); });
    QVERIFY(header != lines.end());
    for (auto it = header + 1; it != lines.end() && !it->isEmpty(); ++it)
        QVERIFY2(it->size() == header->size(), qPrintable(*it + QStringLiteral(" | ") + *header));
}

void TestCli::versionIsPrinted()
{
    for (const QString& flag : {QStringLiteral("--version"), QStringLiteral("-V")}) {
        const Result r = runCli({flag});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith(QStringLiteral("moex-cli ") + QStringLiteral(MOEX_VERSION_EXPECTED)), qPrintable(r.out));
    }
    QVERIFY(runCli({QStringLiteral("help")}).out.contains(QStringLiteral("moex-cli --version")));
}
