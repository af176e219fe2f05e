// Scenario files: every sample loads, save/load round-trips, --set overrides, relative paths.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"
#endif

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace moex;
namespace fs = std::filesystem;

namespace {

const std::string kSamples = std::string(MOEX_SOURCE_DIR) + "/samples/scenarios/";

std::vector<std::string> sampleScenarios()
{
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(kSamples))
        if (e.path().extension() == ".yaml")
            out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

void compareScenarios(const Scenario& a, const Scenario& b)
{
    QCOMPARE(b.name, a.name);
    QCOMPARE(b.model.name, a.model.name);
    QCOMPARE(b.model.totalParams(), a.model.totalParams());
    QCOMPARE(b.model.moe_layers, a.model.moe_layers);
    QCOMPARE(b.topology.numGpus(), a.topology.numGpus());
    QCOMPARE(b.topology.links().size(), a.topology.links().size());
    QCOMPARE(b.topology.builtin, a.topology.builtin);
    QCOMPARE(static_cast<int>(b.workload.phase), static_cast<int>(a.workload.phase));
    QCOMPARE(b.workload.tokens_per_gpu, a.workload.tokens_per_gpu);
    QCOMPARE(b.workload.context_tokens, a.workload.context_tokens);
    QCOMPARE(b.workload.context_cv, a.workload.context_cv);
    QCOMPARE(static_cast<int>(b.workload.routing.kind), static_cast<int>(a.workload.routing.kind));
    QCOMPARE(b.workload.routing.skew, a.workload.routing.skew);
    QCOMPARE(b.workload.routing.hot_experts, a.workload.routing.hot_experts);
    QCOMPARE(b.workload.routing.coactivation_groups, a.workload.routing.coactivation_groups);
    QCOMPARE(b.workload.routing.drift, a.workload.routing.drift);
    QCOMPARE(b.workload.routing.seed, a.workload.routing.seed);
    QCOMPARE(b.placement.strategy, a.placement.strategy);
    QCOMPARE(b.placement.redundant_slots, a.placement.redundant_slots);
    QCOMPARE(b.placement.explicit_slots.has_value(), a.placement.explicit_slots.has_value());
    if (a.placement.explicit_slots)
        for (int l = 0; l < a.placement.explicit_slots->numLayers(); ++l)
            QCOMPARE(b.placement.explicit_slots->layers[l].phy2log(), a.placement.explicit_slots->layers[l].phy2log());
    QCOMPARE(b.speeds.default_speed, a.speeds.default_speed);
    QCOMPARE(b.speeds.per_gpu, a.speeds.per_gpu);
    QCOMPARE(static_cast<int>(b.precision.weights), static_cast<int>(a.precision.weights));
    QCOMPARE(static_cast<int>(b.precision.dispatch), static_cast<int>(a.precision.dispatch));
    QCOMPARE(static_cast<int>(b.precision.combine), static_cast<int>(a.precision.combine));
    QCOMPARE(static_cast<int>(b.overlap), static_cast<int>(a.overlap));
    QCOMPARE(static_cast<int>(b.a2a_kernel), static_cast<int>(a.a2a_kernel));
    QCOMPARE(static_cast<int>(b.engine.backend), static_cast<int>(a.engine.backend));
}

}  // namespace

class TestScenario : public QObject {
    Q_OBJECT
private slots:
    void samplesLoad_data();
    void samplesLoad();
    void roundTripToAnotherFolder();
    void explicitPlacementRoundTrip();
    void overrides();
    void overrideErrors();
    void routingPriorFromModel();
    void relativePathsResolveAgainstFile();
    void atomicSaveKeepsOldFileOnFailure();
    void layerCyclingIsAScenarioKey();
};

void TestScenario::samplesLoad_data()
{
    QTest::addColumn<QString>("path");
    const auto files = sampleScenarios();
    QVERIFY(files.size() >= 10);
    for (const auto& f : files)
        QTest::addRow("%s", fs::path(f).filename().c_str()) << QString::fromStdString(f);
}

void TestScenario::samplesLoad()
{
    QFETCH(QString, path);
    const Scenario s = loadScenarioFile(path.toStdString());
    QVERIFY(!s.name.empty());
    QVERIFY(s.topology.numGpus() >= 8);
    QVERIFY(s.model.routed_experts >= 8);
    QVERIFY(s.slotsPerGpu() >= 1);
    // Saved and loaded again, next to the original, gives the same scenario.
    const std::string text = scenarioToYaml(s);
    const Scenario again = loadScenarioText(text, s.file);
    compareScenarios(s, again);
}

