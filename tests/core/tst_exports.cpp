// Placement exports: every format of a DeepSeek-R1-shaped placement parsed back with plain
// nlohmann/yaml-cpp and checked against FORMATS.md (keys, shapes, layer-index rule), then through
// parsePlacementExport; bad placements refused with no file written; the spec's own examples read.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "model/model_yaml.h"
#include "placement/eplb.h"
#include "placement/exporters.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <regex>
#include <random>
#include <set>
#endif

#include <QTemporaryDir>
#include <QtTest>

using namespace moex;
using Json = nlohmann::json;

Q_DECLARE_METATYPE(moex::ExportFormat)

namespace {

// DeepSeek-R1 as placement sees it: 61 decoder layers, 0-2 dense, 58 MoE layers, 256 experts in 8 groups.
ModelSpec deepseekR1()
{
    ModelSpec m;
    m.name = "DeepSeek-R1";
    m.num_layers = 61;
    for (int d = 3; d < 61; ++d)
        m.moe_layers.push_back(d);
    m.routed_experts = 256;
    m.experts_per_token = 8;
    m.expert_groups = 8;
    return m;
}

std::vector<std::vector<double>> zipfLoad(int layers, int experts, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::vector<double>> w(static_cast<std::size_t>(layers));
    for (auto& row : w) {
        std::vector<int> perm(static_cast<std::size_t>(experts));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        row.assign(static_cast<std::size_t>(experts), 0);
        for (int i = 0; i < experts; ++i)
            row[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = std::floor(1e5 / (i + 1.0));
    }
    return w;
}

// 288 slots over 72 GPUs (GB200 NVL72, one NVLink domain), balanced by EPLB.
Placement r1Placement()
{
    const auto w = zipfLoad(58, 256, 3);
    return eplbToPlacement(rebalanceExperts(w, 288, 8, 1, 72), 72);
}

std::vector<int> ints(const Json& j) { return j.get<std::vector<int>>(); }
std::vector<int> ints(const YAML::Node& n) { return n.as<std::vector<int>>(); }

std::set<std::string> jsonKeys(const Json& j)
{
    std::set<std::string> keys;
    for (const auto& [k, v] : j.items())
        keys.insert(k);
    return keys;
}

std::set<std::string> yamlKeys(const YAML::Node& n)
{
    std::set<std::string> keys;
    for (auto it = n.begin(); it != n.end(); ++it)
        keys.insert(it->first.Scalar());
    return keys;
}

bool sameSlots(const Placement& a, const Placement& b)
{
    if (a.num_experts != b.num_experts || a.numLayers() != b.numLayers())
        return false;
    for (int l = 0; l < a.numLayers(); ++l)
        if (a.layers[static_cast<std::size_t>(l)].gpu_slots != b.layers[static_cast<std::size_t>(l)].gpu_slots)
            return false;
    return true;
}

std::string inputErrorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return {};
}

// Independent check of one export against FORMATS.md, without the project's parser.
void checkAgainstSpec(const std::string& text, ExportFormat fmt, const Placement& p, const ModelSpec& m)
{
    const int G = p.numGpus(), R = p.layers[0].numSlots(), E = m.routed_experts, L = m.numMoeLayers();
    switch (fmt) {
    case ExportFormat::sglang: {
        const Json j = Json::parse(text);
        QCOMPARE(jsonKeys(j), (std::set<std::string>{"physical_to_logical_map"}));  // no other key may be present
        const Json& rows = j["physical_to_logical_map"];
        QCOMPARE(static_cast<int>(rows.size()), m.num_layers);  // every decoder layer, dense ones included
        for (int d = 0; d < m.num_layers; ++d) {
            const auto row = ints(rows[static_cast<std::size_t>(d)]);
            QCOMPARE(static_cast<int>(row.size()), R);
            if (d >= 3)
                QCOMPARE(row, p.layers[static_cast<std::size_t>(d - 3)].phy2log());  // row d = decoder layer d
            std::set<int> present(row.begin(), row.end());
            QCOMPARE(static_cast<int>(present.size()), E);  // dense rows valid too: every expert, ids in range
            QVERIFY(*present.begin() == 0 && *present.rbegin() == E - 1);
        }
        QCOMPARE(R % G, 0);
        break;
    }
    case ExportFormat::trtllm: {
        const YAML::Node y = YAML::Load(text);
        QCOMPARE(yamlKeys(y), (std::set<std::string>{"num_slots", "initial_global_assignments", "layer_updates_per_iter"}));
        QCOMPARE(y["num_slots"].as<int>(), R);
        QCOMPARE(y["layer_updates_per_iter"].as<int>(), 0);
        const YAML::Node table = y["initial_global_assignments"];
        QVERIFY(table.IsMap());
        QCOMPARE(static_cast<int>(table.size()), L);
        std::vector<int> keys;
        for (auto it = table.begin(); it != table.end(); ++it)
            keys.push_back(it->first.as<int>());
        QCOMPARE(keys, m.moe_layers);  // absolute decoder-layer indices 3..60
        QCOMPARE(keys.front(), 3);
        QCOMPARE(keys.back(), 60);
        for (int l = 0; l < L; ++l) {
            const auto row = ints(table[m.moe_layers[static_cast<std::size_t>(l)]]);
            QCOMPARE(static_cast<int>(row.size()), R);  // exactly num_slots ids
            QCOMPARE(row, p.layers[static_cast<std::size_t>(l)].phy2log());
        }
        break;
    }
    case ExportFormat::vllm_ascend: {
        const Json j = Json::parse(text);
        QCOMPARE(jsonKeys(j), (std::set<std::string>{"moe_layer_count", "layer_list"}));
        QCOMPARE(j["moe_layer_count"].get<int>(), L);
        QCOMPARE(static_cast<int>(j["layer_list"].size()), L);
        for (int l = 0; l < L; ++l) {
            const Json& layer = j["layer_list"][static_cast<std::size_t>(l)];
            QCOMPARE(jsonKeys(layer), (std::set<std::string>{"layer_id", "device_count", "device_list"}));
            QCOMPARE(layer["layer_id"].get<int>(), l);  // MoE ordinal from 0
            QCOMPARE(layer["device_count"].get<int>(), G);
            QCOMPARE(static_cast<int>(layer["device_list"].size()), G);
            for (int g = 0; g < G; ++g) {
                const Json& dev = layer["device_list"][static_cast<std::size_t>(g)];
                QCOMPARE(jsonKeys(dev), (std::set<std::string>{"device_id", "device_expert"}));
                QCOMPARE(dev["device_id"].get<int>(), g);
                const auto experts = ints(dev["device_expert"]);
                QCOMPARE(static_cast<int>(experts.size()), R / G);  // all devices the same length
                std::vector<int> expected;
                for (ExpertId e : p.layers[static_cast<std::size_t>(l)].gpu_slots[static_cast<std::size_t>(g)])
                    expected.push_back(e.value);
                QCOMPARE(experts, expected);
            }
        }
        break;
    }
    case ExportFormat::eplb: {
        const Json j = Json::parse(text);
        QCOMPARE(jsonKeys(j), (std::set<std::string>{"phy2log", "log2phy", "logcnt"}));
        QCOMPARE(static_cast<int>(j["phy2log"].size()), L);
        QCOMPARE(static_cast<int>(j["logcnt"].size()), L);
        QCOMPARE(static_cast<int>(j["log2phy"].size()), L);
        const std::size_t maxCnt = j["log2phy"][0][0].size();
        for (int l = 0; l < L; ++l) {
            const auto phy = ints(j["phy2log"][static_cast<std::size_t>(l)]);
            QCOMPARE(phy, p.layers[static_cast<std::size_t>(l)].phy2log());
            const auto cnt = ints(j["logcnt"][static_cast<std::size_t>(l)]);
            QCOMPARE(cnt, p.layers[static_cast<std::size_t>(l)].replicaCounts(E));
            QCOMPARE(static_cast<int>(j["log2phy"][static_cast<std::size_t>(l)].size()), E);
            for (int e = 0; e < E; ++e) {
                const auto listed = ints(j["log2phy"][static_cast<std::size_t>(l)][static_cast<std::size_t>(e)]);
                QCOMPARE(listed.size(), maxCnt);  // padded to one width
                for (std::size_t k = 0; k < listed.size(); ++k) {
                    if (static_cast<int>(k) < cnt[static_cast<std::size_t>(e)])
                        QCOMPARE(phy[static_cast<std::size_t>(listed[k])], e);
                    else
                        QCOMPARE(listed[k], -1);
                }
            }
        }
        break;
    }
    case ExportFormat::native: {
        const YAML::Node y = YAML::Load(text);
        QCOMPARE(yamlKeys(y), (std::set<std::string>{"placement"}));
        const YAML::Node pl = y["placement"];
        // Keys the scenario's placement reader accepts (scenario_checks.cpp readPlacementPart).
        const std::set<std::string> accepted = {"strategy", "redundant_slots", "budget_ms", "slots", "layers", "shares"};
        for (const auto& k : yamlKeys(pl))
            QVERIFY2(accepted.count(k), k.c_str());
        QCOMPARE(pl["strategy"].as<std::string>(), std::string("explicit"));
        QCOMPARE(static_cast<int>(pl["layers"].size()), L);
        for (int l = 0; l < L; ++l) {
            const YAML::Node layer = pl["layers"][static_cast<std::size_t>(l)];
            QCOMPARE(static_cast<int>(layer.size()), G);
            for (int g = 0; g < G; ++g) {
                std::vector<int> expected;
                for (ExpertId e : p.layers[static_cast<std::size_t>(l)].gpu_slots[static_cast<std::size_t>(g)])
                    expected.push_back(e.value);
                QCOMPARE(ints(layer[static_cast<std::size_t>(g)]), expected);
            }
        }
        break;
    }
    }
}

}  // namespace

