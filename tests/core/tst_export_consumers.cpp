// Every export as its consumer loads it (issue 14). Each consumer's loading rules are written out
// here from its own code, independently of moex's exporter and parser, and every strategy x format
// x sample export is run through them: keys, shapes, layer indexing, and for every EP rank and every
// expert, that the slot the rank dispatches to holds that expert in moex's placement.
//
//   SGLang        sgl-project/sglang python/sglang/srt/eplb/expert_location.py:
//                 ExpertLocationMetadata.init_by_mapping (the JSON dict passed as keyword arguments:
//                 physical_to_logical_map only, [num_hidden_layers][R]), the logical -> all physical
//                 map, and compute_logical_to_rank_dispatch_physical_map (a replica on the rank's own
//                 GPU first, else one of all replicas); rank g owns slots [g*R/G, (g+1)*R/G).
//   TensorRT-LLM  NVIDIA/TensorRT-LLM tensorrt_llm/_torch MoeLoadBalancerConfig
//                 .get_layer_initial_global_assignments (KeyError for a layer that is not a key,
//                 including the MTP layer num_hidden_layers + i of DeepSeek-R1 served with MTP; a row
//                 of exactly num_slots; every expert present) and the fused MoE modules' slot_start =
//                 ep_rank * num_slots / ep_size.
//   vllm-ascend   vllm-project/vllm-ascend vllm_ascend/eplb/core/eplb_utils.py: expert_file_to_tensor
//                 (device_expert rows stacked into one tensor: all the same length), init_eplb_config
//                 (expert_map[local_placement] = arange: one local index per expert, the last copy
//                 wins) and generate_log2phy_map (slots per rank = rank 0's distinct experts,
//                 physical id = local index + rank * that count).
//   DeepSeek EPLB deepseek-ai/EPLB eplb.py rebalance_experts' outputs: phy2log [L][R], log2phy
//                 [L][E][maxcnt] padded with -1, logcnt [L][E].
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "placement/balance.h"
#include "placement/exporters.h"
#include "placement/replica_separation.h"
#include "placement/strategies.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>
#endif

#include <QtTest>

using namespace moex;
using nlohmann::json;

