// ModelSpec parameter counting, the model YAML contract (samples, located errors, round trip) and the
// storage cost of each number format.
#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#include "model/model_spec.h"
#include "model/model_yaml.h"

#include <QtTest>

#include <cmath>
#include <fstream>

using namespace moex;

namespace {

std::string samplePath(const QString& file)
{
    return std::string(MOEX_SOURCE_DIR) + "/samples/models/" + file.toStdString();
}

struct Parsed {
    std::optional<ModelSpec> model;
    Diagnostics diags;
};

// readModel + checkModel on text, as a scenario with an inline model does.
Parsed readText(const std::string& text)
{
    Parsed p;
    auto root = parseYaml(text, "inline.yaml", p.diags);
    if (!root)
        return p;
    YamlReader r("inline.yaml", p.diags);
    p.model = readModel(*root, r);
    if (p.model)
        checkModel(*p.model, *root, r);
    return p;
}

Parsed readText(const QByteArray& text)
{
    return readText(text.toStdString());
}

ModelSpec mustRead(const std::string& text)
{
    Parsed p = readText(text);
    if (!p.model || !p.diags.empty())
        qWarning("%s", p.diags.format().c_str());
    return p.model.value_or(ModelSpec{});
}

ModelSpec mustRead(const QByteArray& text)
{
    return mustRead(text.toStdString());
}

Parsed readText(const char* text)
{
    return readText(std::string(text));
}

ModelSpec mustRead(const char* text)
{
    return mustRead(std::string(text));
}

QString joined(const Diagnostics& d)
{
    return QString::fromStdString(d.format());
}

// Field by field, so that a failing round trip names the field.
void compareModels(const ModelSpec& a, const ModelSpec& b)
{
    QCOMPARE(a.name, b.name);
    QCOMPARE(a.hidden_size, b.hidden_size);
    QCOMPARE(a.num_layers, b.num_layers);
    QCOMPARE(a.moe_layers, b.moe_layers);
    QCOMPARE(a.routed_experts, b.routed_experts);
    QCOMPARE(a.experts_per_token, b.experts_per_token);
    QCOMPARE(a.shared_experts, b.shared_experts);
    QCOMPARE(a.moe_intermediate_size, b.moe_intermediate_size);
    QCOMPARE(a.shared_intermediate_size, b.shared_intermediate_size);
    QCOMPARE(a.dense_intermediate_size, b.dense_intermediate_size);
    QCOMPARE(a.expert_groups, b.expert_groups);
    QCOMPARE(a.groups_per_token, b.groups_per_token);
    QVERIFY(a.scoring == b.scoring);
    QVERIFY2(a.routed_scaling_factor == b.routed_scaling_factor, "routed_scaling_factor must round-trip exactly");
    QVERIFY(a.weight_dtype == b.weight_dtype);
    QVERIFY(a.non_expert_dtype == b.non_expert_dtype);
    QVERIFY(a.attention.kind == b.attention.kind);
    QCOMPARE(a.attention.num_heads, b.attention.num_heads);
    QCOMPARE(a.attention.num_kv_heads, b.attention.num_kv_heads);
    QCOMPARE(a.attention.head_dim, b.attention.head_dim);
    QCOMPARE(a.attention.q_lora_rank, b.attention.q_lora_rank);
    QCOMPARE(a.attention.kv_lora_rank, b.attention.kv_lora_rank);
    QCOMPARE(a.attention.qk_rope_head_dim, b.attention.qk_rope_head_dim);
    QCOMPARE(a.attention.qk_nope_head_dim, b.attention.qk_nope_head_dim);
    QCOMPARE(a.attention.v_head_dim, b.attention.v_head_dim);
    QCOMPARE(a.attention.sliding_window, b.attention.sliding_window);
    QCOMPARE(a.attention.output_gate, b.attention.output_gate);
    QVERIFY(a.layer_kinds == b.layer_kinds);
    QVERIFY(a.linear_attention == b.linear_attention);
    QVERIFY(a.mamba == b.mamba);
    QVERIFY(a.sliding_attention == b.sliding_attention);
    QVERIFY(a.activation == b.activation);
    QVERIFY(a.state_dtype == b.state_dtype);
    QCOMPARE(a.tie_embeddings, b.tie_embeddings);
    QVERIFY(a.routing == b.routing);
    QCOMPARE(a.vocab_size, b.vocab_size);
    QCOMPARE(a.non_expert_params, b.non_expert_params);
    QVERIFY(a == b);  // catches a field added to ModelSpec but not to this list
}

// A valid six-line model; rows of the error table replace or add lines.
const char* const kBase = "name: t\n"                    // 1
                          "hidden_size: 64\n"            // 2
                          "num_layers: 4\n"              // 3
                          "routed_experts: 8\n"          // 4
                          "experts_per_token: 2\n"       // 5
                          "moe_intermediate_size: 32\n"; // 6

QByteArray withLine(int line, const char* replacement)
{
    QList<QByteArray> lines = QByteArray(kBase).split('\n');
    lines[line - 1] = replacement;
    return lines.join('\n');
}

QByteArray plus(const char* extra)
{
    return QByteArray(kBase) + extra;
}

}  // namespace

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
    void malformed_data();
    void malformed();
    void everyErrorReported();
    void moeLayersCompactVsList_data();
    void moeLayersCompactVsList();
    void defaults();
    void bytesPerElement_data();
    void bytesPerElement();
    void parameterCounting();
    void attentionShapes();
    void loadModelFileErrors();
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