class TestExports : public QObject {
    Q_OBJECT
private slots:
    void modelShape();
    void formatNames();
    void r1Exports_data();
    void r1Exports();
    void refused_data();
    void refused();
    void refusalKeepsOldFile();
    void nativeUnevenGpus();
    void readmeEplbJson();
    void specExamples();
    void parseRefusesBadFiles();
};

void TestExports::modelShape()
{
    // The hand-built spec matches the sample model file where it matters for placement.
    const ModelSpec sample = loadModelFile(MOEX_SOURCE_DIR "/samples/models/deepseek-r1.yaml");
    const ModelSpec mine = deepseekR1();
    QCOMPARE(sample.num_layers, mine.num_layers);
    QCOMPARE(sample.moe_layers, mine.moe_layers);
    QCOMPARE(sample.routed_experts, mine.routed_experts);
    QCOMPARE(sample.expert_groups, mine.expert_groups);
}

void TestExports::formatNames()
{
    for (ExportFormat f : allExportFormats())
        QVERIFY(exportFormatFromString(toString(f)) == f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, exportFormatFromString("vllm"));
}

void TestExports::r1Exports_data()
{
    QTest::addColumn<ExportFormat>("fmt");
    for (ExportFormat f : allExportFormats())
        QTest::addRow("%s", std::string(toString(f)).c_str()) << f;
}

