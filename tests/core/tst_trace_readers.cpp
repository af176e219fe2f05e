// Routing traces and counts files: the readers against the real files (Mixtral routing trace,
// Switch statistics) and against malformed input, streaming vs in-memory parsing, trace replay
// and aggregation, and co-activation matrices from a trace.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "workload/coactivation.h"
#include "workload/trace_routing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#endif

#include "alloc_hook.h"
#include "routing_fixtures.h"

#include <QtTest>

using namespace moex;
using test::makeWork;
using test::maxOverMean;
using test::violation;

namespace {








std::string sharedData(const char* file)
{
    return std::string(MOEX_TEST_DATA_DIR) + "/traces/" + file;
}

const char* kMixtral = "mixtral8x7b_gsm8k_2_routing.jsonl";
const char* kSwitch = "switch_base128_comprehensive_expert_statistics.json";

// A small valid trace: 2 layers x 4 tokens, top-2 of 8 experts (8 data rows).
QStringList validTraceLines()
{
    QStringList lines;
    for (int layer = 0; layer < 2; ++layer)
        for (int t = 0; t < 4; ++t)
            lines
                << QStringLiteral(
                       R"({"dataset": "x", "problem_id": 0, "layer": %1, "experts": [%2, %3], "gating_probs": [0.6, 0.4], "token_idx": %4})")
                       .arg(layer)
                       .arg(t)
                       .arg((t + 3) % 8)
                       .arg(t);
    return lines;
}

// The diagnostics of parsing `text`, in memory and through a file (the streaming reader).
Diagnostics traceErrors(const QByteArray& text, TraceReadOptions options, bool viaFile)
{
    try {
        if (viaFile) {
            QTemporaryDir dir;
            const QString path = dir.filePath(QStringLiteral("t.jsonl"));
            QFile f(path);
            if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
                return {};
            f.close();
            readTokenTrace(path.toStdString(), options);
        } else {
            parseTokenTrace(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "t.jsonl",
                            options);
        }
    } catch (const InputError& e) {
        return e.diagnostics();
    }
    return {};
}

}  // namespace

class TestTraceReaders : public QObject {
    Q_OBJECT
private slots:
    void mixtralTrace();
    void mixtralCoactivation();
    void mixtralReplay();
    void traceModelMismatch();
    void aggregatedRounding();
    void switchStatistics();
    void countsFormats_data();
    void countsFormats();
    void countsMatrixNarrowerThanTheModel();
    void countsErrors_data();
    void countsErrors();
    void malformedTraces_data();
    void malformedTraces();
    void garbageNeverCrashes();
    void streamingReaderMatchesParse();
};

// ---- traces ----------------------------------------------------------------------------------

void TestTraceReaders::mixtralTrace()
{
    const std::string path = sharedData(kMixtral);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    const TokenTrace t = readTokenTrace(path);
    QCOMPARE(t.num_layers, 32);
    QCOMPARE(t.num_experts, 8);
    QCOMPARE(t.top_k, 2);
    QCOMPARE(t.layer_ids.front(), 0);
    QCOMPARE(t.layer_ids.back(), 31);
    QCOMPARE(t.tokens.size(), std::size_t(247));  // problems 0 and 1
    std::size_t records = 0;
    for (int l = 0; l < 32; ++l) {
        QVERIFY(t.numTokens(l) >= 240 && t.numTokens(l) <= 247);
        records += static_cast<std::size_t>(t.numTokens(l));
    }
    QCOMPARE(records, std::size_t(7889));

    // Count the file independently, line by line with Qt's JSON.
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::ReadOnly));
    std::vector<std::vector<std::int64_t>> direct(32, std::vector<std::int64_t>(8, 0));
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        if (line.isEmpty())
            continue;
        const QJsonObject o = QJsonDocument::fromJson(line).object();
        for (const QJsonValue e : o.value(QLatin1String("experts")).toArray())
            ++direct[static_cast<std::size_t>(o.value(QLatin1String("layer")).toInt())]
                    [static_cast<std::size_t>(e.toInt())];
    }
    for (int l = 0; l < 32; ++l)
        QCOMPARE(t.expertCounts(l), direct[static_cast<std::size_t>(l)]);
    // The same token is one entry across layers.
    const int token = t.layer_tokens[5][17];
    QVERIFY(t.find(6, token) >= 0);
    QCOMPARE(t.tokens[static_cast<std::size_t>(token)],
             t.tokens[static_cast<std::size_t>(t.layer_tokens[6][static_cast<std::size_t>(t.find(6, token))])]);
}

