// Reading the engine's weights from a Hugging Face checkpoint (issue 15): checkpoints written here
// hold exactly the engine's seeded weights in each family's names and dtypes, so what loads must be
// the seeded matrices byte for byte and the engine must give the seeded run's checksum. Broken
// checkpoints are tst_checkpoint_errors'.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "checkpoint_fixtures.h"

#include "common/diagnostics.h"
#include "engine/checkpoint.h"
#include "engine/ep_engine.h"
#include "placement/strategies.h"
#include "run/metrics_source.h"
#include "run/run_loop.h"
#include "scenario/scenario_yaml.h"

#include <cstring>
#include <filesystem>
#include <limits>
#endif

#include "engine_fixtures.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace moex;
using namespace moex::engine;
using namespace ckpt_test;
using moex::test::placementFor;

namespace {

// Storage, scales and every dequantised element the same.
bool sameMatrix(const QuantMatrix& a, const QuantMatrix& b)
{
    return a.format() == b.format() && a.rows() == b.rows() && a.cols() == b.cols()
        && std::equal(a.storage().begin(), a.storage().end(), b.storage().begin(), b.storage().end())
        && std::equal(a.scaleStorage().begin(), a.scaleStorage().end(), b.scaleStorage().begin(), b.scaleStorage().end())
        && a.dequantAll() == b.dequantAll();
}

bool sameFfn(const FfnWeights& a, const FfnWeights& b)
{
    return sameMatrix(a.gate, b.gate) && sameMatrix(a.up, b.up) && sameMatrix(a.down, b.down) && a.gate_bias == b.gate_bias
        && a.up_bias == b.up_bias && a.down_bias == b.down_bias && a.output_gate == b.output_gate;
}

}  // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT
private slots:
    void seededWeightsRoundTrip_data();
    void seededWeightsRoundTrip();
    void quantisedLayoutsFollowTheReference();
    void f16IsReadExactly();
    void otherDtypesAreConverted();
    void engineRunsOnCheckpointWeights_data();
    void engineRunsOnCheckpointWeights();
    void runSourceReadsTheCheckpoint();
    void scenarioKeyIsParsed();
};

void TestCheckpoint::seededWeightsRoundTrip_data()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("layout");
    QTest::addColumn<int>("hidden");
    QTest::addColumn<int>("inter");
    QTest::addColumn<bool>("index");
    auto row = [](const char* name, const char* family, DType t, const char* layout, int hidden, int inter, bool index) {
        QTest::newRow(name) << QString::fromLatin1(family) << int(t) << QString::fromLatin1(layout) << hidden << inter << index;
    };
    row("mixtral bf16, index", "mixtral", DType::bf16, "mixtral", 64, 32, true);
    row("mixtral f32, no index", "mixtral", DType::fp32, "mixtral", 64, 32, false);
    // 160 x 136: two fp8 block rows and columns, the last of each partial.
    row("deepseek fp8", "deepseek", DType::fp8, "mlp", 160, 136, true);
    row("deepseek bf16", "deepseek", DType::bf16, "mlp", 64, 32, false);
    row("qwen2 shared_expert bf16", "qwen2", DType::bf16, "qwen2", 64, 32, true);
    row("gpt-oss mxfp4", "gpt-oss", DType::mxfp4, "gpt-oss-mxfp4", 64, 96, true);
    row("gpt-oss dequantised bf16", "gpt-oss", DType::bf16, "gpt-oss-bf16", 64, 32, false);
    row("nemotron-h relu2 bf16", "nemotron", DType::bf16, "nemotron", 64, 32, true);
    row("nemotron-h relu2 fp8", "nemotron", DType::fp8, "nemotron", 160, 136, false);
}

