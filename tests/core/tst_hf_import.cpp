// Hugging Face config.json import: the real configs against FACTS.md section 3 and the sample files, one
// small config per family, the model's name. Errors (missing keys, bad JSON, wrong shapes) are
// tst_hf_import_errors.
#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#include "model/hf_import.h"
#include "model/model_yaml.h"
#include "model/routing_prior.h"

#include "hf_fixtures.h"

#include <QtTest>

#include <filesystem>

using namespace moex;

namespace {

// Real config.json files, kept in tests/data/hf-configs with their sources (SOURCES.md there).
std::string configPath(const QString& file)
{
    return std::string(MOEX_SOURCE_DIR) + "/tests/data/hf-configs/" + file.toStdString();
}

std::string samplePath(const QString& file)
{
    return std::string(MOEX_SOURCE_DIR) + "/samples/models/" + file.toStdString();
}

QString layerList(const std::vector<int>& layers)
{
    QStringList out;
    for (int l : layers)
        out << QString::number(l);
    return out.join(QLatin1Char(','));
}

// The real config `file` of tests/data/hf-configs, or an empty spec with the error printed (the
// test's next comparison then fails).
ModelSpec importConfig(const QString& file)
{
    const std::string path = configPath(file);
    if (!std::filesystem::exists(path))
        qWarning("%s is missing", path.c_str());
    try {
        return importHfConfigFile(path);
    } catch (const InputError& e) {
        qWarning("%s", e.what());
    }
    return {};
}

ModelSpec importOrFail(const QByteArray& json, const std::string& file = "config.json")
{
    try {
        return importHfConfig(moex::test::withHeads(json).toStdString(), file);
    } catch (const InputError& e) {
        qWarning("%s", e.what());
    }
    return {};
}

}  // namespace

class TestHfImport : public QObject {
    Q_OBJECT
private slots:
    void realConfigs_data();
    void realConfigs();
    void realConfigsMatchSamples_data();
    void realConfigsMatchSamples();
    void publishedFigures_data();
    void publishedFigures();
    void families_data();
    void families();
    void routingPriorOfFamily();
    void sharedExpertGate();
    void attentionFromConfig();
    void sparseAttentionIndexer();
    void names_data();
    void names();
    void importRoundTripsThroughYaml();
};

void TestHfImport::realConfigs_data()
{
    // FACTS.md section 3, from each model's own config.json.
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("hidden");
    QTest::addColumn<int>("inter");
    QTest::addColumn<int>("routed");
    QTest::addColumn<int>("topk");
    QTest::addColumn<int>("shared");
    QTest::addColumn<int>("layers");
    QTest::addColumn<int>("moeLayers");
    QTest::addColumn<int>("firstMoe");
    QTest::addColumn<int>("groups");
    QTest::addColumn<int>("groupsPerToken");
    QTest::addColumn<QString>("scoring");
    QTest::addColumn<QString>("weights");
    QTest::addColumn<double>("scale");
    const QString sig = QStringLiteral("sigmoid");
    const QString soft = QStringLiteral("softmax");
    QTest::addRow("DeepSeek-R1") << QStringLiteral("deepseek-ai--DeepSeek-R1.json") << QStringLiteral("DeepSeek-R1")
                                 << 7168 << 2048 << 256 << 8 << 1 << 61 << 58 << 3 << 8 << 4 << sig
                                 << QStringLiteral("fp8") << 2.5;
    QTest::addRow("Kimi-K2-Instruct") << QStringLiteral("moonshotai--Kimi-K2-Instruct.json")
                                      << QStringLiteral("Kimi-K2-Instruct") << 7168 << 2048 << 384 << 8 << 1 << 61
                                      << 60 << 1 << 1 << 1 << sig << QStringLiteral("fp8") << 2.827;
    QTest::addRow("Mixtral-8x7B") << QStringLiteral("mistralai--Mixtral-8x7B-v0.1.json")
                                  << QStringLiteral("Mixtral-8x7B-v0.1") << 4096 << 14336 << 8 << 2 << 0 << 32 << 32
                                  << 0 << 1 << 1 << soft << QStringLiteral("bf16") << 1.0;
    QTest::addRow("gpt-oss-120b") << QStringLiteral("openai--gpt-oss-120b.json") << QStringLiteral("gpt-oss-120b")
                                  << 2880 << 2880 << 128 << 4 << 0 << 36 << 36 << 0 << 1 << 1 << soft
                                  << QStringLiteral("mxfp4") << 1.0;
    QTest::addRow("Qwen3-235B-A22B") << QStringLiteral("Qwen--Qwen3-235B-A22B.json")
                                     << QStringLiteral("Qwen3-235B-A22B") << 4096 << 1536 << 128 << 8 << 0 << 94 << 94
                                     << 0 << 1 << 1 << soft << QStringLiteral("bf16") << 1.0;
}

