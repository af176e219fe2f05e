// moex-cli place end to end (issue 4, item 3): every --format writes a file that parses back
// (exporters.h) into the placement the strategy makes; bad --strategy, --format, --slots and a
// --load of the wrong shape exit 2 with a message that says what, and write nothing.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "placement/exporters.h"
#include "placement/strategies.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"
#endif

#include "cli_runner.h"

#include <algorithm>

#include <QtTest>

using namespace moex;

namespace {

using Result = moex::test::CliResult;
using moex::test::runCli;

QString scenarioPath(const QString& name)
{
    return moex::test::sampleScenario(name);
}

const char* const kMixtral = "mixtral-8x7b-decode-hgx-h100";
const char* const kNvl = "deepseek-r1-decode-nvl72";

void writeText(const QString& path, const QByteArray& text)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}

// A plain JSON load matrix of `layers` rows of `experts` loads.
QByteArray matrix(int layers, int experts)
{
    QByteArray out = "[";
    for (int l = 0; l < layers; ++l) {
        out += l ? ",[" : "[";
        for (int e = 0; e < experts; ++e)
            out += (e ? "," : "") + QByteArray::number(10 + (l * 7 + e * 13) % 50);
        out += "]";
    }
    return out + "]";
}

}  // namespace

class TestCliPlace : public QObject {
    Q_OBJECT
private slots:
    void everyFormatParsesBackToThePlacement_data();
    void everyFormatParsesBackToThePlacement();
    void loadFileIsUsed();
    void loadStatsTableKeepsColumnsApart();
    void badInputExits2AndWritesNothing_data();
    void badInputExits2AndWritesNothing();
};

void TestCliPlace::everyFormatParsesBackToThePlacement_data()
{
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("slotCount");
    QTest::addColumn<QString>("format");
    for (const char* f : {"native", "sglang", "trtllm", "vllm-ascend", "eplb"}) {
        QTest::addRow("mixtral eplb 16, %s", f)
            << QString::fromLatin1(kMixtral) << QStringLiteral("eplb") << 16 << QString::fromLatin1(f);
        QTest::addRow("mixtral gem 24, %s", f)
            << QString::fromLatin1(kMixtral) << QStringLiteral("gem") << 24 << QString::fromLatin1(f);
    }
    // DeepSeek-R1: 3 dense layers first, so SGLang rows and TensorRT-LLM keys are offset.
    for (const char* f : {"sglang", "trtllm"})
        QTest::addRow("deepseek eplb 288, %s", f)
            << QString::fromLatin1(kNvl) << QStringLiteral("eplb") << 288 << QString::fromLatin1(f);
    QTest::addRow("mixtral search 16, eplb")
        << QString::fromLatin1(kMixtral) << QStringLiteral("search") << 16 << QStringLiteral("eplb");
    QTest::addRow("mixtral round-robin 8, native")
        << QString::fromLatin1(kMixtral) << QStringLiteral("round-robin") << 8 << QStringLiteral("native");
}

void TestCliPlace::everyFormatParsesBackToThePlacement()
{
    QFETCH(QString, scenario);
    QFETCH(QString, strategy);
    QFETCH(int, slotCount);
    QFETCH(QString, format);
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("placement.out"));
    const QString path = scenarioPath(scenario);
    QStringList args{QStringLiteral("place"),      path,
                     QStringLiteral("--strategy"), strategy,
                     QStringLiteral("--slots"),    QString::number(slotCount),
                     QStringLiteral("--format"),   format,
                     QStringLiteral("-o"),         out};
    if (strategy == QLatin1String("search"))
        args << QStringLiteral("--budget-ms") << QStringLiteral("100") << QStringLiteral("--seed")
             << QStringLiteral("3");
    const Result r = runCli(args);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(QStringLiteral("balance")));
    QVERIFY(r.out.contains(QStringLiteral("simulated")));

    // What the strategy makes for that scenario, computed here the way the command does.
    Scenario s = loadScenarioFile(path.toStdString());
    s.placement.strategy = strategy.toStdString();
    s.placement.redundant_slots = slotCount - s.model.routed_experts;
    s.placement.budget_ms = 100;
    const Placement expected = resolvePlacement(s, {}, 3);

    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const std::string text = f.readAll().toStdString();
    const ExportFormat fmt = exportFormatFromString(format.toStdString());
    const Placement back = parsePlacementExport(text, s.model, s.topology.numGpus(), fmt, out.toStdString());
    QCOMPARE(back.numLayers(), s.model.numMoeLayers());
    for (int l = 0; l < back.numLayers(); ++l)
        QVERIFY2(back.layers[static_cast<std::size_t>(l)].gpu_slots ==
                     expected.layers[static_cast<std::size_t>(l)].gpu_slots,
                 qPrintable(QStringLiteral("layer %1").arg(l)));
    QVERIFY(checkPlacement(back, s.model.routed_experts, s.topology.numGpus()).empty());
}

