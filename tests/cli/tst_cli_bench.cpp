// moex-cli bench against its contract: the JSON keys of bench sim and bench fidelity, their
// targets and ceilings, and each benchmark's own options (another's is refused, not ignored).
#include "cli_runner.h"

#include <QtTest>

#include <cmath>

namespace {

using Result = moex::test::CliResult;
using moex::test::runCli;

QJsonDocument parse(const QString& text, QString* error)
{
    QJsonParseError e{};
    const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &e);
    if (e.error != QJsonParseError::NoError)
        *error = e.errorString() + QStringLiteral(" at ") + QString::number(e.offset);
    return doc;
}

}  // namespace

class TestCliBench : public QObject {
    Q_OBJECT
private slots:
    void unknownBenchmarkAndOptions();
    void benchFidelity();
    void benchSim();
};

void TestCliBench::unknownBenchmarkAndOptions()
{
    const QString s = moex::test::sampleScenario(QStringLiteral("mixtral-8x7b-decode-hgx-h100"));
    Result r = runCli({QStringLiteral("bench"), QStringLiteral("simm")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("simm")), qPrintable(r.err));
    // Another benchmark's option is refused before anything runs (it was ignored in silence).
    r = runCli({QStringLiteral("bench"), QStringLiteral("fidelity"), QStringLiteral("--steps"), QStringLiteral("5")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--steps is not an option of bench fidelity, which takes --json")), qPrintable(r.err));
    r = runCli({QStringLiteral("bench"), QStringLiteral("engine"), QStringLiteral("--scenario"), s});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--scenario is not an option of bench engine")), qPrintable(r.err));
    r = runCli({QStringLiteral("bench"), QStringLiteral("sim"), QStringLiteral("--kernel"), QStringLiteral("avx2")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--kernel is not an option of bench sim")), qPrintable(r.err));
    // bench place sets each case's placement: a --set of it was ignored; a 0 ms budget, which
    // place refuses, ran no search.
    r = runCli({QStringLiteral("bench"), QStringLiteral("place"), QStringLiteral("--runs"), QStringLiteral("1"), QStringLiteral("--set"),
                QStringLiteral("placement.strategy=contiguous")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--set cannot choose the placement")), qPrintable(r.err));
    r = runCli({QStringLiteral("bench"), QStringLiteral("place"), QStringLiteral("--budget-ms"), QStringLiteral("0")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--budget-ms")), qPrintable(r.err));
}

void TestCliBench::benchFidelity()
{
    const Result r = runCli({QStringLiteral("bench"), QStringLiteral("fidelity"), QStringLiteral("--json"), QStringLiteral("-")});
    QString error;
    const QJsonDocument doc = parse(r.out, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error + r.err));
    QVERIFY(doc.isArray());
    const QJsonArray points = doc.array();
    QVERIFY(points.size() >= 15);
    int checks = 0, endToEnd = 0;
    bool met = true;
    for (const QJsonValue& v : points) {
        const QJsonObject p = v.toObject();
        QVERIFY(!p.value(QStringLiteral("name")).toString().isEmpty());
        QVERIFY(p.value(QStringLiteral("measured")).toDouble() > 0);
        QVERIFY(p.value(QStringLiteral("predicted")).toDouble() > 0);
        QVERIFY(!p.value(QStringLiteral("unit")).toString().isEmpty());
        QVERIFY(p.value(QStringLiteral("error")).isDouble());
        const double e = p.value(QStringLiteral("error")).toDouble();
        const double expected = p.value(QStringLiteral("predicted")).toDouble() / p.value(QStringLiteral("measured")).toDouble() - 1;
        QVERIFY(std::abs(e - expected) < 1e-9);
        const bool check = p.value(QStringLiteral("role")).toString() == QLatin1String("check");
        checks += check ? 1 : 0;
        if (p.value(QStringLiteral("kind")).toString() == QLatin1String("end-to-end")) {
            endToEnd += check ? 1 : 0;
            met = met && (!check || std::abs(e) <= 0.30);
        } else {
            QCOMPARE(p.value(QStringLiteral("kind")).toString(), QStringLiteral("communication"));
            QVERIFY2(std::abs(e) <= 0.25, qPrintable(p.value(QStringLiteral("name")).toString() + QStringLiteral(": ")
                                                     + QString::number(e)));
        }
    }
    // At least a third of the points are held out, end-to-end results among them; the exit
    // status says whether every target was met.
    QVERIFY(endToEnd >= 5);
    QVERIFY2(3 * checks >= points.size(), qPrintable(QStringLiteral("%1 check points of %2").arg(checks).arg(points.size())));
    QCOMPARE(r.exitCode, met ? 0 : 1);
}

void TestCliBench::benchSim()
{
    const Result r = runCli({QStringLiteral("bench"), QStringLiteral("sim"), QStringLiteral("--steps"), QStringLiteral("20"),
                             QStringLiteral("--routed-steps"), QStringLiteral("2"), QStringLiteral("--end-to-end-steps"),
                             QStringLiteral("3"), QStringLiteral("--config-runs"), QStringLiteral("2"), QStringLiteral("--json"),
                             QStringLiteral("-")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QString error;
    const QJsonObject j = parse(r.out, &error).object();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(j.value(QStringLiteral("routed_steps")).toInt(), 2);
    const QString kernel = j.value(QStringLiteral("kernel")).toString();
    QVERIFY2(kernel == QStringLiteral("avx2") || kernel == QStringLiteral("portable"), qPrintable(kernel));
    // Three conditions, each with its own ceiling (a pass over the same 16-bit counts). The JSON
    // carries every timed step and ceiling pass ("series"): each figure must be what its series
    // gives (median; p90 the nearest rank rounded up; ratio = CPU median over the ceiling's CPU
    // median), each series as long as its condition ran, and, since the thread's CPU interval is
    // enclosed by the wall one up to a few clock reads, the CPU median within the wall median.
    auto numbers = [](const QJsonValue& v) {
        std::vector<double> out;
        for (const QJsonValue& x : v.toArray())
            out.push_back(x.toDouble(-1));
        return out;
    };
    auto medianOf = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    };
    auto p90Of = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(v.size() - 1)))];
    };
    auto same = [](double got, double want) { return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want)); };
    const QJsonObject series = j.value(QStringLiteral("series")).toObject();
    const struct {
        const char* prefix;
        const char* name;
        std::size_t runs;
    } conditions[] = {{"", "routed", 2}, {"warm_", "warm", 20}, {"cold_", "cold", 20}};
    for (const auto& c : conditions) {
        const QString p = QString::fromLatin1(c.prefix);
        const QJsonObject t = series.value(QString::fromLatin1(c.name)).toObject();
        const auto wall = numbers(t.value(QStringLiteral("wall_us"))), cpu = numbers(t.value(QStringLiteral("cpu_us")));
        const auto ceilWall = numbers(t.value(QStringLiteral("ceiling_wall_us")));
        const auto ceilCpu = numbers(t.value(QStringLiteral("ceiling_cpu_us")));
        for (const auto* v : {&wall, &cpu, &ceilWall, &ceilCpu}) {
            QCOMPARE(v->size(), c.runs);
            QVERIFY2(std::all_of(v->begin(), v->end(), [](double x) { return x > 0 && std::isfinite(x); }), c.name);
        }
        const double wallMed = medianOf(wall), cpuMed = medianOf(cpu), ceilCpuMed = medianOf(ceilCpu);
        QVERIFY2(same(j.value(p + QStringLiteral("us_per_step_median")).toDouble(-1), wallMed), c.name);
        QVERIFY2(same(j.value(p + QStringLiteral("us_per_step_p90")).toDouble(-1), p90Of(wall)), c.name);
        QVERIFY2(same(j.value(p + QStringLiteral("cpu_us_per_step_median")).toDouble(-1), cpuMed), c.name);
        QVERIFY2(same(j.value(p + QStringLiteral("ceiling_stream_counts_cpu_us")).toDouble(-1), ceilCpuMed), c.name);
        if (c.prefix[0] == '\0')  // the routed condition also names its ceiling's wall time
            QVERIFY(same(j.value(QStringLiteral("ceiling_stream_counts_us")).toDouble(-1), medianOf(ceilWall)));
        QVERIFY2(same(j.value(p + QStringLiteral("ratio_to_ceiling")).toDouble(-1), cpuMed / ceilCpuMed), c.name);
        QVERIFY2(cpuMed <= wallMed * 1.05 + 10.0, qPrintable(p + QStringLiteral(": CPU %1 us > wall %2 us").arg(cpuMed).arg(wallMed)));
    }
    // The ceiling read every count of every sample it was given exactly once: each pass returns the
    // sample's total modulo 2^16 (16-bit lanes wrap), and every row of the DeepSeek-R1 NVL72 sample
    // sums to 128 tokens x 8 experts. Passes: 2 routed + 20 warm + 20 cold.
    const auto perSample = std::uint64_t{58} * 72 * 128 * 8;
    const auto checksum = static_cast<std::uint64_t>(j.value(QStringLiteral("checksum")).toDouble());
    QCOMPARE(checksum % 65536, (42 * perSample) % 65536);
    // Allocations per step are tst_sim's stepAllocatesNothingAfterWarmUp: moex-cli keeps the
    // global operator new (no counting hook in a shipped binary).
    QVERIFY(!j.contains(QStringLiteral("allocations_per_step")));
    // Peak RSS holds at least the 16 pre-generated samples and the working one (2.1 MB each).
    QVERIFY2(j.value(QStringLiteral("peak_rss_mb")).toDouble() >= 17.0 * 58 * 72 * 256 * 2 / (1024.0 * 1024.0),
             qPrintable(QString::number(j.value(QStringLiteral("peak_rss_mb")).toDouble())));
    // The headline: end to end (routing source + model) per step, as simulate runs it; the routing
    // part within it; the cold configuration (load, placement, 10 steps, summary) as its series say.
    const auto e2e = numbers(series.value(QStringLiteral("end_to_end")).toObject().value(QStringLiteral("wall_us")));
    const auto e2eRouting =
        numbers(series.value(QStringLiteral("end_to_end")).toObject().value(QStringLiteral("routing_wall_us")));
    QCOMPARE(e2e.size(), std::size_t(3));
    QCOMPARE(e2eRouting.size(), std::size_t(3));
    for (std::size_t i = 0; i < e2e.size(); ++i)
        QVERIFY(e2eRouting[i] > 0 && e2eRouting[i] < e2e[i]);
    QVERIFY(same(j.value(QStringLiteral("end_to_end_us_per_step_median")).toDouble(-1), medianOf(e2e)));
    QVERIFY(same(j.value(QStringLiteral("end_to_end_routing_us_median")).toDouble(-1), medianOf(e2eRouting)));
    const double share = j.value(QStringLiteral("end_to_end_routing_share")).toDouble(-1);
    QVERIFY(same(share, medianOf(e2eRouting) / medianOf(e2e)));
    const auto config = numbers(series.value(QStringLiteral("cold_configuration")).toObject().value(QStringLiteral("wall_ms")));
    QCOMPARE(config.size(), std::size_t(2));
    QVERIFY(same(j.value(QStringLiteral("cold_configuration_ms_median")).toDouble(-1), medianOf(config)));
    // A whole configuration includes at least its 10 steps of the model.
    QVERIFY(medianOf(config) * 1000.0 > 10 * medianOf(numbers(series.value(QStringLiteral("warm")).toObject().value(QStringLiteral("cpu_us")))) * 0.5);
    QVERIFY(j.value(QStringLiteral("cold_configuration_summary_bytes")).toDouble() > 200);
    QCOMPARE(j.value(QStringLiteral("steps")).toInt(), 20);
    QCOMPARE(j.value(QStringLiteral("gpus")).toInt(), 72);
    QCOMPARE(j.value(QStringLiteral("moe_layers")).toInt(), 58);
}

QTEST_GUILESS_MAIN(TestCliBench)
#include "tst_cli_bench.moc"