void TestScenario::roundTripToAnotherFolder()
{
    const Scenario s = loadScenarioFile(kSamples + "deepseek-r1-decode-nvl72-slow-gpus.yaml");
    QTemporaryDir dir;
    const std::string out = dir.filePath(QStringLiteral("sub/copy.yaml")).toStdString();
    fs::create_directories(fs::path(out).parent_path());
    saveScenarioFile(s, out);
    const Scenario again = loadScenarioFile(out);  // the model path was rewritten relative to the new folder
    compareScenarios(s, again);
    QCOMPARE(again.speeds.per_gpu.size(), std::size_t(6));
    QCOMPARE(again.speeds.of(17), 0.80);
}

void TestScenario::explicitPlacementRoundTrip()
{
    const std::string text = "name: explicit\n"
                             "model: ../models/mixtral-8x7b.yaml\n"
                             "topology: {builtin: hgx-h100}\n"
                             "placement:\n"
                             "  slots: [[7, 0], [1], [2], [3], [4], [5], [6], [0]]\n"
                             "  shares: [[1, 0.25], [1], [1], [1], [1], [1], [1], [0.75]]\n";
    const Scenario s = loadScenarioText(text, kSamples + "explicit.yaml");
    QVERIFY(s.placement.explicit_slots);
    QCOMPARE(s.placement.strategy, std::string("explicit"));
    QCOMPARE(s.placement.explicit_slots->numLayers(), s.model.numMoeLayers());
    QCOMPARE(s.placement.explicit_slots->layers[0].phy2log(), (std::vector<int>{7, 0, 1, 2, 3, 4, 5, 6, 0}));
    QCOMPARE(s.placement.explicit_slots->layers[3].shares[7][0], 0.75);
    const Scenario again = loadScenarioText(scenarioToYaml(s), s.file);
    compareScenarios(s, again);
    QCOMPARE(again.placement.explicit_slots->layers[0].shares, s.placement.explicit_slots->layers[0].shares);

    // Shares that do not sum to one are located errors.
    std::string bad = text;
    bad.replace(bad.find("0.75"), 4, "0.5");
    QVERIFY_THROWS_EXCEPTION(InputError, loadScenarioText(bad, kSamples + "explicit.yaml"));
}

void TestScenario::routingPriorFromModel()
{
    // The Mixtral sample's model carries a routing prior; its scenario names none of the four.
    const Scenario mix = loadScenarioFile(kSamples + "mixtral-8x7b-decode-hgx-h100.yaml");
    QVERIFY(mix.model.routing);
    QCOMPARE(mix.workload.routing.skew, mix.model.routing->skew);
    QCOMPARE(mix.workload.routing.hot_experts, mix.model.routing->hot_experts);
    QCOMPARE(mix.workload.routing.coactivation_groups, mix.model.routing->coactivation_groups);
    QCOMPARE(mix.workload.routing.drift, mix.model.routing->drift);
    QCOMPARE(mix.workload.routing.seed, std::uint64_t{7});
    // A scenario key overrides the prior one by one.
    const std::string text = "name: t\nmodel: ../models/mixtral-8x7b.yaml\ntopology: {builtin: hgx-h100}\n"
                             "workload: {routing: {kind: synthetic, skew: 0.9, drift: 0}}\n";
    const Scenario own = loadScenarioText(text, kSamples + "t.yaml");
    QCOMPARE(own.workload.routing.skew, 0.9);
    QCOMPARE(own.workload.routing.drift, 0.0);
    QCOMPARE(own.workload.routing.coactivation_groups, mix.model.routing->coactivation_groups);
    // So does --set, and a saved scenario reads back the same values.
    const Scenario set = loadScenarioFile(kSamples + "mixtral-8x7b-decode-hgx-h100.yaml", {{"workload.routing.skew", "0.2"}});
    QCOMPARE(set.workload.routing.skew, 0.2);
    compareScenarios(set, loadScenarioText(scenarioToYaml(set), set.file));
    // A model without a prior leaves the generator's defaults.
    const Scenario qwen = loadScenarioText("name: q\nmodel: ../models/qwen3-235b-a22b.yaml\ntopology: {builtin: hgx-h200}\n",
                                           kSamples + "q.yaml");
    QVERIFY(!qwen.model.routing);
    QCOMPARE(qwen.workload.routing.skew, RoutingSpec{}.skew);
    QCOMPARE(qwen.workload.routing.coactivation_groups, 0);
}