void TestExports::r1Exports()
{
    QFETCH(ExportFormat, fmt);
    const ModelSpec m = deepseekR1();
    const Placement p = r1Placement();
    QCOMPARE(p.layers[0].numSlots(), 288);
    QVERIFY(exportProblems(p, m, fmt).empty());
    const std::string text = exportPlacement(p, m, fmt);
    checkAgainstSpec(text, fmt, p, m);
    if (QTest::currentTestFailed())
        return;
    QVERIFY(sameSlots(parsePlacementExport(text, m, 72, fmt), p));

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("out")).toStdString();
    writePlacementExport(path, p, m, fmt);
    QCOMPARE(readFile(path), text);
    QVERIFY(sameSlots(parsePlacementExport(readFile(path), m, 72, fmt, path), p));
}

void TestExports::refused_data()
{
    QTest::addColumn<ExportFormat>("fmt");
    QTest::addColumn<QString>("defect");
    QTest::addColumn<QString>("needle");
    for (ExportFormat f : allExportFormats()) {
        const std::string n(toString(f));
        QTest::addRow("%s: expert without slot", n.c_str()) << f << QStringLiteral("missing") << QStringLiteral("1 expert has no slot: 5");
        QTest::addRow("%s: too few layers", n.c_str()) << f << QStringLiteral("layers") << QStringLiteral("57 layers");
        if (f == ExportFormat::native)
            continue;  // moex's own format allows GPUs with different slot counts
        QTest::addRow("%s: R not divisible", n.c_str()) << f << QStringLiteral("indivisible") << QStringLiteral("290 slots do not divide evenly over 72 GPUs");
        QTest::addRow("%s: uneven GPU", n.c_str()) << f << QStringLiteral("uneven") << QStringLiteral("GPU 0 holds 5 slots");
    }
}