void TestCheckpoint::seededWeightsRoundTrip()
{
    QFETCH(QString, family);
    QFETCH(int, dtype);
    QFETCH(QString, layout);
    QFETCH(int, hidden);
    QFETCH(int, inter);
    QFETCH(bool, index);
    const ModelSpec m = smallModel(family.toStdString(), hidden, inter);
    const LayerShape s = layerShape(m, static_cast<DType>(dtype));
    QTemporaryDir dir;
    writeCheckpoint(dir.path().toStdString(), seededCheckpoint(s, kSeed, m.moe_layers, layoutOf(layout)), index);
    const auto ckpt = Checkpoint::open(dir.path().toStdString());
    QCOMPARE(ckpt->shardCount(), m.moe_layers.size());
    for (int L : m.moe_layers) {
        const RouterWeights want = makeRouterWeights(s, kSeed, L), got = ckpt->router(s, L);
        QCOMPARE(got.weight, want.weight);
        QCOMPARE(got.bias, want.bias);
        QCOMPARE(got.correction, want.correction);
        QCOMPARE(ckpt->routerBytes(s, L), (want.weight.size() + want.bias.size() + want.correction.size()) * sizeof(float));
        for (int e = 0; e < s.experts; ++e) {
            const FfnWeights seeded = makeExpertWeights(s, kSeed, L, e), loaded = ckpt->expert(s, L, e);
            QVERIFY2(sameFfn(loaded, seeded), qPrintable(QStringLiteral("layer %1 expert %2").arg(L).arg(e)));
            QCOMPARE(ckpt->expertBytes(s, L, e), seeded.bytes());
        }
        if (s.shared_inter > 0) {
            QVERIFY(sameFfn(ckpt->shared(s, L), makeSharedWeights(s, kSeed, L)));
            QCOMPARE(ckpt->sharedBytes(s, L), makeSharedWeights(s, kSeed, L).bytes());
        }
    }
}