namespace {

struct Case {
    const char* scenario;
    int num_slots;
};
// The DeepSeek-R1 and Mixtral samples; 320 slots on 64 GPUs is the case where EPLB puts two copies
// of expert 18 on GPU 0 of MoE layer 47.
const Case kCases[] = {{"deepseek-r1-decode-nvl72", 288},
                       {"deepseek-r1-decode-hgx-h200x8", 320},
                       {"mixtral-8x7b-decode-hgx-h100", 16}};

Scenario loadCase(const Case& c, const std::string& strategy)
{
    Scenario s = loadScenarioFile(std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/" + c.scenario + ".yaml");
    s.placement.strategy = strategy;
    s.placement.redundant_slots = c.num_slots - s.model.routed_experts;
    s.placement.budget_ms = 20;  // search: a short, fixed number of evaluations
    s.placement.explicit_slots.reset();
    return s;
}

// 8 x HGX-H200 with 320 slots placed by DeepSeek's EPLB as it is (copies share GPUs), at skew 0.4:
// a load under which every colocated copy has a partner GPU inside its own node, so the separator's
// first choice (a swap within the NVLink domain) is what is tested. DeepSeek-R1's fitted skew
// (0.59) makes a few hot experts so replicated that some copies must leave their node.
Scenario separationCase()
{
    Scenario s = loadCase(kCases[1], "eplb-exact");
    s.workload.routing.skew = 0.4;
    return s;
}

bool gpuHolds(const LayerPlacement& layer, int g, int e)
{
    const auto& held = layer.gpu_slots[static_cast<std::size_t>(g)];
    return std::any_of(held.begin(), held.end(), [e](ExpertId x) { return x.value == e; });
}

// Returns "" when SGLang would load the file and route every rank's tokens to a GPU that holds the
// expert in `p`; else what goes wrong.
std::string sglangProblem(const std::string& text, const Placement& p, const ModelSpec& m, int G)
{
    const json j = json::parse(text);
    if (!j.is_object() || j.size() != 1 || !j.contains("physical_to_logical_map"))
        return "keys other than physical_to_logical_map (TypeError in init_by_mapping)";
    const json& rows = j["physical_to_logical_map"];
    if (static_cast<int>(rows.size()) != m.num_layers)
        return "rows " + std::to_string(rows.size()) + " != num_hidden_layers";
    const int R = static_cast<int>(rows[0].size());
    if (R % G != 0)
        return "R % ep_size != 0";
    const int perGpu = R / G;
    for (int d = 0; d < m.num_layers; ++d) {
        if (static_cast<int>(rows[static_cast<std::size_t>(d)].size()) != R)
            return "ragged row " + std::to_string(d);
        std::vector<std::vector<int>> all(static_cast<std::size_t>(m.routed_experts));
        for (int s = 0; s < R; ++s) {
            const int e = rows[static_cast<std::size_t>(d)][static_cast<std::size_t>(s)].get<int>();
            if (e < 0 || e >= m.routed_experts)
                return "expert id out of range";
            all[static_cast<std::size_t>(e)].push_back(s);
        }
        const auto it = std::find(m.moe_layers.begin(), m.moe_layers.end(), d);
        for (int e = 0; e < m.routed_experts; ++e)
            if (all[static_cast<std::size_t>(e)].empty())
                return "decoder layer " + std::to_string(d) + ": expert " + std::to_string(e) + " has no slot";
        if (it == m.moe_layers.end())
            continue;  // a dense layer: any valid row
        const auto& layer = p.layers[static_cast<std::size_t>(it - m.moe_layers.begin())];
        for (int g = 0; g < G; ++g)
            for (int e = 0; e < m.routed_experts; ++e) {
                const auto& cands = all[static_cast<std::size_t>(e)];
                int chosen = cands.front();
                for (int s : cands)
                    if (s / perGpu == g)
                        chosen = s;
                if (!gpuHolds(layer, chosen / perGpu, e))
                    return "decoder layer " + std::to_string(d) + ": rank " + std::to_string(g) + " sends expert "
                           + std::to_string(e) + " to GPU " + std::to_string(chosen / perGpu)
                           + ", which does not hold it";
            }
    }
    return {};
}

std::string trtllmProblem(const std::string& text, const Placement& p, const ModelSpec& m, int G, int mtpLayers)
{
    const YAML::Node root = YAML::Load(text);
    const int R = root["num_slots"].as<int>();
    if (R % G != 0)
        return "num_slots % ep_size != 0";
    const YAML::Node table = root["initial_global_assignments"];
    std::vector<int> wanted = m.moe_layers;
    for (int i = 0; i < mtpLayers; ++i)
        wanted.push_back(m.num_layers + i);
    for (int d : wanted)
        if (!table[d])
            return "KeyError: layer_idx " + std::to_string(d);
    if (table.size() != wanted.size())
        return "keys: " + std::to_string(table.size()) + ", wanted " + std::to_string(wanted.size());
    for (std::size_t k = 0; k < wanted.size(); ++k) {
        const int d = wanted[k];
        const auto row = table[d].as<std::vector<int>>();
        if (static_cast<int>(row.size()) != R)
            return "row of layer " + std::to_string(d) + " is not num_slots long";
        if (std::set<int>(row.begin(), row.end()).size() != static_cast<std::size_t>(m.routed_experts))
            return "layer " + std::to_string(d) + " does not hold every expert";
        // The MTP layer has no moex placement of its own: its rows are checked for shape only.
        if (k >= m.moe_layers.size())
            continue;
        const auto& layer = p.layers[k];
        const int local = R / G;
        for (int r = 0; r < G; ++r)
            for (int j = 0; j < local; ++j)
                if (row[static_cast<std::size_t>(r * local + j)] != layer.gpu_slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(j)].value)
                    return "layer " + std::to_string(d) + ": rank " + std::to_string(r) + " slot " + std::to_string(j)
                           + " differs from the placement";
    }
    return {};
}

// vllm-ascend's loader, step by step; "" when every rank's log2phy entry of every expert points at a
// physical slot holding that expert, and no slot is wasted.
std::string vllmAscendProblem(const std::string& text, const Placement& p, const ModelSpec& m, int G)
{
    const json j = json::parse(text);
    const int layers = j["moe_layer_count"].get<int>();
    if (layers != m.numMoeLayers())
        return "moe_layer_count";
    for (int l = 0; l < layers; ++l) {
        const json& layer = j["layer_list"][static_cast<std::size_t>(l)];
        if (layer["layer_id"].get<int>() != l)
            return "layer_id is not the MoE ordinal";
        std::vector<std::vector<int>> placement;
        for (const auto& dev : layer["device_list"])
            placement.push_back(dev["device_expert"].get<std::vector<int>>());
        if (static_cast<int>(placement.size()) != G)
            return "device_count";
        const std::size_t numLocal = placement[0].size();
        for (const auto& row : placement)
            if (row.size() != numLocal)
                return "device_expert rows differ in length (torch.tensor fails)";
        // init_eplb_config: expert_map[local_placement] = arange(len): the last copy wins.
        std::vector<std::vector<int>> expertMap(static_cast<std::size_t>(G), std::vector<int>(static_cast<std::size_t>(m.routed_experts), -1));
        for (int r = 0; r < G; ++r)
            for (std::size_t s = 0; s < numLocal; ++s)
                expertMap[static_cast<std::size_t>(r)][static_cast<std::size_t>(placement[static_cast<std::size_t>(r)][s])] = static_cast<int>(s);
        // generate_log2phy_map: valid_count from rank 0.
        const int validCount = static_cast<int>(std::count_if(expertMap[0].begin(), expertMap[0].end(), [](int v) { return v >= 0; }));
        for (int r = 0; r < G; ++r) {
            int mapped = 0;
            for (int e = 0; e < m.routed_experts; ++e) {
                const int local = expertMap[static_cast<std::size_t>(r)][static_cast<std::size_t>(e)];
                if (local < 0)
                    continue;
                ++mapped;
                // Every replica is a possible dispatch target (ep_rank % count picks one of them).
                const int phy = local + r * validCount;
                const int rank = phy / static_cast<int>(numLocal);
                const int slot = phy % static_cast<int>(numLocal);
                if (rank >= G || placement[static_cast<std::size_t>(rank)][static_cast<std::size_t>(slot)] != e)
                    return "MoE layer " + std::to_string(l) + ": expert " + std::to_string(e) + " on rank "
                           + std::to_string(r) + " maps to physical id " + std::to_string(phy)
                           + ", a slot holding another expert";
                if (!gpuHolds(p.layers[static_cast<std::size_t>(l)], rank, e))
                    return "MoE layer " + std::to_string(l) + ": rank " + std::to_string(rank) + " does not hold expert "
                           + std::to_string(e) + " in the placement";
            }
            if (mapped != static_cast<int>(numLocal))
                return "MoE layer " + std::to_string(l) + ": rank " + std::to_string(r) + " wastes "
                       + std::to_string(static_cast<int>(numLocal) - mapped) + " slot(s) (one local index per expert)";
        }
    }
    return {};
}

std::string eplbProblem(const std::string& text, const Placement& p, const ModelSpec& m, int G)
{
    const json j = json::parse(text);
    const auto phy2log = j["phy2log"].get<std::vector<std::vector<int>>>();
    const auto logcnt = j["logcnt"].get<std::vector<std::vector<int>>>();
    const auto log2phy = j["log2phy"].get<std::vector<std::vector<std::vector<int>>>>();
    if (static_cast<int>(phy2log.size()) != m.numMoeLayers() || logcnt.size() != phy2log.size() || log2phy.size() != phy2log.size())
        return "rows are not one per MoE layer";
    for (std::size_t l = 0; l < phy2log.size(); ++l) {
        const int R = static_cast<int>(phy2log[l].size());
        const int perGpu = R / G;
        for (int e = 0; e < m.routed_experts; ++e) {
            const int cnt = static_cast<int>(std::count(phy2log[l].begin(), phy2log[l].end(), e));
            if (logcnt[l][static_cast<std::size_t>(e)] != cnt)
                return "logcnt disagrees with phy2log";
            const auto& row = log2phy[l][static_cast<std::size_t>(e)];
            for (std::size_t k = 0; k < row.size(); ++k) {
                if (static_cast<int>(k) >= cnt) {
                    if (row[k] != -1)
                        return "log2phy not padded with -1";
                    continue;
                }
                if (row[k] < 0 || row[k] >= R || phy2log[l][static_cast<std::size_t>(row[k])] != e)
                    return "log2phy points at a slot of another expert";
                if (!gpuHolds(p.layers[l], row[k] / perGpu, e))
                    return "slot's GPU does not hold the expert in the placement";
            }
        }
    }
    return {};
}

std::string consumerProblem(ExportFormat fmt, const std::string& text, const Placement& p, const ModelSpec& m, int G)
{
    switch (fmt) {
    case ExportFormat::native: return parsePlacementExport(text, m, G, fmt) == p ? "" : "native does not read back";
    case ExportFormat::sglang: return sglangProblem(text, p, m, G);
    case ExportFormat::trtllm: return trtllmProblem(text, p, m, G, m.mtp_layers);
    case ExportFormat::vllm_ascend: return vllmAscendProblem(text, p, m, G);
    case ExportFormat::eplb: return eplbProblem(text, p, m, G);
    }
    return "unknown format";
}

// The vllm-ascend file as moex would write it with no check (what the exporter now refuses).
std::string unguardedVllmAscend(const Placement& p)
{
    json layers = json::array();
    for (int l = 0; l < p.numLayers(); ++l) {
        json devices = json::array();
        for (int g = 0; g < p.numGpus(); ++g) {
            std::vector<int> ids;
            for (ExpertId e : p.layers[static_cast<std::size_t>(l)].gpu_slots[static_cast<std::size_t>(g)])
                ids.push_back(e.value);
            devices.push_back({{"device_id", g}, {"device_expert", ids}});
        }
        layers.push_back({{"layer_id", l}, {"device_count", p.numGpus()}, {"device_list", devices}});
    }
    return json{{"moe_layer_count", p.numLayers()}, {"layer_list", layers}}.dump();
}

}  // namespace