void TestTraceReaders::mixtralCoactivation()
{
    const std::string path = sharedData(kMixtral);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    const TokenTrace t = readTokenTrace(path);
    const auto coact = coactivationMatrices(t);
    QCOMPARE(coact.size(), std::size_t(32));
    for (int l = 0; l < 32; ++l) {
        const ExpertMatrix& m = coact[static_cast<std::size_t>(l)];
        const auto counts = t.expertCounts(l);
        for (int i = 0; i < 8; ++i) {
            QCOMPARE(m.at(i, i), static_cast<double>(counts[static_cast<std::size_t>(i)]));
            for (int j = 0; j < 8; ++j)
                QCOMPARE(m.at(i, j), m.at(j, i));
        }
        QCOMPARE(m.offDiagonalSum(), static_cast<double>(t.numTokens(l)) * 2 * 1);
        const ExpertMatrix p = conditionalProbability(m);
        for (int i = 0; i < 8; ++i) {
            // Top-2: each token choosing i chose exactly one other expert.
            double others = 0.0;
            for (int j = 0; j < 8; ++j)
                if (j != i)
                    others += p.at(i, j);
            if (m.at(i, i) > 0)
                QVERIFY(std::abs(others - 1.0) < 1e-12);
        }
    }
    const auto affinity = interLayerAffinities(t);
    QCOMPARE(affinity.size(), std::size_t(31));
    for (int l = 0; l < 31; ++l) {
        int matched = 0;
        for (int tok : t.layer_tokens[static_cast<std::size_t>(l)])
            matched += t.find(l + 1, tok) >= 0 ? 1 : 0;
        double sum = 0.0;
        for (double v : affinity[static_cast<std::size_t>(l)].values)
            sum += v;
        QCOMPARE(sum, matched * 2.0 * 2.0);
        const ExpertMatrix r = rowNormalised(affinity[static_cast<std::size_t>(l)]);
        for (int i = 0; i < 8; ++i)
            if (affinity[static_cast<std::size_t>(l)].rowSum(i) > 0)
                QVERIFY(std::abs(r.rowSum(i) - 1.0) < 1e-12);
    }
}

void TestTraceReaders::mixtralReplay()
{
    const std::string path = sharedData(kMixtral);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    TokenTrace t = readTokenTrace(path);
    const TokenTrace copy = t;
    // 13 sources x 19 tokens = 247: one step replays every token once.
    TraceRouting replay(std::move(t), test::routingModel(32, 8, 2), makeWork(19, 0.0), 13);
    RoutingSample s;
    for (int step = 0; step < 3; ++step) {
        replay.next(s);
        QCOMPARE(violation(s), QString());
        for (int l = 0; l < 32; ++l)
            if (copy.numTokens(l) == 247)
                QCOMPARE(s.expertLoad(l), copy.expertCounts(l));
    }
    // Another shape wraps around the trace; invariants hold and steps differ.
    TraceRouting wrap(copy, test::routingModel(32, 8, 2), makeWork(100, 0.0), 7);
    RoutingSample a, b;
    wrap.next(a);
    wrap.next(b);
    QCOMPARE(violation(a), QString());
    QCOMPARE(violation(b), QString());
    QVERIFY(a.all_counts != b.all_counts);
    test::startCountingAllocations();
    wrap.next(b);
    QCOMPARE(test::stopCountingAllocations(), 0L);
    wrap.reset();
    wrap.next(b);
    QVERIFY(a.all_counts == b.all_counts);
}

