// Fixtures of the load-statistics tests (tst_load_stats, tst_load_stats_errors): torch.save-like
// files built by hand (pickle opcodes, ZIP archives), safetensors files, and reading a file's error.
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "placement/load_stats.h"
#include "placement/zip_reader.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>
#endif

namespace moex::test {

// ---- Building torch.save-like files by hand --------------------------------------------------

inline std::string le(std::uint64_t v, int n)
{
    std::string s;
    for (int i = 0; i < n; ++i)
        s += static_cast<char>((v >> (8 * i)) & 0xffu);
    return s;
}

// Pickle opcodes, as torch.save (protocol 2) writes them.
namespace pk {
inline std::string proto() { return std::string("\x80\x02", 2); }
inline std::string str(const std::string& s) { return "X" + le(s.size(), 4) + s; }
inline std::string integer(std::int64_t v)
{
    if (v >= 0 && v < 256)
        return "K" + le(static_cast<std::uint64_t>(v), 1);
    if (v >= 0 && v < 65536)
        return "M" + le(static_cast<std::uint64_t>(v), 2);
    return "J" + le(static_cast<std::uint64_t>(v), 4);
}
inline std::string global(const std::string& module, const std::string& name) { return "c" + module + "\n" + name + "\n"; }
inline std::string put(int i) { return "q" + le(static_cast<std::uint64_t>(i), 1); }
inline std::string get(int i) { return "h" + le(static_cast<std::uint64_t>(i), 1); }
inline std::string ints(const std::vector<std::int64_t>& v)
{
    std::string s = "(";
    for (const auto x : v)
        s += integer(x);
    return s + "t";
}
// _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False, OrderedDict())
inline std::string tensor(const std::string& type, const std::string& key, std::int64_t numel, std::int64_t offset,
                   const std::vector<std::int64_t>& size)
{
    std::vector<std::int64_t> stride(size.size(), 1);
    for (std::size_t d = size.size(); d-- > 1;)
        stride[d - 1] = stride[d] * size[d];
    return global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") + global("torch", type) + str(key)
        + str("cpu") + integer(numel) + "tQ" + integer(offset) + ints(size) + ints(stride) + "\x89"
        + global("collections", "OrderedDict") + ")Rt" + "R";
}
}  // namespace pk

struct ZipFile {
    std::string name;
    std::string data;
    std::uint16_t method = 0;
};

// A stored ZIP as torch.save lays it out (local headers, central directory, end record).
inline std::string makeZip(const std::vector<ZipFile>& files)
{
    std::string out, cd;
    for (const auto& f : files) {
        const std::size_t local = out.size();
        const std::uint32_t crc = crc32(f.data);
        out += le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(f.method, 2) + le(0, 4) + le(crc, 4)
            + le(f.data.size(), 4) + le(f.data.size(), 4) + le(f.name.size(), 2) + le(0, 2) + f.name + f.data;
        cd += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(f.method, 2) + le(0, 4) + le(crc, 4)
            + le(f.data.size(), 4) + le(f.data.size(), 4) + le(f.name.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2)
            + le(0, 2) + le(0, 4) + le(local, 4) + f.name;
    }
    const std::size_t cdOffset = out.size();
    out += cd;
    out += le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(files.size(), 2) + le(files.size(), 2) + le(cd.size(), 4)
        + le(cdOffset, 4) + le(0, 2);
    return out;
}

inline std::string int32s(const std::vector<std::int64_t>& v)
{
    std::string s;
    for (const auto x : v)
        s += le(static_cast<std::uint64_t>(x), 4);
    return s;
}

// An SGLang stat-mode dump: logical_count int32 [buffer, layers, experts].
inline std::string statPickle(std::int64_t numel, const std::vector<std::int64_t>& size)
{
    return pk::proto() + "}" + pk::put(0) + "(" + pk::str("rank") + pk::integer(0) + pk::str("logical_count")
        + pk::tensor("IntStorage", "0", numel, 0, size) + pk::str("average_utilization_rate_over_window") + "Nu.";
}

inline std::string torchFile(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages)
{
    std::vector<ZipFile> files{{"stats/data.pkl", pickle}};
    for (const auto& [key, bytes] : storages)
        files.push_back({"stats/data/" + key, bytes});
    files.push_back({"stats/version", "3\n"});
    return makeZip(files);
}

inline std::string statFile()
{
    const std::vector<std::int64_t> counts{1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0};  // [2 rows, 2 layers, 3 experts]
    return torchFile(statPickle(12, {2, 2, 3}), {{"0", int32s(counts)}});
}

// A safetensors file from (name, dtype, shape, offsets) and the data bytes.
inline std::string safetensors(const nlohmann::json& header, const std::string& data)
{
    const std::string h = header.dump();
    return le(h.size(), 8) + h + data;
}

inline std::string i64s(const std::vector<std::int64_t>& v)
{
    std::string s;
    for (const auto x : v)
        s += le(static_cast<std::uint64_t>(x), 8);
    return s;
}

inline std::string dataDir()
{
    return MOEX_TEST_DATA_DIR;
}

inline std::string readBytes(const std::string& path)
{
    return readFile(path);
}

inline void writeBytes(const std::string& path, const std::string& bytes)
{
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

inline std::vector<std::vector<double>> matrixOf(const nlohmann::json& j)
{
    return j.get<std::vector<std::vector<double>>>();
}

// readLoadStats must fail with an InputError at the file whose message holds `fragment`.
inline std::string errorOf(const std::string& path)
{
    try {
        readLoadStats(path);
    } catch (const InputError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("NOT AN InputError: ") + e.what();
    }
    return "NO ERROR";
}


}  // namespace moex::test