class TestExportConsumers : public QObject {
    Q_OBJECT
private slots:
    void everyStrategyFormatSample_data();
    void everyStrategyFormatSample();
    void vllmAscendMisroutesColocatedCopies();
    void separationCostsLittleAndKeepsReplicas();
    void separationCrossesNodesWhenItMust();
    void trtllmMtpLayer();
};

void TestExportConsumers::everyStrategyFormatSample_data()
{
    QTest::addColumn<int>("caseIndex");
    QTest::addColumn<QString>("strategy");
    for (int c = 0; c < static_cast<int>(std::size(kCases)); ++c)
        for (const auto& s : placementStrategies())
            QTest::addRow("%s %s", kCases[c].scenario, s.c_str()) << c << QString::fromStdString(s);
}

void TestExportConsumers::everyStrategyFormatSample()
{
    QFETCH(int, caseIndex);
    QFETCH(QString, strategy);
    const Case& c = kCases[caseIndex];
    const Scenario s = loadCase(c, strategy.toStdString());
    const int G = s.topology.numGpus();
    const Placement placed = resolvePlacement(s);
    PlacementSetup setup = preparePlacement(s);
    for (ExportFormat fmt : allExportFormats()) {
        std::optional<SeparationReport> separated;
        const Placement p = placementForExport(placed, fmt, setup.request.load, G / s.topology.numDomains(), separated);
        const std::string text = exportPlacement(p, s.model, fmt);
        const std::string problem = consumerProblem(fmt, text, p, s.model, G);
        QVERIFY2(problem.empty(), (std::string(toString(fmt)) + ": " + problem).c_str());
        // Only what the format needs is repaired, and only where copies share a GPU.
        QCOMPARE(separated.has_value(), exportNeedsDistinctReplicas(fmt) && !findColocatedReplicas(placed).empty());
        if (!separated)
            QVERIFY(p == placed);
    }
    // No strategy but eplb-exact puts two copies of one expert on one GPU.
    if (strategy != QStringLiteral("eplb-exact"))
        QVERIFY2(findColocatedReplicas(placed).empty(), describeColocated(findColocatedReplicas(placed)).c_str());
}