void TestHfImport::realConfigs()
{
    QFETCH(QString, file);
    QFETCH(QString, name);
    QFETCH(int, hidden);
    QFETCH(int, inter);
    QFETCH(int, routed);
    QFETCH(int, topk);
    QFETCH(int, shared);
    QFETCH(int, layers);
    QFETCH(int, moeLayers);
    QFETCH(int, firstMoe);
    QFETCH(int, groups);
    QFETCH(int, groupsPerToken);
    QFETCH(QString, scoring);
    QFETCH(QString, weights);
    QFETCH(double, scale);
    const ModelSpec m = importConfig(file);
    QVERIFY(m.num_layers > 0);
    QCOMPARE(QString::fromStdString(m.name), name);
    QCOMPARE(m.hidden_size, hidden);
    QCOMPARE(m.moe_intermediate_size, inter);
    QCOMPARE(m.routed_experts, routed);
    QCOMPARE(m.experts_per_token, topk);
    QCOMPARE(m.shared_experts, shared);
    QCOMPARE(m.shared_intermediate_size, shared > 0 ? inter : 0);
    QCOMPARE(m.num_layers, layers);
    QCOMPARE(m.numMoeLayers(), moeLayers);
    QCOMPARE(m.moe_layers.front(), firstMoe);
    QCOMPARE(m.moe_layers.back(), layers - 1);
    QCOMPARE(m.expert_groups, groups);
    QCOMPARE(m.groups_per_token, groupsPerToken);
    QCOMPARE(QString::fromUtf8(toString(m.scoring)), scoring);
    QCOMPARE(QString::fromUtf8(toString(m.weight_dtype)), weights);
    QCOMPARE(m.routed_scaling_factor, scale);
    QCOMPARE(m.non_expert_params, m.estimateNonExpertParams());
}

void TestHfImport::realConfigsMatchSamples_data()
{
    QTest::addColumn<QString>("config");
    QTest::addColumn<QString>("sample");
    QTest::addColumn<bool>("sameDTypes");
    QTest::addRow("deepseek-r1") << QStringLiteral("deepseek-ai--DeepSeek-R1.json") << QStringLiteral("deepseek-r1.yaml")
                                 << true;
    // The sample is K2 Thinking (INT4 experts); the shared config is K2 Instruct (FP8), same shapes.
    QTest::addRow("kimi-k2") << QStringLiteral("moonshotai--Kimi-K2-Instruct.json")
                             << QStringLiteral("kimi-k2-thinking.yaml") << false;
    QTest::addRow("mixtral") << QStringLiteral("mistralai--Mixtral-8x7B-v0.1.json")
                             << QStringLiteral("mixtral-8x7b.yaml") << true;
    QTest::addRow("gpt-oss-120b") << QStringLiteral("openai--gpt-oss-120b.json") << QStringLiteral("gpt-oss-120b.yaml")
                                  << true;
    QTest::addRow("qwen3-235b") << QStringLiteral("Qwen--Qwen3-235B-A22B.json")
                                << QStringLiteral("qwen3-235b-a22b.yaml") << true;
    QTest::addRow("qwen3.5-397b") << QStringLiteral("Qwen--Qwen3.5-397B-A17B.json")
                                  << QStringLiteral("qwen3.5-397b-a17b.yaml") << true;
    QTest::addRow("deepseek-v3.2") << QStringLiteral("deepseek-ai--DeepSeek-V3.2.json") << QStringLiteral("deepseek-v3.2.yaml")
                                   << true;
}