void TestModel::malformed_data()
{
    QTest::addColumn<QByteArray>("yaml");
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("fragment");

    QTest::addRow("top-k above expert count")
        << withLine(5, "experts_per_token: 9") << 5
        << QStringLiteral("top-k (experts_per_token = 9) is larger than the expert count (routed_experts = 8)");
    QTest::addRow("groups do not divide") << plus("expert_groups: 3\n") << 7
                                          << QStringLiteral("expert_groups = 3 does not divide routed_experts = 8");
    QTest::addRow("groups per token above groups")
        << plus("expert_groups: 4\ngroups_per_token: 5\n") << 8
        << QStringLiteral("groups_per_token = 5 is larger than expert_groups = 4");
    QTest::addRow("groups leave too few experts")
        << plus("expert_groups: 8\ngroups_per_token: 1\n") << 8 << QStringLiteral("fewer than experts_per_token = 2");
    QTest::addRow("moe layer out of range") << plus("moe_layers:\n  - 1\n  - 4\n") << 9
                                            << QStringLiteral("'moe_layers' index 4 is out of range: num_layers = 4");
    QTest::addRow("moe layers descending") << plus("moe_layers:\n  - 3\n  - 2\n") << 9
                                           << QStringLiteral("must be ascending without repeats: 2 follows 3");
    QTest::addRow("moe layers repeated") << plus("moe_layers: [1, 1]\n") << 7
                                         << QStringLiteral("must be ascending without repeats: 1 follows 1");
    QTest::addRow("compact first past the end") << plus("moe_layers: {first: 4, every: 1}\n") << 7
                                                 << QStringLiteral("first = 4 is not below num_layers = 4");
    QTest::addRow("compact unknown key") << plus("moe_layers: {frist: 1}\n") << 7
                                         << QStringLiteral("unknown key 'frist' in moe_layers; did you mean 'first'?");
    QTest::addRow("shared without size") << plus("shared_experts: 1\n") << 7
                                         << QStringLiteral("shared_experts = 1 needs shared_intermediate_size");
    QTest::addRow("unknown key") << plus("hiden_size: 64\n") << 7
                                 << QStringLiteral("unknown key 'hiden_size' in model; did you mean 'hidden_size'?");
    QTest::addRow("missing required key") << withLine(2, "vocab_size: 10") << 1
                                          << QStringLiteral("missing required key 'hidden_size'");
    QTest::addRow("not an integer") << withLine(2, "hidden_size: big") << 2
                                    << QStringLiteral("'hidden_size' must be an integer, got 'big'");
    QTest::addRow("absurd hidden size") << withLine(2, "hidden_size: 2000000") << 2
                                        << QStringLiteral("'hidden_size' = 2000000 is out of range");
    QTest::addRow("zero experts") << withLine(4, "routed_experts: 0") << 4
                                  << QStringLiteral("'routed_experts' = 0 is out of range");
    QTest::addRow("scoring typo") << plus("scoring: softmx\n") << 7 << QStringLiteral("did you mean 'softmax'?");
    QTest::addRow("weight dtype") << plus("weight_dtype: fp4\n") << 7
                                  << QStringLiteral("'weight_dtype' must be one of: bf16, fp16, fp8, nvfp4, mxfp4, int4");
    QTest::addRow("negative scaling") << plus("routed_scaling_factor: -1\n") << 7
                                      << QStringLiteral("'routed_scaling_factor' = -1 is out of range");
    QTest::addRow("kv heads do not divide") << plus("attention:\n  heads: 32\n  kv_heads: 6\n") << 9
                                            << QStringLiteral("attention kv_heads = 6 must divide heads = 32");
    QTest::addRow("mla without latent rank") << plus("attention:\n  kind: mla\n  heads: 8\n") << 8
                                             << QStringLiteral("missing required key 'kv_lora_rank'");
    QTest::addRow("unknown attention key") << plus("attention: {heads: 8, kv_head: 2}\n") << 7
                                           << QStringLiteral("did you mean 'kv_heads'?");
    QTest::addRow("too many parameters")
        << QByteArray("name: huge\nhidden_size: 1000000\nnum_layers: 4000\nrouted_experts: 16000\n"
                      "experts_per_token: 8\nmoe_intermediate_size: 1000000\n")
        << 1 << QStringLiteral("parameters (over 10^15)");
    QTest::addRow("routing prior incomplete") << plus("routing: {skew: 0.5}\n") << 7
                                              << QStringLiteral("missing required key 'hot_experts'");
    QTest::addRow("routing prior out of range")
        << plus("routing: {skew: 9, hot_experts: 0.03, coactivation_groups: 2, drift: 0}\n") << 7
        << QStringLiteral("'skew' = 9 is out of range");
    QTest::addRow("routing prior unknown key")
        << plus("routing: {skew: 0.5, hot_expert: 0.03, coactivation_groups: 2, drift: 0}\n") << 7
        << QStringLiteral("did you mean 'hot_experts'?");
    QTest::addRow("routing groups above experts")
        << plus("routing: {skew: 0.5, hot_experts: 0.03, coactivation_groups: 9, drift: 0}\n") << 7
        << QStringLiteral("'routing.coactivation_groups' = 9 is more than the 8 routed experts");
    QTest::addRow("not a mapping") << QByteArray("- a\n- b\n") << 1 << QStringLiteral("model must be a mapping");
}