void TestScenario::overrides()
{
    const std::string path = kSamples + "deepseek-r1-decode-nvl72.yaml";
    const Scenario s = loadScenarioFile(path, {{"workload.tokens_per_gpu", "256"},
                                                {"workload.routing.skew", "0"},
                                                {"gpus.speed.gpu17", "0.85"},
                                                {"topology.builtin", "gb300-nvl72"},
                                                {"overlap", "none"},
                                                {"a2a_kernel", "one-sided"},
                                                {"engine.gemm", "openblas"}});
    QCOMPARE(s.workload.tokens_per_gpu, 256);
    QCOMPARE(s.workload.routing.skew, 0.0);
    QCOMPARE(s.speeds.of(17), 0.85);
    QCOMPARE(s.speeds.of(16), 1.0);
    QCOMPARE(s.topology.builtin, std::string("gb300-nvl72"));
    QVERIFY(s.overlap == Overlap::none);
    QVERIFY(s.a2a_kernel == A2AKernel::one_sided);
    // Saved and read back, the kernel choice survives (it is written only where it is not the default).
    QVERIFY(loadScenarioText(scenarioToYaml(s), s.file).a2a_kernel == A2AKernel::one_sided);
    QVERIFY(s.engine.gemm == EngineGemm::openblas);
    QVERIFY(loadScenarioText(scenarioToYaml(s), s.file).engine.gemm == EngineGemm::openblas);
    const Scenario base = loadScenarioFile(path);
    QVERIFY(base.engine.gemm == EngineGemm::automatic);
    QVERIFY(scenarioToYaml(base).find("gemm") == std::string::npos);
    QCOMPARE(base.workload.tokens_per_gpu, 128);
    QVERIFY(base.a2a_kernel == A2AKernel::deepep);

    // model.KEY where the scenario names a model file: set in that file's YAML as it is read (the
    // file on disk untouched), the scenario still pointing at the file.
    const Scenario top6 = loadScenarioFile(path, {{"model.experts_per_token", "6"}, {"model.weight_dtype", "bf16"}});
    QCOMPARE(top6.model.experts_per_token, 6);
    QCOMPARE(base.model.experts_per_token, 8);
    QVERIFY(top6.model.weight_dtype != base.model.weight_dtype);
    QCOMPARE(top6.model.routed_experts, base.model.routed_experts);
    QVERIFY(top6.model_source.kind == SourceRef::Kind::path);
    QCOMPARE(top6.model_source.path, base.model_source.path);
    // After --set model=FILE, model.KEY goes to the new file, whatever the order of the flags.
    const Scenario mixtral = loadScenarioFile(path, {{"model.experts_per_token", "1"}, {"model", "../models/mixtral-8x7b.yaml"}});
    QCOMPARE(mixtral.model.routed_experts, 8);
    QCOMPARE(mixtral.model.experts_per_token, 1);
}