void TestExportConsumers::vllmAscendMisroutesColocatedCopies()
{
    // The case: DeepSeek's EPLB as it is, 320 slots on 8 x HGX-H200.
    const Scenario s = separationCase();
    const Placement exact = resolvePlacement(s);
    const auto colocated = findColocatedReplicas(exact);
    QVERIFY(!colocated.empty());
    // The consumer rules catch the misrouting the unguarded file would cause...
    const std::string problem = vllmAscendProblem(unguardedVllmAscend(exact), exact, s.model, 64);
    QVERIFY2(!problem.empty(), "the vllm-ascend rules accept colocated copies");
    // ...the exporter refuses it, saying why and what to do...
    try {
        (void)exportPlacement(exact, s.model, ExportFormat::vllm_ascend);
        QFAIL("exported a placement vllm-ascend would misroute");
    } catch (const InputError& e) {
        const std::string what = e.what();
        QVERIFY2(what.find("copies of expert") != std::string::npos, what.c_str());
        QVERIFY2(what.find("wrong experts") != std::string::npos, what.c_str());
        QVERIFY2(what.find("eplb-exact") != std::string::npos, what.c_str());
    }
    // ...and the separated placement routes correctly.
    std::optional<SeparationReport> separated;
    const Placement fixed = placementForExport(exact, ExportFormat::vllm_ascend, preparePlacement(s).request.load, 8, separated);
    QVERIFY(separated);
    QCOMPARE(separated->swaps.size(), colocated.size());
    QVERIFY(separated->left.empty());
    const std::string text = exportPlacement(fixed, s.model, ExportFormat::vllm_ascend);
    const std::string after = vllmAscendProblem(text, fixed, s.model, 64);
    QVERIFY2(after.empty(), after.c_str());
}

