// Imports of expert-load statistics: the real SGLang .pt and TensorRT-LLM files against their
// expected sums, the JSON and JSONL formats, per-pass statistics and shape checks. Hostile and
// broken inputs are tst_load_stats_errors.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "placement/load_stats.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#endif

#include "load_stats_fixtures.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace moex;
using namespace moex::test;

class TestLoadStats : public QObject {
    Q_OBJECT
private slots:
    void sglangRealFile();
    void trtllmRealFolder();
    void realTraceAndCounts();
    void jsonMatrixAndCounts();
    void vllmJsonl();
    void sglangSynthetic();
    void sglangPerPass();
    void shapeChecks();
    void snapshotsAreBounded();
};

void TestLoadStats::sglangRealFile()
{
    const std::string pt = dataDir() + "/loadstats/sglang_expert_distribution_recorder_mixtral.pt";
    QVERIFY2(std::filesystem::exists(pt), pt.c_str());
    const LoadStats s = readLoadStats(pt);
    QCOMPARE(s.format, std::string("sglang"));
    QCOMPARE(s.numLayers(), 32);
    QCOMPARE(s.num_experts, 8);
    QCOMPARE(s.indexing, LayerIndexing::decoder_all);
    const auto expected = nlohmann::json::parse(readBytes(dataDir() + "/loadstats/sglang_expected.json"));
    QVERIFY(s.load == matrixOf(expected["expected_total_logical_count"]));  // exact: integers as doubles
    QVERIFY2(s.detail.find("3 buffer rows") != std::string::npos, s.detail.c_str());
}

void TestLoadStats::trtllmRealFolder()
{
    const std::string folder = dataDir() + "/loadstats/trtllm_mixtral";
    QVERIFY2(std::filesystem::exists(folder), folder.c_str());
    const auto expected = matrixOf(nlohmann::json::parse(readBytes(dataDir() + "/loadstats/trtllm_expected.json"))["expected_total"]);
    for (const std::string& path : {folder, folder + "/meta_info.json"}) {
        const LoadStats s = readLoadStats(path);
        QCOMPARE(s.format, std::string("trtllm"));
        QCOMPARE(s.num_experts, 8);
        QCOMPARE(s.top_k, 2);
        QCOMPARE(s.numLayers(), 32);
        QCOMPARE(s.layer_ids.front(), 0);
        QCOMPARE(s.layer_ids.back(), 31);
        QVERIFY(s.load == expected);
    }
}

void TestLoadStats::realTraceAndCounts()
{
    const std::string trace = dataDir() + "/traces/mixtral8x7b_gsm8k_2_routing.jsonl";
    QVERIFY2(std::filesystem::exists(trace), trace.c_str());
    const LoadStats t = readLoadStats(trace);
    QCOMPARE(t.format, std::string("trace"));
    QCOMPARE(t.numLayers(), 32);
    QCOMPARE(t.num_experts, 8);
    QCOMPARE(t.top_k, 2);
    double records = 0;
    for (int l = 0; l < t.numLayers(); ++l)
        records += t.total(l) / 2;  // top-2: two experts per record
    QCOMPARE(records, 7889.0);
    // The real trace's largest expert, 7, is first seen on line 1 ({"layer": 0, "experts": [7, 0]}).
    QCOMPARE(t.max_expert_line, 1);

    const LoadStats c = readLoadStats(dataDir() + "/traces/switch_base128_comprehensive_expert_statistics.json");
    QCOMPARE(c.num_experts, 128);
    QVERIFY(c.numLayers() > 0);
    QVERIFY(c.reconstructed);
}

void TestLoadStats::jsonMatrixAndCounts()
{
    QTemporaryDir dir;
    const std::string base = dir.path().toStdString();
    writeBytes(base + "/m.json", "[[1, 2, 3], [4, 5, 6]]");
    const LoadStats m = readLoadStats(base + "/m.json");
    QCOMPARE(m.format, std::string("json-matrix"));
    QVERIFY(m.load == (std::vector<std::vector<double>>{{1, 2, 3}, {4, 5, 6}}));
    QVERIFY(m.layer_ids.empty());
    QCOMPARE(m.maxOverMean(1), 6.0 / 5.0);

    writeBytes(base + "/c.json",
               R"({"num_experts": 4, "layers": [1, 3], "expert_usage_by_layer": {"1": {"0": 8, "2": 4}, "3": {"1": 1, "3": 7}}})");
    const LoadStats c = readLoadStats(base + "/c.json");
    QCOMPARE(c.format, std::string("json-counts"));
    QCOMPARE(c.indexing, LayerIndexing::decoder_ids);
    QVERIFY(c.layer_ids == (std::vector<int>{1, 3}));
    QVERIFY(c.load == (std::vector<std::vector<double>>{{8, 0, 4, 0}, {0, 1, 0, 7}}));
}

