// Hostile input (issue 18): each reproducer class found by mutation testing, made here at its
// minimal size, must give a located InputError (exit 2 in the CLI) — never a crash (a JSON value
// nested 100,000 deep), an internal error (a number that overflows a double, a wrong type on a
// later JSONL line), a hang (a YAML file yaml-cpp takes seconds for) or unbounded memory (a
// topology whose route table grows with the square of its GPUs).
#include "common/diagnostics.h"
#include "common/json_input.h"
#include "common/yaml_reader.h"
#include "model/hf_import.h"
#include "placement/load_stats_formats.h"
#include "placement/safetensors_reader.h"
#include "scenario/scenario_yaml.h"
#include "topology/topology_yaml.h"
#include "workload/trace_routing.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

using namespace moex;

namespace {

std::string nested(int depth) { return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']'); }

// The message of the InputError `f` throws ("" when it throws none); any other exception fails.
QString inputError(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return QString::fromStdString(e.diagnostics().format());
    }
    return {};
}

// A safetensors file: 8-byte little-endian header length, the JSON header, the data.
std::string safetensors(const std::string& header, const std::string& data = {})
{
    std::string out(8, '\0');
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    return out + header + data;
}

void write(const QString& path, const std::string& text)
{
    std::ofstream(path.toStdString(), std::ios::binary) << text;
}

const std::string kVllmRecord =
    R"({"record_type": "eplb_load_stats", "version": 1, "step": 1, "num_ranks": 2, "expert_load": [[1, 2, 3, 4]]})";

}  // namespace

class TestHostileInput : public QObject {
    Q_OBJECT
private slots:
    // 0. A second YAML document (after '---' or '...') is an error at its line, not ignored: a
    // syntax error after the first document passed as "ok". A trailing '---' alone is fine.
    void secondYamlDocumentIsAnError()
    {
        const std::string base = "a: 1\nb: [2, 3]\n";
        Diagnostics d;
        QVERIFY(parseYaml(base + "---\n", "one.yaml", d).has_value());
        QVERIFY(d.empty());
        for (const std::string& rest : {std::string("---\nc: 4\n"), std::string("...\njunk\n")}) {
            Diagnostics two;
            QVERIFY(!parseYaml(base + rest, "two.yaml", two).has_value());
            QVERIFY2(two.format().find("two.yaml:4:1: error: a second YAML document") != std::string::npos, two.format().c_str());
        }
        Diagnostics broken;
        QVERIFY(!parseYaml(base + "---\ngarbage: [unclosed\n", "broken.yaml", broken).has_value());
        QVERIFY2(broken.format().find("broken.yaml:4:1: error: a second YAML document") != std::string::npos, broken.format().c_str());
        // An explicit start, comments after the end, a '---' inside a block scalar: one document.
        for (const std::string& one : {std::string("--- # start\na: 1\n...\n# done\n"), std::string("a: |\n  ---\n  x\n"),
                                       std::string("%YAML 1.2\n---\na: 1\n")}) {
            Diagnostics fine;
            QVERIFY2(parseYaml(one, "one.yaml", fine).has_value() && fine.empty(), fine.format().c_str());
        }
        // yaml-cpp's LoadAll never returned on a lone ',' (the fuzzer's find): this answers.
        Diagnostics comma;
        parseYaml(",", "comma.yaml", comma);
    }

    // 1. Deeply nested JSON: refused while parsing, in every reader, with the file named.
    void deepJsonIsRefusedNotACrash()
    {
        const std::string deep = nested(100000);
        const QString hf = inputError([&] { importHfConfig("{\"num_local_experts\": " + deep + "}", "config.json"); });
        QVERIFY2(hf.contains(QStringLiteral("config.json")) && hf.contains(QStringLiteral("nests deeper")), qPrintable(hf));
        const QString trace = inputError([&] { parseTokenTrace("{\"layer\": " + deep + ", \"experts\": [1]}\n", "t.jsonl"); });
        QVERIFY2(trace.contains(QStringLiteral("t.jsonl:1")) && trace.contains(QStringLiteral("nests deeper")), qPrintable(trace));
        const QString vllm = inputError([&] {
            detail::parseVllmStats(kVllmRecord + "\n{\"record_type\": \"eplb_load_stats\", \"expert_load\": " + deep + "}\n",
                                   "s.jsonl");
        });
        QVERIFY2(vllm.contains(QStringLiteral("s.jsonl:2")) && vllm.contains(QStringLiteral("nests deeper")), qPrintable(vllm));
        const QString st = inputError([&] { parseSafetensors(safetensors("{\"t\": {\"dtype\": " + deep + "}}"), "r.safetensors"); });
        QVERIFY2(st.contains(QStringLiteral("r.safetensors")) && st.contains(QStringLiteral("nests deeper")), qPrintable(st));
        const QString counts = inputError([&] { parseLayerCounts(deep, "c.json", 8); });
        QVERIFY2(counts.contains(QStringLiteral("c.json")), qPrintable(counts));
        // TensorRT-LLM's meta_info.json, deep and with an overflowing number.
        for (const std::string& value : {deep, std::string("1e309")}) {
            QTemporaryDir dir;
            write(dir.filePath(QStringLiteral("meta_info.json")), "{\"num_experts\": " + value + ", \"num_experts_per_token\": 1}");
            write(dir.filePath(QStringLiteral("rank0.safetensors")), safetensors("{}"));
            const QString meta = inputError([&] { detail::readTrtllmStats(dir.path().toStdString()); });
            QVERIFY2(meta.contains(QStringLiteral("meta_info.json")), qPrintable(meta));
        }
        // 64 levels are still read (and 30,000 parse as far as the limit allows: the message is short).
        QVERIFY(jsonSnippet(parseJsonInput(nested(60), "x")).size() <= 40);
    }

