// Hostile or broken expert-load statistics: a table of files (pickles that would run code, ZIP
// tricks, safetensors and JSON errors), mutations of a real file and the pickle reader's limits;
// each must be an InputError at the file that says what is wrong (never a crash, never code run).
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "placement/load_stats.h"
#include "placement/pickle_reader.h"
#include "placement/zip_reader.h"

#include <nlohmann/json.hpp>

#endif

#include "load_stats_fixtures.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace moex;
using namespace moex::test;

class TestLoadStatsErrors : public QObject {
    Q_OBJECT
private slots:
    void malformed_data();
    void malformed();
    void mutatedRealFile_data();
    void mutatedRealFile();
    void pickleLimits();
};

void TestLoadStatsErrors::malformed_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("fragment");
    const auto row = [](const char* name, const char* file, const std::string& bytes, const char* fragment) {
        QTest::addRow("%s", name) << QString::fromLatin1(file) << QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size()))
                                  << QString::fromLatin1(fragment);
    };
    const auto pt = [](const std::string& pickle) { return torchFile(pickle, {}); };
    const std::string good = statPickle(12, {2, 2, 3});

    row("global os.system", "a.pt",
        pt(pk::proto() + pk::global("os", "system") + pk::str("echo pwned") + "\x85R."), "GLOBAL 'os system' is not allowed");
    row("unknown opcode", "a.pt", pt(pk::proto() + "\x93."), "opcode 0x93 STACK_GLOBAL is not allowed");
    row("not an opcode", "a.pt", pt(pk::proto() + "\xff."), "opcode 0xff (not a pickle opcode)");
    row("BUILD", "a.pt", pt(pk::proto() + "}}b."), "opcode 0x62 BUILD is not allowed");
    row("REDUCE of a storage class", "a.pt", pt(pk::proto() + pk::global("torch", "IntStorage") + ")R."),
        "REDUCE of 'torch IntStorage' is not allowed");
    row("REDUCE of a string", "a.pt", pt(pk::proto() + pk::str("x") + ")R."), "REDUCE needs a callable, found string");
    row("protocol 4", "a.pt", pt(std::string("\x80\x04}.", 4)), "torch.save writes protocol 2");
    row("truncated pickle", "a.pt", torchFile(good.substr(0, 60), {{"0", std::string(48, '\0')}}), "truncated");
    row("no STOP", "a.pt", pt(pk::proto() + "}"), "pickle ends without STOP");
    row("bytes after STOP", "a.pt", pt(pk::proto() + "}.}"), "bytes after STOP");
    row("memo read before write", "a.pt", pt(pk::proto() + pk::get(7) + "."), "memo entry 7 is read before it is written");
    row("storage too small", "a.pt", torchFile(good, {{"0", std::string(40, '\0')}}), "holds 40 bytes, but the pickle says 12");
    row("view past storage", "a.pt", torchFile(statPickle(6, {2, 2, 3}), {{"0", std::string(24, '\0')}}),
        "reaches element 11 of a storage of 6");
    row("storage missing", "a.pt", pt(good), "is not in the archive");
    row("no data.pkl", "a.pt", makeZip({{"stats/other", "x"}}), "no data.pkl");
    row("not a zip", "a.pt", "hello, world, this is not a zip archive", "not a ZIP archive");
    row("legacy torch", "a.pt", pk::proto() + "}.", "legacy torch.save format");
    row("compressed entry", "a.pt", makeZip({{"stats/data.pkl", "xx", 8}}), "is compressed (method 8, deflate)");
    row("dot-dot name", "a.pt", makeZip({{"stats/../../etc/passwd", "x"}}), "contains '..'");
    {
        std::string z = makeZip({{"stats/data.pkl", good}});
        z[z.size() - 22 + 19] = '\x7f';  // central directory offset far past the end
        row("central directory past EOF", "a.pt", z, "is outside the file");
    }
    {
        std::string z = makeZip({{"stats/data.pkl", good}});
        const std::size_t cd = z.size() - 22 - 46 - 14;  // the one central record
        z.replace(cd + 42, 4, le(0x7ffffff0, 4));       // its local header offset
        row("entry offset past EOF", "a.pt", z, "outside the data area");
    }
    {
        // Entry A's data spans entry B's local header and data: two names for the same bytes.
        const std::string b = makeZip({{"stats/b", "BBBB"}});
        const std::string bLocal = b.substr(0, 30 + 7 + 4);
        const std::string aName = "stats/data.pkl";
        const std::string aData = bLocal;  // A's stored bytes are B's whole local record
        std::string z = le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc32(aData), 4)
            + le(aData.size(), 4) + le(aData.size(), 4) + le(aName.size(), 2) + le(0, 2) + aName + aData;
        const std::size_t bAt = 30 + aName.size();
        std::string cd;
        for (const auto& [name, crc, size, at] :
             {std::tuple{aName, crc32(aData), aData.size(), std::size_t{0}}, std::tuple{std::string("stats/b"), crc32("BBBB"), std::size_t{4}, bAt}}) {
            cd += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc, 4) + le(size, 4)
                + le(size, 4) + le(name.size(), 2) + le(0, 6) + le(0, 2) + le(0, 4) + le(at, 4) + name;
        }
        const std::size_t cdAt = z.size();
        z += cd + le(0x06054b50, 4) + le(0, 4) + le(2, 2) + le(2, 2) + le(cd.size(), 4) + le(cdAt, 4) + le(0, 2);
        row("overlapping entries", "a.pt", z, "overlap");
    }

    const std::string i64 = i64s({1, 2, 3, 4, 5, 6, 7, 8});
    const nlohmann::json okTensor = {{"dtype", "I64"}, {"shape", {8}}, {"data_offsets", {0, 64}}};
    row("safetensors header past EOF", "trt/rank0.safetensors", le(1000, 8) + "{}", "header length 1000 runs past the end");
    row("safetensors short", "trt/rank0.safetensors", "abc", "too short");
    row("safetensors F32", "trt/rank0.safetensors",
        safetensors({{"7_0", {{"dtype", "F32"}, {"shape", {16}}, {"data_offsets", {0, 64}}}}}, i64),
        "has dtype F32; token counts must be I64 or I32");
    row("safetensors overlap", "trt/rank0.safetensors",
        safetensors({{"7_0", okTensor}, {"7_1", {{"dtype", "I64"}, {"shape", {8}}, {"data_offsets", {32, 96}}}}}, i64 + i64.substr(0, 32)),
        "overlap tensor");
    row("safetensors outside", "trt/rank0.safetensors", safetensors({{"7_0", okTensor}}, i64.substr(0, 32)),
        "are outside the data");
    row("safetensors size mismatch", "trt/rank0.safetensors",
        safetensors({{"7_0", {{"dtype", "I64"}, {"shape", {4}}, {"data_offsets", {0, 64}}}}}, i64), "need 32");
    row("safetensors hole", "trt/rank0.safetensors", safetensors({{"7_0", okTensor}}, i64 + "xxxxxxxx"),
        "belong to no tensor");
    row("trtllm bad key", "trt/rank0.safetensors", safetensors({{"layer0", okTensor}}, i64), "is not named");
    row("trtllm wrong experts", "trt/rank0.safetensors",
        safetensors({{"7_0", {{"dtype", "I64"}, {"shape", {4}}, {"data_offsets", {0, 32}}}}}, i64.substr(0, 32)),
        "must have shape [8]");
    row("trtllm negative", "trt/rank0.safetensors", safetensors({{"7_0", okTensor}}, i64s({1, -2, 3, 4, 5, 6, 7, 8})),
        "negative count");
    row("trtllm missing rank", "trt/rank1.safetensors", safetensors({{"7_0", okTensor}}, i64), "rank0.safetensors is missing");
    // "7_03" was a second spelling of "7_3": both added to layer 3 (twice the others' total).
    const nlohmann::json second = {{"dtype", "I64"}, {"shape", {8}}, {"data_offsets", {64, 128}}};
    row("trtllm key with a leading zero", "trt/rank0.safetensors", safetensors({{"7_3", okTensor}, {"7_03", second}}, i64 + i64),
        "tensor '7_03' is not named \"{iteration}_{layer}\" (numbers without leading zeros)");
    row("trtllm negative zero", "trt/rank0.safetensors", safetensors({{"-0_3", okTensor}}, i64),
        "tensor '-0_3' is not named \"{iteration}_{layer}\"");

    row("json negative count", "m.json", "[[1, -2]]", "a count must be a number from 0 to 2^40, found -2");
    row("json string count", "m.json", "[[1, \"2\"]]", "a count must be a number from 0 to 2^40, found \"2\"");
    row("json count beyond any recording", "m.json", "[[1, 1e15]]", "a count must be a number from 0 to 2^40");
    row("json duplicate layer", "c.json", R"({"expert_usage_by_layer": {"0": [1, 2, 3], "0": [4, 5, 6]}})",
        "gives the key \"0\" twice in one object");
    row("json layer list shorter", "c.json", R"({"expert_usage_by_layer": {"0": [1, 2, 3], "1": [1, 2]}})",
        "layer 1 has 2 counts, the layers before it have 3");
    row("json NUL and garbage", "m.json", std::string("[[1, 2, 3]]\0{garbage", 20), "holds a NUL byte (at byte 11)");
    row("ragged matrix", "m.json", "[[1, 2], [3]]", "row 1 has 1 counts, row 0 has 2");
    // Syntax errors: one wording and a line and column in every reader (some carried nlohmann's
    // "[json.exception.parse_error.101]" text, some no column).
    row("json syntax", "m.json", "[[1, 2],\n [3, 4]", ":2:8: error: the counts file is not valid JSON: syntax error");
    row("vllm syntax", "v.jsonl", "{\"record_type\": \"eplb_load_stats\", \"expert_load\": [[1, 1]]}\n{\"record_type\": x}",
        ":2:17: error: the record is not valid JSON: syntax error while parsing value - invalid literal");
    row("trtllm meta syntax", "trt/meta_info.json", "{\"num_experts\": 8,\n \"num_experts_per_token\": 2,,}",
        "meta_info.json:2:29: error: meta_info.json is not valid JSON: syntax error");
    row("trtllm meta experts out of range", "trt/meta_info.json", "{\n  \"num_experts\": 0,\n  \"num_experts_per_token\": 2}",
        "meta_info.json:2:3: error: \"num_experts\" must be an integer in [1, ");
    row("trtllm meta top-k past the experts", "trt/meta_info.json", "{\"num_experts\": 8,\n \"num_experts_per_token\": 9}",
        "meta_info.json:2:2: error: \"num_experts_per_token\" must be an integer in [1, num_experts], found 9");
    row("vllm negative", "v.jsonl", R"({"record_type": "eplb_load_stats", "expert_load": [[1, -1]]})",
        "must be a whole token count from 0 to 2^40");
    row("vllm count beyond any recording", "v.jsonl", R"({"record_type": "eplb_load_stats", "expert_load": [[1, 1e308]]})",
        "must be a whole token count from 0 to 2^40");
    row("vllm fractional count", "v.jsonl", R"({"record_type": "eplb_load_stats", "expert_load": [[1, 1.5]]})",
        "entry 1 must be a whole token count from 0 to 2^40, found 1.5");
    row("no tokens at all", "v.jsonl", R"({"record_type": "eplb_load_stats", "expert_load": [[0, 0], [0, 0]]})",
        "the statistics hold no tokens: every expert's count is 0 in every layer (2 layers, vllm");
    row("json no tokens", "m.json", "[[0, 0, 0], [0, 0, 0]]", "the statistics hold no tokens");
    row("vllm bad map", "v.jsonl", R"({"record_type": "eplb_load_stats", "expert_load": [[1, 1]], "p2l_map": [[0, -1]]})",
        "must be an expert id from 0 to 65535");
    row("vllm map id too large", "v.jsonl",
        R"({"record_type": "eplb_load_stats", "expert_load": [[1, 1]], "p2l_map": [[0, 2000000]]})",
        "must be an expert id from 0 to 65535, found 2000000");
    row("vllm map id beyond the slots", "v.jsonl",
        R"({"record_type": "eplb_load_stats", "expert_load": [[1, 1, 1]], "p2l_map": [[0, 1, 5]]})",
        "\"p2l_map\" layer 0 maps a slot to expert 5, but 3 slots hold at most 3 experts");
    row("vllm map leaves an expert out", "v.jsonl",
        R"({"record_type": "eplb_load_stats", "expert_load": [[1, 1, 1], [1, 1, 1]], "p2l_map": [[0, 1, 2], [0, 2, 2]]})",
        "\"p2l_map\" layer 1 gives expert 1 no slot");
    row("vllm version", "v.jsonl", R"({"record_type": "eplb_load_stats", "version": 9, "expert_load": [[1]]})",
        "unsupported version 9");
    row("unknown extension", "x.csv", "1,2,3", "cannot tell the statistics format");
}
void TestLoadStatsErrors::malformed()
{
    QFETCH(QString, file);
    QFETCH(QByteArray, bytes);
    QFETCH(QString, fragment);
    QTemporaryDir dir;
    const std::string base = dir.path().toStdString();
    std::string path = base + "/" + file.toStdString();
    writeBytes(path, bytes.toStdString());
    if (file.startsWith(QLatin1String("trt/"))) {
        if (!file.endsWith(QLatin1String("meta_info.json")))
            writeBytes(base + "/trt/meta_info.json", R"({"num_experts": 8, "num_experts_per_token": 2})");
        path = base + "/trt";
    }
    const std::string message = errorOf(path);
    QVERIFY2(message.find("NO ERROR") == std::string::npos && message.find("NOT AN InputError") == std::string::npos,
             message.c_str());
    QVERIFY2(message.find(fragment.toStdString()) != std::string::npos, message.c_str());
    QVERIFY2(message.find(path) == 0 || message.find(base) == 0, message.c_str());  // located at the file
}
void TestLoadStatsErrors::mutatedRealFile_data()
{
    QTest::addColumn<int>("offset");  // < 0: from the end
    QTest::addColumn<QByteArray>("patch");
    QTest::addColumn<int>("truncate");  // > 0: keep only this many bytes
    QTest::addColumn<QString>("fragment");
    // Offsets into the real file: data.pkl's bytes start at 128, data/0's at 512 (torch aligns to 64).
    QTest::addRow("pickle GLOBAL renamed to os.system")
        << 128 + 40 << QByteArray("os\nsystem\n______________________") << 0 << QStringLiteral("CRC mismatch");
    QTest::addRow("storage byte flipped") << 520 << QByteArray("\x7f", 1) << 0 << QStringLiteral("CRC mismatch");
    QTest::addRow("truncated") << 0 << QByteArray() << 2000 << QStringLiteral("not a ZIP archive");
    QTest::addRow("ZIP64 record offset past EOF") << -20 + 8 << QByteArray("\xff\xff\x00\x00", 4) << 0
                                                   << QStringLiteral("is outside the file");
}
void TestLoadStatsErrors::mutatedRealFile()
{
    const std::string real = dataDir() + "/loadstats/sglang_expert_distribution_recorder_mixtral.pt";
    QVERIFY2(std::filesystem::exists(real), real.c_str());
    QFETCH(int, offset);
    QFETCH(QByteArray, patch);
    QFETCH(int, truncate);
    QFETCH(QString, fragment);
    std::string bytes = readBytes(real);
    if (truncate > 0)
        bytes.resize(static_cast<std::size_t>(truncate));
    // The locator sits 20 bytes before the 22-byte end record; its offset field is 8 bytes in.
    const std::size_t at = offset >= 0 ? static_cast<std::size_t>(offset) : bytes.size() - 22 + static_cast<std::size_t>(offset);
    bytes.replace(at, static_cast<std::size_t>(patch.size()), patch.toStdString());
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/m.pt";
    writeBytes(path, bytes);
    const std::string message = errorOf(path);
    QVERIFY2(message.find(fragment.toStdString()) != std::string::npos, message.c_str());
}
void TestLoadStatsErrors::pickleLimits()
{
    const auto error = [](const std::string& pickle) {
        try {
            parsePickle(pickle, "p.pkl");
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("NO ERROR");
    };
    // 100 nested one-tuples: deeper than the nesting limit.
    std::string deep = pk::proto() + ")";
    for (int i = 0; i < 100; ++i)
        deep += "\x85";
    QVERIFY(error(deep + ".").find("nested deeper than 64") != std::string::npos);
    // A value doubled through the memo 30 times would be 2^30 nodes.
    std::string bomb = pk::proto() + pk::str("x");
    for (int i = 0; i < 30; ++i)
        bomb += pk::put(0) + pk::get(0) + "\x86";
    PickleLimits small;
    small.max_copied_nodes = 4096;
    try {
        parsePickle(bomb + ".", "p.pkl", 0, small);
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("copied through the memo") != std::string::npos, e.what());
    }
    // Unbounded MARKs.
    QVERIFY(error(pk::proto() + std::string(1000, '(')).find("nested MARKs") != std::string::npos);
    // A string longer than its limit, and one longer than the file.
    QVERIFY(error(pk::proto() + "X" + le(0x7fffffff, 4)).find("more than the limit") != std::string::npos);
    QVERIFY(error(pk::proto() + "X" + le(100, 4) + "abc").find("truncated") != std::string::npos);
    // ZIP limits: entry count and file size.
    const std::string two = makeZip({{"a/x", "1"}, {"a/y", "2"}});
    QCOMPARE(parseZip(two, "z").size(), std::size_t{2});
    const auto zipError = [&](const ZipLimits& limits) {
        try {
            parseZip(two, "z", limits);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("NO ERROR");
    };
    ZipLimits tight;
    tight.max_entries = 1;
    QVERIFY(zipError(tight).find("2 entries, more than the limit of 1") != std::string::npos);
    tight = ZipLimits{};
    tight.max_file_bytes = 64;
    QVERIFY(zipError(tight).find("more than the limit of 64") != std::string::npos);
    // The offset in the message is the file's when the pickle sits inside a ZIP.
    try {
        parsePickle(pk::proto() + "b", "f.pt", 1000);
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("byte 1002 (pickle byte 2)") != std::string::npos, e.what());
    }
    // A valid dict of a tensor parses into the description, and nothing else.
    const PickleValue v = parsePickle(statPickle(12, {2, 2, 3}), "p.pkl");
    const PickleValue* t = v.get("logical_count");
    QVERIFY(t != nullptr && t->kind == PickleValue::Kind::tensor);
    QCOMPARE(t->tensor->dtype, TorchDType::i32);
    QVERIFY(t->tensor->size == (std::vector<std::int64_t>{2, 2, 3}));
    QVERIFY(t->tensor->stride == (std::vector<std::int64_t>{6, 3, 1}));
}
QTEST_APPLESS_MAIN(TestLoadStatsErrors)
#include "tst_load_stats_errors.moc"
