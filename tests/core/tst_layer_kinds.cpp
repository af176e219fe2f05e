// The layer stack (issue 19): the compact pattern of model YAML, parameters, KV-cache and state bytes,
// and mixer time per layer kind (full, sliding-window and linear attention, Mamba-2, none), and a
// hybrid model's concurrent users against the same model with full attention everywhere.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#include "metrics/step_metrics.h"
#include "model/layer_pattern.h"
#include "model/model_yaml.h"
#include "scenario/scenario_yaml.h"
#include "sim/calibration.h"
#include "sim/compute_model.h"
#include "sim/scenario_run.h"
#include "sim/simulator.h"
#include "topology/gpu_spec.h"
#endif

#include <QtTest>

using namespace moex;

namespace {

ModelSpec readModelText(const std::string& text)
{
    return loadModelText(text, "model.yaml");
}

// A small hybrid: 8 layers, three linear-attention layers then one full-attention layer, twice.
const std::string kHybrid = R"(name: hybrid
hidden_size: 1024
num_layers: 8
layers: "LE*3 AE"
routed_experts: 16
experts_per_token: 2
moe_intermediate_size: 256
vocab_size: 1000
attention: {heads: 8, kv_heads: 2, head_dim: 128, output_gate: true}
linear_attention: {key_heads: 4, value_heads: 8, key_head_dim: 64, value_head_dim: 64, conv_kernel: 4}
)";

std::string withStack(const std::string& pattern)
{
    std::string s = kHybrid;
    const auto at = s.find("\"LE*3 AE\"");
    return s.replace(at, 9, "\"" + pattern + "\"");
}

std::string errorOf(const std::string& text)
{
    try {
        readModelText(text);
    } catch (const InputError& e) {
        return e.what();
    }
    return {};
}

GpuSpec h200()
{
    return *builtinGpu("h200");
}

}  // namespace

class TestLayerKinds : public QObject {
    Q_OBJECT
private slots:
    void patternParses_data();
    void patternParses();
    void patternErrors_data();
    void patternErrors();
    void patternRoundTrips();
    void yamlStack();
    void yamlStackErrors_data();
    void yamlStackErrors();
    void parametersPerKind();
    void cacheBytesPerKind();
    void mixerTimePerKind();
    void nonGatedExperts();
    void hybridCapacity();
    void sparseAttention();
};

void TestLayerKinds::patternParses_data()
{
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<int>("layers");
    QTest::addColumn<QString>("expanded");  // one letter pair per layer
    QTest::newRow("one per layer") << "AE SD LE M-" << 4 << "AESDLEM-";
    QTest::newRow("repeat count") << "LE*3 AE" << 4 << "LELELEAE";
    QTest::newRow("period repeats") << "LE*3 AE" << 8 << "LELELEAELELELEAE";
    QTest::newRow("commas") << "M-,-E,A-" << 6 << "M--EA-M--EA-";
    QTest::newRow("no mixer no ffn") << "--*2" << 2 << "----";
}

void TestLayerKinds::patternParses()
{
    QFETCH(QString, pattern);
    QFETCH(int, layers);
    QFETCH(QString, expanded);
    std::string error;
    const auto kinds = parseLayerPattern(pattern.toStdString(), layers, error);
    QVERIFY2(kinds, error.c_str());
    QCOMPARE(static_cast<int>(kinds->size()), layers);
    const std::string mixers = "ASLM-", ffns = "DE-";
    QString got;
    for (const LayerKind& k : *kinds)
        got += QLatin1Char(mixers[static_cast<std::size_t>(k.mixer)]) + QString(QLatin1Char(ffns[static_cast<std::size_t>(k.ffn)]));
    QCOMPARE(got, expanded);
}

void TestLayerKinds::patternErrors_data()
{
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<int>("layers");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown mixer") << "AE XE" << 2 << "token 2 'XE' is not a mixer letter";
    QTest::newRow("one letter") << "A" << 1 << "token 1 'A' is not a mixer letter";
    QTest::newRow("bad count") << "AE*x" << 2 << "repeat count must be a whole number";
    QTest::newRow("zero count") << "AE*0" << 2 << "repeat count must be a whole number";
    QTest::newRow("junk after") << "AEE" << 1 << "only '*N'";
    QTest::newRow("too long") << "AE*5" << 4 << "past num_layers = 4";
    QTest::newRow("does not divide") << "AE*3" << 4 << "gives 3 layers, which neither is num_layers = 4 nor divides it";
    QTest::newRow("empty") << " , " << 4 << "names no layer";
}