void TestLoadStats::vllmJsonl()
{
    QTemporaryDir dir;
    const std::string base = dir.path().toStdString();
    // Logical loads, two records summed.
    writeBytes(base + "/l.jsonl",
               "{\"record_type\": \"eplb_load_stats\", \"version\": 1, \"step\": 1, \"num_ranks\": 2, "
               "\"expert_load\": [[1, 2], [3, 4]]}\n\n"
               "{\"record_type\": \"eplb_load_stats\", \"version\": 1, \"step\": 2, \"num_ranks\": 2, "
               "\"expert_load\": [[10, 20], [30, 40]]}\n");
    const LoadStats l = readLoadStats(base + "/l.jsonl");
    QCOMPARE(l.format, std::string("vllm"));
    QVERIFY(l.load == (std::vector<std::vector<double>>{{11, 22}, {33, 44}}));
    // Physical slots (3 experts, 4 slots) through each record's own map.
    writeBytes(base + "/p.jsonl",
               "{\"record_type\": \"eplb_load_stats\", \"version\": 1, \"expert_load\": [[1, 2, 3, 4]], "
               "\"p2l_map\": [[0, 1, 2, 0]]}\n"
               "{\"record_type\": \"eplb_load_stats\", \"version\": 1, \"expert_load\": [[1, 1, 1, 1]], "
               "\"p2l_map\": [[2, 1, 2, 0]]}\n");
    const LoadStats p = readLoadStats(base + "/p.jsonl");
    QCOMPARE(p.num_experts, 3);
    QVERIFY(p.load == (std::vector<std::vector<double>>{{6, 3, 5}}));
    // Errors carry the line.
    writeBytes(base + "/bad.jsonl", "{\"record_type\": \"eplb_load_stats\", \"expert_load\": [[1]]}\n"
                                    "{\"record_type\": \"eplb_load_stats\", \"expert_load\": [[1, 2]]}\n");
    try {
        readLoadStats(base + "/bad.jsonl");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(e.diagnostics().items().front().where.line, 2);
    }
    // A per-token trace keeps the line where its largest expert id first shows (here 9, line 3).
    writeBytes(base + "/t.jsonl", "{\"layer\": 0, \"token_idx\": 0, \"experts\": [1, 2]}\n"
                                  "{\"layer\": 0, \"token_idx\": 1, \"experts\": [3, 0]}\n"
                                  "{\"layer\": 0, \"token_idx\": 2, \"experts\": [2, 9]}\n"
                                  "{\"layer\": 0, \"token_idx\": 3, \"experts\": [9, 4]}\n");
    const LoadStats t = readLoadStats(base + "/t.jsonl");
    QCOMPARE(t.num_experts, 10);
    QCOMPARE(t.max_expert_line, 3);
}

void TestLoadStats::sglangSynthetic()
{
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/rec.pt";
    writeBytes(path, statFile());
    const LoadStats s = readLoadStats(path);
    QVERIFY(s.load == (std::vector<std::vector<double>>{{1, 2, 3}, {4, 5, 6}}));
    QVERIFY2(s.detail.find("2 buffer rows (1 non-empty)") != std::string::npos, s.detail.c_str());
}