void TestScenario::overrideErrors()
{
    const std::string path = kSamples + "deepseek-r1-decode-nvl72.yaml";
    // A bad value is caught by the same checks as a bad file, and the error names the flag, not
    // the line of the file whose value it replaced (the file holds a good one there).
    const auto errorsOf = [&](const Overrides& o) {
        try {
            (void)loadScenarioFile(path, o);
        } catch (const InputError& e) {
            return e.diagnostics().format();
        }
        return std::string("(accepted)");
    };
    for (const char* bad : {"-3", "abc"}) {
        const std::string text = errorsOf({{"workload.tokens_per_gpu", bad}});
        QVERIFY2(text.rfind("--set workload.tokens_per_gpu=" + std::string(bad) + ": error: 'tokens_per_gpu'", 0) == 0,
                 text.c_str());
        QVERIFY2(text.find(path) == std::string::npos, text.c_str());
    }
    // An unknown key is caught too (did-you-mean), at the flag that brought it, and so is a new
    // section's unknown key.
    QVERIFY(errorsOf({{"workload.tokens", "3"}})
                .rfind("--set workload.tokens=3: error: unknown key 'tokens' in workload; did you mean", 0) == 0);
    const std::string gemm = errorsOf({{"engine.gemm", "fast"}});
    QVERIFY2(gemm.rfind("--set engine.gemm=fast: error:", 0) == 0 && gemm.find("auto, engine, openblas") != std::string::npos,
             gemm.c_str());
    QVERIFY(errorsOf({{"sweep.batch", "3"}}).rfind("--set sweep.batch=3: error: unknown key 'sweep' in scenario", 0) == 0);
    // The file's own errors keep their lines beside a flag's.
    QTemporaryDir dir;
    const std::string broken = dir.filePath(QStringLiteral("broken.yaml")).toStdString();
    {
        std::string text = moex::readFile(path);
        const auto at = text.find("context_tokens: 4096");
        QVERIFY(at != std::string::npos);
        text.replace(at, 20, "context_tokens: many");
        std::ofstream(broken) << text;
    }
    try {
        (void)loadScenarioFile(broken, {{"workload.tokens_per_gpu", "abc"}});
        QFAIL("expected an InputError");
    } catch (const InputError& e) {
        const std::string text = e.diagnostics().format();
        QVERIFY2(text.find(broken + ":9:") != std::string::npos && text.find("--set workload.tokens_per_gpu=abc:") != std::string::npos,
                 text.c_str());
    }
    // Descending into a scalar is refused with a message that says why.
    try {
        (void)loadScenarioFile(path, {{"workload.phase.kind", "3"}});
        QFAIL("expected an InputError");
    } catch (const InputError& e) {
        QVERIFY2(QString::fromStdString(e.diagnostics().format()).contains(QStringLiteral("'workload.phase' is not a mapping")),
                 e.diagnostics().format().c_str());
    }
    // A model given as a file takes model.KEY into that file's YAML, checked as the file is and
    // blamed on the flag: a bad value, an unknown key, a scalar descended into.
    const std::string topK = errorsOf({{"model.experts_per_token", "300"}});
    QVERIFY2(topK.find("--set model.experts_per_token=300: error:") != std::string::npos, topK.c_str());
    QVERIFY2(topK.find("deepseek-r1.yaml:") == std::string::npos || topK.find("model could not be loaded") != std::string::npos,
             topK.c_str());
    const std::string unknown = errorsOf({{"model.expert_count", "3"}});
    QVERIFY2(unknown.find("--set model.expert_count=3: error: unknown key 'expert_count'") != std::string::npos, unknown.c_str());
    {
        QTemporaryDir hfDir;
        const std::string hf = hfDir.filePath(QStringLiteral("hf.yaml")).toStdString();
        std::ofstream(hf) << "model: {hf_config: " MOEX_SOURCE_DIR "/tests/data/hf-configs/mistralai--Mixtral-8x7B-v0.1.json}\n"
                             "topology: {builtin: hgx-h100}\n";
        try {
            (void)loadScenarioFile(hf, {{"model.experts_per_token", "1"}});
            QFAIL("expected an InputError");
        } catch (const InputError& e) {
            const std::string text = e.diagnostics().format();
            QVERIFY2(text.rfind("--set model.experts_per_token=1: error: the scenario's model is imported from a config.json", 0) == 0
                         && text.find("import-hf") != std::string::npos,
                     text.c_str());
        }
    }
    const std::string scalar = errorsOf({{"model.hidden_size.x", "3"}});
    QVERIFY2(scalar.find("--set model.hidden_size.x=3: error: 'model.hidden_size' is not a mapping") != std::string::npos,
             scalar.c_str());
    // The context spread: a number from 0 to 10, written back only when set.
    for (const char* bad : {"-0.1", "10.5", "wide"}) {
        try {
            (void)loadScenarioFile(path, {{"workload.context_cv", bad}});
            QFAIL(qPrintable(QStringLiteral("context_cv %1 was accepted").arg(QLatin1String(bad))));
        } catch (const InputError& e) {
            QVERIFY2(QString::fromStdString(e.diagnostics().format()).contains(QStringLiteral("context_cv")),
                     e.diagnostics().format().c_str());
        }
    }
    const Scenario spread = loadScenarioFile(path, {{"workload.context_cv", "0.75"}});
    QCOMPARE(spread.workload.context_cv, 0.75);
    const std::string spreadText = scenarioToYaml(spread);
    QVERIFY(spreadText.find("context_cv: 0.75") != std::string::npos);
    compareScenarios(spread, loadScenarioText(spreadText, spread.file));
    QVERIFY(scenarioToYaml(loadScenarioFile(path)).find("context_cv") == std::string::npos);
    // The steps a placement is fitted to: 1 to 10,000, written back only when not the default.
    for (const char* bad : {"0", "10001", "many", "2.5"})
        QVERIFY_THROWS_EXCEPTION(InputError, loadScenarioFile(path, {{"placement.load_steps", bad}}));
    const Scenario window = loadScenarioFile(path, {{"placement.load_steps", "32"}});
    QCOMPARE(window.placement.load_steps, 32);
    QCOMPARE(loadScenarioText(scenarioToYaml(window), window.file).placement.load_steps, 32);
    QVERIFY(scenarioToYaml(loadScenarioFile(path)).find("load_steps") == std::string::npos);
    QVERIFY_THROWS_EXCEPTION(InputError, parseOverride("noequals"));
    QVERIFY_THROWS_EXCEPTION(InputError, parseOverride("=3"));
    QCOMPARE(parseOverride("a.b=c=d").second, std::string("c=d"));
}