void TestLayerKinds::patternErrors()
{
    QFETCH(QString, pattern);
    QFETCH(int, layers);
    QFETCH(QString, message);
    std::string error;
    QVERIFY(!parseLayerPattern(pattern.toStdString(), layers, error));
    QVERIFY2(QString::fromStdString(error).contains(message), error.c_str());
}

void TestLayerKinds::patternRoundTrips()
{
    // Nemotron-3-Nano's published hybrid_override_pattern, as moex's letters.
    const std::string nemotron = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
    std::vector<LayerKind> stack;
    for (char c : nemotron)
        stack.push_back(c == 'M' ? LayerKind{MixerKind::mamba, FfnKind::none}
                        : c == 'E' ? LayerKind{MixerKind::none, FfnKind::moe}
                                   : LayerKind{MixerKind::attention, FfnKind::none});
    for (const auto& layers : {stack, std::vector<LayerKind>(60, LayerKind{MixerKind::linear, FfnKind::moe})}) {
        const std::string text = formatLayerPattern(layers);
        std::string error;
        const auto back = parseLayerPattern(text, static_cast<int>(layers.size()), error);
        QVERIFY2(back, (text + ": " + error).c_str());
        QVERIFY2(*back == layers, text.c_str());
    }
    // The shortest period is written once.
    std::vector<LayerKind> qwen;
    for (int i = 0; i < 60; ++i)
        qwen.push_back({i % 4 == 3 ? MixerKind::attention : MixerKind::linear, FfnKind::moe});
    QCOMPARE(formatLayerPattern(qwen), std::string("LE*3 AE"));
}

void TestLayerKinds::yamlStack()
{
    const ModelSpec m = readModelText(kHybrid);
    QCOMPARE(m.layer_kinds.size(), std::size_t{8});
    QCOMPARE(m.countMixer(MixerKind::linear), 6);
    QCOMPARE(m.countMixer(MixerKind::attention), 2);
    QCOMPARE(m.numMoeLayers(), 8);
    QVERIFY(m.attention.output_gate);
    QCOMPARE(m.linear_attention.num_value_heads, 8);
    // The YAML moex writes reads back the same model.
    const ModelSpec back = readModelText(modelToYaml(m));
    QVERIFY(back == m);
    // A stack with dense and FFN-less layers: moe_layers follows the pattern.
    const ModelSpec mixed = readModelText(withStack("AD LE A- -E"));
    QCOMPARE(mixed.moe_layers, (std::vector<int>{1, 3, 5, 7}));
    QCOMPARE(mixed.countFfn(FfnKind::dense), 2);
    QCOMPARE(mixed.countFfn(FfnKind::none), 2);
    QCOMPARE(mixed.countMixer(MixerKind::none), 2);
}

void TestLayerKinds::yamlStackErrors_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("bad token") << QString::fromStdString(withStack("LE*3 QE")) << "model.yaml:4:9: error: 'layers': token 2 'QE'";
    QTest::newRow("mamba without shape") << QString::fromStdString(withStack("ME*4")) << "no 'mamba' shape";
    QTest::newRow("sliding without window") << QString::fromStdString(withStack("SE*4")) << "attention.sliding_window is not set";
    std::string noLinear = kHybrid;
    noLinear.erase(noLinear.find("linear_attention:"));
    QTest::newRow("linear without shape") << QString::fromStdString(noLinear) << "no 'linear_attention' shape";
    QTest::newRow("moe_layers disagrees") << QString::fromStdString(kHybrid + "moe_layers: [0, 1]\n")
                                          << "'moe_layers' differs from the MoE layers (E) of 'layers'";
    std::string badHeads = kHybrid;
    badHeads.replace(badHeads.find("value_heads: 8"), 14, "value_heads: 6");
    QTest::newRow("value heads") << QString::fromStdString(badHeads) << "must be a multiple of key_heads = 4";
}