void TestExports::refused()
{
    QFETCH(ExportFormat, fmt);
    QFETCH(QString, defect);
    QFETCH(QString, needle);
    const ModelSpec m = deepseekR1();
    Placement p = r1Placement();
    if (defect == QLatin1String("missing")) {
        for (auto& g : p.layers[2].gpu_slots)
            for (auto& e : g)
                if (e == ExpertId(5))
                    e = ExpertId(6);
    } else if (defect == QLatin1String("layers")) {
        p.layers.pop_back();
    } else if (defect == QLatin1String("indivisible")) {
        p = contiguousPlacement(256, 72, 58, 34);
    } else {
        // Move one slot of GPU 1 to GPU 0 in layer 7: still 288 slots, no longer 4 per GPU.
        auto& gpus = p.layers[7].gpu_slots;
        gpus[0].push_back(gpus[1].back());
        gpus[1].pop_back();
    }
    QVERIFY(!exportProblems(p, m, fmt).empty());
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("refused.out")).toStdString();
    const std::string message = inputErrorOf([&] { writePlacementExport(path, p, m, fmt); });
    QVERIFY2(message.find(needle.toStdString()) != std::string::npos, message.c_str());
    QVERIFY(message.find("export to " + std::string(toString(fmt))) != std::string::npos);
    QVERIFY(!std::filesystem::exists(path));
    QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                           std::filesystem::directory_iterator{}),
             0);  // no temporary left behind either
}

void TestExports::refusalKeepsOldFile()
{
    const ModelSpec m = deepseekR1();
    const Placement good = r1Placement();
    Placement bad = good;
    bad.layers[0].gpu_slots[3].clear();
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("r1.json")).toStdString();
    writePlacementExport(path, good, m, ExportFormat::sglang);
    const std::string before = readFile(path);
    QVERIFY(!inputErrorOf([&] { writePlacementExport(path, bad, m, ExportFormat::sglang); }).empty());
    QCOMPARE(readFile(path), before);
}

void TestExports::nativeUnevenGpus()
{
    // 10 experts over 4 GPUs (3, 3, 3, 1 slots): fine for moex, refused for serving systems.
    ModelSpec m;
    m.name = "small";
    m.num_layers = 2;
    m.moe_layers = {0, 1};
    m.routed_experts = 10;
    Placement p = contiguousPlacement(10, 4, 2);
    p.layers[0].shares = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1}};
    p.layers[1].shares = p.layers[0].shares;
    const std::string text = exportPlacement(p, m, ExportFormat::native);
    const Placement back = parsePlacementExport(text, m, 4, ExportFormat::native);
    QVERIFY(sameSlots(back, p));
    QCOMPARE(back.layers[1].shares, p.layers[0].shares);
    QVERIFY(inputErrorOf([&] { exportPlacement(p, m, ExportFormat::sglang); }).find("do not divide evenly") != std::string::npos);
    p.layers[1].shares.clear();
    QVERIFY(inputErrorOf([&] { exportPlacement(p, m, ExportFormat::native); }).find("shares differ") != std::string::npos);
}