void TestCheckpoint::quantisedLayoutsFollowTheReference()
{
    // Bytes made up here, dequantised as the reference code does (transformers' mxfp4 integration,
    // convert_moe_packed_tensors: lut[low nibble] at even positions, lut[high nibble] at odd ones,
    // times 2^(scale - 127); the result [E, 2I, H] transposed to gate_up_proj [E, H, 2I], whose even
    // columns are the gate and odd ones the up; DeepSeek's fp8: e4m3 x weight_scale_inv of the
    // 128 x 128 block), not through the engine's own QuantMatrix.
    static const float kFp4[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                                   -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
    const ModelSpec g = smallModel("gpt-oss", 64, 32, 4);
    const LayerShape s = layerShape(g, DType::mxfp4);
    const int E = 4, H = 64, I = 32;
    auto byteAt = [](std::size_t k) { return static_cast<char>((k * 167 + 13) % 256); };
    auto scaleAt = [](std::size_t k) { return static_cast<char>(120 + k % 11); };
    std::string gub, gus, db, ds;
    for (std::size_t k = 0; k < std::size_t(E) * 2 * I * H / 2; ++k)
        gub += byteAt(k);
    for (std::size_t k = 0; k < std::size_t(E) * 2 * I * H / 32; ++k)
        gus += scaleAt(k);
    for (std::size_t k = 0; k < std::size_t(E) * H * I / 2; ++k)
        db += byteAt(k + 7);
    for (std::size_t k = 0; k < std::size_t(E) * H * I / 32; ++k)
        ds += scaleAt(k + 3);
    // Row j (of rows of `cols`) of a converted [rows][cols] tensor, as the reference builds it.
    auto reference = [&](const std::string& blocks, const std::string& scales, std::size_t row, int cols) {
        const auto C = static_cast<std::size_t>(cols);
        std::vector<float> out(C);
        for (std::size_t c = 0; c < C; c += 2) {
            const auto b = static_cast<std::uint8_t>(blocks[row * (C / 2) + c / 2]);
            const int exp = static_cast<std::uint8_t>(scales[row * (C / 32) + c / 32]) - 127;
            out[c] = std::ldexp(kFp4[b & 0x0f], exp);
            out[c + 1] = std::ldexp(kFp4[b >> 4], exp);
        }
        return out;
    };
    StFile f;
    const std::string p = "model.layers.1.mlp.";
    f[p + "router.weight"] = f32Tensor(std::vector<float>(std::size_t(E) * H, 0.0f), {E, H});
    f[p + "router.bias"] = f32Tensor(std::vector<float>(std::size_t(E), 0.0f), {E});
    f[p + "experts.gate_up_proj_blocks"] = {"U8", {E, 2 * I, H / 32, 16}, gub};
    f[p + "experts.gate_up_proj_scales"] = {"U8", {E, 2 * I, H / 32}, gus};
    f[p + "experts.down_proj_blocks"] = {"U8", {E, H, I / 32, 16}, db};
    f[p + "experts.down_proj_scales"] = {"U8", {E, H, I / 32}, ds};
    std::vector<float> bias(std::size_t(E) * 2 * I);
    for (std::size_t k = 0; k < bias.size(); ++k)
        bias[k] = static_cast<float>(k);
    f[p + "experts.gate_up_proj_bias"] = f32Tensor(bias, {E, 2 * I});
    f[p + "experts.down_proj_bias"] = f32Tensor(std::vector<float>(std::size_t(E) * H, 0.0f), {E, H});
    QTemporaryDir dir;
    writeCheckpoint(dir.path().toStdString(), {{"model.safetensors", f}}, false);
    auto ckpt = Checkpoint::open(dir.path().toStdString());
    for (int e = 0; e < E; ++e) {
        const FfnWeights w = ckpt->expert(s, 1, e);
        std::vector<float> row(static_cast<std::size_t>(H));
        for (int i = 0; i < I; ++i) {
            w.gate.dequantRow(i, row.data());
            QCOMPARE(row, reference(gub, gus, static_cast<std::size_t>(e * 2 * I + 2 * i), H));
            w.up.dequantRow(i, row.data());
            QCOMPARE(row, reference(gub, gus, static_cast<std::size_t>(e * 2 * I + 2 * i + 1), H));
            QCOMPARE(w.gate_bias[static_cast<std::size_t>(i)], static_cast<float>(e * 2 * I + 2 * i));
            QCOMPARE(w.up_bias[static_cast<std::size_t>(i)], static_cast<float>(e * 2 * I + 2 * i + 1));
        }
        std::vector<float> drow(static_cast<std::size_t>(I));
        for (int h = 0; h < H; ++h) {
            w.down.dequantRow(h, drow.data());
            QCOMPARE(drow, reference(db, ds, static_cast<std::size_t>(e * H + h), I));
        }
    }

    // fp8: code 0x38 + (c mod 8) is 1 + (c mod 8) / 8; each 128 x 128 block its own scale_inv.
    const ModelSpec d = smallModel("mixtral", 192, 160, 2);
    const LayerShape s8 = layerShape(d, DType::fp8);
    std::string codes;
    for (int r = 0; r < 160; ++r)
        for (int c = 0; c < 192; ++c)
            codes += static_cast<char>(0x38 + c % 8 + (r % 2 ? 0x80 : 0));  // odd rows negative
    const std::vector<float> scaleInv = {0.25f, 0.5f, 2.0f, 4.0f};  // [2][2] blocks
    StFile f8;
    const std::string q = "model.layers.1.block_sparse_moe.";
    f8[q + "gate.weight"] = f32Tensor(std::vector<float>(2 * 192, 0.0f), {2, 192});
    for (const char* n : {"w1", "w3"}) {
        f8[q + "experts.0." + n + ".weight"] = {"F8_E4M3", {160, 192}, codes};
        f8[q + "experts.0." + n + ".weight_scale_inv"] = f32Tensor(scaleInv, {2, 2});
    }
    f8[q + "experts.0.w2.weight"] = {"F8_E4M3", {192, 160}, codes};
    f8[q + "experts.0.w2.weight_scale_inv"] = f32Tensor(scaleInv, {2, 2});
    QTemporaryDir dir8;
    writeCheckpoint(dir8.path().toStdString(), {{"model.safetensors", f8}}, false);
    ckpt = Checkpoint::open(dir8.path().toStdString());
    const std::vector<float> up = ckpt->expert(s8, 1, 0).up.dequantAll();
    for (int r = 0; r < 160; ++r)
        for (int c = 0; c < 192; ++c) {
            const float want = (r % 2 ? -1.0f : 1.0f) * (1.0f + static_cast<float>(c % 8) / 8.0f)
                * scaleInv[static_cast<std::size_t>((r / 128) * 2 + c / 128)];
            QCOMPARE(up[static_cast<std::size_t>(r * 192 + c)], want);
        }
}

void TestCheckpoint::f16IsReadExactly()
{
    // Every finite fp16 code (subnormals included) in an expert's weights and the router, read as
    // an independent conversion (the compiler's _Float16) gives them, stored as f32 for a bf16 engine.
    const ModelSpec m = smallModel("mixtral", 64, 32);
    const LayerShape s = layerShape(m, DType::fp16);
    QCOMPARE(s.format, WeightFormat::bf16);
    std::vector<std::uint16_t> codes;
    for (std::uint32_t c = 0; codes.size() < 3u * 32u * 64u; c = (c + 37) % 65536)
        if (((c >> 10) & 0x1f) != 0x1f)
            codes.push_back(static_cast<std::uint16_t>(c));
    auto value = [&](std::size_t i) { return static_cast<float>(std::bit_cast<_Float16>(codes[i])); };
    StFile f;
    const std::string p = "model.layers.1.mlp.";
    for (const char* n : {"gate_proj", "up_proj", "down_proj"}) {
        const std::size_t k = static_cast<std::size_t>(n[0] == 'g' ? 0 : n[0] == 'u' ? 1 : 2) * 2048;
        const std::vector<std::int64_t> shape = n[0] == 'd' ? std::vector<std::int64_t>{64, 32} : std::vector<std::int64_t>{32, 64};
        f[p + "experts.0." + n + ".weight"] = {"F16", shape, rawBytes(codes.data() + k, 2048)};
    }
    f[p + "gate.weight"] = {"F16", {16, 64}, rawBytes(codes.data(), 16 * 64)};
    QTemporaryDir dir;
    writeCheckpoint(dir.path().toStdString(), {{"model.safetensors", f}}, false);
    const auto ckpt = Checkpoint::open(dir.path().toStdString());
    const FfnWeights w = ckpt->expert(s, 1, 0);
    std::size_t i = 0;
    for (const QuantMatrix* q : {&w.gate, &w.up, &w.down}) {
        QCOMPARE(q->format(), WeightFormat::f32);
        for (float v : q->dequantAll()) {
            QCOMPARE(std::bit_cast<std::uint32_t>(v), std::bit_cast<std::uint32_t>(value(i)));
            ++i;
        }
    }
    QCOMPARE(ckpt->expertBytes(s, 1, 0), w.bytes());
    const std::vector<float> r = ckpt->router(s, 1).weight;
    for (std::size_t j = 0; j < r.size(); ++j)
        QCOMPARE(std::bit_cast<std::uint32_t>(r[j]), std::bit_cast<std::uint32_t>(value(j)));
}

void TestCheckpoint::otherDtypesAreConverted()
{
    // A file dtype that is not the engine's format goes through fp32 a band of 128 rows at a time
    // and is quantised as the engine quantises a whole matrix: 300 rows are three bands.
    const ModelSpec m = smallModel("mixtral", 64, 300);
    QTemporaryDir dir;
    const LayerShape bf16 = layerShape(m, DType::bf16), fp8 = layerShape(m, DType::fp8);
    writeCheckpoint(dir.path().toStdString(), seededCheckpoint(bf16, kSeed, {1}, Layout::mlp), false);
    auto ckpt = Checkpoint::open(dir.path().toStdString());
    const FfnWeights seeded = makeExpertWeights(bf16, kSeed, 1, 3);
    const FfnWeights asFp8 = ckpt->expert(fp8, 1, 3);
    QVERIFY(sameMatrix(asFp8.gate, QuantMatrix(WeightFormat::fp8_block, 300, 64, seeded.gate.dequantAll())));
    QVERIFY(sameMatrix(asFp8.down, QuantMatrix(WeightFormat::fp8_block, 64, 300, seeded.down.dequantAll())));
    QCOMPARE(ckpt->expertBytes(fp8, 1, 3), asFp8.bytes());
    // fp8 with block scales into bf16, and MXFP4 into f32.
    QTemporaryDir dir8;
    writeCheckpoint(dir8.path().toStdString(), seededCheckpoint(fp8, kSeed, {1}, Layout::mlp), false);
    ckpt = Checkpoint::open(dir8.path().toStdString());
    const FfnWeights fromFp8 = ckpt->expert(bf16, 1, 3);
    QVERIFY(sameMatrix(fromFp8.up, QuantMatrix(WeightFormat::bf16, 300, 64, makeExpertWeights(fp8, kSeed, 1, 3).up.dequantAll())));
    const ModelSpec g = smallModel("gpt-oss", 64, 96);
    QTemporaryDir dir4;
    writeCheckpoint(dir4.path().toStdString(), seededCheckpoint(layerShape(g, DType::mxfp4), kSeed, {2}, Layout::gpt_oss_mxfp4),
                    false);
    ckpt = Checkpoint::open(dir4.path().toStdString());
    const FfnWeights fromMx = ckpt->expert(layerShape(g, DType::fp32), 2, 5);
    const FfnWeights mx = makeExpertWeights(layerShape(g, DType::mxfp4), kSeed, 2, 5);
    QCOMPARE(fromMx.gate.format(), WeightFormat::f32);
    QCOMPARE(fromMx.gate.dequantAll(), mx.gate.dequantAll());
    QCOMPARE(fromMx.down.dequantAll(), mx.down.dequantAll());
}

void TestCheckpoint::engineRunsOnCheckpointWeights_data()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("layout");
    QTest::newRow("mixtral bf16") << QStringLiteral("mixtral") << int(DType::bf16) << QStringLiteral("mixtral");
    QTest::newRow("deepseek fp8") << QStringLiteral("deepseek") << int(DType::fp8) << QStringLiteral("mlp");
    QTest::newRow("gpt-oss mxfp4") << QStringLiteral("gpt-oss") << int(DType::mxfp4) << QStringLiteral("gpt-oss-mxfp4");
    QTest::newRow("nemotron-h bf16") << QStringLiteral("nemotron") << int(DType::bf16) << QStringLiteral("nemotron");
}

