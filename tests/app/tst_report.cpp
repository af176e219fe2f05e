// The HTML load-statistics report (app/moex/report_html.h) on the real Mixtral statistics files:
// well-formed (parsed back as XML), seven charts each with drawn data, the headline the report's
// recommendation, the placement written next to it in the serving system's format and loadable
// (SGLang's JSON holds only physical_to_logical_map; TensorRT-LLM's YAML num_slots and a row per
// MoE layer), and `moex report`'s errors: exit 2 with what is wrong.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "load_stats_view.h"
#include "report_html.h"
#include "compare_runner.h"
#include "scenario_document.h"
#include "window_fixture.h"

#include "scenario/scenario_yaml.h"
#endif

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

using namespace moex;

namespace {

const QString kData = QStringLiteral(MOEX_TEST_DATA_DIR "/loadstats/");
const QString kSamples = QStringLiteral(MOEX_SAMPLES_DIR "/scenarios/");

// Mixtral prefill on one HGX-H100: compute-bound experts, so balance pays and a placement is
// recommended (decode's experts stream their weights whatever their tokens: EPLB stays off there).
QString writePrefillScenario(const QTemporaryDir& dir)
{
    const QString path = dir.filePath(QStringLiteral("mixtral-prefill.yaml"));
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return {};
    f.write(QByteArray("name: mixtral prefill\nmodel: ") + QByteArray(MOEX_SAMPLES_DIR) +
            "/models/mixtral-8x7b.yaml\ntopology: {builtin: hgx-h100}\n"
            "workload: {phase: prefill, tokens_per_gpu: 8192, context_tokens: 8192}\n");
    return path;
}

struct Parsed {
    int svgs = 0;
    int svgsWithData = 0;  // an svg holding at least one non-empty path, polyline or image
    QString headline;
    int tableRows = 0;
    QString error;
};

Parsed parse(const QString& path)
{
    Parsed out;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        out.error = QStringLiteral("cannot open");
        return out;
    }
    QXmlStreamReader xml(&f);
    bool inSvg = false, svgHasData = false, inHeadline = false;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement()) {
            const auto name = xml.name();
            if (name == QLatin1String("svg")) {
                inSvg = true;
                svgHasData = false;
                ++out.svgs;
            } else if (inSvg && ((name == QLatin1String("path") && !xml.attributes().value(QLatin1String("d")).isEmpty())
                                 || name == QLatin1String("polyline") || name == QLatin1String("image"))) {
                svgHasData = true;
            } else if (name == QLatin1String("p") && xml.attributes().value(QLatin1String("class")) == QLatin1String("headline")) {
                inHeadline = true;
            } else if (name == QLatin1String("tr") && !inSvg) {
                ++out.tableRows;
            }
        } else if (xml.isEndElement()) {
            if (xml.name() == QLatin1String("svg")) {
                inSvg = false;
                out.svgsWithData += svgHasData ? 1 : 0;
            } else if (xml.name() == QLatin1String("p")) {
                inHeadline = false;
            }
        } else if (xml.isCharacters() && inHeadline) {
            out.headline += xml.text();
        }
    }
    if (xml.hasError())
        out.error = xml.errorString() + QStringLiteral(" at line %1").arg(xml.lineNumber());
    return out;
}

}  // namespace

class TestReport : public QObject {
    Q_OBJECT
private slots:
    void wellFormedWithChartsAndPlacement_data();
    void wellFormedWithChartsAndPlacement();
    void decodeKeepsEplbOff();
    void commandLineErrors();
    void windowTabOpensPointAsB();
};

void TestReport::wellFormedWithChartsAndPlacement_data()
{
    QTest::addColumn<QString>("stats");
    QTest::addColumn<QString>("format");
    QTest::newRow("SGLang recorder") << kData + QStringLiteral("sglang_expert_distribution_recorder_mixtral.pt")
                                     << QStringLiteral("sglang");
    QTest::newRow("TensorRT-LLM statistics") << kData + QStringLiteral("trtllm_mixtral") << QStringLiteral("trtllm");
}