void TestExports::readmeEplbJson()
{
    const std::vector<std::vector<double>> w = {{90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86},
                                                {20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27}};
    const EplbResult r = rebalanceExperts(w, 16, 4, 2, 8);
    const Json mine = Json::parse(eplbResultToJson(r));
    QCOMPARE(mine["phy2log"], Json::parse("[[5,6,5,7,8,4,3,4,10,9,10,2,0,1,11,1],[7,10,6,8,6,11,8,9,2,4,5,1,5,0,3,1]]"));
    std::ifstream in(MOEX_TEST_DATA_DIR "/eplb/readme_example.json");
    QVERIFY2(in, "tests/data/eplb/readme_example.json");
    const Json ref = Json::parse(in)["cases"][0];
    for (const char* key : {"phy2log", "log2phy", "logcnt"})
        QCOMPARE(mine[key], ref[key]);

    // The same placement through exportPlacement lists replicas in slot order instead of rank order.
    ModelSpec m;
    m.name = "readme";
    m.num_layers = 2;
    m.moe_layers = {0, 1};
    m.routed_experts = 12;
    const Placement p = eplbToPlacement(r, 8);
    const Json viaPlacement = Json::parse(exportPlacement(p, m, ExportFormat::eplb));
    QCOMPARE(viaPlacement["phy2log"], ref["phy2log"]);
    QCOMPARE(viaPlacement["logcnt"], ref["logcnt"]);
    QCOMPARE(viaPlacement["log2phy"][0][1], Json::parse("[13,15]"));  // reference: [15, 13] (replica rank order)
    QVERIFY(sameSlots(parsePlacementExport(eplbResultToJson(r), m, 8, ExportFormat::eplb), p));
    // FORMATS.md's SGLang example is exactly this placement on a model without dense layers.
    QCOMPARE(Json::parse(exportPlacement(p, m, ExportFormat::sglang)),
             Json::parse(R"({"physical_to_logical_map": [[5,6,5,7,8,4,3,4,10,9,10,2,0,1,11,1], [7,10,6,8,6,11,8,9,2,4,5,1,5,0,3,1]]})"));
}

void TestExports::specExamples()
{
    // FORMATS.md's vllm-ascend example, read as written.
    ModelSpec m;
    m.name = "example";
    m.num_layers = 1;
    m.moe_layers = {0};
    m.routed_experts = 8;
    const std::string vllm = R"({"moe_layer_count": 1,
 "layer_list": [{"layer_id": 0, "device_count": 2,
   "device_list": [{"device_id": 0, "device_expert": [7,2,0,3,5]},
                   {"device_id": 1, "device_expert": [6,1,4,7,2]}]}]})";
    const Placement p = parsePlacementExport(vllm, m, 2, ExportFormat::vllm_ascend);
    QCOMPARE(p.layers[0].phy2log(), (std::vector<int>{7, 2, 0, 3, 5, 6, 1, 4, 7, 2}));
    QCOMPARE(Json::parse(exportPlacement(p, m, ExportFormat::vllm_ascend)), Json::parse(vllm));
    // And a TensorRT-LLM file shaped like its example, keyed by absolute decoder-layer index.
    ModelSpec t = m;
    t.num_layers = 5;
    t.moe_layers = {3, 4};
    const std::string trt = "num_slots: 10\ninitial_global_assignments:\n  3: [7, 2, 0, 3, 5, 6, 1, 4, 7, 2]\n"
                            "  4: [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]\nlayer_updates_per_iter: 0\n";
    const Placement q = parsePlacementExport(trt, t, 2, ExportFormat::trtllm);
    QCOMPARE(q.layers[1].phy2log(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 0, 1}));
    QCOMPARE(exportPlacement(q, t, ExportFormat::trtllm).substr(exportPlacement(q, t, ExportFormat::trtllm).find("num_slots")), trt);
}

