// ModelSpec parameter counting, the model YAML contract's good side (the samples and their
// facts, round trips, the compact MoE-layer form, defaults) and the storage cost of each number
// format. Errors: tst_model_errors.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "model_fixtures.h"

#include <algorithm>
#include <cmath>
#endif

#include <QtTest>

using namespace moex;
using namespace moex::test;

class TestModel : public QObject {
    Q_OBJECT
private slots:
    void samples_data();
    void samples();
    void sampleFacts_data();
    void sampleFacts();
    void sampleRoundTrip_data();
    void sampleRoundTrip();
    void roundTripOddValues();
    void moeLayersCompactVsList_data();
    void moeLayersCompactVsList();
    void defaults();
    void bytesPerElement_data();
    void bytesPerElement();
    void parameterCounting();
    void attentionShapes();
};

void TestModel::samples_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<double>("publishedTotalB");
    QTest::addColumn<double>("publishedActiveB");
    QTest::addColumn<qint64>("expertParams");
    QTest::addColumn<double>("bytesPerParam");
    // Published totals: each model's card; expert bytes = 3 * hidden * inter at the weight format.
    const double fp8 = 1.0 + 4.0 / 16384.0;
    QTest::addRow("deepseek-r1") << QStringLiteral("deepseek-r1.yaml") << 671.0 << 37.0 << qint64(3) * 7168 * 2048 << fp8;
    QTest::addRow("kimi-k2-thinking") << QStringLiteral("kimi-k2-thinking.yaml") << 1040.0 << 32.0
                                      << qint64(3) * 7168 * 2048 << 0.5625;
    QTest::addRow("mistral-large-3") << QStringLiteral("mistral-large-3.yaml") << 675.0 << 41.0
                                     << qint64(3) * 7168 * 4096 << fp8;
    QTest::addRow("gpt-oss-120b") << QStringLiteral("gpt-oss-120b.yaml") << 117.0 << 5.1 << qint64(3) * 2880 * 2880
                                  << 0.53125;
    QTest::addRow("mixtral-8x7b") << QStringLiteral("mixtral-8x7b.yaml") << 46.7 << 12.9 << qint64(3) * 4096 * 14336
                                  << 2.0;
    QTest::addRow("qwen3-235b-a22b") << QStringLiteral("qwen3-235b-a22b.yaml") << 235.0 << 22.0
                                     << qint64(3) * 4096 * 1536 << 2.0;
    QTest::addRow("qwen3.5-397b-a17b") << QStringLiteral("qwen3.5-397b-a17b.yaml") << 397.0 << 17.0
                                       << qint64(3) * 4096 * 1024 << 2.0;
    QTest::addRow("glm-4.5") << QStringLiteral("glm-4.5.yaml") << 355.0 << 32.0 << qint64(3) * 5120 * 1536 << 2.0;
}

void TestModel::samples()
{
    QFETCH(QString, file);
    QFETCH(double, publishedTotalB);
    QFETCH(double, publishedActiveB);
    QFETCH(qint64, expertParams);
    QFETCH(double, bytesPerParam);

    ModelSpec m;
    try {
        m = loadModelFile(samplePath(file));
    } catch (const InputError& e) {
        QFAIL(e.what());
    }
    Diagnostics diags;
    YamlReader r(samplePath(file), diags);
    checkModel(m, YAML::Node(), r);
    QVERIFY2(diags.empty(), diags.format().c_str());

    const double total = static_cast<double>(m.totalParams()) / 1e9;
    const double active = static_cast<double>(m.activeParams()) / 1e9;
    qInfo("%s: total %.2fB (published %.1fB, %+.2f%%), active %.2fB (published %.1fB, %+.2f%%)", qPrintable(file),
          total, publishedTotalB, (total / publishedTotalB - 1) * 100, active, publishedActiveB,
          (active / publishedActiveB - 1) * 100);
    QVERIFY2(std::abs(total / publishedTotalB - 1) <= 0.03, qPrintable(QStringLiteral("total %1B").arg(total)));
    QVERIFY2(std::abs(active / publishedActiveB - 1) <= 0.03, qPrintable(QStringLiteral("active %1B").arg(active)));

    QCOMPARE(m.expertParams(), expertParams);
    QVERIFY(m.expertBytes() == static_cast<double>(expertParams) * bytesPerParam);
    QCOMPARE(m.routedExpertParams(), expertParams * m.routed_experts * m.numMoeLayers());
}