void TestReport::wellFormedWithChartsAndPlacement()
{
    QFETCH(QString, stats);
    QFETCH(QString, format);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString scenario = writePrefillScenario(dir);
    QVERIFY(!scenario.isEmpty());
    LoadReportOptions options;
    options.strategies = {"eplb", "gem"};
    options.steps = 3;
    const LoadReport r = buildLoadReport(loadScenarioFile(scenario.toStdString()), stats.toStdString(), options);
    QVERIFY2(r.recommended >= 0, r.recommendation.c_str());

    app::ReportFiles files;
    const QString html = dir.filePath(QStringLiteral("report.html"));
    QCOMPARE(app::writeReport(r, scenario, stats, html, &files), QString());
    const Parsed p = parse(html);
    QVERIFY2(p.error.isEmpty(), qPrintable(p.error));
    QCOMPARE(p.svgs, 7);
    QCOMPARE(p.svgsWithData, 7);
    QCOMPARE(files.charts, 7);
    QCOMPARE(p.headline.simplified(), QString::fromStdString(r.recommendation).simplified());
    // The file's table (4 rows), the hottest experts (header + rows), the curve (header + EPLB off + points).
    QCOMPARE(p.tableRows, 4 + 1 + static_cast<int>(r.hottest.size()) + 1 + 1 + static_cast<int>(r.curve.size()));

    // The placement, in the serving system's own format, next to the report.
    QCOMPARE(files.format, format);
    QVERIFY(QFileInfo(files.placement).absolutePath() == QFileInfo(html).absolutePath());
    QFile placed(files.placement);
    QVERIFY(placed.open(QIODevice::ReadOnly));
    const QByteArray bytes = placed.readAll();
    const int slotCount = r.curve[static_cast<std::size_t>(r.recommended)].slot_count;
    if (format == QLatin1String("sglang")) {
        const QJsonObject o = QJsonDocument::fromJson(bytes).object();
        QCOMPARE(o.keys(), QStringList{QStringLiteral("physical_to_logical_map")});
        const QJsonArray layers = o.value(QStringLiteral("physical_to_logical_map")).toArray();
        QCOMPARE(layers.size(), 32);
        QCOMPARE(layers.at(0).toArray().size(), slotCount);
        QVERIFY(files.load_flag.contains(QStringLiteral("--init-expert-location ") + QFileInfo(files.placement).fileName()));
        QVERIFY(files.load_flag.contains(QStringLiteral("--ep-num-redundant-experts %1").arg(slotCount - 8)));
    } else {
        QVERIFY(bytes.contains(QByteArray("num_slots: ").append(QByteArray::number(slotCount))));
        QVERIFY(bytes.contains("initial_global_assignments"));
        QVERIFY(files.load_flag.contains(QStringLiteral("load_balancer: ") + QFileInfo(files.placement).fileName()));
    }
}

// Decode on the sample: the experts stream their weights whatever their tokens, so replicas cost
// more than balance saves; the report says to keep EPLB off and writes no placement.
void TestReport::decodeKeepsEplbOff()
{
    QTemporaryDir dir;
    const QString stats = kData + QStringLiteral("trtllm_mixtral");
    const QString scenario = kSamples + QStringLiteral("mixtral-8x7b-decode-hgx-h100.yaml");
    LoadReportOptions options;
    options.strategies = {"eplb"};
    options.steps = 3;
    const LoadReport r = buildLoadReport(loadScenarioFile(scenario.toStdString()), stats.toStdString(), options);
    QCOMPARE(r.recommended, -1);
    for (const ReportPoint& p : r.curve)
        if (p.fits && p.redundant_slots > 0)
            QVERIFY(p.step_time_us > (1.0 - options.knee_gain) * r.baseline.step_time_us);
    app::ReportFiles files;
    QCOMPARE(app::writeReport(r, scenario, stats, dir.filePath(QStringLiteral("r.html")), &files), QString());
    QVERIFY(files.placement.isEmpty());
    const Parsed p = parse(dir.filePath(QStringLiteral("r.html")));
    QVERIFY2(p.error.isEmpty(), qPrintable(p.error));
    QVERIFY(p.headline.startsWith(QStringLiteral("Keep EPLB off")));
}

