// Malformed scenarios: every one yields located errors (line and message), never a crash or a
// half-loaded scenario. The text is loaded as if it lived in samples/scenarios/ so relative paths
// resolve against the shipped samples.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"
#endif

#include <QtTest>

#include <cstdint>
#include <string>

using namespace moex;

namespace {

const std::string kDir = std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/";
const std::string kFile = kDir + "malformed.yaml";

// A valid scenario the rows below break one way each. Line numbers matter: keep it stable.
const char* kInlineModel = R"(name: inline
model:
  name: tiny
  hidden_size: 1024
  num_layers: 4
  routed_experts: 16
  experts_per_token: 2
  moe_intermediate_size: 512
topology: {builtin: hgx-h100}
)";

}  // namespace

class TestScenarioErrors : public QObject {
    Q_OBJECT
private slots:
    void malformed_data();
    void malformed();
    void reportsEveryError();
    void wrongKindOfFileIsOneError_data();
    void wrongKindOfFileIsOneError();
    void validInlineLoads();
    void deepNestingIsAnErrorNotACrash();
    void aliasBombDoesNotExplode();
    void hugeFileRefused();
    void routingKeysOfTheOtherKindByFlags();
};

void TestScenarioErrors::malformed_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("fragment");

    const QString base = QStringLiteral(
        "name: t\n"
        "model: ../models/mixtral-8x7b.yaml\n"
        "topology: {builtin: hgx-h100}\n");
    auto row = [](const char* name, const QString& text, int line, const char* fragment) {
        QTest::addRow("%s", name) << text << line << QString::fromUtf8(fragment);
    };

    // Syntax
    row("unclosed flow sequence", QStringLiteral("name: t\nmodel: [a, b\ntopology: x\n"), 3, "YAML syntax");
    row("bad indentation", QStringLiteral("name: t\n  model: x\n"), 2, "YAML syntax");
    row("tab indentation", base + QStringLiteral("workload:\n\tphase: decode\n"), 5, "YAML syntax");
    row("duplicate colon", base + QStringLiteral("workload: {phase: : decode}\n"), 4, "");
    row("not a mapping", QStringLiteral("- a\n- b\n"), 1, "scenario must be a mapping");
    row("empty file", QString(), 0, "the file is empty");
    row("only comments", QStringLiteral("# name: t\n# model: x\n"), 0, "the file holds no value (only comments, or a null)");
    // Unknown keys with did-you-mean
    row("unknown top key", base + QStringLiteral("worklaod: {phase: decode}\n"), 4, "did you mean 'workload'");
    row("unknown workload key", base + QStringLiteral("workload:\n  tokens_per_gp: 12\n"), 5,
        "did you mean 'tokens_per_gpu'");
    row("unknown routing key", base + QStringLiteral("workload:\n  routing: {kind: synthetic, skwe: 1}\n"), 5,
        "did you mean 'skew'");
    row("unknown placement key", base + QStringLiteral("placement: {strategy: eplb, redundant: 8}\n"), 4,
        "did you mean 'redundant_slots'");
    row("unknown topology param", QStringLiteral("name: t\nmodel: ../models/mixtral-8x7b.yaml\ntopology: {builtin: hgx-h100, node: 2}\n"),
        3, "did you mean 'nodes'");
    row("unknown strategy", base + QStringLiteral("placement: {strategy: eplbb}\n"), 4, "did you mean 'eplb'");
    row("unknown builtin", QStringLiteral("name: t\nmodel: ../models/mixtral-8x7b.yaml\ntopology: {builtin: hgx-h900}\n"), 3,
        "hgx-h900");
    // Wrong types
    row("tokens not a number", base + QStringLiteral("workload: {tokens_per_gpu: lots}\n"), 4, "must be an integer");
    row("tokens a list", base + QStringLiteral("workload: {tokens_per_gpu: [1, 2]}\n"), 4, "must be an integer");
    row("phase wrong", base + QStringLiteral("workload: {phase: training}\n"), 4, "must be one of: decode, prefill");
    row("skew a string", base + QStringLiteral("workload:\n  routing: {skew: high}\n"), 5, "must be a number");
    row("workload a list", base + QStringLiteral("workload: [decode]\n"), 4, "workload must be a mapping");
    row("overlap wrong", base + QStringLiteral("overlap: three-batch\n"), 4, "must be one of: none, two-batch");
    row("a2a kernel wrong", base + QStringLiteral("a2a_kernel: nccl\n"), 4, "must be one of: deepep, one-sided");
    row("dispatch dtype wrong", base + QStringLiteral("precision: {dispatch: int4}\n"), 4, "must be one of");
    // Out of range
    row("negative tokens", base + QStringLiteral("workload: {tokens_per_gpu: -5}\n"), 4, "out of range");
    row("zero tokens", base + QStringLiteral("workload: {tokens_per_gpu: 0}\n"), 4, "out of range");
    row("absurd tokens", base + QStringLiteral("workload: {tokens_per_gpu: 99999999999}\n"), 4, "is more than one GPU routes in one step");
    row("tokens above one step's most", base + QStringLiteral("workload: {tokens_per_gpu: 65536}\n"), 4,
        "'tokens_per_gpu' = 65536 is more than one GPU routes in one step (at most 65535)");
    row("NaN skew", base + QStringLiteral("workload:\n  routing: {skew: .nan}\n"), 5, "NaN");
    row("infinite drift", base + QStringLiteral("workload:\n  routing: {drift: .inf}\n"), 5, "infinity");
    row("negative speed", base + QStringLiteral("gpus: {speed: {gpu3: -0.5}}\n"), 4, "out of range");
    row("speed of missing gpu", base + QStringLiteral("gpus: {speed: {gpu8: 0.9}}\n"), 4, "GPU 8 does not exist");
    row("absurd nodes", QStringLiteral("name: t\nmodel: ../models/mixtral-8x7b.yaml\ntopology: {builtin: hgx-h100, nodes: 100000}\n"),
        3, "nodes");
    // Placement
    row("placement names missing expert",
        base + QStringLiteral("placement:\n  slots: [[0], [1], [2], [3], [4], [5], [6], [9]]\n"), 5,
        "names expert 9, but the model has 8 experts");
    row("placement leaves expert out",
        base + QStringLiteral("placement:\n  slots: [[0], [1], [2], [3], [4], [5], [6], [6]]\n"), 5,
        "leaves out 1 expert: 7");
    row("placement wrong gpu count", base + QStringLiteral("placement:\n  slots: [[0, 1, 2, 3], [4, 5, 6, 7]]\n"), 5,
        "slots list 2 GPUs, but the topology has 8");
    row("negative expert id", base + QStringLiteral("placement:\n  slots: [[-1], [1], [2], [3], [4], [5], [6], [7]]\n"),
        5, "out of range");
    row("slots and layers", base + QStringLiteral("placement: {slots: [], layers: []}\n"), 4, "not both");
    row("explicit without slots", base + QStringLiteral("placement: {strategy: explicit}\n"), 4, "needs 'slots'");
    // Model problems
    row("top-k larger than experts",
        QString::fromUtf8(kInlineModel).replace(QStringLiteral("experts_per_token: 2"), QStringLiteral("experts_per_token: 17")),
        7, "top-k");
    row("groups do not divide",
        QString::fromUtf8(kInlineModel)
            .replace(QStringLiteral("  moe_intermediate_size: 512\n"),
                     QStringLiteral("  moe_intermediate_size: 512\n  expert_groups: 3\n")),
        9, "expert_groups = 3 does not divide");
    row("model file missing", QStringLiteral("name: t\nmodel: ../models/nope.yaml\ntopology: {builtin: hgx-h100}\n"), 2,
        "does not exist");
    // A key given twice (yaml-cpp kept the first and dropped the second in silence).
    row("duplicate top key", base + QStringLiteral("overlap: none\noverlap: bogus\n"), 5, "duplicate key 'overlap' in scenario (first at line 4)");
    row("duplicate nested key", base + QStringLiteral("workload:\n  phase: decode\n  phase: prefill\n"), 6, "duplicate key 'phase'");
    row("missing model", QStringLiteral("name: t\ntopology: {builtin: hgx-h100}\n"), 1, "missing required key 'model'");
    // Another kind of file where a scenario belongs: what it is and where it goes (it was one
    // "unknown key" per line, then "missing required key" twice).
    row("neither built-in nor custom topology",
        QStringLiteral("name: t\nmodel: ../models/mixtral-8x7b.yaml\ntopology: {kind: tpu}\n"), 3,
        "a topology is a built-in ({builtin: NAME}, NAME one of gb200-nvl72");
    row("a model file", QStringLiteral("name: m\nhidden_size: 64\nrouted_experts: 8\n"), 0,
        "this is a model file, not a scenario: a scenario names it under 'model'");
    row("a topology file", QStringLiteral("name: t\ngpu: h200\nnodes: []\nlinks: []\n"), 0,
        "this is a topology file, not a scenario");
    row("a calibration file", QStringLiteral("name: c\nnvlink_efficiency: 0.7\n"), 0, "this is a calibration file");
    row("a tour", QStringLiteral("title: T\nsteps: []\n"), 0, "this is a tour, not a scenario");
    // Files moex writes or replays, given where a scenario belongs (they were "unknown key" per key,
    // or "not an MoE model" for a .json).
    row("moex's placement export", QStringLiteral("placement:\n  strategy: explicit\n  layers: []\n"), 0,
        "this is a moex placement file, not a scenario: it goes into a scenario as its 'placement:' part");
    row("SGLang's placement", QStringLiteral(R"({"physical_to_logical_map": [[0, 1]]})"), 0,
        "this is a serving system's placement file");
    row("a simulate --json output", QStringLiteral(R"({"steps": 2, "summary": {}, "gpus": []})"), 0,
        "this is a moex-cli --json output");
    row("a routing trace", QStringLiteral(R"({"layer": 0, "experts": [7, 0], "token_idx": 0})"), 0,
        "this is a per-token routing trace, not a scenario: a scenario replays it as workload.routing: {kind: trace");
    row("a counts file", QStringLiteral(R"({"num_experts": 8, "expert_usage_by_layer": {}})"), 0,
        "this is an expert counts file");
    row("a config.json", QStringLiteral(R"({"model_type": "mixtral", "num_local_experts": 8})"), 0,
        "this is a Hugging Face config.json, not a scenario: `moex-cli import-hf`");
    // Keys the routing's kind would ignore: the generator's shape for a replayed file, a file
    // without the kind that reads it.
    row("drift with a trace", base + QStringLiteral("workload:\n  routing: {kind: trace, file: ../../tests/data/traces/mixtral8x7b_gsm8k_2_routing.jsonl, drift: 0.1}\n"),
        5, "'drift' shapes the synthetic generator; routing kind 'trace' replays its file as it is");
    row("file without a kind", base + QStringLiteral("workload:\n  routing: {file: ../models/mixtral-8x7b.yaml}\n"), 5,
        "'file' is for routing kind trace or counts, and the routing gives no kind");
    row("redundant slots beside explicit slots",
        base + QStringLiteral("placement:\n  slots: [[0], [1], [2], [3], [4], [5], [6], [7]]\n  redundant_slots: 8\n"), 6,
        "explicit slots are given, so 'redundant_slots' has no effect");
    row("one GPU's speed twice", base + QStringLiteral("gpus:\n  speed: {gpu3: 0.5,\n    gpu03: 0.9}\n"), 6,
        "GPU 3 is given twice: as 'gpu3' (line 5) and as 'gpu03'; give it once");
    row("a model file as the trace", base + QStringLiteral("workload:\n  routing: {kind: trace, file: ../models/mixtral-8x7b.yaml}\n"), 5,
        "routing file '../models/mixtral-8x7b.yaml': this is a model file, not routing data");
    row("routing trace without file", base + QStringLiteral("workload:\n  routing: {kind: trace}\n"), 5, "needs a 'file'");
    row("routing file missing", base + QStringLiteral("workload:\n  routing: {kind: trace, file: nope.jsonl}\n"), 5,
        "does not exist");
    row("routing file a directory", base + QStringLiteral("workload:\n  routing: {kind: trace, file: ../models}\n"), 5,
        "is a directory, not a file");
    row("calibration missing", base + QStringLiteral("calibration: nope.yaml\n"), 4, "does not exist");
    row("a binary file", QString::fromLatin1("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16), 3, "a binary file, not YAML text");
    row("calibration a directory", base + QStringLiteral("calibration: ../models\n"), 4, "is a directory, not a file");
    // Capacity
    row("experts do not fit",
        QStringLiteral("name: t\nmodel: ../models/deepseek-r1.yaml\ntopology: {builtin: hgx-h100}\n"
                       "placement: {strategy: contiguous}\n"),
        4, "weights do not fit");
}

void TestScenarioErrors::malformed()
{
    QFETCH(QString, text);
    QFETCH(int, line);
    QFETCH(QString, fragment);
    try {
        (void)loadScenarioText(text.toStdString(), kFile);
        QFAIL("expected an InputError");
    } catch (const InputError& e) {
        const auto& items = e.diagnostics().items();
        QVERIFY(!items.empty());
        bool found = false;
        for (const auto& d : items) {
            const bool lineOk = line == 0 || d.where.line == line;
            const bool textOk = QString::fromStdString(d.message).contains(fragment);
            found = found || (lineOk && textOk);
        }
        if (!found)
            qWarning().noquote() << QString::fromStdString(e.diagnostics().format());
        QVERIFY2(found, qPrintable(QStringLiteral("no error at line %1 containing '%2'").arg(line).arg(fragment)));
        // Every diagnostic formats as FILE:LINE:COL: error: MESSAGE (or FILE: error: when unlocated).
        for (const auto& d : items)
            QVERIFY(QString::fromStdString(d.format()).contains(QStringLiteral(": error: ")));
    }
}

void TestScenarioErrors::reportsEveryError()
{
    const std::string text = "name: t\n"
                             "model: ../models/mixtral-8x7b.yaml\n"
                             "topology: {builtin: hgx-h100}\n"
                             "workload: {tokens_per_gpu: -1, phase: train}\n"
                             "overlap: sometimes\n"
                             "colour: blue\n";
    try {
        (void)loadScenarioText(text, kFile);
        QFAIL("expected an InputError");
    } catch (const InputError& e) {
        const auto& items = e.diagnostics().items();
        QCOMPARE(items.size(), std::size_t(4));
        QCOMPARE(items[0].where.file, kFile);
        QVERIFY(std::any_of(items.begin(), items.end(), [](const Diagnostic& d) { return d.where.line == 5; }));
        QVERIFY(std::any_of(items.begin(), items.end(), [](const Diagnostic& d) { return d.where.line == 6; }));
        QCOMPARE(std::count_if(items.begin(), items.end(), [](const Diagnostic& d) { return d.where.line == 4; }), 2);
    }
}

// Another of moex's files named where a model or topology belongs: one error in that file saying
// what it is, and the scenario's line (it was one "unknown key" per line of the wrong file, then
// "missing required key" for each key a model or topology needs).
void TestScenarioErrors::wrongKindOfFileIsOneError_data()
{
    QTest::addColumn<QString>("part");
    QTest::addColumn<QString>("named");
    QTest::addColumn<QString>("message");
    const auto row = [](const char* name, const char* part, const char* named, const char* message) {
        QTest::addRow("%s", name) << QString::fromUtf8(part) << QString::fromUtf8(named) << QString::fromUtf8(message);
    };
    row("topology as model", "model: ../topologies/hgx-h100.yaml\ntopology: {builtin: hgx-h100}\n", "hgx-h100.yaml",
        "this is a topology file, not a model: a scenario names it under 'topology'");
    row("scenario as model", "model: deepseek-r1-decode-nvl72.yaml\ntopology: {builtin: hgx-h100}\n",
        "deepseek-r1-decode-nvl72.yaml", "this is a scenario, not a model");
    row("model as topology", "model: ../models/mixtral-8x7b.yaml\ntopology: ../models/mixtral-8x7b.yaml\n",
        "mixtral-8x7b.yaml", "this is a model file, not a topology: a scenario names it under 'model'");
    row("model as hf_config", "model: {hf_config: ../models/mixtral-8x7b.yaml}\ntopology: {builtin: hgx-h100}\n",
        "mixtral-8x7b.yaml", "this is a model file, not a Hugging Face config.json");
}

void TestScenarioErrors::wrongKindOfFileIsOneError()
{
    QFETCH(QString, part);
    QFETCH(QString, named);
    QFETCH(QString, message);
    try {
        (void)loadScenarioText("name: t\n" + part.toStdString(), kFile);
        QFAIL("expected an InputError");
    } catch (const InputError& e) {
        const auto& items = e.diagnostics().items();
        QVERIFY2(items.size() == 2, e.diagnostics().format().c_str());
        QVERIFY(QString::fromStdString(items[0].where.file).endsWith(QLatin1Char('/') + named));
        QVERIFY2(QString::fromStdString(items[0].message).startsWith(message), items[0].message.c_str());
        QCOMPARE(items[1].where.file, kFile);
        QVERIFY(QString::fromStdString(items[1].message).contains(QStringLiteral("could not be loaded")));
    }
}

void TestScenarioErrors::validInlineLoads()
{
    const Scenario s = loadScenarioText(kInlineModel, kFile);
    QCOMPARE(s.model.routed_experts, 16);
    QCOMPARE(s.topology.numGpus(), 8);
    QCOMPARE(s.slotsPerGpu(), 2);
}

void TestScenarioErrors::deepNestingIsAnErrorNotACrash()
{
    std::string text = "name: t\nmodel: ";
    for (int i = 0; i < 100000; ++i)
        text += '[';
    QVERIFY_THROWS_EXCEPTION(InputError, loadScenarioText(text, kFile));
    std::string block = "name: t\nworkload:\n";
    std::string indent = "  ";
    for (int i = 0; i < 5000; ++i) {
        block += indent + "k:\n";
        indent += ' ';
    }
    QVERIFY_THROWS_EXCEPTION(InputError, loadScenarioText(block, kFile));
}

void TestScenarioErrors::aliasBombDoesNotExplode()
{
    // Each level refers to the previous one ten times: expanded, this is 10^9 nodes.
    std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 10; ++i) {
        text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
        for (int j = 0; j < 10; ++j)
            text += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
        text += "]\n";
    }
    text += "name: t\nmodel: ../models/mixtral-8x7b.yaml\ntopology: {builtin: hgx-h100}\nplacement: {slots: *a9}\n";
    // Expanding 10^9 nodes would not finish: CTest's timeout (300 s) catches that, no wall-clock
    // assertion here (a test that times itself fails on a slower machine).
    QVERIFY_THROWS_EXCEPTION(InputError, loadScenarioText(text, kFile));
}

