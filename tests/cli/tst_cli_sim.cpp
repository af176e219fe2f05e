// moex-cli simulate / compare against the contract of DESIGN.md section 4 and issue 3
// (items 4, 5, 7): the JSON keys and shapes, conservation of token-expert pairs in the JSON,
// atomic --json FILE, exit code 2 with clear messages on bad input, and --set overrides.
#include "cli_runner.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using Result = moex::test::CliResult;
using moex::test::runCli;

QString scenario(const char* name)
{
    return moex::test::sampleScenario(QLatin1String(name));
}

QJsonDocument parse(const QString& text, QString* error)
{
    QJsonParseError e{};
    const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &e);
    if (e.error != QJsonParseError::NoError)
        *error = e.errorString() + QStringLiteral(" at ") + QString::number(e.offset);
    return doc;
}

qint64 sumOf(const QJsonArray& a)
{
    qint64 s = 0;
    for (const QJsonValue& v : a)
        s += static_cast<qint64>(std::llround(v.toDouble()));
    return s;
}

const char* const kSummaryKeys[] = {"step_time_us",    "tokens_per_s", "tokens_per_s_per_gpu", "tokens_per_s_per_kw",
                                    "imbalance",       "dispatch_us",  "combine_us",           "expert_compute_us",
                                    "hbm_used_gb_max", "max_concurrent_users", "overhead_us", "dp_sync_us"};

}  // namespace

class TestCliSim : public QObject {
    Q_OBJECT
private slots:
    void simulateJsonContract_data();
    void simulateJsonContract();
    void simulateTextTable();
    void simulateJsonFileIsAtomic();
    void simulateBadArguments();
    void simulateBrokenScenario();
    void simulateSetOverrides();
    void simulateBalancedFloor();
    void simulateBreakdownAddsUp();
    void compareExplainsTheDifference();
};

void TestCliSim::simulateJsonContract_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("gpus");
    QTest::addColumn<int>("layers");
    QTest::addColumn<int>("experts");
    QTest::addColumn<qint64>("pairs");  // per layer: tokens per GPU x GPUs x experts per token
    QTest::addColumn<int>("tokensPerGpu");  // the sample's workload.tokens_per_gpu (none is memory-limited)
    QTest::newRow("mixtral hgx-h100") << scenario("mixtral-8x7b-decode-hgx-h100") << 8 << 32 << 8 << qint64(64 * 8 * 2) << 64;
    QTest::newRow("deepseek nvl72") << scenario("deepseek-r1-decode-nvl72") << 72 << 58 << 256 << qint64(128 * 72 * 8) << 128;
    QTest::newRow("deepseek hgx prefill") << scenario("deepseek-r1-prefill-hgx-h200x8") << 64 << 58 << 256
                                          << qint64(4096) * 64 * 8 << 4096;
}