void TestHfImport::publishedFigures_data()
{
    // Each family's real config.json against its publisher's total and active parameters
    // (tests/data/hf-configs/SOURCES.md says where each figure is published). Publishers count
    // embeddings differently in the active figure: `tables` is how many of the model's embedding
    // tables (input table, output head) their active figure includes: 2 both (Qwen, DeepSeek,
    // Mistral, Meta, NVIDIA's "3.6B with embeddings"), 1 the output head only (OpenAI, Moonshot,
    // Z.ai, Xiaomi) or the one tied table (Gemma), 0 none (MiniMax). moex's activeParams counts
    // every table the model has.
    QTest::addColumn<QString>("file");
    QTest::addColumn<double>("total");   // billions
    QTest::addColumn<double>("active");  // billions
    QTest::addColumn<int>("tables");
    QTest::addColumn<QString>("stack");  // mixer counts: "full,sliding,linear,mamba,none"
    QTest::addColumn<int>("moeLayers");
    QTest::addColumn<QString>("activation");
    const auto row = [](const char* name, const char* file, double total, double active, int tables, const char* stack,
                        int moe, const char* act = "swiglu") {
        QTest::addRow("%s", name) << QString::fromLatin1(file) << total << active << tables << QString::fromLatin1(stack)
                                  << moe << QString::fromLatin1(act);
    };
    row("DeepSeek-R1", "deepseek-ai--DeepSeek-R1.json", 671, 37, 2, "61,0,0,0,0", 58);
    row("DeepSeek-V3", "deepseek-ai--DeepSeek-V3.json", 671, 37, 2, "61,0,0,0,0", 58);
    row("DeepSeek-V3.2", "deepseek-ai--DeepSeek-V3.2.json", 671, 37, 2, "61,0,0,0,0", 58);
    row("Kimi-K2", "moonshotai--Kimi-K2-Instruct.json", 1040, 32, 1, "61,0,0,0,0", 60);
    row("GLM-5", "zai-org--GLM-5.json", 744, 40, 0, "78,0,0,0,0", 75);
    row("Qwen3-30B-A3B", "Qwen--Qwen3-30B-A3B.json", 30.5, 3.3, 2, "48,0,0,0,0", 48);
    row("Qwen3-235B-A22B", "Qwen--Qwen3-235B-A22B.json", 235, 22, 2, "94,0,0,0,0", 94);
    row("Qwen3-Coder-480B", "Qwen--Qwen3-Coder-480B-A35B-Instruct.json", 480, 35, 2, "62,0,0,0,0", 62);
    row("Qwen3-VL-235B", "Qwen--Qwen3-VL-235B-A22B-Instruct.json", 235, 22, 2, "94,0,0,0,0", 94);
    row("Qwen3-Next-80B", "Qwen--Qwen3-Next-80B-A3B-Thinking.json", 80, 3, 2, "12,0,36,0,0", 48);
    row("Qwen3.5-397B", "Qwen--Qwen3.5-397B-A17B.json", 397, 17, 2, "15,0,45,0,0", 60);
    row("Mixtral-8x7B", "mistralai--Mixtral-8x7B-v0.1.json", 46.7, 12.9, 2, "32,0,0,0,0", 32);
    row("Mixtral-8x22B", "mistralai--Mixtral-8x22B-v0.1.json", 141, 39, 2, "56,0,0,0,0", 56);
    row("Llama-4-Maverick", "meta-llama--Llama-4-Maverick-17B-128E-Instruct.json", 400, 17, 2, "48,0,0,0,0", 24);
    row("Llama-4-Scout", "meta-llama--Llama-4-Scout-17B-16E-Instruct.json", 109, 17, 2, "48,0,0,0,0", 48);
    row("gpt-oss-120b", "openai--gpt-oss-120b.json", 117, 5.1, 1, "18,18,0,0,0", 36);
    row("gpt-oss-20b", "openai--gpt-oss-20b.json", 21, 3.6, 1, "12,12,0,0,0", 24);
    row("MiniMax-M2.5", "MiniMaxAI--MiniMax-M2.5.json", 230, 10, 0, "62,0,0,0,0", 62);
    row("Nemotron-3-Nano", "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json", 31.6, 3.6, 2, "6,0,0,23,23", 23, "relu2");
    row("Gemma-4-26B-A4B", "google--gemma-4-26B-A4B.json", 25.2, 3.8, 1, "5,25,0,0,0", 30, "geglu");
    row("MiMo-V2-Flash", "XiaomiMiMo--MiMo-V2-Flash.json", 309, 15, 1, "9,39,0,0,0", 47);
    row("GLM-4.7-Flash", "zai-org--GLM-4.7-Flash.json", 30, 3, 2, "47,0,0,0,0", 46);
}