void TestScenario::relativePathsResolveAgainstFile()
{
    // Loaded from another working directory, paths still resolve against the file.
    const auto cwd = fs::current_path();
    fs::current_path(fs::temp_directory_path());
    const Scenario s = loadScenarioFile(kSamples + "mixtral-8x7b-decode-hgx-h100.yaml");
    fs::current_path(cwd);
    QCOMPARE(s.model.routed_experts, 8);
    QVERIFY(fs::path(s.model_source.path).is_absolute());
    QVERIFY(fs::exists(s.model_source.path));
}

namespace {
std::string readPipe(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}
}  // namespace

void TestScenario::atomicSaveKeepsOldFileOnFailure()
{
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("s.yaml")).toStdString();
    writeFileAtomically(path, "old contents\n");
    QCOMPARE(readFile(path), std::string("old contents\n"));
    writeFileAtomically(path, "new contents\n");
    QCOMPARE(readFile(path), std::string("new contents\n"));
    // A folder that does not exist: the write fails and nothing is left behind.
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, writeFileAtomically(dir.filePath(QStringLiteral("no/such.yaml")).toStdString(), "x"));
    int files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path().toStdString()))
        ++files;
    QCOMPARE(files, 1);
    // A directory where the file should go: the rename fails, the temporary file is removed and
    // the directory stays.
    const std::string taken = dir.filePath(QStringLiteral("taken")).toStdString();
    fs::create_directory(taken);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, writeFileAtomically(taken, "x"));
    QVERIFY(fs::is_directory(taken));
    files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path().toStdString()))
        ++files;
    QCOMPARE(files, 2);

    // A symbolic link is followed: the file it names gets the new contents and the link stays.
    const std::string target = dir.filePath(QStringLiteral("target.json")).toStdString();
    const std::string link = dir.filePath(QStringLiteral("link.json")).toStdString();
    writeFileAtomically(target, "old\n");
    fs::create_symlink(target, link);
    writeFileAtomically(link, "through the link\n");
    QVERIFY(fs::is_symlink(link));
    QCOMPARE(readFile(target), std::string("through the link\n"));
    // A pipe is written straight through and stays a pipe (--json /dev/stdout, a FIFO): a reader
    // at its other end gets the contents.
    const std::string fifo = dir.filePath(QStringLiteral("out.fifo")).toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    std::string received;
    std::thread reader([&] { received = readPipe(fifo); });
    writeFileAtomically(fifo, "to the pipe\n");
    reader.join();
    QCOMPARE(received, std::string("to the pipe\n"));
    QVERIFY(fs::is_fifo(fifo));
    // An anonymous pipe through /proc/self/fd/N (what /dev/stdout is in `moex-cli … --json
    // /dev/stdout | head`): its link reads "pipe:[…]", no path; it was written to a file of that
    // name that could not be made.
    int ends[2] = {-1, -1};
    QCOMPARE(::pipe(ends), 0);
    std::string fromFd;
    std::thread drain([&] {
        char buf[64];
        for (ssize_t n; (n = ::read(ends[0], buf, sizeof buf)) > 0;)
            fromFd.append(buf, static_cast<std::size_t>(n));
    });
    writeFileAtomically("/proc/self/fd/" + std::to_string(ends[1]), "through the descriptor\n");
    ::close(ends[1]);
    drain.join();
    ::close(ends[0]);
    QCOMPARE(fromFd, std::string("through the descriptor\n"));
    // ... and read to its end (<(cat f)): the contents, not "the file is empty".
    std::thread writer([&] { std::ofstream(fifo) << "from the pipe\n"; });
    const std::string fromPipe = readFile(fifo);
    writer.join();
    QCOMPARE(fromPipe, std::string("from the pipe\n"));
    // The replacement keeps the replaced file's permissions: a private file stays private.
    const std::string secret = dir.filePath(QStringLiteral("secret.json")).toStdString();
    writeFileAtomically(secret, "old\n");
    fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
    writeFileAtomically(secret, "new\n");
    QCOMPARE(fs::status(secret).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
    // A dangling link is followed: the file it names is created, the link stays a link.
    const std::string dangling = dir.filePath(QStringLiteral("dangling.json")).toStdString();
    const std::string missing = dir.filePath(QStringLiteral("created.json")).toStdString();
    fs::create_symlink(missing, dangling);
    writeFileAtomically(dangling, "made\n");
    QVERIFY(fs::is_symlink(dangling));
    QCOMPARE(readFile(missing), std::string("made\n"));
    QVERIFY_THROWS_EXCEPTION(FileWriteError, writeFileAtomically("", "x"));
    // A directory is neither written nor read as a file, and says so.
    try {
        writeFileAtomically(dir.path().toStdString(), "x");
        QFAIL("a directory was written");
    } catch (const FileWriteError& e) {
        QVERIFY2(std::string(e.what()).find("is a directory") != std::string::npos, e.what());
    }
    try {
        (void)readFile(dir.path().toStdString());
        QFAIL("a directory was read");
    } catch (const InputError& e) {
        QVERIFY2(e.diagnostics().format().find("is a directory") != std::string::npos, e.what());
    }
}