void TestModel::malformed()
{
    QFETCH(QByteArray, yaml);
    QFETCH(int, line);
    QFETCH(QString, fragment);
    Parsed p = readText(yaml);
    QVERIFY2(!p.diags.empty(), "expected an error");
    bool found = false;
    for (const Diagnostic& d : p.diags.items()) {
        QCOMPARE(d.where.file, std::string("inline.yaml"));
        found = found || (d.where.line == line && QString::fromStdString(d.message).contains(fragment));
    }
    QVERIFY2(found, qPrintable(QStringLiteral("wanted line %1: %2\ngot:\n%3").arg(line).arg(fragment, joined(p.diags))));
}

void TestModel::everyErrorReported()
{
    // One pass reports syntax-level and semantic problems alike, each on its own line.
    Parsed p = readText("name: t\n"
                        "hidden_size: x\n"
                        "num_layers: 4\n"
                        "routed_experts: 8\n"
                        "experts_per_token: 2\n"
                        "moe_intermediate_size: 32\n"
                        "scoring: nope\n"
                        "colour: red\n");
    QCOMPARE(p.diags.size(), std::size_t(3));
    QVERIFY(!p.model);
    Parsed q = readText(withLine(5, "experts_per_token: 9") + "expert_groups: 3\nshared_experts: 1\n");
    QVERIFY2(q.diags.size() >= 3, q.diags.format().c_str());
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

void TestModel::loadModelFileErrors()
{
    QVERIFY_THROWS_EXCEPTION(InputError, loadModelFile("/nonexistent/model.yaml"));

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("bad.yaml")).toStdString();
    {
        std::ofstream out(path);
        out << "name: bad\nhidden_size: 64\nnum_layers: 4\nrouted_experts: 8\nexperts_per_token: 9\n"
               "moe_intermediate_size: 32\nexpert_groups: 3\nscoring: softmx\n";
    }
    try {
        loadModelFile(path);
        QFAIL("a bad model file must throw");
    } catch (const InputError& e) {
        // Reader errors stop before the semantic checks: the scoring typo alone is reported.
        QCOMPARE(e.diagnostics().size(), std::size_t(1));
        QCOMPARE(e.diagnostics().items()[0].where.file, path);
        QCOMPARE(e.diagnostics().items()[0].where.line, 8);
    }
    {
        std::ofstream out(path);
        out << "name: bad\nhidden_size: 64\nnum_layers: 4\nrouted_experts: 8\nexperts_per_token: 9\n"
               "moe_intermediate_size: 32\nexpert_groups: 3\n";
    }
    try {
        loadModelFile(path);
        QFAIL("a bad model file must throw");
    } catch (const InputError& e) {
        QCOMPARE(e.diagnostics().size(), std::size_t(2));
        QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("bad.yaml:5:")));
        QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("bad.yaml:7:")));
    }
    {
        std::ofstream out(path);
        out << "name: [unclosed\n";
    }
    QVERIFY_THROWS_EXCEPTION(InputError, loadModelFile(path));
}

QTEST_APPLESS_MAIN(TestModel)
#include "tst_model.moc"