void TestHfImport::publishedFigures()
{
    QFETCH(QString, file);
    QFETCH(double, total);
    QFETCH(double, active);
    QFETCH(int, tables);
    QFETCH(QString, stack);
    QFETCH(int, moeLayers);
    QFETCH(QString, activation);
    const ModelSpec m = importConfig(file);
    QVERIFY(m.num_layers > 0);
    QStringList counts;
    for (MixerKind k : {MixerKind::attention, MixerKind::sliding, MixerKind::linear, MixerKind::mamba, MixerKind::none})
        counts << QString::number(m.countMixer(k));
    QCOMPARE(counts.join(QLatin1Char(',')), stack);
    QCOMPARE(m.numMoeLayers(), moeLayers);
    QCOMPARE(QString::fromUtf8(toString(m.activation)), activation);
    // The model YAML moex writes for it reads back the same model, stack and shapes included.
    {
        const std::string yaml = modelToYaml(m);
        try {
            QVERIFY2(loadModelText(yaml, "imported.yaml") == m, yaml.c_str());
        } catch (const InputError& e) {
            QFAIL((std::string(e.what()) + yaml).c_str());
        }
    }

    const double table = static_cast<double>(m.vocab_size) * m.hidden_size;
    const int modelTables = m.tie_embeddings ? 1 : 2;
    const double importedTotal = static_cast<double>(m.totalParams()) / 1e9;
    const double importedActive = (static_cast<double>(m.activeParams()) - (modelTables - tables) * table) / 1e9;
    const QString figures = QStringLiteral("total %1B (published %2B), active %3B (published %4B)")
                                .arg(importedTotal, 0, 'f', 2)
                                .arg(total)
                                .arg(importedActive, 0, 'f', 3)
                                .arg(active);
    qInfo("%s", qPrintable(figures));  // the closing table of issue 19 is this output
    QVERIFY2(std::abs(importedTotal / total - 1) <= 0.02, qPrintable(figures));
    // Two published active figures are the models' names, rounded to whole billions, and no
    // embedding convention brings moex's exact count within 2% of them (see the closing note of
    // issue 19): Qwen3.5 17.35B with both tables (2.1% over "17B"; 16.3B with the head only),
    // Qwen3-Next 3.87B with both, 3.25B with neither (Qwen3-30B-A3B's card counts both tables and
    // says 3.3B, which moex matches). An exact count that reaches 2% makes these XPASS, and fail.
    // GLM-4.7-Flash's "A3B" likewise: 3.90B with both tables, 3.26B with neither.
    if (qstrcmp(QTest::currentDataTag(), "Qwen3-Next-80B") == 0 || qstrcmp(QTest::currentDataTag(), "Qwen3.5-397B") == 0
        || qstrcmp(QTest::currentDataTag(), "GLM-4.7-Flash") == 0)
        QEXPECT_FAIL("", "the published active figure is the name's rounding", Continue);
    // DeepSeek-V3.2's card gives no figures of its own; these are V3's, and V3.2's DSA indexer adds
    // 0.85B active on every token (61 x 13,959,424, checked exactly in sparseAttentionIndexer).
    if (qstrcmp(QTest::currentDataTag(), "DeepSeek-V3.2") == 0)
        QEXPECT_FAIL("", "the published figures are V3's, without the indexer", Continue);
    QVERIFY2(std::abs(importedActive / active - 1) <= 0.02, qPrintable(figures));
}

void TestHfImport::realConfigsMatchSamples()
{
    QFETCH(QString, config);
    QFETCH(QString, sample);
    QFETCH(bool, sameDTypes);
    const std::string path = configPath(config);
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    const ModelSpec imported = importHfConfigFile(path);
    const ModelSpec s = loadModelFile(samplePath(sample));
    QCOMPARE(s.hidden_size, imported.hidden_size);
    QCOMPARE(s.num_layers, imported.num_layers);
    QCOMPARE(s.moe_layers, imported.moe_layers);
    QCOMPARE(s.routed_experts, imported.routed_experts);
    QCOMPARE(s.experts_per_token, imported.experts_per_token);
    QCOMPARE(s.shared_experts, imported.shared_experts);
    QCOMPARE(s.moe_intermediate_size, imported.moe_intermediate_size);
    QCOMPARE(s.shared_intermediate_size, imported.shared_intermediate_size);
    QCOMPARE(s.dense_intermediate_size, imported.dense_intermediate_size);
    QCOMPARE(s.expert_groups, imported.expert_groups);
    QCOMPARE(s.groups_per_token, imported.groups_per_token);
    QVERIFY(s.scoring == imported.scoring);
    QCOMPARE(s.routed_scaling_factor, imported.routed_scaling_factor);
    QCOMPARE(s.vocab_size, imported.vocab_size);
    QVERIFY(s.attention == imported.attention);
    QVERIFY(s.layer_kinds == imported.layer_kinds);
    QVERIFY(s.linear_attention == imported.linear_attention);
    QVERIFY(s.activation == imported.activation);
    QCOMPARE(s.shared_expert_gate, imported.shared_expert_gate);
    // Shapes agree, so the estimate does too; samples that set non_expert_params say why in their comment.
    QCOMPARE(s.estimateNonExpertParams(), imported.estimateNonExpertParams());
    // The routing prior: the family's fit (model/routing_prior.h) in both, or in neither.
    QVERIFY(s.routing == imported.routing);
    if (sameDTypes) {
        QVERIFY(s.weight_dtype == imported.weight_dtype);
        QVERIFY(s.non_expert_dtype == imported.non_expert_dtype);
    }
}