    // 2. A number that overflows a double, and a wrong type on a later JSONL line: InputErrors.
    void overflowsAndLateTypeErrorsAreInputErrors()
    {
        for (const char* number : {"1e309", "-1e309", "1234567890123456789012345678901234567890123456789012345678901234567890"
                                                        "123456789012345678901234567890e300"}) {
            const std::string n(number);
            // Located at the number (nlohmann gives no position for an overflow, only the text).
            const QString hf = inputError([&] { importHfConfig("{\n  \"hidden_size\": 1,\n  \"num_local_experts\": " + n + "}", "config.json"); });
            QVERIFY2(hf.contains(QStringLiteral("config.json:3:24:")), qPrintable(hf));
            const QString trace = inputError([&] { parseTokenTrace("{\"layer\": 0, \"experts\": [" + n + "]}\n", "t.jsonl"); });
            QVERIFY2(trace.contains(QStringLiteral("t.jsonl:1:26:")), qPrintable(trace));
            const QString st = inputError([&] { parseSafetensors(safetensors("{\"t\": {\"dtype\": \"I64\", \"shape\": [" + n
                                                                              + "], \"data_offsets\": [0, 8]}}", std::string(8, '\0')),
                                                              "r.safetensors"); });
            QVERIFY2(st.contains(QStringLiteral("r.safetensors")), qPrintable(st));
            const QString vllm = inputError([&] {
                detail::parseVllmStats(kVllmRecord + "\n{\"record_type\": \"eplb_load_stats\", \"expert_load\": [[" + n + "]]}\n", "s.jsonl");
            });
            QVERIFY2(vllm.contains(QStringLiteral("s.jsonl:2")), qPrintable(vllm));
        }
        const QString late = inputError([&] { detail::parseVllmStats(kVllmRecord + "\n{\"record_type\": 1}\n", "s.jsonl"); });
        QVERIFY2(late.contains(QStringLiteral("s.jsonl:2")), qPrintable(late));
        QVERIFY(!late.contains(QStringLiteral("type_error.302")) || late.contains(QStringLiteral("s.jsonl:2")));
    }

    // 5. Fields that were accepted with nonsense: vLLM "step" / "num_ranks" that are not counts,
    // TensorRT-LLM token counts of INT64_MAX.
    void nonsenseCountsAreRefused()
    {
        for (const char* field : {"\"step\": \"x\"", "\"num_ranks\": \"x\"", "\"step\": -1", "\"num_ranks\": 0"}) {
            const std::string record = std::string("{\"record_type\": \"eplb_load_stats\", ") + field
                                       + ", \"expert_load\": [[1, 2]]}\n";
            const QString m = inputError([&] { detail::parseVllmStats(record, "s.jsonl"); });
            QVERIFY2(m.contains(QStringLiteral("s.jsonl:1")), qPrintable(QString::fromLatin1(field) + QLatin1Char(' ') + m));
        }
        QTemporaryDir dir;
        write(dir.filePath(QStringLiteral("meta_info.json")), R"({"num_experts": 2, "num_experts_per_token": 1})");
        std::string data(16, '\0');
        for (int i = 0; i < 7; ++i)
            data[static_cast<std::size_t>(i)] = static_cast<char>(0xff);
        data[7] = 0x7f;  // INT64_MAX for expert 0, 0 for expert 1
        write(dir.filePath(QStringLiteral("rank0.safetensors")),
              safetensors(R"({"0_3": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}})", data));
        const QString m = inputError([&] { detail::readTrtllmStats(dir.path().toStdString()); });
        QVERIFY2(m.contains(QStringLiteral("rank0.safetensors")) && m.contains(QStringLiteral("9223372036854775807")),
                 qPrintable(m));
    }