void TestScenarioErrors::hugeFileRefused()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("huge.yaml"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    // A sparse file: its size is past the 64 MiB limit, its disk use is nil. Writing 65 MiB of
    // bytes failed on a CI machine with a small /tmp, and the test then checked a short file.
    QVERIFY2(f.resize(qint64(65) << 20), qPrintable(f.errorString()));
    f.close();
    QCOMPARE(QFileInfo(path).size(), qint64(65) << 20);
    try {
        (void)loadScenarioFile(path.toStdString());
        QFAIL("expected an InputError");
    } catch (const InputError& e) {
        const QString message = QString::fromStdString(e.diagnostics().format());
        QVERIFY2(message.contains(QStringLiteral("more than the limit")), qPrintable(message));
    }
}

// A --set of a key the routing's kind ignores is an error at the flag; a --set of the kind itself
// leaves the file's keys of the other kind (the user switched the kind of a scenario written for the
// other), and a --set file may come ahead of its kind (the window sets the file, then the kind).
void TestScenarioErrors::routingKeysOfTheOtherKindByFlags()
{
    const std::string base = "name: t\nmodel: ../models/mixtral-8x7b.yaml\ntopology: {builtin: hgx-h100}\n";
    const std::string traceFile = std::string(MOEX_TEST_DATA_DIR) + "/traces/mixtral8x7b_gsm8k_2_routing.jsonl";
    const std::string trace = base + "workload:\n  routing: {kind: trace, file: " + traceFile + "}\n";
    const std::string synthetic = base + "workload:\n  routing: {kind: synthetic, seed: 7, skew: 1}\n";
    try {
        (void)loadScenarioText(trace, kFile, {{"workload.routing.skew", "5"}});
        QFAIL("a skew for a replayed trace was accepted");
    } catch (const InputError& e) {
        QVERIFY2(e.diagnostics().format().starts_with("--set workload.routing.skew=5: error: 'skew' shapes the synthetic generator"),
                 e.diagnostics().format().c_str());
    }
    try {
        (void)loadScenarioText(synthetic, kFile, {{"workload.routing.kind", "trace"}, {"workload.routing.file", traceFile},
                                                  {"workload.routing.drift", "0.1"}});
        QFAIL("a drift for a replayed trace was accepted");
    } catch (const InputError& e) {
        const std::string text = e.diagnostics().format();
        QVERIFY2(e.diagnostics().size() == 1 && text.find("'drift' shapes the synthetic generator; routing kind 'trace' "
                                                          "(--set workload.routing.kind=trace)") != std::string::npos,
                 text.c_str());
    }
    const Scenario switched = loadScenarioText(synthetic, kFile, {{"workload.routing.kind", "trace"},
                                                                  {"workload.routing.file", traceFile}});
    QVERIFY(switched.workload.routing.kind == RoutingKind::trace);
    const Scenario back = loadScenarioText(trace, kFile, {{"workload.routing.kind", "synthetic"}});
    QVERIFY(back.workload.routing.kind == RoutingKind::synthetic);
    const Scenario fileFirst = loadScenarioText(synthetic, kFile, {{"workload.routing.file", traceFile}});
    QVERIFY(fileFirst.workload.routing.kind == RoutingKind::synthetic);
    // Saved, each loads back with its kind and seed (a seed beside a replayed file is kept for a
    // switch back: moex writes it whatever the kind, and files it saved before hold one).
    for (const Scenario* s : {&switched, &back, &fileFirst}) {
        const Scenario again = loadScenarioText(scenarioToYaml(*s), kFile);
        QVERIFY(again.workload.routing.kind == s->workload.routing.kind);
        QCOMPARE(again.workload.routing.seed, s->workload.routing.seed);
    }
    QCOMPARE(switched.workload.routing.seed, std::uint64_t{7});
    (void)loadScenarioText(base + "workload:\n  routing: {kind: trace, file: " + traceFile + ", seed: 7}\n", kFile);
    // A --set of a GPU's speed under another spelling than the file's replaces the file's value;
    // two spellings in the file (or two flags) are an error (the "one GPU's speed twice" row).
    const Scenario speeds = loadScenarioText(base + "gpus: {speed: {gpu5: 0.85}}\n", kFile, {{"gpus.speed.5", "0.5"}});
    QCOMPARE(speeds.speeds.of(5), 0.5);
    // A --set seed for a replayed file is still refused (it would change nothing).
    try {
        (void)loadScenarioText(trace, kFile, {{"workload.routing.seed", "3"}});
        QFAIL("a seed for a replayed trace was accepted");
    } catch (const InputError& e) {
        QVERIFY2(e.diagnostics().format().starts_with("--set workload.routing.seed=3: error: 'seed' shapes"), e.diagnostics().format().c_str());
    }
}

QTEST_APPLESS_MAIN(TestScenarioErrors)
#include "tst_scenario_errors.moc"