void TestModel::sampleFacts_data()
{
    // FACTS.md section 3, column by column.
    QTest::addColumn<QString>("file");
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
    QTest::addColumn<double>("scale");
    QTest::addColumn<QString>("weights");
    const QString sig = QStringLiteral("sigmoid");
    const QString soft = QStringLiteral("softmax");
    QTest::addRow("deepseek-r1") << QStringLiteral("deepseek-r1.yaml") << 7168 << 2048 << 256 << 8 << 1 << 61 << 58 << 3
                                 << 8 << 4 << sig << 2.5 << QStringLiteral("fp8");
    QTest::addRow("kimi-k2-thinking") << QStringLiteral("kimi-k2-thinking.yaml") << 7168 << 2048 << 384 << 8 << 1 << 61
                                      << 60 << 1 << 1 << 1 << sig << 2.827 << QStringLiteral("int4");
    QTest::addRow("mistral-large-3") << QStringLiteral("mistral-large-3.yaml") << 7168 << 4096 << 128 << 4 << 1 << 61
                                     << 58 << 3 << 1 << 1 << soft << 1.0 << QStringLiteral("fp8");
    QTest::addRow("gpt-oss-120b") << QStringLiteral("gpt-oss-120b.yaml") << 2880 << 2880 << 128 << 4 << 0 << 36 << 36
                                  << 0 << 1 << 1 << soft << 1.0 << QStringLiteral("mxfp4");
    QTest::addRow("mixtral-8x7b") << QStringLiteral("mixtral-8x7b.yaml") << 4096 << 14336 << 8 << 2 << 0 << 32 << 32
                                  << 0 << 1 << 1 << soft << 1.0 << QStringLiteral("bf16");
    QTest::addRow("qwen3-235b-a22b") << QStringLiteral("qwen3-235b-a22b.yaml") << 4096 << 1536 << 128 << 8 << 0 << 94
                                     << 94 << 0 << 1 << 1 << soft << 1.0 << QStringLiteral("bf16");
    QTest::addRow("qwen3.5-397b-a17b") << QStringLiteral("qwen3.5-397b-a17b.yaml") << 4096 << 1024 << 512 << 10 << 1
                                       << 60 << 60 << 0 << 1 << 1 << soft << 1.0 << QStringLiteral("bf16");
    QTest::addRow("glm-4.5") << QStringLiteral("glm-4.5.yaml") << 5120 << 1536 << 160 << 8 << 1 << 92 << 89 << 3 << 1
                             << 1 << sig << 2.5 << QStringLiteral("bf16");
}

void TestModel::sampleFacts()
{
    QFETCH(QString, file);
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
    QFETCH(double, scale);
    QFETCH(QString, weights);
    const ModelSpec m = loadModelFile(samplePath(file));
    QCOMPARE(m.hidden_size, hidden);
    QCOMPARE(m.moe_intermediate_size, inter);
    QCOMPARE(m.routed_experts, routed);
    QCOMPARE(m.experts_per_token, topk);
    QCOMPARE(m.shared_experts, shared);
    if (shared > 0)
        QVERIFY(m.shared_intermediate_size > 0);
    QCOMPARE(m.num_layers, layers);
    QCOMPARE(m.numMoeLayers(), moeLayers);
    QCOMPARE(m.moe_layers.front(), firstMoe);
    QCOMPARE(m.moe_layers.back(), layers - 1);
    QCOMPARE(m.expert_groups, groups);
    QCOMPARE(m.groups_per_token, groupsPerToken);
    QCOMPARE(QString::fromUtf8(toString(m.scoring)), scoring);
    QCOMPARE(m.routed_scaling_factor, scale);
    QCOMPARE(QString::fromUtf8(toString(m.weight_dtype)), weights);
}

