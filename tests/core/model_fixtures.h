// Fixtures of the model YAML tests (tst_model, tst_model_errors): a model read from text as a
// scenario's inline model is, the sample files, a field-by-field comparison, and a valid six-line
// model the error rows edit.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#include "model/model_spec.h"
#include "model/model_yaml.h"

#include <optional>
#include <string>
#endif

#include <QtTest>

namespace moex::test {

inline std::string samplePath(const QString& file)
{
    return std::string(MOEX_SOURCE_DIR) + "/samples/models/" + file.toStdString();
}

struct Parsed {
    std::optional<ModelSpec> model;
    Diagnostics diags;
};

// readModel + checkModel on text, as a scenario with an inline model does.
inline Parsed readText(const std::string& text)
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

inline Parsed readText(const QByteArray& text)
{
    return readText(text.toStdString());
}

inline ModelSpec mustRead(const std::string& text)
{
    Parsed p = readText(text);
    if (!p.model || !p.diags.empty())
        qWarning("%s", p.diags.format().c_str());
    return p.model.value_or(ModelSpec{});
}

inline ModelSpec mustRead(const QByteArray& text)
{
    return mustRead(text.toStdString());
}

inline Parsed readText(const char* text)
{
    return readText(std::string(text));
}

inline ModelSpec mustRead(const char* text)
{
    return mustRead(std::string(text));
}

inline QString joined(const Diagnostics& d)
{
    return QString::fromStdString(d.format());
}

// Field by field, so that a failing round trip names the field.
inline void compareModels(const ModelSpec& a, const ModelSpec& b)
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
inline constexpr const char* kBase = "name: t\n"                    // 1
                          "hidden_size: 64\n"            // 2
                          "num_layers: 4\n"              // 3
                          "routed_experts: 8\n"          // 4
                          "experts_per_token: 2\n"       // 5
                          "moe_intermediate_size: 32\n"; // 6

inline QByteArray withLine(int line, const char* replacement)
{
    QList<QByteArray> lines = QByteArray(kBase).split('\n');
    lines[line - 1] = replacement;
    return lines.join('\n');
}

inline QByteArray plus(const char* extra)
{
    return QByteArray(kBase) + extra;
}

}  // namespace moex::test