void TestLoadStats::sglangPerPass()
{
    // Two ranks' files, each {records: [{..., global_physical_count [2, 4]}], last_physical_to_logical_map}.
    const auto rankFile = [](std::int64_t base) {
        std::string p = pk::proto() + "}" + pk::put(0) + "(" + pk::str("records") + "]" + pk::put(1) + "(";
        for (int r = 0; r < 2; ++r) {
            p += "}(" + (r == 0 ? pk::str("forward_pass_id") + pk::put(2) : pk::get(2)) + pk::integer(r)
                + (r == 0 ? pk::str("global_physical_count") + pk::put(3) : pk::get(3))
                + pk::tensor("IntStorage", std::to_string(r), 8, 0, {2, 4}) + pk::str("input_ids") + "](" + pk::integer(5)
                + pk::integer(70000) + "eu";
        }
        p += "e" + pk::str("last_physical_to_logical_map") + pk::tensor("LongStorage", "2", 8, 0, {2, 4}) + "u.";
        return torchFile(p, {{"0", int32s({base, 1, 1, 1, 2, 2, 2, 2})},
                             {"1", int32s({1, 1, 1, 1, 0, 0, 0, 1})},
                             {"2", i64s({0, 1, 2, 0, 1, 1, 2, 0})}});
    };
    QTemporaryDir dir;
    const std::string base = dir.path().toStdString();
    writeBytes(base + "/ranks/rank0.pt", rankFile(1));
    writeBytes(base + "/ranks/rank1.pt", rankFile(3));
    const LoadStats one = readLoadStats(base + "/ranks/rank0.pt");
    // layer 0: physical {2, 2, 2, 2} -> expert 0 gets slots 0 and 3; layer 1: {2, 2, 2, 3} by map {1, 1, 2, 0}.
    QVERIFY(one.load == (std::vector<std::vector<double>>{{4, 2, 2}, {3, 4, 2}}));
    const LoadStats both = readLoadStats(base + "/ranks");
    QVERIFY(both.load == (std::vector<std::vector<double>>{{10, 4, 4}, {6, 8, 4}}));
    QVERIFY2(both.detail.find("over 2 files") != std::string::npos, both.detail.c_str());
}






void TestLoadStats::shapeChecks()
{
    LoadStats s;
    s.format = "json-matrix";
    s.num_experts = 8;
    s.load.assign(32, std::vector<double>(8, 1.0));
    checkLoadShape(s, 32, 8, "s.json");
    try {
        checkLoadShape(s, 58, 256, "s.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        const std::string m = e.what();
        QVERIFY2(m.find("has 32 layers but the model has 58 MoE layers") != std::string::npos, m.c_str());
        QVERIFY2(m.find("has 8 experts but the model has 256") != std::string::npos, m.c_str());
        QCOMPARE(e.diagnostics().items().front().where.file, std::string("s.json"));
    }

    // A per-token trace names its experts: one past the model's is blamed at its record's line.
    LoadStats trace = s;
    trace.format = "trace";
    trace.num_experts = 300;
    trace.max_expert_line = 17;
    trace.load.assign(32, std::vector<double>(300, 1.0));
    try {
        checkLoadShape(trace, 32, 256, "t.jsonl");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(e.diagnostics().size(), std::size_t{1});
        const Diagnostic& d = e.diagnostics().items().front();
        QCOMPARE(d.where.line, 17);
        QVERIFY2(d.message.find("expert id 299 is out of range: the model has 256 experts") != std::string::npos, d.message.c_str());
    }

    // SGLang rows are decoder layers: the dense ones are dropped for the model's MoE layers.
    ModelSpec model;
    model.name = "toy";
    model.num_layers = 4;
    model.moe_layers = {1, 2, 3};
    model.routed_experts = 2;
    LoadStats sg;
    sg.format = "sglang";
    sg.indexing = LayerIndexing::decoder_all;
    sg.num_experts = 2;
    sg.load = {{0, 0}, {1, 2}, {3, 4}, {5, 6}};
    const LoadStats a = alignToModel(sg, model, "x.pt");
    QVERIFY(a.load == (std::vector<std::vector<double>>{{1, 2}, {3, 4}, {5, 6}}));
    QVERIFY(a.layer_ids == (std::vector<int>{1, 2, 3}));
    sg.load.pop_back();
    try {
        alignToModel(sg, model, "x.pt");
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("has 4 decoder layers") != std::string::npos, e.what());
    }
    // Counts keyed by decoder layer: listed in any order, but they must be the MoE layers.
    LoadStats c;
    c.format = "json-counts";
    c.indexing = LayerIndexing::decoder_ids;
    c.num_experts = 2;
    c.layer_ids = {3, 1, 2};
    c.load = {{3, 3}, {1, 1}, {2, 2}};
    QVERIFY(alignToModel(c, model, "c.json").load == (std::vector<std::vector<double>>{{1, 1}, {2, 2}, {3, 3}}));
    c.layer_ids = {0, 1, 5};
    try {
        alignToModel(c, model, "c.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("which is not an MoE layer") != std::string::npos, e.what());
    }
    // Ids 0..n-1 over n MoE layers are ordinals in a trace, but TensorRT-LLM writes decoder layer
    // indices: its 0..2 are not the toy's MoE layers 1..3 (its rows were taken for them, exit 0).
    c.layer_ids = {0, 1, 2};
    c.load = {{1, 1}, {2, 2}, {3, 3}};
    QCOMPARE(alignToModel(c, model, "c.json").layer_ids, (std::vector<int>{0, 1, 2}));  // a counts file: ordinals
    LoadStats trt = c;
    trt.format = "trtllm";
    try {
        alignToModel(trt, model, "trt");
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("has layer 0, which is not an MoE layer of toy") != std::string::npos, e.what());
    }
    trt.layer_ids = {1, 2, 3};
    QCOMPARE(alignToModel(trt, model, "trt").load, c.load);
}