void TestReport::commandLineErrors()
{
    QTemporaryDir dir;
    auto run = [&](const QStringList& args, QString* err) {
        QProcess proc;
        proc.setWorkingDirectory(dir.path());
        proc.start(QStringLiteral(MOEX_BINARY), QStringList{QStringLiteral("report")} + args);
        proc.waitForFinished(120000);
        *err = QString::fromUtf8(proc.readAllStandardError());
        return proc.exitCode();
    };
    QString err;
    const QString stats = kData + QStringLiteral("trtllm_mixtral");
    // Mixtral's statistics against DeepSeek-R1: both shapes named, nothing written.
    QCOMPARE(run({stats, QStringLiteral("--scenario"), kSamples + QStringLiteral("deepseek-r1-decode-hgx-h200x8.yaml")}, &err), 2);
    QVERIFY2(err.contains(QStringLiteral("8 experts")) && err.contains(QStringLiteral("256 experts")), qPrintable(err));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("report.html"))));
    // Slots that are not a multiple of the GPUs.
    QCOMPARE(run({stats, QStringLiteral("--scenario"), kSamples + QStringLiteral("mixtral-8x7b-decode-hgx-h100.yaml"),
                  QStringLiteral("--slots"), QStringLiteral("12")},
                 &err),
             2);
    QVERIFY2(err.contains(QStringLiteral("multiples of 8")), qPrintable(err));
    // Strategies the report does not try, none, and a slot count twice: refused (a report from no
    // strategy concluded "keep EPLB off").
    const QString mixtral = kSamples + QStringLiteral("mixtral-8x7b-decode-hgx-h100.yaml");
    for (const QStringList& extra : {QStringList{QStringLiteral("--strategies"), QStringLiteral("eplb,bogus")},
                                     QStringList{QStringLiteral("--strategies"), QString()},
                                     QStringList{QStringLiteral("--slots"), QStringLiteral("8,8,16")},
                                     // Accepted before: an empty slot list ran the default slots, a
                                     // strategy twice or a trailing comma ran, 10^6 slots ran rows
                                     // needing 1.4 PB a GPU.
                                     QStringList{QStringLiteral("--slots"), QString()},
                                     QStringList{QStringLiteral("--strategies"), QStringLiteral("eplb,eplb")},
                                     QStringList{QStringLiteral("--strategies"), QStringLiteral("eplb,")},
                                     QStringList{QStringLiteral("--slots"), QStringLiteral("1000000")}}) {
        QCOMPARE(run(QStringList{stats, QStringLiteral("--scenario"), mixtral} + extra, &err), 2);
        QVERIFY2(err.contains(extra.front()), qPrintable(err));
    }
    // An output that is an input: the scenario or its model (copies, so that a failure could not
    // touch the samples), left byte for byte.
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("scenarios")) && QDir(dir.path()).mkpath(QStringLiteral("models")));
    const QString scenarioCopy = dir.filePath(QStringLiteral("scenarios/s.yaml"));
    const QString modelCopy = dir.filePath(QStringLiteral("models/mixtral-8x7b.yaml"));
    QVERIFY(QFile::copy(mixtral, scenarioCopy));
    QVERIFY(QFile::copy(QStringLiteral(MOEX_SOURCE_DIR "/samples/models/mixtral-8x7b.yaml"), modelCopy));
    const auto bytes = [](const QString& path) {
        QFile file(path);
        return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    };
    const QByteArray scenarioBefore = bytes(scenarioCopy), modelBefore = bytes(modelCopy);
    for (const QString& out : {scenarioCopy, modelCopy}) {
        QCOMPARE(run({stats, QStringLiteral("--scenario"), scenarioCopy, QStringLiteral("-o"), out}, &err), 2);
        QVERIFY2(err.contains(QStringLiteral("writing it would replace that input")), qPrintable(err));
    }
    QCOMPARE(bytes(scenarioCopy), scenarioBefore);
    QCOMPARE(bytes(modelCopy), modelBefore);
    // '-o -' would be a file named '-' (the placement beside it '--placement-….json'): refused.
    QCOMPARE(run({stats, QStringLiteral("--scenario"), mixtral, QStringLiteral("-o"), QStringLiteral("-")}, &err), 2);
    QVERIFY2(err.contains(QStringLiteral("give a file name, not '-'")), qPrintable(err));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("-"))));
    // No scenario.
    QCOMPARE(run({stats}, &err), 2);
    QVERIFY(err.contains(QStringLiteral("--scenario")));
    // A run that works writes the report where -o says.
    QCOMPARE(run({stats, QStringLiteral("--scenario"), kSamples + QStringLiteral("mixtral-8x7b-decode-hgx-h100.yaml"),
                  QStringLiteral("--strategies"), QStringLiteral("eplb"), QStringLiteral("-o"), QStringLiteral("out.html")},
                 &err),
             0);
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("out.html"))));
}