void TestHfImport::families_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<int>("routed");
    QTest::addColumn<int>("topk");
    QTest::addColumn<int>("inter");
    QTest::addColumn<int>("shared");
    QTest::addColumn<int>("sharedInter");
    QTest::addColumn<int>("denseInter");
    QTest::addColumn<QString>("moeLayers");
    QTest::addColumn<QString>("scoring");
    QTest::addColumn<QString>("weights");
    QTest::addColumn<QString>("nonExpert");

    QTest::addRow("qwen3_5_moe: nested text_config")
        << QByteArray(R"({"model_type": "qwen3_5_moe", "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            "vision_config": {"hidden_size": 1152, "depth": 27},
            "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 4096, "num_hidden_layers": 6,
              "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 256, "num_experts": 512,
              "num_experts_per_tok": 10, "moe_intermediate_size": 1024, "shared_expert_intermediate_size": 1024,
              "vocab_size": 248320, "dtype": "bfloat16"}})")
        << 512 << 10 << 1024 << 1 << 1024 << 0 << QStringLiteral("0,1,2,3,4,5") << QStringLiteral("softmax")
        << QStringLiteral("bf16") << QStringLiteral("bf16");
    QTest::addRow("llama4: interleave_moe_layer_step")
        << QByteArray(R"({"model_type": "llama4", "text_config": {"model_type": "llama4_text", "hidden_size": 5120,
              "num_hidden_layers": 8, "num_local_experts": 128, "num_experts_per_tok": 1,
              "interleave_moe_layer_step": 2, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
              "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128}, "torch_dtype": "bfloat16"})")
        << 128 << 1 << 8192 << 1 << 8192 << 16384 << QStringLiteral("1,3,5,7") << QStringLiteral("sigmoid")
        << QStringLiteral("bf16") << QStringLiteral("bf16");
    QTest::addRow("qwen2_moe: decoder_sparse_step and mlp_only_layers")
        << QByteArray(R"({"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 8,
              "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
              "shared_expert_intermediate_size": 5632, "intermediate_size": 5632, "decoder_sparse_step": 2,
              "mlp_only_layers": [3], "num_attention_heads": 16, "torch_dtype": "float16"})")
        << 60 << 4 << 1408 << 1 << 5632 << 5632 << QStringLiteral("1,5,7") << QStringLiteral("softmax")
        << QStringLiteral("fp16") << QStringLiteral("fp16");
    QTest::addRow("glm4_moe: sigmoid by default")
        << QByteArray(R"({"model_type": "glm4_moe", "hidden_size": 5120, "num_hidden_layers": 6,
              "n_routed_experts": 160, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 1536,
              "intermediate_size": 12288, "first_k_dense_replace": 3, "n_group": 1, "topk_group": 1,
              "routed_scaling_factor": 2.5, "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
              "torch_dtype": "bfloat16"})")
        << 160 << 8 << 1536 << 1 << 1536 << 12288 << QStringLiteral("3,4,5") << QStringLiteral("sigmoid")
        << QStringLiteral("bf16") << QStringLiteral("bf16");
    QTest::addRow("deepseek_v3: moe_layer_freq 2")
        << QByteArray(R"({"model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 8,
              "n_routed_experts": 64, "num_experts_per_tok": 6, "n_shared_experts": 2, "moe_intermediate_size": 256,
              "intermediate_size": 4096, "first_k_dense_replace": 1, "moe_layer_freq": 2, "n_group": 8,
              "topk_group": 3, "scoring_func": "softmax", "quantization_config": {"quant_method": "fp8",
              "weight_block_size": [128, 128]}})")
        << 64 << 6 << 256 << 2 << 256 << 4096 << QStringLiteral("2,4,6") << QStringLiteral("softmax")
        << QStringLiteral("fp8") << QStringLiteral("fp8");
    QTest::addRow("moe_layer_freq as a per-layer list")
        << QByteArray(R"({"model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 6,
              "n_routed_experts": 64, "num_experts_per_tok": 6, "n_shared_experts": 1, "moe_intermediate_size": 256,
              "intermediate_size": 4096, "moe_layer_freq": [0, 1, 1, 0, 1, 1], "n_group": 1, "topk_group": 1})")
        << 64 << 6 << 256 << 1 << 256 << 4096 << QStringLiteral("1,2,4,5") << QStringLiteral("sigmoid")
        << QStringLiteral("bf16") << QStringLiteral("bf16");
    QTest::addRow("moe_shared_expert_intermediate_size: the shared expert's own size")
        << QByteArray(R"({"model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 2,
              "n_routed_experts": 128, "num_experts_per_tok": 6, "n_shared_experts": 1, "moe_intermediate_size": 1856,
              "moe_shared_expert_intermediate_size": 3712, "num_attention_heads": 32, "num_key_value_heads": 2,
              "head_dim": 128, "torch_dtype": "bfloat16"})")
        << 128 << 6 << 1856 << 1 << 3712 << 0 << QStringLiteral("0,1") << QStringLiteral("sigmoid")
        << QStringLiteral("bf16") << QStringLiteral("bf16");
    QTest::addRow("kimi_k2 thinking: compressed-tensors int4")
        << QByteArray(R"({"model_type": "kimi_k2", "hidden_size": 7168, "num_hidden_layers": 4,
              "n_routed_experts": 384, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
              "first_k_dense_replace": 1, "torch_dtype": "bfloat16",
              "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
                  "group_size": 32, "strategy": "group", "symmetric": true}}},
                "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*"]}})")
        << 384 << 8 << 2048 << 1 << 2048 << 0 << QStringLiteral("1,2,3") << QStringLiteral("sigmoid")
        << QStringLiteral("int4") << QStringLiteral("bf16");
    QTest::addRow("compressed-tensors fp8 blocks on everything")
        << QByteArray(R"({"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 4,
              "n_routed_experts": 128, "num_experts_per_tok": 4, "n_shared_experts": 1, "moe_intermediate_size": 4096,
              "first_k_dense_replace": 3, "quantization_config": {"quant_method": "compressed-tensors",
                "config_groups": {"FP8_BLOCK": {"weights": {"num_bits": 8, "type": "float"}}}, "ignore": ["lm_head"]}})")
        << 128 << 4 << 4096 << 1 << 4096 << 0 << QStringLiteral("3") << QStringLiteral("sigmoid")
        << QStringLiteral("fp8") << QStringLiteral("fp8");
    QTest::addRow("gpt_oss: experts_per_token and mxfp4")
        << QByteArray(R"({"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 4,
              "num_local_experts": 32, "experts_per_token": 4, "intermediate_size": 2880,
              "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}})")
        << 32 << 4 << 2880 << 0 << 0 << 0 << QStringLiteral("0,1,2,3") << QStringLiteral("softmax")
        << QStringLiteral("mxfp4") << QStringLiteral("bf16");
    QTest::addRow("mixtral: intermediate_size is the expert")
        << QByteArray(R"({"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 2,
              "num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 14336})")
        << 8 << 2 << 14336 << 0 << 0 << 0 << QStringLiteral("0,1") << QStringLiteral("softmax")
        << QStringLiteral("bf16") << QStringLiteral("bf16");
    QTest::addRow("modelopt nvfp4: attention stays at the base type")
        << QByteArray(R"({"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 2, "num_experts": 128,
              "num_experts_per_tok": 8, "moe_intermediate_size": 768, "torch_dtype": "bfloat16",
              "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}})")
        << 128 << 8 << 768 << 0 << 0 << 0 << QStringLiteral("0,1") << QStringLiteral("softmax")
        << QStringLiteral("nvfp4") << QStringLiteral("bf16");
}