void TestTraceReaders::traceModelMismatch()
{
    const QByteArray text = validTraceLines().join(QLatin1Char('\n')).toUtf8();
    // Experts 0..6 appear; the model has 8.
    const std::string_view view(text.constData(), static_cast<std::size_t>(text.size()));
    QCOMPARE(parseTokenTrace(view, "t.jsonl").num_experts, 7);
    TraceReadOptions eight;
    eight.num_experts = 8;
    const TokenTrace t = parseTokenTrace(view, "t.jsonl", eight);
    QCOMPARE(t.num_layers, 2);
    QCOMPARE(t.num_experts, 8);
    const auto expectError = [&](auto&& make, const QString& fragment) {
        try {
            make();
            QFAIL(qPrintable(QStringLiteral("no error; expected: ") + fragment));
        } catch (const InputError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(fragment), e.what());
            QVERIFY2(QString::fromUtf8(e.what()).startsWith(QLatin1String("t.jsonl")), e.what());
        }
    };
    expectError([&] { TraceRouting r(t, test::routingModel(3, 8, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 2 MoE layers but the model has 3 (fewer in the file)"));
    expectError([&] { TraceRouting r(t, test::routingModel(1, 8, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 2 MoE layers but the model has 1 (more in the file)"));
    expectError([&] { TraceRouting r(t, test::routingModel(2, 16, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 8 experts but the model has 16"));
    expectError([&] { TraceRouting r(parseTokenTrace(view, "t.jsonl"), test::routingModel(2, 8, 2), makeWork(4, 0), 2); },
                QStringLiteral("the trace has 7 experts but the model has 8"));
    expectError([&] { TraceRouting r(t, test::routingModel(2, 8, 4), makeWork(4, 0), 2); },
                QStringLiteral("experts_per_token is 4"));
    // Aggregated mode takes another top-k; cycling takes another layer count.
    TraceRouting aggregated(t, test::routingModel(2, 8, 4), makeWork(4, 0), 2, {TraceMode::aggregated, false});
    TraceRouting cycling(t, test::routingModel(5, 8, 2), makeWork(4, 0), 2, {TraceMode::replay, true});
    RoutingSample s;
    aggregated.next(s);
    QCOMPARE(violation(s), QString());
    cycling.next(s);
    QCOMPARE(violation(s), QString());
    QCOMPARE(cycling.traceLayerOf(3), 1);
    QVERIFY(std::ranges::equal(s.layer(3), s.layer(1)));
    QVERIFY(std::ranges::equal(s.layer(4), s.layer(0)));
}

void TestTraceReaders::aggregatedRounding()
{
    // Shares that do not divide evenly: rows still sum exactly, and summed over sources each expert
    // is within one pair of its exact quota (error diffusion), also at the cap.
    LayerCounts c;
    c.source = "c.json";
    c.num_experts = 8;
    c.layer_ids = {0, 1};
    c.counts = {{1, 1, 1, 0, 2, 3, 5, 100}, {7, 7, 7, 7, 7, 7, 7, 7}};
    TraceRouting r(c, test::routingModel(2, 8, 2), makeWork(13, 0), 5);
    RoutingSample s;
    for (int step = 0; step < 4; ++step) {
        r.next(s);
        QCOMPARE(violation(s), QString());
        const auto load = s.expertLoad(0);
        QCOMPARE(load[7], std::int64_t(13 * 5));  // the hot expert is capped at one pair per token
        // The other 13 pairs per source spread 1:1:1:0:2:3:5.
        const double rest[7] = {1, 1, 1, 0, 2, 3, 5};
        for (int e = 0; e < 7; ++e)
            QVERIFY2(std::abs(static_cast<double>(load[static_cast<std::size_t>(e)]) - 13.0 * 5 * rest[e] / 13.0) <=
                         1.0,
                     qPrintable(QStringLiteral("expert %1: %2").arg(e).arg(load[static_cast<std::size_t>(e)])));
        for (auto v : s.expertLoad(1))
            QVERIFY(std::abs(static_cast<double>(v) - 13.0 * 2 * 5 / 8) <= 1.0);
    }
}

void TestTraceReaders::switchStatistics()
{
    const std::string path = sharedData(kSwitch);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    const LayerCounts c = readLayerCounts(path);
    QCOMPARE(c.num_experts, 128);
    QVERIFY(c.from_summary);
    QCOMPARE(c.layer_ids, (std::vector<int>{1, 3, 5, 7, 9, 11}));
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject stats =
        QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String("layer_statistics")).toObject();
    double worst = 0.0;
    for (int l = 0; l < c.numLayers(); ++l) {
        const QJsonObject s = stats.value(QString::number(c.layer_ids[static_cast<std::size_t>(l)])).toObject();
        const auto& counts = c.counts[static_cast<std::size_t>(l)];
        QVERIFY(std::abs(c.total(l) - s.value(QLatin1String("total_usage")).toDouble()) < 1e-6);
        QCOMPARE(*std::max_element(counts.begin(), counts.end()), s.value(QLatin1String("max_usage")).toDouble());
        QCOMPARE(static_cast<int>(std::count(counts.begin(), counts.end(), 0.0)),
                 s.value(QLatin1String("zero_usage_experts")).toInt());
        const double ratio = s.value(QLatin1String("max_usage")).toDouble() / s.value(QLatin1String("mean")).toDouble();
        QVERIFY(std::abs(c.maxOverMean(l) - ratio) < 1e-6 * ratio);
        // The reconstructed median is near the file's.
        std::vector<double> sorted = counts;
        std::sort(sorted.begin(), sorted.end());
        const double median = (sorted[63] + sorted[64]) / 2;
        QVERIFY(std::abs(median - s.value(QLatin1String("median")).toDouble()) <
                0.25 * s.value(QLatin1String("median")).toDouble());
        worst = std::max(worst, c.maxOverMean(l));
    }
    // Heavily skewed: the worst layer's hottest expert takes ~16x the mean (layer 11: 16964 / 1055.5).
    QVERIFY2(worst > 15.0 && worst < 17.0, qPrintable(QString::number(worst)));

    // Aggregated routing of a top-1 model follows the counts.
    TraceRouting r(c, test::routingModel(6, 128, 1), makeWork(256, 0), 8);
    RoutingSample s;
    r.next(s);
    QCOMPARE(violation(s), QString());
    std::vector<double> load;
    for (auto v : s.expertLoad(5))
        load.push_back(static_cast<double>(v));
    QVERIFY(maxOverMean(load) > 14.0);
}

void TestTraceReaders::countsFormats_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("experts");
    QTest::addColumn<QList<int>>("layers");
    QTest::addColumn<double>("layer0expert1");
    QTest::addRow("usage with layers")
        << QByteArray(
               R"({"num_experts": 4, "layers": [3, 1], "expert_usage_by_layer": {"1": {"0": 5, "1": 7}, "3": {"1": 2, "3": 9}}})")
        << 4 << QList<int>{3, 1} << 2.0;
    QTest::addRow("usage keyed") << QByteArray(R"({"expert_usage_by_layer": {"10": {"0": 5, "2": 7}, "2": {"1": 4}}})")
                                 << 3 << QList<int>{2, 10} << 4.0;
    QTest::addRow("usage arrays") << QByteArray(R"({"num_experts": 3, "expert_usage_by_layer": {"0": [1, 2, 3]}})") << 3
                                  << QList<int>{0} << 2.0;
    QTest::addRow("matrix") << QByteArray("[[1, 2.5, 3],\n [4, 5, 6]]") << 3 << QList<int>{0, 1} << 2.5;
}

void TestTraceReaders::countsFormats()
{
    QFETCH(QByteArray, text);
    QFETCH(int, experts);
    QFETCH(QList<int>, layers);
    QFETCH(double, layer0expert1);
    const LayerCounts c =
        parseLayerCounts(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "c.json");
    QCOMPARE(c.num_experts, experts);
    QCOMPARE(c.layer_ids, std::vector<int>(layers.begin(), layers.end()));
    QCOMPARE(c.counts[0][1], layer0expert1);
    QVERIFY(!c.from_summary);
}

void TestTraceReaders::countsErrors_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("fragment");
    QTest::addRow("bad json") << QByteArray("{\"num_experts\": 4,\n \"layers\": [1,\n ]}") << 3
                              << QStringLiteral("is not valid JSON");
    QTest::addRow("ragged matrix") << QByteArray("[[1, 2], [3]]") << 1 << QStringLiteral("row 1 has 1 counts");
    QTest::addRow("negative count") << QByteArray("[[1, -2]]") << 1 << QStringLiteral("number from 0 to 2^40");
    // Matrix errors on the value's own line (they were all at 1:1).
    QTest::addRow("negative count, line 4") << QByteArray("[\n [1,2,3],\n [4,5,6],\n [7,-8,9]\n]\n") << 4
                                            << QStringLiteral("row 2, expert 1");
    QTest::addRow("ragged matrix, line 3") << QByteArray("[\n [1,2,3],\n [4,5],\n [7,8,9]\n]\n") << 3
                                           << QStringLiteral("row 1 has 2 counts, row 0 has 3");
    QTest::addRow("usage list shorter") << QByteArray("{\"expert_usage_by_layer\": {\n\"0\": [1,2,3],\n\"1\": [1,2]}}") << 3
                                        << QStringLiteral("layer 1 has 2 counts");
    QTest::addRow("expert out of range")
        << QByteArray("{\"num_experts\": 2,\n\"expert_usage_by_layer\": {\n\"1\": {\"5\": 3}}}") << 3
        << QStringLiteral("expert \"5\" is out of range");
    QTest::addRow("missing layer") << QByteArray("{\"layers\": [1, 2], \"expert_usage_by_layer\": {\"1\": {\"0\": 3}}}")
                                   << 1 << QStringLiteral("layer 2 is listed");
    QTest::addRow("unknown format") << QByteArray("{\"foo\": 1}") << 1 << QStringLiteral("unrecognised counts file");
    QTest::addRow("empty matrix") << QByteArray("[]") << 1 << QStringLiteral("no layers");
    QTest::addRow("num_experts not a count") << QByteArray("{\"num_experts\": \"8\",\n\"expert_usage_by_layer\": {}}") << 1
                                            << QStringLiteral("\"num_experts\" must be a positive integer, found \"8\"");
    // Ids with a leading zero were read as a second spelling of the id: "00" took layer 0's place
    // (every later layer shifted by one) and an expert "03" was added to expert 3.
    QTest::addRow("layer key with a leading zero")
        << QByteArray("{\"num_experts\": 2, \"expert_usage_by_layer\": {\n\"0\": [1, 2],\n\"00\": [5, 6]}}") << 3
        << QStringLiteral("layer key \"00\" is not a layer id");
    QTest::addRow("expert key with a leading zero")
        << QByteArray("{\"expert_usage_by_layer\": {\n\"1\": {\"3\": 10, \"03\": 1000}}}") << 2
        << QStringLiteral("expert key \"03\" is not an expert id");
    QTest::addRow("num_experts past 2^32") << QByteArray("{\"num_experts\": 4294967297,\n\"expert_usage_by_layer\": {}}") << 1
                                          << QStringLiteral("num_experts must be in [1, ");
}

void TestTraceReaders::countsErrors()
{
    QFETCH(QByteArray, text);
    QFETCH(int, line);
    QFETCH(QString, fragment);
    try {
        parseLayerCounts(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "c.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        const auto& d = e.diagnostics().items();
        QCOMPARE(d.size(), std::size_t{1});  // one error for one fault (a second, false one followed some)
        QCOMPARE(d.front().where.file, std::string("c.json"));
        QCOMPARE(d.front().where.line, line);
        QVERIFY2(QString::fromStdString(d.front().message).contains(fragment), e.what());
    }
}

// A matrix row gives every expert's count: one shorter than the model's experts was padded with
// zeros (Mixtral's experts 6 and 7 ran with no load, exit 0).
void TestTraceReaders::countsMatrixNarrowerThanTheModel()
{
    try {
        parseLayerCounts("[\n [10, 20, 30, 40, 50, 60],\n [1, 2, 3, 4, 5, 6]\n]\n", "c.json", 8);
        QFAIL("no error");
    } catch (const InputError& e) {
        const auto& d = e.diagnostics().items();
        QCOMPARE(d.size(), std::size_t{1});
        QCOMPARE(d.front().where.line, 2);
        QVERIFY2(QString::fromStdString(d.front().message).contains(QStringLiteral("row 0 has 6 counts, the model has 8 experts")), e.what());
    }
    const LayerCounts exact = parseLayerCounts("[[1, 2, 3, 4, 5, 6, 7, 8]]", "c.json", 8);
    QCOMPARE(exact.num_experts, 8);
}

void TestTraceReaders::malformedTraces_data()
{
    QTest::addColumn<QString>("badLine");  // replaces data row 3 ("" = see text)
    QTest::addColumn<QByteArray>("text");  // whole file when badLine is empty
    QTest::addColumn<int>("numExperts");
    QTest::addColumn<int>("line");
    QTest::addColumn<int>("column");  // 0 = any
    QTest::addColumn<QString>("fragment");
    QTest::addRow("bad json") << QStringLiteral(R"({"layer": 0, "experts": [1, 2)") << QByteArray() << 0 << 3 << 0
                              << QStringLiteral("is not valid JSON");
    QTest::addRow("not an object") << QStringLiteral("[1, 2]") << QByteArray() << 0 << 3 << 1
                                   << QStringLiteral("must be a JSON object");
    QTest::addRow("missing experts") << QStringLiteral(R"({"layer": 0, "token_idx": 2})") << QByteArray() << 0 << 3 << 1
                                     << QStringLiteral("missing \"experts\"");
    QTest::addRow("missing layer") << QStringLiteral(R"({"experts": [1, 2], "token_idx": 2})") << QByteArray() << 0 << 3
                                   << 1 << QStringLiteral("missing \"layer\"");
    QTest::addRow("negative expert") << QStringLiteral(R"({"layer": 0, "experts": [-1, 2], "token_idx": 2})")
                                     << QByteArray() << 0 << 3 << 14 << QStringLiteral("expert id -1 is negative");
    QTest::addRow("expert >= num_experts")
        << QStringLiteral(R"({"layer": 0, "experts": [1, 8], "token_idx": 2})") << QByteArray() << 8 << 3 << 14
        << QStringLiteral("expert id 8 is out of range: num_experts is 8");
    QTest::addRow("experts wrong type") << QStringLiteral(R"({"layer": 0, "experts": "1,2", "token_idx": 2})")
                                        << QByteArray() << 0 << 3 << 14
                                        << QStringLiteral("must be an array of expert ids, found string");
    QTest::addRow("expert id wrong type")
        << QStringLiteral(R"({"layer": 0, "experts": [1.5, 2], "token_idx": 2})") << QByteArray() << 0 << 3 << 14
        << QStringLiteral("integer expert ids, found number 1.5");
    QTest::addRow("layer wrong type") << QStringLiteral(R"({"layer": "0", "experts": [1, 2], "token_idx": 2})")
                                      << QByteArray() << 0 << 3 << 2 << QStringLiteral("\"layer\" must be an integer");
    QTest::addRow("token wrong type") << QStringLiteral(R"({"layer": 0, "experts": [1, 2], "token_idx": null})")
                                      << QByteArray() << 0 << 3 << 0
                                      << QStringLiteral("\"token_idx\" must be an integer");
    QTest::addRow("inconsistent top-k")
        << QStringLiteral(R"({"layer": 0, "experts": [1, 2, 3], "token_idx": 2})") << QByteArray() << 0 << 3 << 14
        << QStringLiteral("inconsistent top-k: this record has 3 experts, the record at line 1 has 2");
    QTest::addRow("expert twice") << QStringLiteral(R"({"layer": 0, "experts": [2, 2], "token_idx": 2})")
                                  << QByteArray() << 0 << 3 << 14 << QStringLiteral("appears twice");
    QTest::addRow("duplicate token")
        << QStringLiteral(R"({"problem_id": 0, "layer": 0, "experts": [1, 2], "token_idx": 0})") << QByteArray() << 0
        << 3 << 1
        << QStringLiteral("duplicate record for token (problem_id 0, token_idx 0) at layer 0 (first at line 1)");
    QTest::addRow("empty file") << QString() << QByteArray() << 0 << 0 << 0 << QStringLiteral("no routing records");
    QTest::addRow("blank lines only") << QString() << QByteArray("\n  \n\r\n") << 0 << 0 << 0
                                      << QStringLiteral("no routing records");
    QTest::addRow("binary garbage") << QString() << QByteArray("\x01\x02\xff\xfe\n{\"layer\"", 13) << 0 << 1 << 0
                                    << QStringLiteral("is not valid JSON");
}

void TestTraceReaders::malformedTraces()
{
    QFETCH(QString, badLine);
    QFETCH(QByteArray, text);
    QFETCH(int, numExperts);
    QFETCH(int, line);
    QFETCH(int, column);
    QFETCH(QString, fragment);
    if (!badLine.isEmpty()) {
        QStringList lines = validTraceLines();
        lines[2] = badLine;
        text = lines.join(QLatin1Char('\n')).toUtf8() + '\n';
    }
    TraceReadOptions options;
    options.num_experts = numExperts;
    for (bool viaFile : {false, true}) {
        const Diagnostics d = traceErrors(text, options, viaFile);
        QVERIFY2(!d.empty(), viaFile ? "file: no error" : "memory: no error");
        const Diagnostic& first = d.items().front();
        QCOMPARE(first.where.line, line);
        if (column > 0)
            QCOMPARE(first.where.column, column);
        QVERIFY2(QString::fromStdString(first.message).contains(fragment), first.message.c_str());
        QVERIFY(QString::fromStdString(first.format()).contains(QLatin1String("error: ")));
    }
}

void TestTraceReaders::garbageNeverCrashes()
{
    // Deep nesting, huge numbers, a line over the limit, random bytes: errors, never a crash.
    QByteArray deep(200000, '[');
    TraceReadOptions small;
    small.max_line_bytes = 1000;
    QByteArray longLine = validTraceLines().first().toUtf8() + '\n' + QByteArray(5000, ' ') + "{}\n";
    const QList<QPair<QByteArray, TraceReadOptions>> inputs = {
        {deep, {}},
        {QByteArray(R"({"layer": 1e400, "experts": [1]})"), {}},
        {QByteArray(R"({"layer": 99999999999999999999, "experts": [1]})"), {}},
        {QByteArray(R"({"layer": 0, "experts": [4294967296]})"), {}},
        {QByteArray(R"({"layer": 0, "experts": [18446744073709551615]})"), {}},
        {QByteArray(R"({"layer": 18446744073709551615, "experts": [1]})"), {}},
        {longLine, small},
    };
    for (const auto& [text, options] : inputs)
        for (bool viaFile : {false, true})
            QVERIFY(!traceErrors(text, options, viaFile).empty());
    const Diagnostics tooLong = traceErrors(longLine, small, true);
    QCOMPARE(tooLong.items().front().where.line, 2);
    QVERIFY(tooLong.items().front().message.find("longer than 1000 bytes") != std::string::npos);
    std::srand(7);
    for (int i = 0; i < 50; ++i) {
        QByteArray junk(1 + std::rand() % 400, '\0');
        for (auto& ch : junk)
            ch = static_cast<char>(std::rand() % 256);
        QVERIFY(!traceErrors(junk, {}, false).empty());
    }
    TraceReadOptions tiny;
    tiny.max_file_bytes = 100;
    const Diagnostics big = traceErrors(validTraceLines().join(QLatin1Char('\n')).toUtf8(), tiny, true);
    QVERIFY(!big.empty() && big.items().front().message.find("limit of 100") != std::string::npos);
}

void TestTraceReaders::streamingReaderMatchesParse()
{
    // Over 3 MiB with CRLF endings: several read chunks, lines split across them.
    QByteArray text;
    for (int t = 0; t < 12000; ++t)
        for (int layer = 0; layer < 2; ++layer)
            text += QStringLiteral(
                        R"({"problem_id": %1, "layer": %2, "experts": [%3, %4, %5], "token_idx": %6, "pad": "%7"})")
                        .arg(t % 3)
                        .arg(layer)
                        .arg(t % 16)
                        .arg((t + 5) % 16)
                        .arg((t + 9) % 16)
                        .arg(t)
                        .arg(QString(t % 200, QLatin1Char('x')))
                        .toUtf8() +
                    "\r\n";
    QVERIFY(text.size() > 3 * (1 << 20));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("big.jsonl"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    const TokenTrace a = readTokenTrace(path.toStdString());
    const TokenTrace b =
        parseTokenTrace(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "mem");
    QCOMPARE(a.num_layers, 2);
    QCOMPARE(a.top_k, 3);
    QCOMPARE(a.num_experts, 16);
    QCOMPARE(a.tokens.size(), std::size_t(12000));
    QVERIFY(a.layer_tokens == b.layer_tokens);
    QVERIFY(a.layer_experts == b.layer_experts);
    QVERIFY(a.tokens == b.tokens);
}

QTEST_APPLESS_MAIN(TestTraceReaders)
#include "tst_trace_readers.moc"