// File > Open Load Statistics in the window: the tab shows the report for A's scenario (built in
// the background), and a point of its curve opens as B with the file as routing and the point's
// placement; B's comparison then runs.
void TestReport::windowTabOpensPointAsB()
{
    QTemporaryDir dir;
    const QString scenario = writePrefillScenario(dir);
    app::MainWindow w(app::test::samples());
    QVERIFY(app::test::showForTest(w));
    w.setConfirmHandler([](const QString&) { return true; });
    QVERIFY(w.openScenario(scenario));
    app::LoadStatsView* view = w.loadStatsView();
    QVERIFY(view);
    QSignalSpy ready(view, &app::LoadStatsView::ready);
    // The TensorRT-LLM folder chosen through its meta_info.json, as the file dialog gives it.
    w.openLoadStatistics(kData + QStringLiteral("trtllm_mixtral/meta_info.json"));
    QVERIFY(view->isBusy());
    QVERIFY(ready.wait(60000));
    QVERIFY(!view->isBusy());
    // The tab gets the room its verdict and charts need: 45% of the window's height for the dock
    // area, its tab bar taken off (the charts' strip it shares is 30%, and the charts were drawn cut
    // off there).
    QWidget* dock = view->parentWidget();
    QVERIFY(dock && dock->isVisible());
    QVERIFY2(dock->height() >= w.height() * 40 / 100,
             qPrintable(QStringLiteral("dock %1 of a window %2 high").arg(dock->height()).arg(w.height())));
    const LoadReport* r = view->report();
    QVERIFY(r);
    QCOMPARE(view->statsPath(), kData + QStringLiteral("trtllm_mixtral"));
    auto* headline = view->findChild<QLabel*>(QStringLiteral("loadStatsHeadline"));
    QVERIFY(headline);
    QCOMPARE(headline->text(), QString::fromStdString(r->recommendation));
    QVERIFY(view->stepChart()->pointCount() > 0);
    QVERIFY(r->recommended >= 0);

    // The recommended point as B.
    QSignalSpy compared(w.compareRunner(), &session::CompareRunner::ready);
    QVERIFY2(w.openReportPointAsB(r->recommended), qPrintable(w.documentB()->lastError() + QStringLiteral(" / ") + w.statusText()));
    const ReportPoint& p = r->curve[static_cast<std::size_t>(r->recommended)];
    const Scenario& b = w.documentB()->scenario();
    QVERIFY(b.workload.routing.kind == RoutingKind::counts);
    QCOMPARE(QString::fromStdString(b.workload.routing.file), kData + QStringLiteral("trtllm_mixtral"));
    QCOMPARE(b.placement.strategy, p.strategy);
    QCOMPARE(b.placement.redundant_slots, p.redundant_slots);
    QVERIFY(w.documentA()->scenario().workload.routing.kind == RoutingKind::synthetic);  // A untouched
    QVERIFY(compared.wait(60000));
}

QTEST_MAIN(TestReport)
#include "tst_report.moc"