void TestHfImport::families()
{
    QFETCH(QByteArray, json);
    QFETCH(int, routed);
    QFETCH(int, topk);
    QFETCH(int, inter);
    QFETCH(int, shared);
    QFETCH(int, sharedInter);
    QFETCH(int, denseInter);
    QFETCH(QString, moeLayers);
    QFETCH(QString, scoring);
    QFETCH(QString, weights);
    QFETCH(QString, nonExpert);
    ModelSpec m;
    try {
        m = importHfConfig(moex::test::withHeads(json).toStdString(), "config.json");
    } catch (const InputError& e) {
        QFAIL(e.what());
    }
    QCOMPARE(m.routed_experts, routed);
    QCOMPARE(m.experts_per_token, topk);
    QCOMPARE(m.moe_intermediate_size, inter);
    QCOMPARE(m.shared_experts, shared);
    QCOMPARE(m.shared_intermediate_size, sharedInter);
    QCOMPARE(m.dense_intermediate_size, denseInter);
    QCOMPARE(layerList(m.moe_layers), moeLayers);
    QCOMPARE(QString::fromUtf8(toString(m.scoring)), scoring);
    QCOMPARE(QString::fromUtf8(toString(m.weight_dtype)), weights);
    QCOMPARE(QString::fromUtf8(toString(m.non_expert_dtype)), nonExpert);
}