void TestCliSim::simulateJsonContract()
{
    QFETCH(QString, file);
    QFETCH(int, gpus);
    QFETCH(int, layers);
    QFETCH(int, experts);
    QFETCH(qint64, pairs);
    QFETCH(int, tokensPerGpu);
    const Result r = runCli({QStringLiteral("simulate"), file, QStringLiteral("--steps"), QStringLiteral("2"),
                             QStringLiteral("--json"), QStringLiteral("-")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QString error;
    const QJsonDocument doc = parse(r.out, &error);  // stdout holds the JSON and nothing else
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(doc.isObject());
    const QJsonObject j = doc.object();

    const QJsonObject summary = j.value(QStringLiteral("summary")).toObject();
    for (const char* key : kSummaryKeys) {
        QVERIFY2(summary.value(QLatin1String(key)).isDouble(), key);
        QVERIFY2(std::isfinite(summary.value(QLatin1String(key)).toDouble()), key);
        QVERIFY2(summary.value(QLatin1String(key)).toDouble() >= 0, key);
    }
    QVERIFY(summary.value(QStringLiteral("step_time_us")).toDouble() > 0);
    QVERIFY(summary.value(QStringLiteral("tokens_per_s")).toDouble() > 0);
    // tokens/s is the whole system's batch per step over the step time.
    const double stepUs = summary.value(QStringLiteral("step_time_us")).toDouble();
    const double batch = summary.value(QStringLiteral("batch_per_gpu")).toDouble();
    // The batch is the scenario's (memory does not limit these samples), so the relation below is
    // anchored to the input, not only to other outputs.
    QVERIFY(!summary.value(QStringLiteral("memory_limited")).toBool());
    QCOMPARE(batch, static_cast<double>(tokensPerGpu));
    const double expectedTps = batch * gpus / (stepUs * 1e-6);
    QVERIFY2(std::abs(summary.value(QStringLiteral("tokens_per_s")).toDouble() - expectedTps) <= 1e-3 * expectedTps,
             qPrintable(QStringLiteral("tokens_per_s %1 vs batch x GPUs / step %2")
                            .arg(summary.value(QStringLiteral("tokens_per_s")).toDouble()).arg(expectedTps)));
    // The step holds its MoE layers and at least the dispatch and combine they contain.
    QVERIFY(stepUs >= summary.value(QStringLiteral("moe_time_us")).toDouble());
    // The balanced floor: present, positive, never above the MoE time.
    QVERIFY(summary.contains(QStringLiteral("moe_time_balanced_us")));
    QVERIFY(summary.value(QStringLiteral("moe_time_balanced_us")).toDouble() > 0);
    QVERIFY(summary.value(QStringLiteral("moe_time_balanced_us")).toDouble()
            <= summary.value(QStringLiteral("moe_time_us")).toDouble() * (1 + 1e-12));
    QVERIFY(summary.value(QStringLiteral("imbalance")).toDouble() >= 1.0);
    // The communication no compute covers: part of the MoE time, at most its whole exchange.
    const double exposed = summary.value(QStringLiteral("comm_exposed_us")).toDouble(-1);
    QVERIFY(exposed > 0);
    QVERIFY(exposed <= summary.value(QStringLiteral("moe_time_us")).toDouble());
    QVERIFY(exposed <= (summary.value(QStringLiteral("dispatch_us")).toDouble() + summary.value(QStringLiteral("combine_us")).toDouble())
                           * (1 + 1e-12));
    QVERIFY(std::abs(summary.value(QStringLiteral("tokens_per_s_per_gpu")).toDouble() * gpus
                     - summary.value(QStringLiteral("tokens_per_s")).toDouble())
            <= 1e-6 * summary.value(QStringLiteral("tokens_per_s")).toDouble());

    const QJsonArray gpuList = j.value(QStringLiteral("gpus")).toArray();
    QCOMPARE(gpuList.size(), gpus);
    for (const QJsonValue& g : gpuList) {
        QVERIFY(g.isObject());
        QVERIFY(g.toObject().value(QStringLiteral("compute_us")).isDouble());
        QVERIFY(g.toObject().value(QStringLiteral("hbm_used_gb")).toDouble() > 0);
    }

    const QJsonArray links = j.value(QStringLiteral("links")).toArray();
    QVERIFY(!links.isEmpty());
    for (const QJsonValue& v : links) {
        const QJsonObject l = v.toObject();
        QVERIFY(l.contains(QStringLiteral("from")) && l.contains(QStringLiteral("to")));
        QVERIFY(!l.value(QStringLiteral("from")).toString().isEmpty());  // node names
        QVERIFY(!l.value(QStringLiteral("to")).toString().isEmpty());
        QVERIFY(l.value(QStringLiteral("bytes")).toDouble() >= 0);
        QVERIFY(l.value(QStringLiteral("capacity_gbps")).toDouble() > 0);
        const double u = l.value(QStringLiteral("utilization")).toDouble(-1);
        QVERIFY2(u >= 0 && u <= 1, qPrintable(QString::number(u)));
    }

    const QJsonArray traffic = j.value(QStringLiteral("traffic")).toArray();
    QCOMPARE(traffic.size(), gpus);
    double total = 0;
    for (int s = 0; s < traffic.size(); ++s) {
        const QJsonArray row = traffic.at(s).toArray();
        QCOMPARE(row.size(), gpus);
        QCOMPARE(row.at(s).toDouble(-1), 0.0);  // a GPU's tokens for its own experts never touch the network
        for (const QJsonValue& x : row) {
            QVERIFY(x.toDouble(-1) >= 0);
            total += x.toDouble();
        }
    }
    QVERIFY(total > 0);

    const QJsonArray layerList = j.value(QStringLiteral("layers")).toArray();
    QCOMPARE(layerList.size(), layers);
    for (const QJsonValue& v : layerList) {
        const QJsonObject l = v.toObject();
        const QJsonArray expertLoad = l.value(QStringLiteral("expert_load")).toArray();
        const QJsonArray gpuLoad = l.value(QStringLiteral("gpu_load")).toArray();
        QCOMPARE(expertLoad.size(), experts);
        QCOMPARE(gpuLoad.size(), gpus);
        QCOMPARE(sumOf(expertLoad), pairs);
        QCOMPARE(sumOf(gpuLoad), pairs);
        QVERIFY(l.value(QStringLiteral("time_us")).toDouble() > 0);
    }
    QVERIFY(j.value(QStringLiteral("sim_wall_us_per_step")).isDouble());
    QVERIFY(j.value(QStringLiteral("sim_wall_us_per_step")).toDouble() > 0);
    // End to end (the routing source's sample and the model) takes longer than the model alone.
    QVERIFY(j.value(QStringLiteral("end_to_end_us_per_step")).toDouble() > 0);
}

void TestCliSim::simulateTextTable()
{
    const Result r = runCli({QStringLiteral("simulate"), scenario("mixtral-8x7b-decode-hgx-h100"), QStringLiteral("--steps"),
                             QStringLiteral("2")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    for (const char* label : {"step time", "tokens/s", "dispatch", "combine", "expert compute", "imbalance", "memory", "power"})
        QVERIFY2(r.out.contains(QLatin1String(label)), label);
    QVERIFY(!r.out.trimmed().startsWith(QLatin1Char('{')));
}

void TestCliSim::simulateJsonFileIsAtomic()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString out = dir.filePath(QStringLiteral("run.json"));
    {
        QFile f(out);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("old");
    }
    const QString s = scenario("mixtral-8x7b-decode-hgx-h100");
    // A failing run leaves the previous file alone.
    Result r = runCli({QStringLiteral("simulate"), s, QStringLiteral("--steps"), QStringLiteral("0"), QStringLiteral("--json"), out});
    QCOMPARE(r.exitCode, 2);
    {
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("old"));
    }
    r = runCli({QStringLiteral("simulate"), s, QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--json"), out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains(QStringLiteral("step time")));  // with a file, the table still goes to stdout
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QString error;
    const QJsonDocument doc = parse(QString::fromUtf8(f.readAll()), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(doc.object().contains(QStringLiteral("summary")));
    QCOMPARE(doc.object().value(QStringLiteral("layers")).toArray().size(), 32);
    // Written through a temporary file and renamed: nothing else is left in the folder.
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList{QStringLiteral("run.json")});
}

void TestCliSim::simulateBadArguments()
{
    const QString s = scenario("mixtral-8x7b-decode-hgx-h100");
    Result r = runCli({QStringLiteral("simulate"), s, QStringLiteral("--steps"), QStringLiteral("0")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("'--steps'")) && r.err.contains(QStringLiteral("out of range")), qPrintable(r.err));
    QVERIFY(r.out.isEmpty());
    r = runCli({QStringLiteral("simulate"), s, QStringLiteral("--steps"), QStringLiteral("x")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("steps")) && r.err.contains(QStringLiteral("integer")), qPrintable(r.err));
    r = runCli({QStringLiteral("simulate"), s, QStringLiteral("--stpes"), QStringLiteral("3")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--stpes")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("did you mean '--steps'")), qPrintable(r.err));
    r = runCli({QStringLiteral("simulate"), s, QStringLiteral("--steps")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("steps")), qPrintable(r.err));
    r = runCli({QStringLiteral("simulate")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("usage")), qPrintable(r.err));
    r = runCli({QStringLiteral("compare"), s});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("usage")), qPrintable(r.err));
}

void TestCliSim::simulateBrokenScenario()
{
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.yaml"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("name: bad\n"
            "model: " MOEX_SOURCE_DIR "/samples/models/mixtral-8x7b.yaml\n"
            "topology: {builtin: hgx-h100}\n"
            "workload: {phase: decode, tokens_per_gpu: 0}\n");
    f.close();
    Result r = runCli({QStringLiteral("simulate"), bad});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(bad + QStringLiteral(":4:")), qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("tokens_per_gpu")), qPrintable(r.err));

    r = runCli({QStringLiteral("simulate"), dir.filePath(QStringLiteral("missing.yaml"))});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("missing.yaml")), qPrintable(r.err));

    r = runCli({QStringLiteral("simulate"), scenario("mixtral-8x7b-decode-hgx-h100"), QStringLiteral("--set"),
                QStringLiteral("workload.tokens_per_gpu=-1")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("out of range")), qPrintable(r.err));

    r = runCli({QStringLiteral("compare"), scenario("mixtral-8x7b-decode-hgx-h100"), bad});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(bad + QStringLiteral(":4:")), qPrintable(r.err));
}