// A counts file of 2 layers on Mixtral's 32 MoE layers: refused with the key that allows it (the
// message advised an option no scenario could set), and with the key, model MoE layer l reads the
// file's layer l % 2 and the key survives a save.
void TestScenario::layerCyclingIsAScenarioKey()
{
    QTemporaryDir dir;
    const std::string counts = dir.filePath(QStringLiteral("two-layers.json")).toStdString();
    writeFileAtomically(counts, "[[80, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 80]]\n");
    const std::string file = dir.filePath(QStringLiteral("s.yaml")).toStdString();
    const std::string text = "name: cycling\nmodel: " + kSamples + "../models/mixtral-8x7b.yaml\n"
                             "topology: {builtin: hgx-h100}\n"
                             "workload: {phase: decode, tokens_per_gpu: 64, routing: {kind: counts, file: two-layers.json}}\n";
    try {
        (void)makeRoutingSource(loadScenarioText(text, file));
        QFAIL("a 2-layer counts file was accepted for 32 MoE layers");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("set workload.routing.layer_cycling: true") != std::string::npos, e.what());
    }
    const Scenario s = loadScenarioText(text, file, {{"workload.routing.layer_cycling", "true"}});
    QVERIFY(s.workload.routing.layer_cycling);
    RoutingSample sample;
    makeRoutingSource(s)->next(sample);
    QCOMPARE(sample.numLayers(), 32);
    for (int l = 0; l < 32; ++l) {
        const auto load = sample.expertLoad(l);
        const int hot = l % 2 == 0 ? 0 : 7;
        QVERIFY2(std::max_element(load.begin(), load.end()) - load.begin() == hot, qPrintable(QString::number(l)));
    }
    QVERIFY(loadScenarioText(scenarioToYaml(s), file).workload.routing.layer_cycling);
    QVERIFY(!loadScenarioText(scenarioToYaml(loadScenarioText(text, file)), file).workload.routing.layer_cycling);
}

QTEST_APPLESS_MAIN(TestScenario)
#include "tst_scenario.moc"