    // 3. YAML that yaml-cpp takes seconds and gigabytes for is refused before parsing, and
    // quickly; what stays under the bounds still parses.
    void hugeYamlIsRefusedQuickly()
    {
        QElapsedTimer t;
        t.start();
        const QString scalar = inputError([&] { loadScenarioText("name: " + std::string(3u << 20, 'A') + "\n", "big.yaml"); });
        QVERIFY2(scalar.contains(QStringLiteral("big.yaml")) && scalar.contains(QStringLiteral("MiB")), qPrintable(scalar));
        std::string flow = "x: [";
        for (int i = 0; i < 150000; ++i)
            flow += "1,";
        flow += "1]\n";
        const QString list = inputError([&] { loadScenarioText(flow, "flow.yaml"); });
        QVERIFY2(list.contains(QStringLiteral("flow.yaml")) && list.contains(QStringLiteral("100000")), qPrintable(list));
        QVERIFY2(t.elapsed() < 5000, "refusals must not parse");  // generous: they take milliseconds
        // Within the bounds the usual errors come back (here: not a scenario), not a refusal.
        const QString small = inputError([&] { loadScenarioText("x: [1, 2, 3]\n", "small.yaml"); });
        QVERIFY(!small.isEmpty() && !small.contains(QStringLiteral("MiB")) && !small.contains(QStringLiteral("100000")));
    }

    // 4. A custom topology whose GPU count the all-pairs routes cannot take is refused with the
    // count, before any route is built; 2,048 GPUs (the bound) still load.
    void quadraticTopologyIsBounded()
    {
        auto flat = [](int gpus) {
            std::string y = "name: flat\ngpu: h100\nnodes:\n";
            for (int i = 0; i < gpus; ++i)
                y += "  - {name: g" + std::to_string(i) + ", kind: gpu, domain: 0}\n";
            y += "  - {name: sw, kind: nvswitch, domain: 0}\nlinks:\n";
            for (int i = 0; i < gpus; ++i)
                y += "  - {from: g" + std::to_string(i) + ", to: sw, kind: nvlink, gbs: 450, latency_us: 0.25}\n";
            return y;
        };
        QTemporaryDir dir;
        const QString big = dir.filePath(QStringLiteral("flat2049.yaml"));
        write(big, flat(2049));
        const QString m = inputError([&] { loadTopologyFile(big.toStdString()); });
        QVERIFY2(m.contains(QStringLiteral("flat2049.yaml")) && m.contains(QStringLiteral("2049 GPUs")), qPrintable(m));
        const QString ok = dir.filePath(QStringLiteral("flat64.yaml"));
        write(ok, flat(64));
        QCOMPARE(loadTopologyFile(ok.toStdString()).numGpus(), 64);
    }