void TestCheckpoint::engineRunsOnCheckpointWeights()
{
    QFETCH(QString, family);
    QFETCH(int, dtype);
    QFETCH(QString, layout);
    const ModelSpec m = smallModel(family.toStdString());
    const auto t = static_cast<DType>(dtype);
    QTemporaryDir dir;
    writeCheckpoint(dir.path().toStdString(), seededCheckpoint(layerShape(m, t), kSeed, m.moe_layers, layoutOf(layout)), true);
    EngineConfig cfg;
    cfg.tokens = 21;
    cfg.layers = m.moe_layers;
    cfg.seed = kSeed;
    StepMetrics metrics;
    std::vector<float> seededOut, loadedOut;
    EpEngine seeded(m, t, placementFor(m, 1), cfg);
    QCOMPARE(seeded.weightBytes(), EpEngine::weightBytesNeeded(m, t, placementFor(m, 1), cfg));
    const double want = seeded.step(2, metrics, &seededOut);
    cfg.checkpoint = Checkpoint::open(dir.path().toStdString());
    for (int ranks : {1, 2, 4}) {
        EngineConfig plain = cfg;
        plain.checkpoint = nullptr;
        const EpEngine seededRanks(m, t, placementFor(m, ranks), plain);
        EpEngine loaded(m, t, placementFor(m, ranks), cfg);
        // The budget's count is what loading takes, and the seeded weights' bytes.
        QCOMPARE(loaded.weightBytes(), EpEngine::weightBytesNeeded(m, t, placementFor(m, ranks), cfg));
        QCOMPARE(loaded.weightBytes(), seededRanks.weightBytes());
        QCOMPARE(loaded.step(2, metrics, &loadedOut), want);
        QCOMPARE(loadedOut, seededOut);
    }
}