void TestLayerKinds::yamlStackErrors()
{
    QFETCH(QString, text);
    QFETCH(QString, message);
    const QString error = QString::fromStdString(errorOf(text.toStdString()));
    QVERIFY2(error.contains(message), qPrintable(error));
}

void TestLayerKinds::parametersPerKind()
{
    const ModelSpec m = readModelText(kHybrid);
    const std::int64_t h = 1024;
    // Gated attention: q and its gate 2 x h x 8 x 128, k and v 2 x h x 2 x 128, o 8 x 128 x h.
    QCOMPARE(m.mixerParams(MixerKind::attention), 2 * h * 1024 + 2 * h * 256 + 1024 * h);
    // Gated DeltaNet: key_dim 256, value_dim 512; in_proj_qkvz, in_proj_ba, conv, out_proj, A_log + dt_bias, norm.
    const std::int64_t gdn = h * (2 * 256 + 2 * 512) + h * 2 * 8 + (2 * 256 + 512) * 4 + 512 * h + 2 * 8 + 64;
    QCOMPARE(m.mixerParams(MixerKind::linear), gdn);
    QCOMPARE(m.mixerParams(MixerKind::none), std::int64_t{0});
    // The estimate counts each layer's own mixer: 6 linear + 2 full.
    const std::int64_t rest = h * 16 * 8 + 2 * 1000 * h + 2 * h * 8;  // router, embeddings, norms
    QCOMPARE(m.estimateNonExpertParams(), 6 * gdn + 2 * m.mixerParams(MixerKind::attention) + rest);

    // Mamba-2: d_inner 64 x 32 = 2048, 2 groups of state 16.
    ModelSpec b = m;
    b.mamba = {64, 32, 16, 2, 4};
    const std::int64_t inner = 2048, bc = 2 * 2 * 16;
    QCOMPARE(b.mixerParams(MixerKind::mamba), h * (2 * inner + bc + 64) + (inner + bc) * 5 + 3 * 64 + inner + inner * h);
}

void TestLayerKinds::cacheBytesPerKind()
{
    const double bf16 = 2.0;
    ModelSpec m = readModelText(kHybrid);
    // Full attention: 2 x kv_heads x head_dim elements per token per layer.
    const double fullPerToken = 2.0 * 2 * 128 * bf16;
    // Linear attention: 8 x 64 x 64 fp32 state plus the convolution's last 3 inputs of 1024 channels.
    const double linearState = 8.0 * 64 * 64 * 4 + 1024.0 * 3 * bf16;
    for (int context : {0, 1000, 100000})
        QCOMPARE(m.cacheBytesPerSequence(context, bf16), 2 * fullPerToken * context + 6 * linearState);
    // A bf16 state halves the recurrent part only.
    m.state_dtype = DType::bf16;
    QCOMPARE(m.cacheBytesPerSequence(0, bf16), 6 * (8.0 * 64 * 64 * 2 + 1024.0 * 3 * bf16));

    // Sliding window: bounded by the window; Mamba: constant; none: nothing.
    std::string text = withStack("SE AE M- -E") + "mamba: {heads: 16, head_dim: 64, state_size: 32}\n";
    text.replace(text.find("output_gate: true"), 17, "output_gate: true, sliding_window: 512");
    const ModelSpec s = readModelText(text);
    const double mambaState = 16.0 * 64 * 32 * 4 + (1024.0 + 2 * 32) * 3 * bf16;
    for (int context : {100, 512, 4096})
        QCOMPARE(s.cacheBytesPerSequence(context, bf16),
                 2 * fullPerToken * (std::min(context, 512) + context) + 2 * mambaState);
}