    // 6. parseJsonInput builds what nlohmann::json::parse builds (its own DOM builder, for the
    // checks), finds a repeated key at any depth, in objects inside arrays, and only within one
    // object: the same key in sibling objects, or in a nested one, is no repeat.
    void checkedJsonParseBuildsTheSameValues()
    {
        const std::string text = R"({"a": [1, -2, 3.5, 1e-3, 18446744073709551615, true, false, null, "s\u00e9\n"],
            "b": {"c": [[], {}, [{"x": 1}, {"x": 2, "y": {"x": 3}}]], "d": "", "x": 4},
            "e": [[[[0]]]], "x": {"b": 5}})";
        const nlohmann::json checked = parseJsonInput(text, "v.json");
        QCOMPARE(checked, nlohmann::json::parse(text));
        QCOMPARE(checked.dump(), nlohmann::json::parse(text).dump());
        QVERIFY(checked["a"][4].is_number_unsigned() && checked["a"][1].is_number_integer() && checked["a"][2].is_number_float());
        for (const std::string& scalar : {std::string("7"), std::string("\"t\""), std::string("null"), std::string("[]")})
            QCOMPARE(parseJsonInput(scalar, "v.json"), nlohmann::json::parse(scalar));

        // A repeat inside the third object of an array, two levels down: located at the repeat.
        const QString dup = inputError([] {
            parseJsonInput("[\n {\"k\": 1},\n {\"k\": 2},\n {\"m\": {\"k\": 1}, \"k\": 3, \"m\": 4}\n]", "d.json");
        });
        QVERIFY2(dup.contains(QStringLiteral("d.json:4:26: error: JSON gives the key \"m\" twice")), qPrintable(dup));
        // The repeat after a nested object closed: the outer object's keys are still its own.
        const QString after = inputError([] { parseJsonInput(R"({"a": {"b": {"c": 1}}, "a": 2})", "d.json"); });
        QVERIFY2(after.contains(QStringLiteral("d.json:1:24:")) && after.contains(QStringLiteral("\"a\" twice")), qPrintable(after));
        // Syntax errors after a repeat-free prefix: still the syntax error, at its place.
        const QString syntax = inputError([] { parseJsonInput("{\"a\": [1, 2,]}", "s.json"); });
        QVERIFY2(syntax.contains(QStringLiteral("s.json:1:13:")) && syntax.contains(QStringLiteral("not valid JSON")), qPrintable(syntax));
        const QString trailing = inputError([] { parseJsonInput("{} x", "s.json"); });
        QVERIFY2(trailing.contains(QStringLiteral("s.json:1:4:")), qPrintable(trailing));
        QVERIFY(!inputError([] { parseJsonInput("", "s.json"); }).isEmpty());
        // Containers nested 65 deep are read (the 65th opens inside 64: kMaxJsonDepth); 66 are not.
        std::string deep;
        for (int i = 0; i < 66; ++i)
            deep += "{\"k\": ";
        const std::string tail(66, '}');
        QVERIFY(!inputError([&] { parseJsonInput(deep + "1" + tail, "n.json"); }).contains(QStringLiteral("twice")));
        QVERIFY(inputError([&] { parseJsonInput(deep + "1" + tail, "n.json"); }).contains(QStringLiteral("nests deeper than 64")));
        QCOMPARE(parseJsonInput(deep.substr(6) + "1" + tail.substr(1), "n.json"), nlohmann::json::parse(deep.substr(6) + "1" + tail.substr(1)));
    }

    // 7. Where keys are written (JsonKeyOffsets, for errors at the key): a key with escapes is found
    // as written, not at an earlier key of the same name spelled plainly; and the record stays
    // bounded for hostile files (a pointer past 256 characters, keys past 65,536: not recorded;
    // both were quadratic, in time and in memory).
    void keyOffsetsAreFoundAsWrittenAndBounded()
    {
        const std::string text = "{\"num_experts\": 8,\n \"text_config\": {\"num\\u005fexperts\": 20000, \"q\\\"x\": {\"k\\\\\": 1}}}";
        JsonKeyOffsets keys;
        const nlohmann::json j = parseJsonInput(text, "k.json", 0, "k.json", keys);
        QCOMPARE(j["text_config"]["num_experts"].get<int>(), 20000);
        const auto at = [&](const std::string& pointer) {
            const auto l = keys.locate(pointer, text, "k.json");
            return l ? QStringLiteral("%1:%2").arg(l->line).arg(l->column) : QStringLiteral("none");
        };
        QCOMPARE(at("/num_experts"), QStringLiteral("1:2"));
        QCOMPARE(at("/text_config/num_experts"), QStringLiteral("2:18"));
        QCOMPARE(at("/text_config/q\"x"), QStringLiteral("2:45"));
        QCOMPARE(at("/text_config/q\"x/k\\"), QStringLiteral("2:54"));
        // import-hf then reports the escaped key's error at its own line (it was at line 1).
        const QString hf = inputError([&] {
            importHfConfig("{\"num_experts\": 8, \"hidden_size\": 64, \"num_hidden_layers\": 2,\n \"text_config\": {\"num\\u005fexperts\": 20000, "
                           "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64}}",
                           "esc.json");
        });
        QVERIFY2(hf.contains(QStringLiteral("esc.json:2:18: error: 'num_experts' = 20000")), qPrintable(hf));

        // A long key: neither it nor anything under it is recorded.
        std::string longKey(300, 'a');
        std::string big = "{\"" + longKey + "\": {";
        for (int i = 0; i < 1000; ++i)
            big += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": [" + std::to_string(i) + "]";
        big += "}, \"short\": 1}";
        JsonKeyOffsets bounded;
        QCOMPARE(parseJsonInput(big, "b.json", 0, "b.json", bounded).size(), std::size_t(2));
        QCOMPARE(bounded.offsets.size(), std::size_t(1));
        QVERIFY(bounded.locate("/short", big, "b.json").has_value());
        // Keys past the first 65,536 are not recorded.
        std::string many = "{";
        for (int i = 0; i < 70000; ++i)
            many += (i ? ", \"" : "\"") + std::to_string(i) + "\": 0";
        many += "}";
        JsonKeyOffsets capped;
        QCOMPARE(parseJsonInput(many, "m.json", 0, "m.json", capped).size(), std::size_t(70000));
        QCOMPARE(capped.offsets.size(), JsonKeyOffsets::kMaxKeys);
    }
};

QTEST_GUILESS_MAIN(TestHostileInput)
#include "tst_hostile_input.moc"