void TestExportConsumers::separationCrossesNodesWhenItMust()
{
    // DeepSeek-R1 on 8 x HGX-H200 with a steeper skew than its prior (1.0 instead of 0.59): the hottest
    // experts get more copies inside one node than the node has GPUs, so some of their extra copies can
    // only trade with another node (at the prior's skew that happens for some seeds only). Still
    // nothing is left colocated and every expert keeps its copies.
    Scenario s = loadCase(kCases[1], "eplb-exact");
    s.workload.routing.skew = 1.0;
    const Placement exact = resolvePlacement(s);
    constexpr int kNodeGpus = 8;
    int most = 0;  // copies of one expert inside one node
    for (const LayerPlacement& layer : exact.layers)
        for (int first = 0; first < s.topology.numGpus(); first += kNodeGpus) {
            std::vector<int> copies(256, 0);
            for (int g = first; g < first + kNodeGpus; ++g)
                for (ExpertId x : layer.gpu_slots[static_cast<std::size_t>(g)])
                    ++copies[static_cast<std::size_t>(x.value)];
            most = std::max(most, *std::max_element(copies.begin(), copies.end()));
        }
    QVERIFY2(most > kNodeGpus, qPrintable(QStringLiteral("the case lost its point: at most %1 copies in a node").arg(most)));
    Placement p = exact;
    const SeparationReport r = separateColocatedReplicas(p, preparePlacement(s).request.load, 8);
    QVERIFY(r.left.empty());
    QVERIFY(findColocatedReplicas(p).empty());
    for (int l = 0; l < p.numLayers(); ++l)
        QCOMPARE(p.layers[static_cast<std::size_t>(l)].replicaCounts(256),
                 exact.layers[static_cast<std::size_t>(l)].replicaCounts(256));
    const auto crossing = std::count_if(r.swaps.begin(), r.swaps.end(), [](const ReplicaSwap& sw) { return sw.gpu / 8 != sw.other_gpu / 8; });
    QVERIFY(crossing > 0);
    qInfo("%s; %td of the swaps cross nodes", describeSeparation(r).c_str(), crossing);
}

