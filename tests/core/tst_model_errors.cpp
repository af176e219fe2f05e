// The model YAML's errors: each bad field reported at its line with what was wanted, every
// error of a file in one pass, and loadModelFile's located errors.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "model/hf_import.h"
#include "model_fixtures.h"

#include <fstream>
#endif

#include <QtTest>

using namespace moex;
using namespace moex::test;

class TestModelErrors : public QObject {
    Q_OBJECT
private slots:
    void malformed_data();
    void malformed();
    void everyErrorReported();
    void importedNamesArePlainText();
    void loadModelFileErrors();
};

void TestModelErrors::malformed_data()
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
    QTest::addRow("gate without a shared expert") << plus("shared_expert_gate: true\n") << 7
                                                  << QStringLiteral("shared_expert_gate: true, but the model has no shared expert");
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
    // A name goes into the files moex writes (an export's comment) and onto the terminal: a line
    // break in it wrote YAML lines of its own into a native placement file.
    QTest::addRow("line break in the name") << withLine(1, "name: \"Mx\\nplacement: {strategy: round-robin}\"") << 1
                                            << QStringLiteral("'name' holds a control character");
    QTest::addRow("terminal escape in the name") << withLine(1, "name: \"a\\e[31mred\"") << 1
                                                 << QStringLiteral("'name' holds a control character");
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

void TestModelErrors::malformed()
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
    // A top-k above the experts is said once: not again as too few experts in the routing groups
    // (at groups_per_token, a line that holds a good value).
    if (fragment.startsWith(QStringLiteral("top-k")))
        QVERIFY2(p.diags.size() == 1, qPrintable(joined(p.diags)));
}

void TestModelErrors::everyErrorReported()
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

void TestModelErrors::importedNamesArePlainText()
{
    // import-hf names the model from the config's _name_or_path (or the file): a control
    // character there comes out as \xNN, so that the model file it writes loads again.
    const ModelSpec m = importHfConfig(R"({"_name_or_path": "org/Mx\nplacement: x", "num_local_experts": 8,
        "num_experts_per_tok": 2, "intermediate_size": 64, "num_hidden_layers": 2, "hidden_size": 64,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100})",
                                       "config.json");
    QCOMPARE(m.name, std::string("Mx\\x0aplacement: x"));
    const Parsed back = readText(modelToYaml(m));
    QVERIFY2(back.model && back.diags.empty(), back.diags.format().c_str());
    QCOMPARE(back.model->name, m.name);
}

void TestModelErrors::loadModelFileErrors()
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

QTEST_APPLESS_MAIN(TestModelErrors)
#include "tst_model_errors.moc"