void TestCheckpoint::runSourceReadsTheCheckpoint()
{
    const ModelSpec m = smallModel("deepseek");
    QTemporaryDir dir;
    writeCheckpoint(dir.path().toStdString(), seededCheckpoint(layerShape(m, DType::fp8), kSeed, m.moe_layers, Layout::mlp), true);
    Scenario s = engineScenario(m, DType::fp8);
    const RunResult seeded = runScenario(s, 2);
    s.engine.checkpoint = dir.path().toStdString();
    for (int ranks : {1, 4}) {
        s.engine.ranks = ranks;
        const RunResult r = runScenario(s, 2);
        QCOMPARE(r.checksum, seeded.checksum);
        QVERIFY2(r.detail.find("checkpoint " + dir.path().toStdString()) != std::string::npos, r.detail.c_str());
    }
    // An output must not replace a shard or the index: any file in the folder is an input.
    const auto shard = inputNamed(s, dir.path().toStdString() + "/./model-00001-of-00001.safetensors");
    const auto index = inputNamed(s, dir.path().toStdString() + "/model.safetensors.index.json");
    QVERIFY(index.has_value());
    QCOMPARE(index->path, dir.path().toStdString());
    QVERIFY2(index->role.find("checkpoint") != std::string::npos, index->role.c_str());
    QVERIFY(shard.has_value());
    QVERIFY(!inputNamed(s, dir.path().toStdString() + "-other/run.json").has_value());  // a sibling, not inside
    // The budget counts the checkpoint's bytes: too small a budget is refused with them.
    s.engine.memory_gb = 1e-6;
    const std::string tooBig = errorOf([&] { runScenario(s, 1); });
    QVERIFY2(tooBig.find("weights need") != std::string::npos, tooBig.c_str());

    // A NaN block scale (weight_scale_inv) makes the layers' output NaN: an error naming the
    // checkpoint, where the run printed "checksum nan" and exited 0.
    StCheckpoint withNan = seededCheckpoint(layerShape(m, DType::fp8), kSeed, m.moe_layers, Layout::mlp);
    bool poisoned = false;
    for (auto& [file, tensors] : withNan)
        for (auto& [name, t] : tensors)
            if (!poisoned && name.find("experts.0.down_proj.weight_scale_inv") != std::string::npos) {
                const float nan = std::numeric_limits<float>::quiet_NaN();
                std::memcpy(t.bytes.data(), &nan, sizeof nan);
                poisoned = true;
            }
    QVERIFY(poisoned);
    QTemporaryDir nanDir;
    writeCheckpoint(nanDir.path().toStdString(), withNan, false);
    s.engine.memory_gb = 0;
    s.engine.ranks = 1;
    s.engine.checkpoint = nanDir.path().toStdString();
    const std::string notFinite = errorOf([&] { runScenario(s, 1); });
    QVERIFY2(notFinite.find("output is not finite") != std::string::npos && notFinite.find(nanDir.path().toStdString()) != std::string::npos,
             notFinite.c_str());
}