void TestHfImport::routingPriorOfFamily()
{
    // Fitted families get their prior, the others none (the generator's defaults apply).
    const auto prior = [](const char* config) { return importHfConfigFile(configPath(QString::fromUtf8(config))).routing; };
    {
        // A Mixtral with 3 experts: the family's prior (4 co-activation groups) is capped at the
        // experts (it was refused: "'routing.coactivation_groups' = 4 is more than the 3 routed experts").
        const ModelSpec small = importOrFail(QByteArray(R"({"model_type": "mixtral", "hidden_size": 1024, "num_hidden_layers": 2,
            "num_local_experts": 3, "num_experts_per_tok": 1, "intermediate_size": 256})"));
        QCOMPARE(small.routed_experts, 3);
        QVERIFY(small.routing.has_value());
        QCOMPARE(small.routing->coactivation_groups, 3);
    }
    QVERIFY(prior("deepseek-ai--DeepSeek-R1.json") == kDeepSeekRouting);
    QVERIFY(prior("deepseek-ai--DeepSeek-V3.2.json") == kDeepSeekRouting);
    QVERIFY(prior("moonshotai--Kimi-K2-Instruct.json") == kDeepSeekRouting);
    QVERIFY(prior("mistralai--Mixtral-8x22B-v0.1.json") == kMixtralRouting);
    QVERIFY(!prior("Qwen--Qwen3-235B-A22B.json"));
    QVERIFY(!prior("openai--gpt-oss-120b.json"));
    // What import-hf writes carries it.
    const ModelSpec m = importHfConfigFile(configPath(QStringLiteral("mistralai--Mixtral-8x7B-v0.1.json")));
    const std::string yaml = modelToYaml(m);
    QVERIFY2(yaml.find("routing: {skew: 0.35, hot_experts: 0.03, coactivation_groups: 4, drift: 0.01}") != std::string::npos,
             yaml.c_str());
}

// The Qwen families with one shared expert of shared_expert_intermediate_size gate it per token
// (transformers' shared_expert_gate); DeepSeek's, Kimi's and Llama 4's shared experts are not gated.
void TestHfImport::sharedExpertGate()
{
    const auto gated = [](const char* config) { return importHfConfigFile(configPath(QString::fromUtf8(config))).shared_expert_gate; };
    QVERIFY(gated("Qwen--Qwen3.5-397B-A17B.json"));
    QVERIFY(gated("Qwen--Qwen3-Next-80B-A3B-Thinking.json"));
    QVERIFY(!gated("Qwen--Qwen3-235B-A22B.json"));  // no shared expert
    QVERIFY(!gated("deepseek-ai--DeepSeek-R1.json"));
    QVERIFY(!gated("meta-llama--Llama-4-Scout-17B-16E-Instruct.json"));
    // Counted: one hidden_size vector per MoE layer beside the router.
    ModelSpec m = importHfConfigFile(configPath(QStringLiteral("Qwen--Qwen3.5-397B-A17B.json")));
    const std::int64_t with = m.estimateNonExpertParams();
    m.shared_expert_gate = false;
    QCOMPARE(with - m.estimateNonExpertParams(), std::int64_t{m.hidden_size} * m.numMoeLayers());
    // Written and read back.
    m.shared_expert_gate = true;
    QVERIFY(modelToYaml(m).find("shared_expert_gate: true") != std::string::npos);
    QVERIFY(loadModelText(modelToYaml(m), "m.yaml").shared_expert_gate);
}

void TestHfImport::attentionFromConfig()
{
    // GQA: head_dim defaults to hidden / heads; Qwen3 ships a window it does not use.
    ModelSpec q = importOrFail(R"({"hidden_size": 4096, "num_hidden_layers": 2, "num_experts": 8,
        "num_experts_per_tok": 2, "moe_intermediate_size": 512, "num_attention_heads": 32,
        "num_key_value_heads": 4, "sliding_window": 4096, "use_sliding_window": false})");
    QVERIFY(q.attention.kind == AttentionKind::gqa);
    QCOMPARE(q.attention.num_kv_heads, 4);
    QCOMPARE(q.attention.head_dim, 128);
    QCOMPARE(q.attention.sliding_window, 0);

    // gpt-oss: a window used by the layers marked sliding_attention.
    ModelSpec g = importOrFail(R"({"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 2,
        "num_local_experts": 8, "experts_per_token": 2, "intermediate_size": 2880, "num_attention_heads": 64,
        "num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention"]})");
    QCOMPARE(g.attention.sliding_window, 128);
    QCOMPARE(g.attention.head_dim, 64);

    // MLA from kv_lora_rank; q_lora_rank null (V2-Lite style) reads as 0.
    ModelSpec d = importOrFail(R"({"model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 2,
        "n_routed_experts": 64, "num_experts_per_tok": 6, "moe_intermediate_size": 1408, "num_attention_heads": 16,
        "kv_lora_rank": 512, "q_lora_rank": null, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
        "v_head_dim": 128})");
    QVERIFY(d.attention.kind == AttentionKind::mla);
    QCOMPARE(d.attention.q_lora_rank, 0);
    QCOMPARE(d.attention.kv_lora_rank, 512);
    QCOMPARE(d.attention.kvElementsPerTokenPerLayer(), std::int64_t(576));
    QCOMPARE(d.attention.head_dim, 192);
    QVERIFY(!d.attention.sparse());
}