// Per-iteration snapshots are kept only of whole iterations and at most kMaxSnapshots of them;
// what is left out counts in the totals and the detail says so. Before: scattered TensorRT-LLM
// keys ("0_0", "1_1", ...) built iterations x layers snapshots (4,000 keys, 335 KB: 894 MB), and
// an SGLang file of millions of one-cell rows took 100 times its size.
void TestLoadStats::snapshotsAreBounded()
{
    QTemporaryDir dir;
    const std::string base = dir.path().toStdString();
    const nlohmann::json meta = {{"num_experts", 8}, {"num_experts_per_token", 2}};
    const std::string counts = i64s({1, 2, 3, 4, 5, 6, 7, 8});
    const auto tensor = [](int at) {
        return nlohmann::json{{"dtype", "I64"}, {"shape", {8}}, {"data_offsets", {64 * at, 64 * (at + 1)}}};
    };
    // Scattered keys: no iteration holds both layers, so no snapshot; both layers in the totals.
    std::filesystem::create_directories(base + "/scattered");
    writeBytes(base + "/scattered/meta_info.json", meta.dump());
    writeBytes(base + "/scattered/rank0.safetensors", safetensors({{"0_0", tensor(0)}, {"1_1", tensor(1)}}, counts + counts));
    const LoadStats scattered = readLoadStats(base + "/scattered");
    QCOMPARE(scattered.layer_ids, (std::vector<int>{0, 1}));
    QVERIFY(scattered.snapshots.empty());
    QVERIFY2(scattered.detail.find("2 iterations without every layer") != std::string::npos, scattered.detail.c_str());
    // Pipeline stages: each rank records its own layers; an iteration is whole across ranks.
    std::filesystem::create_directories(base + "/pp");
    writeBytes(base + "/pp/meta_info.json", meta.dump());
    writeBytes(base + "/pp/rank0.safetensors", safetensors({{"7_0", tensor(0)}, {"8_0", tensor(1)}}, counts + counts));
    writeBytes(base + "/pp/rank1.safetensors", safetensors({{"7_1", tensor(0)}, {"8_1", tensor(1)}}, counts + counts));
    const LoadStats pp = readLoadStats(base + "/pp");
    QCOMPARE(pp.snapshots.size(), std::size_t{2});
    QCOMPARE(pp.snapshots[0].size(), std::size_t{2});
    QCOMPARE(pp.load[1][7], 16.0);
    // SGLang: 65,537 non-empty one-cell rows keep 65,536 snapshots; all rows in the total.
    const std::int64_t rows = (std::int64_t{1} << 16) + 1;
    writeBytes(base + "/long.pt", torchFile(statPickle(rows, {rows, 1, 1}), {{"0", int32s(std::vector<std::int64_t>(static_cast<std::size_t>(rows), 1))}}));
    const LoadStats sg = readLoadStats(base + "/long.pt");
    QCOMPARE(sg.snapshots.size(), std::size_t{1} << 16);
    QCOMPARE(sg.load[0][0], static_cast<double>(rows));
    QVERIFY2(sg.detail.find("per-pass figures of the first 65536 non-empty rows") != std::string::npos, sg.detail.c_str());
}

QTEST_APPLESS_MAIN(TestLoadStats)
#include "tst_load_stats.moc"