// moe_time_balanced_us from the JSON alone: without overlap a layer is dispatch + slowest GPU +
// combine, so the floor is the MoE time with the summed slowest-GPU compute replaced by all GPUs'
// work (compute_us x speed) over the sum of speeds. One step, so the summary and gpus[] are the
// same step; GPU 1 slowed so that the speeds matter. The text summary prints the same cost.
void TestCliSim::simulateBalancedFloor()
{
    const QStringList args = {QStringLiteral("simulate"), scenario("mixtral-8x7b-decode-hgx-h100"), QStringLiteral("--steps"),
                              QStringLiteral("1"), QStringLiteral("--set"), QStringLiteral("overlap=none"),
                              QStringLiteral("--set"), QStringLiteral("gpus.speed.gpu1=0.7")};
    Result r = runCli(args + QStringList{QStringLiteral("--json"), QStringLiteral("-")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QString error;
    const QJsonObject j = parse(r.out, &error).object();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QJsonObject summary = j.value(QStringLiteral("summary")).toObject();
    double work = 0, speeds = 0;
    for (const QJsonValue& v : j.value(QStringLiteral("gpus")).toArray()) {
        const QJsonObject g = v.toObject();
        work += g.value(QStringLiteral("compute_us")).toDouble() * g.value(QStringLiteral("speed")).toDouble();
        speeds += g.value(QStringLiteral("speed")).toDouble();
    }
    QVERIFY(speeds > 7.0 && speeds < 8.0);  // 7 GPUs at 1, one at 0.7
    const double moe = summary.value(QStringLiteral("moe_time_us")).toDouble();
    const double expected = moe - summary.value(QStringLiteral("expert_compute_us")).toDouble() + work / speeds;
    const double floor = summary.value(QStringLiteral("moe_time_balanced_us")).toDouble();
    QVERIFY2(std::abs(floor - expected) <= 1e-6 * expected,
             qPrintable(QStringLiteral("floor %1 vs %2 from the per-GPU totals").arg(floor).arg(expected)));
    QVERIFY(floor < moe);

    r = runCli(args);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QString line = QStringLiteral("imbalance cost   %1 ms per step, %2% of MoE time")
                             .arg((moe - floor) / 1000.0, 0, 'f', 2)
                             .arg(100.0 * (moe - floor) / moe, 0, 'f', 2);
    QVERIFY2(r.out.contains(line), qPrintable(line + QStringLiteral("\n") + r.out));
}

// Without overlap and at equal speeds the summary's terms add up to the step, the small kernels
// and the data-parallel attention wait included; the text names both.
void TestCliSim::simulateBreakdownAddsUp()
{
    const QStringList args = {QStringLiteral("simulate"), scenario("deepseek-r1-decode-hgx-h200x8"), QStringLiteral("--steps"),
                              QStringLiteral("1"), QStringLiteral("--set"), QStringLiteral("overlap=none"),
                              QStringLiteral("--set"), QStringLiteral("workload.context_cv=0.9")};
    Result r = runCli(args + QStringList{QStringLiteral("--json"), QStringLiteral("-")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QString error;
    const QJsonObject s = parse(r.out, &error).object().value(QStringLiteral("summary")).toObject();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    auto v = [&](const char* key) { return s.value(QLatin1String(key)).toDouble(); };
    QVERIFY(v("overhead_us") > 0);
    QVERIFY(v("dp_sync_us") > 0);
    const double sum = v("dispatch_us") + v("combine_us") + v("expert_compute_us") + v("attention_us") + v("overhead_us") + v("dp_sync_us");
    QVERIFY2(std::abs(sum - v("step_time_us")) <= 1e-6 * v("step_time_us"),
             qPrintable(QStringLiteral("terms %1, step %2").arg(sum).arg(v("step_time_us"))));
    r = runCli(args);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral("small kernels    %1 ms").arg(v("overhead_us") / 1000.0, 0, 'f', 2)), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("DP attn wait     %1 ms").arg(v("dp_sync_us") / 1000.0, 0, 'f', 2)), qPrintable(r.out));
}

void TestCliSim::simulateSetOverrides()
{
    auto summaryOf = [&](const QString& file, const QStringList& extra, QJsonObject* whole) {
        const Result r = runCli(QStringList{QStringLiteral("simulate"), file, QStringLiteral("--steps"), QStringLiteral("1"),
                                            QStringLiteral("--json"), QStringLiteral("-")}
                                + extra);
        QString error;
        const QJsonDocument doc = parse(r.out, &error);
        if (r.exitCode != 0 || !error.isEmpty())
            qWarning("exit %d: %s %s", r.exitCode, qPrintable(r.err), qPrintable(error));
        *whole = doc.object();
        return doc.object().value(QStringLiteral("summary")).toObject();
    };
    const QString nvl = scenario("deepseek-r1-decode-nvl72");
    QJsonObject a, b;
    const QJsonObject base = summaryOf(nvl, {}, &a);
    const QJsonObject big = summaryOf(nvl, {QStringLiteral("--set"), QStringLiteral("workload.tokens_per_gpu=256")}, &b);
    QCOMPARE(base.value(QStringLiteral("batch_per_gpu")).toInt(), 128);
    QCOMPARE(big.value(QStringLiteral("batch_per_gpu")).toInt(), 256);
    QCOMPARE(big.value(QStringLiteral("memory_limited")).toBool(), false);
    QVERIFY(big.value(QStringLiteral("step_time_us")).toDouble() > base.value(QStringLiteral("step_time_us")).toDouble());
    const QJsonArray layers = b.value(QStringLiteral("layers")).toArray();
    QCOMPARE(layers.size(), 58);
    for (const QJsonValue& v : layers)
        QCOMPARE(sumOf(v.toObject().value(QStringLiteral("expert_load")).toArray()), qint64(256) * 72 * 8);

    // Several overrides at once, of different parts of the scenario.
    const QString mixtral = scenario("mixtral-8x7b-decode-hgx-h100");
    QJsonObject c, d;
    const QJsonObject plain = summaryOf(mixtral, {}, &c);
    const QJsonObject slow = summaryOf(mixtral, {QStringLiteral("--set"), QStringLiteral("gpus.speed.gpu3=0.5"), QStringLiteral("--set"),
                                                 QStringLiteral("workload.tokens_per_gpu=32")},
                                       &d);
    QCOMPARE(d.value(QStringLiteral("gpus")).toArray().at(3).toObject().value(QStringLiteral("speed")).toDouble(), 0.5);
    QCOMPARE(d.value(QStringLiteral("gpus")).toArray().at(2).toObject().value(QStringLiteral("speed")).toDouble(), 1.0);
    QCOMPARE(slow.value(QStringLiteral("batch_per_gpu")).toInt(), 32);
    QCOMPARE(slow.value(QStringLiteral("straggler_gpu")).toInt(), 3);
    QVERIFY(slow.value(QStringLiteral("step_time_us")).toDouble() > plain.value(QStringLiteral("step_time_us")).toDouble());
}

void TestCliSim::compareExplainsTheDifference()
{
    const QString a = scenario("deepseek-r1-decode-nvl72");
    const QString b = scenario("deepseek-r1-decode-hgx-h200x8");
    Result r = runCli({QStringLiteral("compare"), a, b, QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--json"),
                       QStringLiteral("-")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QString error;
    const QJsonObject j = parse(r.out, &error).object();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    for (const char* side : {"a", "b"}) {
        const QJsonObject summary = j.value(QLatin1String(side)).toObject().value(QStringLiteral("summary")).toObject();
        for (const char* key : kSummaryKeys)
            QVERIFY2(summary.value(QLatin1String(key)).isDouble(), key);
    }
    const QJsonObject ratio = j.value(QStringLiteral("ratio")).toObject();
    const QJsonArray terms = j.value(QStringLiteral("terms")).toArray();
    QStringList names;
    QString largest;
    double largestDelta = -1;
    for (const QJsonValue& v : terms) {
        const QJsonObject t = v.toObject();
        const QString name = t.value(QStringLiteral("name")).toString();
        names << name;
        for (const char* key : {"a", "b", "delta", "ratio", "unit"})
            QVERIFY2(t.contains(QLatin1String(key)), key);
        QVERIFY(std::abs(t.value(QStringLiteral("delta")).toDouble()
                         - (t.value(QStringLiteral("b")).toDouble() - t.value(QStringLiteral("a")).toDouble()))
                <= 1e-6 * std::max(1.0, std::abs(t.value(QStringLiteral("b")).toDouble())));
        QVERIFY2(ratio.contains(name), qPrintable(name));
        if (t.value(QStringLiteral("a")).toDouble() != 0)
            QVERIFY(std::abs(ratio.value(name).toDouble() - t.value(QStringLiteral("b")).toDouble() / t.value(QStringLiteral("a")).toDouble())
                    <= 1e-6 * std::max(1.0, std::abs(ratio.value(name).toDouble())));
        const bool additive = name == QLatin1String("dispatch_us") || name == QLatin1String("combine_us")
            || name == QLatin1String("expert_compute_us") || name == QLatin1String("attention_us");
        if (additive && std::abs(t.value(QStringLiteral("delta")).toDouble()) > largestDelta) {
            largestDelta = std::abs(t.value(QStringLiteral("delta")).toDouble());
            largest = name;
        }
    }
    for (const char* key : {"dispatch_us", "combine_us", "expert_compute_us", "attention_us", "batch_per_gpu",
                            "tokens_per_s_per_kw", "tokens_per_s_per_gpu", "step_time_us", "imbalance_cost_us"})
        QVERIFY2(names.contains(QLatin1String(key)), key);
    // The imbalance cost of each side is its MoE time over its balanced floor.
    for (const QJsonValue& v : terms) {
        const QJsonObject t = v.toObject();
        if (t.value(QStringLiteral("name")).toString() != QLatin1String("imbalance_cost_us"))
            continue;
        for (const char* side : {"a", "b"}) {
            const QJsonObject s = j.value(QLatin1String(side)).toObject().value(QStringLiteral("summary")).toObject();
            const double expected = s.value(QStringLiteral("moe_time_us")).toDouble()
                - s.value(QStringLiteral("moe_time_balanced_us")).toDouble();
            QVERIFY(std::abs(t.value(QLatin1String(side)).toDouble() - expected) <= 1e-6 * std::max(1.0, expected));
        }
    }
    // HGX sends 7 of 8 tokens over NICs: the all-to-all is where B loses.
    QVERIFY(ratio.value(QStringLiteral("dispatch_us")).toDouble() > 1.0);
    QVERIFY(ratio.value(QStringLiteral("tokens_per_s_per_gpu")).toDouble() < 1.0);
    QVERIFY(!j.value(QStringLiteral("explanation")).toString().isEmpty());

    // The text output names the largest contributor first.
    r = runCli({QStringLiteral("compare"), a, b, QStringLiteral("--steps"), QStringLiteral("2")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QString label = largest == QLatin1String("dispatch_us")   ? QStringLiteral("dispatch")
        : largest == QLatin1String("combine_us")                    ? QStringLiteral("combine")
        : largest == QLatin1String("expert_compute_us")             ? QStringLiteral("expert compute")
                                                                    : QStringLiteral("attention");
    const QString marker = QStringLiteral("Largest differences per step: ");
    const qsizetype at = r.out.indexOf(marker);
    QVERIFY2(at >= 0, qPrintable(r.out));
    QVERIFY2(r.out.mid(at + marker.size()).startsWith(label),
             qPrintable(QStringLiteral("expected %1 first:\n%2").arg(label, r.out)));
    QVERIFY(r.out.contains(QStringLiteral("NVLink domain")));
    QVERIFY(r.out.contains(QStringLiteral("tokens/s per GPU")));
}

QTEST_GUILESS_MAIN(TestCliSim)
#include "tst_cli_sim.moc"