void TestCheckpoint::scenarioKeyIsParsed()
{
    QTemporaryDir dir;
    const std::string root = dir.path().toStdString();
    std::filesystem::create_directories(root + "/weights/a");
    std::filesystem::create_directories(root + "/weights/b");
    const std::string yaml = "name: x\nmodel: " MOEX_SOURCE_DIR "/samples/models/mixtral-8x7b.yaml\n"
                             "topology: {builtin: hgx-h100}\nworkload: {phase: decode, tokens_per_gpu: 8}\n"
                             "engine:\n  backend: cpu\n  checkpoint: weights/a\n";
    const std::string file = root + "/scenario.yaml";
    Scenario s = loadScenarioText(yaml, file);
    QCOMPARE(s.engine.checkpoint, root + "/weights/a");
    // Saved relative to the file, and loaded back the same.
    const std::string saved = scenarioToYaml(s);
    QVERIFY2(saved.find("checkpoint: weights/a") != std::string::npos, saved.c_str());
    QCOMPARE(loadScenarioText(saved, file).engine.checkpoint, s.engine.checkpoint);
    // --set overrides it, relative to the scenario file as well.
    QCOMPARE(loadScenarioText(yaml, file, {{"engine.checkpoint", "weights/b"}}).engine.checkpoint, root + "/weights/b");
    // Not a directory: located at the key in the file, at the flag for a --set.
    std::string missingYaml = yaml;
    missingYaml.replace(missingYaml.find("weights/a"), 9, "weights/c");
    const std::string missing = errorOf([&] { loadScenarioText(missingYaml, file); });
    QVERIFY2(missing.find("scenario.yaml:7:") != std::string::npos && missing.find("weights/c") != std::string::npos,
             missing.c_str());
    const std::string missingSet = errorOf([&] { loadScenarioText(yaml, file, {{"engine.checkpoint", "weights/c"}}); });
    QVERIFY2(missingSet.rfind("--set engine.checkpoint=weights/c: error:", 0) == 0
                 && missingSet.find("not a directory") != std::string::npos,
             missingSet.c_str());
    const std::string notText = errorOf([&] {
        loadScenarioText("name: x\nmodel: " MOEX_SOURCE_DIR "/samples/models/mixtral-8x7b.yaml\n"
                         "topology: {builtin: hgx-h100}\nworkload: {phase: decode, tokens_per_gpu: 8}\n"
                         "engine: {checkpoint: [a, b]}\n", file);
    });
    QVERIFY2(notText.find("scenario.yaml:5:") != std::string::npos, notText.c_str());
}

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "tst_checkpoint.moc"