void TestModel::sampleRoundTrip_data()
{
    QTest::addColumn<QString>("file");
    for (const char* f : {"deepseek-r1.yaml", "kimi-k2-thinking.yaml", "mistral-large-3.yaml", "gpt-oss-120b.yaml",
                          "mixtral-8x7b.yaml", "qwen3-235b-a22b.yaml", "qwen3.5-397b-a17b.yaml", "glm-4.5.yaml"})
        QTest::addRow("%s", f) << QString::fromUtf8(f);
}

void TestModel::sampleRoundTrip()
{
    QFETCH(QString, file);
    const ModelSpec m = loadModelFile(samplePath(file));
    const std::string text = modelToYaml(m);
    // Every sample's MoE layers are a run to the last layer: the compact form is exact; a hybrid
    // stack is written as its layer pattern instead.
    const bool compact = text.find("moe_layers: {first: ") != std::string::npos;
    const bool pattern = !m.layer_kinds.empty() && text.find("\nlayers: ") != std::string::npos;
    QVERIFY2(compact != pattern, text.c_str());
    Parsed p = readText(text);
    QVERIFY2(p.model && p.diags.empty(), (p.diags.format() + text).c_str());
    compareModels(*p.model, m);
}

void TestModel::roundTripOddValues()
{
    ModelSpec m = mustRead(plus("moe_layers: [0, 1, 3]\n"
                                "routed_scaling_factor: 2.827\n"
                                "shared_experts: 2\n"
                                "shared_intermediate_size: 48\n"
                                "scoring: sigmoid\n"
                                "weight_dtype: nvfp4\n"
                                "non_expert_dtype: fp8\n"
                                "attention: {kind: mla, heads: 4, kv_lora_rank: 16, qk_rope_head_dim: 8, "
                                "qk_nope_head_dim: 16}\n"
                                "routing: {skew: 0.59, hot_experts: 0.03, coactivation_groups: 4, drift: 0.01}\n"));
    QVERIFY(m.routing);
    QCOMPARE(m.routing->skew, 0.59);
    QCOMPARE(m.routing->coactivation_groups, 4);
    m.name = "odd: \"quoted\" # not a comment";
    m.routed_scaling_factor = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
    const std::string text = modelToYaml(m);
    QVERIFY2(text.find("moe_layers: [0, 1, 3]") != std::string::npos, text.c_str());
    Parsed p = readText(text);
    QVERIFY2(p.model && p.diags.empty(), (p.diags.format() + text).c_str());
    compareModels(*p.model, m);

    // A GQA model without attention written at all keeps the default shape.
    ModelSpec plain = mustRead(kBase);
    Parsed q = readText(modelToYaml(plain));
    QVERIFY(q.model);
    compareModels(*q.model, plain);
}

void TestModel::moeLayersCompactVsList_data()
{
    QTest::addColumn<QByteArray>("compact");
    QTest::addColumn<QByteArray>("list");
    QTest::addColumn<bool>("writesCompact");
    QTest::addRow("from 3 on") << QByteArray("{first: 3, every: 1}") << QByteArray("[3, 4, 5, 6, 7]") << true;
    QTest::addRow("odd layers") << QByteArray("{first: 1, every: 2}") << QByteArray("[1, 3, 5, 7]") << true;
    QTest::addRow("every third") << QByteArray("{every: 3}") << QByteArray("[0, 3, 6]") << true;
    QTest::addRow("all by default") << QByteArray() << QByteArray("[0, 1, 2, 3, 4, 5, 6, 7]") << true;
    QTest::addRow("last only") << QByteArray("{first: 7}") << QByteArray("[7]") << true;
    QTest::addRow("gap: list only") << QByteArray() << QByteArray("[1, 2, 5]") << false;
    QTest::addRow("stops early: list only") << QByteArray() << QByteArray("[0, 2, 4]") << false;
}

