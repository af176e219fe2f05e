// Hugging Face config.json import refuses what it cannot read right: every missing key named at once,
// bad JSON at its line and column, wrong kinds and shapes in the config's own keys at their lines.
#include "common/diagnostics.h"
#include "model/hf_import.h"

#include "hf_fixtures.h"

#include <QtTest>

using namespace moex;

class TestHfImportErrors : public QObject {
    Q_OBJECT
private slots:
    void errors_data();
    void errors();
};

void TestHfImportErrors::errors_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("fragments");
    QTest::addColumn<int>("line");    // of the first fragment; 0 = at the file
    QTest::addColumn<int>("column");  // 0 = not checked

    QTest::addRow("dense model")
        << QByteArray(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
            "intermediate_size": 14336, "num_attention_heads": 32})")
        << QStringList{QStringLiteral("not an MoE model: missing num_local_experts/num_experts/n_routed_experts")} << 0
        << 0;
    // Beyond what a model file allows: refused here rather than written and refused by validate.
    QTest::addRow("more layers than a model file allows")
        << QByteArray(R"({"model_type": "mixtral", "hidden_size": 1024, "num_hidden_layers": 60000,
            "num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 256})")
        << QStringList{QStringLiteral("'num_hidden_layers' = 60000 is out of range [1, 4096]")} << 1 << 0;
    QTest::addRow("more experts than a model file allows")
        << QByteArray(R"({"model_type": "mixtral", "hidden_size": 1024, "num_hidden_layers": 2,
            "num_local_experts": 20000, "num_experts_per_tok": 2, "intermediate_size": 256})")
        << QStringList{QStringLiteral("'num_local_experts' = 20000 is out of range [1, 16384]")} << 2 << 0;
    QTest::addRow("per-layer moe_layer_freq of the wrong length")
        << QByteArray(R"({"model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 4,
            "n_routed_experts": 64, "num_experts_per_tok": 6, "moe_intermediate_size": 256,
            "moe_layer_freq": [0, 1, 1]})")
        << QStringList{QStringLiteral("moe_layer_freq lists 3 layers, num_hidden_layers is 4")} << 3 << 0;
    QTest::addRow("indexer without its heads")
        << QByteArray(R"({"model_type": "deepseek_v32", "hidden_size": 1024, "num_hidden_layers": 2,
            "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "num_attention_heads": 8,
            "kv_lora_rank": 128, "index_topk": 2048})")
        << QStringList{QStringLiteral("sparse attention (DSA) needs index_n_heads")} << 0 << 0;
    QTest::addRow("unknown layer type")
        << QByteArray(R"({"model_type": "qwen3_next", "hidden_size": 1024, "num_hidden_layers": 2,
            "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
            "layer_types": ["linear_attention", "retention"]})")
        << QStringList{QStringLiteral("layer_types[1] is string \"retention\": known are full_attention")} << 3 << 0;
    QTest::addRow("layer_types of the wrong length")
        << QByteArray(R"({"hidden_size": 1024, "num_hidden_layers": 3, "num_experts": 8, "num_experts_per_tok": 2,
            "moe_intermediate_size": 64, "layer_types": ["full_attention"]})")
        << QStringList{QStringLiteral("layer_types must list one type per layer (3)")} << 2 << 0;
    QTest::addRow("linear attention without its shape")
        << QByteArray(R"({"hidden_size": 1024, "num_hidden_layers": 2, "num_experts": 8, "num_experts_per_tok": 2,
            "moe_intermediate_size": 64, "full_attention_interval": 2, "linear_num_key_heads": 4})")
        << QStringList{QStringLiteral("linear-attention layers but no linear_num_value_heads"),
                       QStringLiteral("no linear_key_head_dim"), QStringLiteral("no linear_value_head_dim")}
        << 0 << 0;
    QTest::addRow("Nemotron-H pattern letter")
        << QByteArray(R"({"model_type": "nemotron_h", "hidden_size": 1024, "num_hidden_layers": 3,
            "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
            "hybrid_override_pattern": "ME+", "mamba_num_heads": 8, "mamba_head_dim": 64, "ssm_state_size": 16})")
        << QStringList{QStringLiteral("hybrid_override_pattern letter 3 is '+'")} << 3 << 0;
    QTest::addRow("Nemotron-H pattern length")
        << QByteArray(R"({"model_type": "nemotron_h", "hidden_size": 1024, "num_hidden_layers": 4,
            "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
            "hybrid_override_pattern": "ME*"})")
        << QStringList{QStringLiteral("hybrid_override_pattern has 3 letters, num_hidden_layers is 4")} << 3 << 0;
    QTest::addRow("unknown activation")
        << QByteArray(R"({"hidden_size": 1024, "num_hidden_layers": 2, "num_experts": 8, "num_experts_per_tok": 2,
            "moe_intermediate_size": 64, "hidden_act": "tanh"})")
        << QStringList{QStringLiteral("hidden_act 'tanh' is not a known FFN activation")} << 2 << 0;
    // Without num_attention_heads (or with it null) the model had no attention at all: a Mixtral
    // step 2.9 times too fast, DeepSeek-R1 11.5 B active parameters short.
    QTest::addRow("no attention heads")
        << QByteArray(R"({"hidden_size": 1024, "num_hidden_layers": 2, "num_experts": 8, "num_experts_per_tok": 2,
            "moe_intermediate_size": 64, "num_attention_heads": null})")
        << QStringList{QStringLiteral("missing keys: num_attention_heads")} << 0 << 0;
    QTest::addRow("missing hidden_size and layers")
        << QByteArray(R"({"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64})")
        << QStringList{QStringLiteral("missing keys: hidden_size, num_hidden_layers")} << 0 << 0;
    QTest::addRow("empty object names everything")
        << QByteArray("{}")
        << QStringList{QStringLiteral("not an MoE model"), QStringLiteral("missing keys: hidden_size, num_hidden_layers")}
        << 0 << 0;
    QTest::addRow("MoE without top-k and expert size")
        << QByteArray(R"({"hidden_size": 64, "num_hidden_layers": 2, "n_routed_experts": 8})")
        << QStringList{QStringLiteral("missing keys: num_experts_per_tok, moe_intermediate_size")} << 0 << 0;
    QTest::addRow("trailing comma") << QByteArray("{\n  \"hidden_size\": 4096,\n  \"num_experts\": 8,\n}")
                                    << QStringList{QStringLiteral("config.json is not valid JSON"), QStringLiteral("unexpected '}'")}
                                    << 4 << 1;
    QTest::addRow("bad literal") << QByteArray("{\n  \"hidden_size\": 4096,\n  \"num_experts\": eight\n}")
                                 << QStringList{QStringLiteral("config.json is not valid JSON")} << 3 << 18;
    // The routing shape in the config's keys, at their lines, one error each (they named moex's
    // keys at the file, and a wrong top-k failed the group check too).
    const QByteArray base("{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"moe_intermediate_size\": 32,\n"
                          "\"n_routed_experts\": 8,\n");
    QTest::addRow("groups do not divide") << base + "\"num_experts_per_tok\": 2,\n\"n_group\": 3, \"topk_group\": 1}"
                                          << QStringList{QStringLiteral("n_group = 3 does not divide n_routed_experts = 8")}
                                          << 4 << 1;
    QTest::addRow("groups leave too few experts")
        << base + "\"num_experts_per_tok\": 4, \"n_group\": 4,\n\"topk_group\": 1}"
        << QStringList{QStringLiteral("topk_group = 1 of n_group = 4 leaves 2 experts to choose from, fewer than "
                                      "num_experts_per_tok = 4")}
        << 4 << 1;
    QTest::addRow("kv heads do not divide the heads")
        << base + "\"num_experts_per_tok\": 2, \"num_attention_heads\": 32,\n\"num_key_value_heads\": 3}"
        << QStringList{QStringLiteral("num_key_value_heads = 3 must divide num_attention_heads = 32")} << 4 << 1;
    QTest::addRow("not an object") << QByteArray("[1, 2]") << QStringList{QStringLiteral("must hold a JSON object")}
                                   << 1 << 1;
    QTest::addRow("string for a number")
        << QByteArray("{\"num_experts\": 8, \"num_experts_per_tok\": 2,\n\"moe_intermediate_size\": 64,\n"
                      "\"num_hidden_layers\": 2,\n  \"hidden_size\": \"4096\"}")
        << QStringList{QStringLiteral("'hidden_size' must be an integer, got string \"4096\"")} << 4 << 3;
    QTest::addRow("negative expert count")
        << QByteArray(R"({"num_experts": -8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
            "num_hidden_layers": 2, "hidden_size": 64})")
        << QStringList{QStringLiteral("'num_experts' = -8 is out of range")} << 1 << 2;
    QTest::addRow("top-k above experts")
        << QByteArray(R"({"num_experts": 8, "num_experts_per_tok": 9, "moe_intermediate_size": 64,
            "num_hidden_layers": 2, "hidden_size": 64})")
        << QStringList{QStringLiteral("num_experts_per_tok = 9 is larger than num_experts = 8")} << 1 << 20;
    QTest::addRow("unknown quantization")
        << QByteArray(R"({"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
            "num_hidden_layers": 2, "hidden_size": 64, "quantization_config": {"quant_method": "bitsandbytes"}})")
        << QStringList{QStringLiteral("quant_method 'bitsandbytes' is not understood")} << 2 << 56;
    // Values that were read as something else in silence, or with nlohmann's unlocated text.
    const QByteArray moe = "{\"num_experts\": 8, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64,\n"
                           "\"num_hidden_layers\": 4, \"hidden_size\": 64,\n";
    QTest::addRow("quantization_config a string")
        << moe + "\"quantization_config\": \"fp8\"}"
        << QStringList{QStringLiteral("'quantization_config' must be an object with quant_method, got string \"fp8\"")} << 3 << 1;
    QTest::addRow("awq bits not whole")
        << moe + "\"quantization_config\": {\"quant_method\": \"awq\",\n \"bits\": 4.7}}"
        << QStringList{QStringLiteral("quantization_config's 'bits' must be a whole number of bits, got")} << 4 << 2;
    QTest::addRow("num_bits a string")
        << moe + "\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"config_groups\":\n"
                 " {\"g\": {\"weights\": {\"num_bits\": \"4\"}}}}}"
        << QStringList{QStringLiteral("quantization_config's 'num_bits' must be a whole number of bits, got string \"4\"")} << 4 << 21;
    QTest::addRow("quant_method a number")
        << moe + "\"quantization_config\": {\"quant_method\": 5}}"
        << QStringList{QStringLiteral("quantization_config's 'quant_method' must be a string, got")} << 3 << 25;
    QTest::addRow("torch_dtype int8")
        << moe + "\"torch_dtype\": \"int8\"}"
        << QStringList{QStringLiteral("'torch_dtype' is \"int8\": moex reads bfloat16, float16, float32")} << 3 << 1;
    QTest::addRow("mlp_only_layers past the layers")
        << moe + "\"mlp_only_layers\": [1, 100]}"
        << QStringList{QStringLiteral("mlp_only_layers")} << 3 << 1;
    QTest::addRow("duplicate key at its second line")
        << QByteArray("{\"num_experts\": 8,\n \"num_experts_per_tok\": 2,\n  \"num_experts\": 4}")
        << QStringList{QStringLiteral("gives the key \"num_experts\" twice in one object")} << 3 << 3;
    QTest::addRow("n_group 0: one error")
        << moe + "\"n_group\": 0, \"topk_group\": 4}"
        << QStringList{QStringLiteral("'n_group' = 0 is out of range")} << 3 << 1;
    QTest::addRow("every layer dense")
        << moe + "\"first_k_dense_replace\": 100}"
        << QStringList{QStringLiteral("none of the 4 layers is an MoE layer by this config's 'first_k_dense_replace'")} << 3 << 1;
    QTest::addRow("head size of 0")
        << moe + "\"num_attention_heads\": 128}"
        << QStringList{QStringLiteral("hidden_size = 64 is smaller than num_attention_heads = 128")} << 2 << 25;
    // A key written more than once in the file (a multimodal wrapper's vision_config, a top-level
    // copy, a second config group): the error is at the key the value was read from.
    QTest::addRow("text_config's key, vision_config has it too")
        << QByteArray("{\"model_type\": \"x\",\n \"vision_config\": {\"hidden_size\": 1152, \"num_hidden_layers\": 27},\n"
                      " \"text_config\": {\"num_experts\": 8, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64,\n"
                      "   \"num_hidden_layers\": 60000, \"hidden_size\": 64}}")
        << QStringList{QStringLiteral("'num_hidden_layers' = 60000 is out of range [1, 4096]")} << 4 << 4;
    QTest::addRow("text_config's key, the top level has it too")
        << QByteArray("{\"num_experts\": 8, \"num_hidden_layers\": 2, \"hidden_size\": 64,\n"
                      " \"text_config\": {\"num_experts\": 20000, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64}}")
        << QStringList{QStringLiteral("'num_experts' = 20000 is out of range [1, 16384]")} << 2 << 18;
    QTest::addRow("num_bits of the first of two groups")
        << moe + "\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"config_groups\": {\n"
                 " \"group_0\": {\"weights\": {\"num_bits\": \"4\"}},\n"
                 " \"group_1\": {\"weights\": {\"num_bits\": 8}}}}}"
        << QStringList{QStringLiteral("quantization_config's 'num_bits' must be a whole number of bits, got string \"4\"")} << 4 << 26;
    QTest::addRow("unknown scoring")
        << QByteArray(R"({"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
            "num_hidden_layers": 2, "hidden_size": 64, "scoring_func": "relu"})")
        << QStringList{QStringLiteral("scoring_func 'relu' is not one of: softmax, sigmoid")} << 2 << 56;
}
void TestHfImportErrors::errors()
{
    QFETCH(QByteArray, json);
    QFETCH(QStringList, fragments);
    QFETCH(int, line);
    QFETCH(int, column);
    try {
        importHfConfig(moex::test::withHeads(json).toStdString(), "bad.json");
        QFAIL("expected InputError");
    } catch (const InputError& e) {
        const QString all = QString::fromUtf8(e.what());
        for (const QString& f : fragments)
            QVERIFY2(all.contains(f), qPrintable(QStringLiteral("missing '%1' in:\n%2").arg(f, all)));
        // Said once, in the config's names: not again by the model's checks in moex's (unlocated).
        QVERIFY2(!all.contains(QStringLiteral("attention kv_heads")), qPrintable(all));
        QVERIFY2(!all.contains(QStringLiteral("n_group = 1")), qPrintable(all));  // a value the file never gave
        QVERIFY2(!all.contains(QStringLiteral("'moe_layers' is empty")), qPrintable(all));  // moex's key, not the config's
        bool located = false;
        for (const Diagnostic& d : e.diagnostics().items()) {
            QCOMPARE(d.where.file, std::string("bad.json"));
            if (QString::fromStdString(d.message).contains(fragments.front()))
                located = located || (d.where.line == line && (column == 0 || d.where.column == column));
        }
        QVERIFY2(located, qPrintable(QStringLiteral("wanted %1:%2 in:\n%3").arg(line).arg(column).arg(all)));
    }
}
QTEST_APPLESS_MAIN(TestHfImportErrors)
#include "tst_hf_import_errors.moc"