void TestExports::parseRefusesBadFiles()
{
    const ModelSpec m = deepseekR1();
    const Placement p = r1Placement();
    auto refuses = [&](const std::string& text, ExportFormat fmt, const char* needle) {
        const std::string msg = inputErrorOf([&] { parsePlacementExport(text, m, 72, fmt, "bad.file"); });
        if (msg.find(needle) == std::string::npos || msg.find("bad.file") == std::string::npos)
            qWarning("%s", msg.empty() ? "(no error)" : msg.c_str());
        return msg.find(needle) != std::string::npos;
    };
    Json sg = Json::parse(exportPlacement(p, m, ExportFormat::sglang));
    Json extra = sg;
    extra["num_redundant"] = 32;
    QVERIFY(refuses(extra.dump(), ExportFormat::sglang, "unknown key 'num_redundant'"));
    Json moeOnly = sg;
    moeOnly["physical_to_logical_map"].erase(0);
    QVERIFY(refuses(moeOnly.dump(), ExportFormat::sglang, "61 entries"));
    QVERIFY(refuses(R"({"logical_count": [[1]]})", ExportFormat::sglang, "not a placement"));
    QVERIFY(inputErrorOf([&] { parsePlacementExport(sg.dump(), m, 72, ExportFormat::sglang); }).empty());

    const std::string trt = exportPlacement(p, m, ExportFormat::trtllm);
    QVERIFY(refuses(std::regex_replace(trt, std::regex("\n  13: \\[[0-9]+, "), "\n  13: ["), ExportFormat::trtllm,
                    "layer 13 lists 287 slots, but num_slots is 288 (TensorRT-LLM raises ValueError)"));
    QVERIFY(refuses(std::regex_replace(trt, std::regex("\n  60: [^\n]*"), ""), ExportFormat::trtllm,
                    "MoE layer 60 is missing (TensorRT-LLM raises KeyError)"));
    QVERIFY(refuses(std::regex_replace(trt, std::regex("\n  3: "), "\n  2: [1]\n  3: "), ExportFormat::trtllm,
                    "decoder layer 2 is not an MoE layer"));
    QVERIFY(refuses(trt + "moe_balancer: true\n", ExportFormat::trtllm, "unknown key 'moe_balancer'"));

    Json va = Json::parse(exportPlacement(p, m, ExportFormat::vllm_ascend));
    va["layer_list"][4]["device_list"][9]["device_expert"].push_back(0);
    QVERIFY(refuses(va.dump(), ExportFormat::vllm_ascend, "all must be equal"));

    Json ep = Json::parse(exportPlacement(p, m, ExportFormat::eplb));
    ep["logcnt"][1][0] = ep["logcnt"][1][0].get<int>() + 1;
    QVERIFY(refuses(ep.dump(), ExportFormat::eplb, "logcnt[1][0]"));

    QVERIFY(refuses("placement:\n  strategy: eplb\n  layers: []\n", ExportFormat::native, "strategy: explicit"));
    QVERIFY(refuses("{not json", ExportFormat::vllm_ascend, "not valid JSON"));
    // Not enough GPUs' worth of slots for the rank count given.
    QVERIFY(inputErrorOf([&] { parsePlacementExport(exportPlacement(p, m, ExportFormat::eplb), m, 64, ExportFormat::eplb); })
                .find("288 slots per layer do not divide evenly over 64 GPUs") != std::string::npos);
}

QTEST_APPLESS_MAIN(TestExports)
#include "tst_exports.moc"