void TestExportConsumers::separationCostsLittleAndKeepsReplicas()
{
    const Scenario s = separationCase();
    const Placement exact = resolvePlacement(s);
    const auto load = preparePlacement(s).request.load;
    Placement p = exact;
    const SeparationReport r = separateColocatedReplicas(p, load, 8);
    QVERIFY(!r.swaps.empty());
    QVERIFY(findColocatedReplicas(p).empty());
    QVERIFY(checkPlacement(p, 256, 64).empty());
    for (int l = 0; l < p.numLayers(); ++l) {
        const auto& before = exact.layers[static_cast<std::size_t>(l)];
        const auto& after = p.layers[static_cast<std::size_t>(l)];
        // Same replica counts, same slots per GPU, and every swap stays inside its NVLink domain.
        QCOMPARE(after.replicaCounts(256), before.replicaCounts(256));
        for (int g = 0; g < 64; ++g)
            QCOMPARE(after.gpu_slots[static_cast<std::size_t>(g)].size(), before.gpu_slots[static_cast<std::size_t>(g)].size());
    }
    for (const auto& sw : r.swaps)
        QCOMPARE(sw.gpu / 8, sw.other_gpu / 8);
    // The report's balance is the balance of the placements.
    QCOMPARE(r.balance_before, maxMeanGpuLoad(exact, load));
    QCOMPARE(r.balance_after, maxMeanGpuLoad(p, load));
    qInfo("8 x HGX-H200, 320 slots: %s", describeSeparation(r).c_str());
    // The chosen swap is the least costly: no other single swap of the first repair's copy gives a
    // lower maximum GPU load in its layer.
    const ReplicaSwap& first = r.swaps.front();
    Placement trial = exact;
    auto& layer = trial.layers[static_cast<std::size_t>(first.moe_layer)];
    const auto& loadRow = load[static_cast<std::size_t>(first.moe_layer)];
    auto& gslots = layer.gpu_slots[static_cast<std::size_t>(first.gpu)];
    int j = -1;
    for (int k = 0, seen = 0; k < static_cast<int>(gslots.size()); ++k)
        if (gslots[static_cast<std::size_t>(k)].value == first.expert && ++seen == 2)
            j = k;
    QVERIFY(j >= 0);
    double bestMax = 1e300;
    for (int h = first.gpu / 8 * 8; h < first.gpu / 8 * 8 + 8; ++h) {
        if (h == first.gpu || gpuHolds(layer, h, first.expert))
            continue;
        for (auto& slot : layer.gpu_slots[static_cast<std::size_t>(h)]) {
            if (gpuHolds(layer, first.gpu, slot.value))
                continue;
            std::swap(gslots[static_cast<std::size_t>(j)], slot);
            const auto loads = evenSplitGpuLoads(layer, loadRow);
            bestMax = std::min(bestMax, *std::max_element(loads.begin(), loads.end()));
            std::swap(gslots[static_cast<std::size_t>(j)], slot);
        }
    }
    Placement one = exact;
    auto& l1 = one.layers[static_cast<std::size_t>(first.moe_layer)];
    auto& o = l1.gpu_slots[static_cast<std::size_t>(first.other_gpu)];
    const auto k = std::find_if(o.begin(), o.end(), [&](ExpertId x) { return x.value == first.other_expert; });
    std::swap(l1.gpu_slots[static_cast<std::size_t>(first.gpu)][static_cast<std::size_t>(j)], *k);
    const auto chosen = evenSplitGpuLoads(l1, loadRow);
    QCOMPARE(*std::max_element(chosen.begin(), chosen.end()), bestMax);
}

void TestExportConsumers::trtllmMtpLayer()
{
    const Scenario s = loadCase(kCases[0], "eplb");
    QCOMPARE(s.model.mtp_layers, 1);
    const Placement p = resolvePlacement(s);
    // With MTP (the model's default): key 61 holds the last MoE layer's assignment.
    const std::string with = exportPlacement(p, s.model, ExportFormat::trtllm);
    QCOMPARE(trtllmProblem(with, p, s.model, 72, 1), std::string());
    const YAML::Node root = YAML::Load(with);
    QCOMPARE(root["initial_global_assignments"][61].as<std::vector<int>>(), p.layers.back().phy2log());
    // Served with MTP, a file without key 61 is a KeyError there.
    ExportOptions none;
    none.mtp_layers = 0;
    const std::string without = exportPlacement(p, s.model, ExportFormat::trtllm, none);
    QVERIFY(!YAML::Load(without)["initial_global_assignments"][61]);
    QVERIFY(trtllmProblem(without, p, s.model, 72, 1).find("KeyError") != std::string::npos);
    QCOMPARE(trtllmProblem(without, p, s.model, 72, 0), std::string());
    // Both read back through moex's own parser as the same placement of the 58 MoE layers.
    QVERIFY(parsePlacementExport(with, s.model, 72, ExportFormat::trtllm) == p);
    QVERIFY(parsePlacementExport(without, s.model, 72, ExportFormat::trtllm) == p);
    // Mixtral has no MTP layer: nothing beyond its 32 layers.
    const Scenario mx = loadCase(kCases[2], "eplb");
    const std::string mixtral = exportPlacement(resolvePlacement(mx), mx.model, ExportFormat::trtllm);
    QVERIFY(!YAML::Load(mixtral)["initial_global_assignments"][mx.model.num_layers]);
}

QTEST_GUILESS_MAIN(TestExportConsumers)
#include "tst_export_consumers.moc"