void TestCliPlace::loadFileIsUsed()
{
    QTemporaryDir dir;
    const QString load = dir.filePath(QStringLiteral("load.json"));
    writeText(load, matrix(32, 8));
    const QString out = dir.filePath(QStringLiteral("x.json"));
    const Result r =
        runCli({QStringLiteral("place"), scenarioPath(QLatin1String(kMixtral)), QStringLiteral("--strategy"),
                QStringLiteral("eplb"), QStringLiteral("--slots"), QStringLiteral("16"), QStringLiteral("--load"), load,
                QStringLiteral("--format"), QStringLiteral("sglang"), QStringLiteral("-o"), out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(load));
    QVERIFY(QFile::exists(out));
}

// Counts summed over many buffer rows reach 13 digits and more: each column stays two spaces from
// the next (at fixed widths the max ran into the mean).
void TestCliPlace::loadStatsTableKeepsColumnsApart()
{
    QTemporaryDir dir;
    const QString load = dir.filePath(QStringLiteral("big.json"));
    writeText(load, "[[1099511627776, 1099511627776, 3], [5, 1, 0]]");
    const Result r = runCli({QStringLiteral("load-stats"), load});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QStringList lines = r.out.split(QLatin1Char('\n'));
    const auto row = std::find_if(lines.begin(), lines.end(), [](const QString& l) { return l.trimmed().startsWith(QLatin1String("0 ")); });
    QVERIFY2(row != lines.end(), qPrintable(r.out));
    const QStringList cells = row->simplified().split(QLatin1Char(' '));
    QCOMPARE(cells, (QStringList{QStringLiteral("0"), QStringLiteral("2199023255555"), QStringLiteral("1099511627776"),
                                 QStringLiteral("733007751851.7"), QStringLiteral("1.500")}));
    QVERIFY2(row->contains(QStringLiteral("1099511627776  733007751851.7")), qPrintable(*row));
}

void TestCliPlace::badInputExits2AndWritesNothing_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QByteArray>("load");  // written to a file named by "LOAD" in args
    QTest::addColumn<QString>("message");
    const QStringList base{QStringLiteral("--format"), QStringLiteral("sglang")};
    QTest::newRow("unknown strategy") << QStringList{QStringLiteral("--strategy"), QStringLiteral("gemm"),
                                                     QStringLiteral("--format"), QStringLiteral("sglang")}
                                      << QByteArray() << QStringLiteral("unknown strategy 'gemm'; did you mean 'gem'?");
    QTest::newRow("unknown format") << QStringList{QStringLiteral("--strategy"), QStringLiteral("eplb"),
                                                   QStringLiteral("--format"), QStringLiteral("vllm")}
                                    << QByteArray() << QStringLiteral("unknown export format 'vllm'");
    QTest::newRow("eplb slots not divisible")
        << QStringList{QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--slots"),
                       QStringLiteral("12")} +
               base
        << QByteArray() << QStringLiteral("eplb needs the slots to divide evenly over the GPUs: 12 slots on 8 GPUs");
    QTest::newRow("gem slots not divisible") << QStringList{QStringLiteral("--strategy"), QStringLiteral("gem"),
                                                            QStringLiteral("--slots"), QStringLiteral("10")} +
                                                    base
                                             << QByteArray() << QStringLiteral("gem needs the slots to divide evenly");
    QTest::newRow("contiguous slots not divisible")
        << QStringList{QStringLiteral("--strategy"), QStringLiteral("contiguous"), QStringLiteral("--slots"),
                       QStringLiteral("12")} +
               base
        << QByteArray() << QStringLiteral("do not divide evenly over 8 GPUs");
    QTest::newRow("fewer slots than experts") << QStringList{QStringLiteral("--strategy"), QStringLiteral("eplb"),
                                                             QStringLiteral("--slots"), QStringLiteral("4")} +
                                                     base
                                              << QByteArray() << QStringLiteral("cannot hold the model's 8 experts");
    QTest::newRow("far more slots than a deployment") // 16 redundant per expert at most, as a scenario allows
        << QStringList{QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--slots"), QStringLiteral("16777216")} + base
        << QByteArray() << QStringLiteral("'--slots' = 16777216 is out of range [1, 136]");
    QTest::newRow("load with the wrong layers")
        << QStringList{QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--load"),
                       QStringLiteral("LOAD")} +
               base
        << matrix(3, 8) << QStringLiteral("has 3 layers but the model has 32 MoE layers");
    QTest::newRow("load with the wrong experts")
        << QStringList{QStringLiteral("--strategy"), QStringLiteral("eplb"), QStringLiteral("--load"),
                       QStringLiteral("LOAD")} +
               base
        << matrix(32, 6) << QStringLiteral("has 6 experts but the model has 8");
    QTest::newRow("no output") << QStringList{QStringLiteral("--strategy"), QStringLiteral("eplb"),
                                              QStringLiteral("--format"), QStringLiteral("sglang")}
                               << QByteArray() << QStringLiteral("-o are required");
}

void TestCliPlace::badInputExits2AndWritesNothing()
{
    QFETCH(QStringList, args);
    QFETCH(QByteArray, load);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("never.json"));
    const QString loadPath = dir.filePath(QStringLiteral("load.json"));
    if (!load.isEmpty())
        writeText(loadPath, load);
    QStringList all{QStringLiteral("place"), scenarioPath(QLatin1String(kMixtral))};
    for (const QString& a : args)
        all << (a == QLatin1String("LOAD") ? loadPath : a);
    if (!QTest::currentDataTag() || QByteArray(QTest::currentDataTag()) != "no output")
        all << QStringLiteral("-o") << out;
    const Result r = runCli(all);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
    QVERIFY(!QFile::exists(out));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::NoDotAndDotDot).size(), load.isEmpty() ? 0 : 1);
}

QTEST_GUILESS_MAIN(TestCliPlace)
#include "tst_cli_place.moc"
