#include "placement/torch_archive.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"

#include <bit>
#include <cstring>

namespace moex {

namespace {

std::int64_t readInt(const char* p, std::size_t n, bool isSigned)
{
    std::uint64_t u = 0;
    for (std::size_t i = n; i-- > 0;)
        u = (u << 8) | static_cast<unsigned char>(p[i]);
    if (isSigned && n < 8 && (u >> (8 * n - 1)) & 1u)
        u |= ~std::uint64_t{0} << (8 * n);
    return static_cast<std::int64_t>(u);
}

double element(const char* p, TorchDType t)
{
    switch (t) {
    case TorchDType::f64: return std::bit_cast<double>(static_cast<std::uint64_t>(readInt(p, 8, false)));
    case TorchDType::f32:
        return std::bit_cast<float>(static_cast<std::uint32_t>(readInt(p, 4, false)));
    case TorchDType::i64: return static_cast<double>(readInt(p, 8, true));
    case TorchDType::i32: return static_cast<double>(readInt(p, 4, true));
    case TorchDType::i16: return static_cast<double>(readInt(p, 2, true));
    case TorchDType::i8: return static_cast<double>(readInt(p, 1, true));
    case TorchDType::u8: return static_cast<double>(readInt(p, 1, false));
    case TorchDType::f16:
    case TorchDType::bf16:
    case TorchDType::boolean: break;
    }
    return 0;
}

}  // namespace

TorchArchive::TorchArchive(const std::string& path) : m_path(path)
{
    const ZipLimits limits;
    m_bytes = readFile(path, limits.max_file_bytes);
    if (!m_bytes.empty() && static_cast<unsigned char>(m_bytes[0]) == 0x80)
        throw InputError(Location{path, 0, 0}, "legacy torch.save format (before torch 1.6, not a ZIP archive) is not "
                                               "read; save it again with a newer torch");
    m_entries = parseZip(m_bytes, path, limits);
    const auto fail = [&](const std::string& message) { throw InputError(Location{path, 0, 0}, message); };

    // torch.save puts everything under one folder: "<stem>/data.pkl", "<stem>/data/<key>", ...
    const ZipEntry* pickle = nullptr;
    for (const auto& e : m_entries) {
        const std::size_t slash = e.name.find('/');
        if (slash == std::string::npos || slash == 0)
            fail("ZIP entry '" + e.name + "' is not inside the archive's folder: not a torch.save file");
        if (m_stem.empty())
            m_stem = e.name.substr(0, slash);
        else if (e.name.compare(0, slash, m_stem) != 0 || slash != m_stem.size())
            fail("ZIP entries are in two folders ('" + m_stem + "' and '" + e.name.substr(0, slash)
                 + "'): not a torch.save file");
        if (e.name == m_stem + "/data.pkl")
            pickle = &e;
    }
    if (pickle == nullptr)
        fail("no data.pkl in the archive: not a torch.save file");
    if (const ZipEntry* order = findZipEntry(m_entries, m_stem + "/byteorder"); order != nullptr && order->data != "little")
        fail("storages are stored '" + std::string(order->data.substr(0, 16)) + "'-endian; only little-endian is read");
    m_root = parsePickle(pickle->data, path, pickle->offset);
}

std::vector<double> TorchArchive::values(const TensorRef& t, const std::string& what) const
{
    const auto fail = [&](const std::string& message) {
        throw InputError(Location{m_path, 0, 0}, "tensor '" + what + "': " + message);
    };
    if (t.dtype == TorchDType::f16 || t.dtype == TorchDType::bf16 || t.dtype == TorchDType::boolean)
        fail(std::string("dtype ") + toString(t.dtype) + " is not read for counts (expected an integer or float32/64)");
    const std::string name = m_stem + "/data/" + t.storage_key;
    const ZipEntry* entry = findZipEntry(m_entries, name);
    if (entry == nullptr)
        fail("its storage '" + name + "' is not in the archive");
    const std::size_t elem = elementSize(t.dtype);
    // The pickle bounded storage_numel only by the view; the entry's real size must match it.
    if (static_cast<std::uint64_t>(t.storage_numel) != entry->data.size() / elem || entry->data.size() % elem != 0)
        fail("storage '" + name + "' holds " + std::to_string(entry->data.size()) + " bytes, but the pickle says "
             + std::to_string(t.storage_numel) + " " + toString(t.dtype) + " elements (byte "
             + std::to_string(entry->offset) + ")");

    const std::int64_t n = t.numel();
    // Counts are never broadcast views; refusing those keeps the output as small as the file.
    if (n > t.storage_numel || n > (std::int64_t{1} << 27))
        fail("view of " + std::to_string(n) + " elements over a storage of " + std::to_string(t.storage_numel)
             + " is not a plain counts tensor");
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(n));
    std::vector<std::int64_t> index(t.size.size(), 0);
    for (std::int64_t k = 0; k < n; ++k) {
        std::int64_t at = t.offset;
        for (std::size_t d = 0; d < index.size(); ++d)
            at += index[d] * t.stride[d];
        out.push_back(element(entry->data.data() + static_cast<std::size_t>(at) * elem, t.dtype));
        for (std::size_t d = index.size(); d-- > 0;) {  // row-major: the last dimension moves fastest
            if (++index[d] < t.size[d])
                break;
            index[d] = 0;
        }
    }
    return out;
}

}  // namespace moex