void TestHfImport::sparseAttentionIndexer()
{
    // DeepSeek-V3.2 is V3 plus DSA's lightning indexer on every layer: 64 heads of 128, top 2048.
    const ModelSpec v3 = importConfig(QStringLiteral("deepseek-ai--DeepSeek-V3.json"));
    const ModelSpec v32 = importConfig(QStringLiteral("deepseek-ai--DeepSeek-V3.2.json"));
    QVERIFY(!v3.attention.sparse());
    QVERIFY(v32.attention.sparse());
    QCOMPARE(v32.attention.index_heads, 64);
    QCOMPARE(v32.attention.index_head_dim, 128);
    QCOMPARE(v32.attention.index_topk, 2048);
    // By hand from DeepSeek-V3.2-Exp's Indexer: wq_b 1536 x 64*128, wk 7168 x 128, k_norm 2 x 128,
    // weights_proj 7168 x 64; on each of the 61 layers, and active on every token.
    const std::int64_t indexer = std::int64_t{1536} * 64 * 128 + std::int64_t{7168} * 128 + 2 * 128 + std::int64_t{7168} * 64;
    QCOMPARE(indexer, std::int64_t{13959424});
    QCOMPARE(v32.totalParams() - v3.totalParams(), 61 * indexer);
    QCOMPARE(v32.activeParams() - v3.activeParams(), 61 * indexer);
    // Its key cache: 128 fp8 values and one fp32 scale per token per layer.
    QCOMPARE(v32.attention.indexerCacheBytesPerToken(), 132.0);
    QCOMPARE(v32.cacheBytesPerSequence(8192, 1.0) - v3.cacheBytesPerSequence(8192, 1.0), 61.0 * 8192 * 132);

    const ModelSpec glm5 = importConfig(QStringLiteral("zai-org--GLM-5.json"));
    QVERIFY(glm5.attention.sparse());
    QCOMPARE(glm5.attention.index_heads, 32);
    QCOMPARE(glm5.attention.index_head_dim, 128);
    QCOMPARE(glm5.attention.index_topk, 2048);
}

void TestHfImport::names_data()
{
    QTest::addColumn<QByteArray>("extra");
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("name");
    QTest::addRow("_name_or_path wins") << QByteArray(R"("_name_or_path": "deepseek-ai/DeepSeek-V3/",)")
                                        << QStringLiteral("/x/org--Other.json") << QStringLiteral("DeepSeek-V3");
    QTest::addRow("org--name stem") << QByteArray() << QStringLiteral("/x/deepseek-ai--DeepSeek-R1.json")
                                    << QStringLiteral("DeepSeek-R1");
    QTest::addRow("plain stem") << QByteArray() << QStringLiteral("my-moe.json") << QStringLiteral("my-moe");
    QTest::addRow("config.json: model_type") << QByteArray() << QStringLiteral("/models/x/config.json")
                                             << QStringLiteral("qwen3_moe");
}

void TestHfImport::names()
{
    QFETCH(QByteArray, extra);
    QFETCH(QString, file);
    QFETCH(QString, name);
    const QByteArray json = "{" + extra + R"("model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2,
        "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32})";
    QCOMPARE(QString::fromStdString(importOrFail(json, file.toStdString()).name), name);
}



void TestHfImport::importRoundTripsThroughYaml()
{
    // import-hf -o writes modelToYaml; it must load back as the same model.
    const std::string path = configPath(QStringLiteral("deepseek-ai--DeepSeek-R1.json"));
    const QByteArray fallback = R"({"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
        "intermediate_size": 18432, "first_k_dense_replace": 3, "n_group": 8, "topk_group": 4,
        "routed_scaling_factor": 2.5, "num_attention_heads": 128, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280,
        "quantization_config": {"quant_method": "fp8"}})";
    const ModelSpec m = std::filesystem::exists(path) ? importHfConfigFile(path) : importOrFail(fallback);
    QCOMPARE(m.hidden_size, 7168);
    Diagnostics diags;
    auto root = parseYaml(modelToYaml(m), "out.yaml", diags);
    QVERIFY(root);
    YamlReader r("out.yaml", diags);
    auto back = readModel(*root, r);
    QVERIFY2(back && diags.empty(), diags.format().c_str());
    QVERIFY(*back == m);
    QVERIFY_THROWS_EXCEPTION(InputError, importHfConfigFile("/nonexistent/config.json"));
}

QTEST_APPLESS_MAIN(TestHfImport)
#include "tst_hf_import.moc"