void TestModel::moeLayersCompactVsList()
{
    QFETCH(QByteArray, compact);
    QFETCH(QByteArray, list);
    QFETCH(bool, writesCompact);
    const QByteArray base = withLine(3, "num_layers: 8");
    const ModelSpec fromList = mustRead(QByteArray(base + "\nmoe_layers: " + list + "\n"));
    QVERIFY(!fromList.moe_layers.empty());
    if (writesCompact) {
        const QByteArray text = compact.isEmpty() ? base : QByteArray(base + "\nmoe_layers: " + compact + "\n");
        const ModelSpec fromCompact = mustRead(text);
        QCOMPARE(fromCompact.moe_layers, fromList.moe_layers);
    }
    const std::string out = modelToYaml(fromList);
    QCOMPARE(out.find("moe_layers: {") != std::string::npos, writesCompact);
    QCOMPARE(mustRead(out).moe_layers, fromList.moe_layers);
    for (int layer = 0; layer < 8; ++layer)
        QCOMPARE(fromList.isMoeLayer(layer),
                 std::find(fromList.moe_layers.begin(), fromList.moe_layers.end(), layer) != fromList.moe_layers.end());
}

void TestModel::defaults()
{
    const ModelSpec m = mustRead(kBase);
    QCOMPARE(m.moe_layers, (std::vector<int>{0, 1, 2, 3}));
    QCOMPARE(m.shared_experts, 0);
    QCOMPARE(m.expert_groups, 1);
    QCOMPARE(m.groups_per_token, 1);
    QVERIFY(m.scoring == Scoring::softmax);
    QCOMPARE(m.routed_scaling_factor, 1.0);
    QVERIFY(m.weight_dtype == DType::bf16);
    QVERIFY(m.non_expert_dtype == DType::bf16);
    QCOMPARE(m.non_expert_params, m.estimateNonExpertParams());

    const ModelSpec gqa = mustRead(plus("attention: {heads: 8}\n"));
    QVERIFY(gqa.attention.kind == AttentionKind::gqa);
    QCOMPARE(gqa.attention.num_kv_heads, 8);
    QCOMPARE(gqa.attention.head_dim, 64 / 8);

    // A latent KV rank means MLA even when kind is not written; v_head_dim follows the nope dim.
    const ModelSpec mla = mustRead(plus("attention: {heads: 4, kv_lora_rank: 16, qk_rope_head_dim: 8, "
                                        "qk_nope_head_dim: 24}\n"));
    QVERIFY(mla.attention.kind == AttentionKind::mla);
    QCOMPARE(mla.attention.v_head_dim, 24);
    QCOMPARE(mla.attention.head_dim, 32);
    QCOMPARE(mla.attention.kvElementsPerTokenPerLayer(), std::int64_t(16 + 8));
}

void TestModel::bytesPerElement_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("bytes");
    QTest::addRow("bf16") << QStringLiteral("bf16") << 2.0;
    QTest::addRow("fp16") << QStringLiteral("fp16") << 2.0;
    QTest::addRow("fp32") << QStringLiteral("fp32") << 4.0;
    QTest::addRow("fp8 + fp32 scale per 128x128") << QStringLiteral("fp8") << 1.000244140625;
    QTest::addRow("nvfp4 + fp8 scale per 16") << QStringLiteral("nvfp4") << 0.5625;
    QTest::addRow("mxfp4 + e8m0 scale per 32") << QStringLiteral("mxfp4") << 0.53125;
    QTest::addRow("int4 + bf16 scale per 32") << QStringLiteral("int4") << 0.5625;
}