void TestLayerKinds::mixerTimePerKind()
{
    std::string text = withStack("SE AE LE M-") + "mamba: {heads: 16, head_dim: 64, state_size: 32}\n";
    text.replace(text.find("output_gate: true"), 17, "output_gate: true, sliding_window: 1024");
    const ModelSpec m = readModelText(text);
    const ComputeModel cm(m, h200(), defaultCalibration(GpuArch::hopper), DType::bf16);
    const double tokens = 256;
    auto at = [&](MixerKind k, int ctx) { return cm.mixerUs(k, tokens, ctx, Phase::decode); };
    // Full attention reads a cache that grows with the context.
    QVERIFY(at(MixerKind::attention, 65536) > 8 * at(MixerKind::attention, 4096));
    // A sliding window reads at most the window: the same as full attention below it, flat above.
    QCOMPARE(at(MixerKind::sliding, 512), at(MixerKind::attention, 512));
    QCOMPARE(at(MixerKind::sliding, 65536), at(MixerKind::sliding, 1024));
    QVERIFY(at(MixerKind::sliding, 65536) < at(MixerKind::attention, 65536) / 8);
    // Linear attention and Mamba touch a fixed state: no context dependence, but not free.
    for (MixerKind k : {MixerKind::linear, MixerKind::mamba}) {
        QCOMPARE(at(k, 100), at(k, 1000000));
        QVERIFY(at(k, 100) > 0);
        // Decode reads and writes every sequence's state: twice the sequences, more time.
        QVERIFY(cm.mixerUs(k, 2 * tokens, 100, Phase::decode) > 1.5 * at(k, 100));
    }
    QCOMPARE(at(MixerKind::none, 4096), 0.0);
    // A step of the simulator charges each layer its own mixer: swapping the full-attention
    // layer for linear attention shortens the attention part of the step at a long context.
    const MixerTimes t = cm.mixerTimes(tokens, 65536, Phase::decode);
    QCOMPARE(t.of(MixerKind::linear), at(MixerKind::linear, 65536));
    QCOMPARE(t.halfOf(MixerKind::attention), cm.mixerUs(MixerKind::attention, tokens / 2, 65536, Phase::decode));
}

void TestLayerKinds::nonGatedExperts()
{
    ModelSpec m = readModelText(kHybrid);
    const std::int64_t gated = m.expertParams();
    QCOMPARE(gated, std::int64_t{3} * 1024 * 256);
    m.activation = Activation::relu2;
    QCOMPARE(m.expertParams(), std::int64_t{2} * 1024 * 256);
    m.activation = Activation::geglu;
    QCOMPARE(m.expertParams(), gated);
    // relu2 reads back from YAML; its experts cost 2/3 of the math and bytes in the step model.
    const ModelSpec relu = readModelText(kHybrid + "activation: relu2\n");
    QVERIFY(relu.activation == Activation::relu2);
    const ComputeModel cg(readModelText(kHybrid), h200(), defaultCalibration(GpuArch::hopper), DType::bf16);
    const ComputeModel cr(relu, h200(), defaultCalibration(GpuArch::hopper), DType::bf16);
    QCOMPARE(cr.expertBytes() / cg.expertBytes(), 2.0 / 3.0);
    QCOMPARE(cr.expertSlotUs(4096) / cg.expertSlotUs(4096), 2.0 / 3.0);  // compute-bound: the math
    QVERIFY(errorOf(kHybrid + "activation: tanh\n").find("'activation'") != std::string::npos);
}

void TestLayerKinds::hybridCapacity()
{
    // Qwen3.5-397B-A17B on NVL72: 45 of its 60 layers are Gated DeltaNet with a fixed state. Its
    // concurrent users must follow that stack, not a KV cache in every layer.
    const std::string file = std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/qwen3.5-397b-a17b-decode-nvl72.yaml";
    Overrides longContext;
    longContext.emplace_back("workload.context_tokens", "32768");
    const Scenario hybrid = loadScenarioFile(file, longContext);
    QCOMPARE(hybrid.model.countMixer(MixerKind::linear), 45);
    Scenario dense = hybrid;  // the same weights, with full attention in every layer
    dense.model.layer_kinds.clear();
    const Placement p = resolvePlacement(hybrid);
    auto usersOf = [&](const Scenario& s) {
        Simulator sim(s, p, resolveCalibration(s));
        auto source = makeRoutingSource(s, 1);
        RoutingSample r;
        source->next(r);
        StepMetrics m;
        sim.step(r, m);
        return m.summary.max_concurrent_users;
    };
    const auto hybridUsers = usersOf(hybrid), denseUsers = usersOf(dense);
    const double kv = bytesPerElement(DType::bf16);
    const double ratio = dense.model.cacheBytesPerSequence(32768, kv) / hybrid.model.cacheBytesPerSequence(32768, kv);
    QVERIFY2(ratio > 3.0, qPrintable(QString::number(ratio)));
    QVERIFY2(hybridUsers > 3 * denseUsers, qPrintable(QStringLiteral("%1 vs %2").arg(hybridUsers).arg(denseUsers)));
    // Users per GPU are the free memory over the bytes per sequence, so the ratio is the bytes' ratio
    // (up to the rounding down of each GPU's count).
    const double G = hybrid.topology.numGpus();
    QVERIFY(std::abs(static_cast<double>(hybridUsers) / G - ratio * static_cast<double>(denseUsers) / G) <= ratio + 1);
}