void TestModel::bytesPerElement()
{
    QFETCH(QString, dtype);
    QFETCH(double, bytes);
    const auto t = parseDType(dtype.toStdString());
    QVERIFY(t.has_value());
    QVERIFY2(moex::bytesPerElement(*t) == bytes, qPrintable(QString::number(moex::bytesPerElement(*t), 'g', 17)));
    // The YAML key accepts the same names and the expert bytes follow them.
    const ModelSpec m = mustRead(plus(("weight_dtype: " + dtype.toStdString() + "\n").c_str()));
    QVERIFY(m.expertBytes() == 3.0 * 64 * 32 * bytes);
}

void TestModel::parameterCounting()
{
    // Small enough to count by hand.
    const ModelSpec m = mustRead("name: tiny\nhidden_size: 16\nnum_layers: 4\nmoe_layers: [1, 2, 3]\n"
                                 "routed_experts: 8\nexperts_per_token: 2\nshared_experts: 1\n"
                                 "moe_intermediate_size: 8\nshared_intermediate_size: 12\n"
                                 "dense_intermediate_size: 40\nvocab_size: 100\nnon_expert_params: 1000\n"
                                 "non_expert_dtype: fp16\n"
                                 "attention: {heads: 4, kv_heads: 2, head_dim: 4}\n");
    QCOMPARE(m.expertParams(), std::int64_t(384));                   // 3*16*8
    QCOMPARE(m.routedExpertParams(), std::int64_t(9216));            // 384*8*3
    QCOMPARE(m.sharedExpertParamsPerLayer(), std::int64_t(576));     // 1*3*16*12
    QCOMPARE(m.totalParams(), std::int64_t(9216 + 576 * 3 + 1000));  // 11944
    QCOMPARE(m.activeParams(), std::int64_t(1000 + 3 * (2 * 384 + 576)));
    QCOMPARE(m.nonExpertBytes(), (1000.0 + 576 * 3) * 2);
    QCOMPARE(m.attention.params(16), std::int64_t(16 * 16 + 2 * 16 * 8 + 16 * 16));
    QCOMPARE(m.attention.kvElementsPerTokenPerLayer(), std::int64_t(2 * 2 * 4));
    // attention 768*4 + dense FFN 3*16*40*1 + router 16*8*3 + tables 2*100*16 + norms 2*16*4
    QCOMPARE(m.estimateNonExpertParams(), std::int64_t(3072 + 1920 + 384 + 3200 + 128));
    QVERIFY(!m.isMoeLayer(0));
    QVERIFY(m.isMoeLayer(3));
}

void TestModel::attentionShapes()
{
    AttentionShape ds;  // DeepSeek-V3/R1
    ds.kind = AttentionKind::mla;
    ds.num_heads = 128;
    ds.num_kv_heads = 128;
    ds.q_lora_rank = 1536;
    ds.kv_lora_rank = 512;
    ds.qk_rope_head_dim = 64;
    ds.qk_nope_head_dim = 128;
    ds.v_head_dim = 128;
    // q 7168*1536 + 1536*128*192, kv down 7168*576, kv up 512*128*256, o 128*128*7168
    QCOMPARE(ds.params(7168), std::int64_t(11010048) + 37748736 + 4128768 + 16777216 + 117440512);
    QCOMPARE(ds.kvElementsPerTokenPerLayer(), std::int64_t(576));
    ds.q_lora_rank = 0;  // DeepSeek-V2-Lite style: q projected straight from hidden
    QCOMPARE(ds.params(7168), std::int64_t(7168) * 128 * 192 + 4128768 + 16777216 + 117440512);

    AttentionShape mixtral;
    mixtral.num_heads = 32;
    mixtral.num_kv_heads = 8;
    mixtral.head_dim = 128;
    QCOMPARE(mixtral.params(4096), std::int64_t(4096) * 4096 * 2 + std::int64_t(2) * 4096 * 1024);
    QCOMPARE(mixtral.kvElementsPerTokenPerLayer(), std::int64_t(2048));
}

QTEST_APPLESS_MAIN(TestModel)
#include "tst_model.moc"