void TestLayerKinds::sparseAttention()
{
    // A small MLA model, dense and with DSA's indexer (4 heads of 64, the best 512 tokens).
    const std::string dense = R"(name: mla
hidden_size: 1024
num_layers: 4
routed_experts: 16
experts_per_token: 2
moe_intermediate_size: 256
vocab_size: 1000
attention: {kind: mla, heads: 8, q_lora_rank: 256, kv_lora_rank: 128, qk_rope_head_dim: 32, qk_nope_head_dim: 64)";
    const ModelSpec d = readModelText(dense + "}\n");
    const ModelSpec s = readModelText(dense + ", index_heads: 4, index_head_dim: 64, index_topk: 512}\n");
    QVERIFY(!d.attention.sparse());
    QVERIFY(s.attention.sparse());
    // Parameters: wq_b 256 x 4*64, wk 1024 x 64, k_norm 2 x 64, weights_proj 1024 x 4.
    QCOMPARE(s.mixerParams(MixerKind::attention) - d.mixerParams(MixerKind::attention),
             std::int64_t{256 * 4 * 64 + 1024 * 64 + 2 * 64 + 1024 * 4});
    // Cache: 64 fp8 values and one fp32 scale per token per layer beside the latent.
    for (int context : {0, 1000, 100000})
        QCOMPARE(s.cacheBytesPerSequence(context, 2.0) - d.cacheBytesPerSequence(context, 2.0), 4.0 * context * (64 + 4));

    // Time: below top-k the attention reads every token and the indexer costs extra; far above it
    // the attention reads 512 tokens and the indexer's small fp8 keys, far less than the latents.
    const ComputeModel cd(d, h200(), defaultCalibration(GpuArch::hopper), DType::bf16);
    const ComputeModel cs(s, h200(), defaultCalibration(GpuArch::hopper), DType::bf16);
    auto at = [](const ComputeModel& c, int ctx, Phase p) { return c.mixerUs(MixerKind::attention, 128, ctx, p); };
    QVERIFY(at(cs, 512, Phase::decode) > at(cd, 512, Phase::decode));
    QVERIFY(at(cs, 131072, Phase::decode) < at(cd, 131072, Phase::decode) / 2);
    // Decode beyond top-k: the latents read stop growing, only the indexer's keys do, so doubling
    // the context adds far less than it does to dense attention.
    const double sparseGrowth = at(cs, 131072, Phase::decode) - at(cs, 65536, Phase::decode);
    const double denseGrowth = at(cd, 131072, Phase::decode) - at(cd, 65536, Phase::decode);
    QVERIFY(sparseGrowth > 0);
    QVERIFY(sparseGrowth < denseGrowth / 2);
    QVERIFY(at(cs, 131072, Phase::prefill) < at(cd, 131072, Phase::prefill));

    // YAML: written back and read the same; the three keys go together.
    QVERIFY(loadModelText(modelToYaml(s), "again.yaml") == s);
    const std::string error = errorOf(dense + ", index_heads: 4, index_head_dim: 64}\n");
    QVERIFY2(error.find("index_topk is missing or 0") != std::string::npos, error.c_str());
}

QTEST_GUILESS_MAIN(TestLayerKinds)
#include "tst_layer_kinds.moc"
