#include "placement/zip_reader.h"

#include "common/diagnostics.h"

#include <algorithm>
#include <array>
#include <set>

namespace moex {

namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50;
constexpr std::uint32_t kCentralSig = 0x02014b50;
constexpr std::uint32_t kEndSig = 0x06054b50;
constexpr std::uint32_t kEnd64Sig = 0x06064b50;
constexpr std::uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr std::size_t kLocalSize = 30;
constexpr std::size_t kCentralSize = 46;
constexpr std::size_t kEndSize = 22;
constexpr std::size_t kEnd64Size = 56;
constexpr std::size_t kEnd64LocatorSize = 20;
constexpr std::uint32_t kSentinel32 = 0xffffffffu;
constexpr std::uint16_t kSentinel16 = 0xffffu;

std::string hex(std::uint64_t v)
{
    static const char* digits = "0123456789abcdef";
    std::string s;
    do {
        s.insert(s.begin(), digits[v & 15u]);
        v >>= 4;
    } while (v != 0);
    return "0x" + s;
}

// Bounds-checked little-endian reads: every access names the byte where the file is too short.
class Reader {
public:
    Reader(std::string_view bytes, const std::string& file) : m_bytes(bytes), m_file(file) {}

    [[noreturn]] void fail(std::size_t at, const std::string& message) const
    {
        throw InputError(Location{m_file, 0, 0}, "ZIP byte " + std::to_string(at) + ": " + message);
    }
    void need(std::size_t at, std::size_t n, const char* what) const
    {
        if (at > m_bytes.size() || n > m_bytes.size() - at)
            fail(at, std::string(what) + " runs past the end of the file (" + std::to_string(m_bytes.size())
                         + " bytes)");
    }
    [[nodiscard]] std::uint64_t le(std::size_t at, int n) const
    {
        std::uint64_t v = 0;
        for (int i = n - 1; i >= 0; --i)
            v = (v << 8) | static_cast<unsigned char>(m_bytes[at + static_cast<std::size_t>(i)]);
        return v;
    }
    [[nodiscard]] std::uint16_t u16(std::size_t at) const { return static_cast<std::uint16_t>(le(at, 2)); }
    [[nodiscard]] std::uint32_t u32(std::size_t at) const { return static_cast<std::uint32_t>(le(at, 4)); }
    [[nodiscard]] std::uint64_t u64(std::size_t at) const { return le(at, 8); }
    [[nodiscard]] std::string_view bytes() const { return m_bytes; }

private:
    std::string_view m_bytes;
    const std::string& m_file;
};

struct EndRecord {
    std::uint64_t entries = 0;
    std::uint64_t cd_size = 0;
    std::uint64_t cd_offset = 0;
    std::size_t end = 0;  // where the central directory must stop (start of the end records)
};

EndRecord readEndRecords(const Reader& r)
{
    const std::string_view b = r.bytes();
    if (b.size() < kEndSize)
        r.fail(0, "file is too short to be a ZIP archive (" + std::to_string(b.size()) + " bytes)");
    // The end record sits in the last 22 + 65535 bytes; its comment must reach exactly to the end.
    std::size_t pos = std::string_view::npos;
    const std::size_t lowest = b.size() >= kEndSize + 0xffff ? b.size() - kEndSize - 0xffff : 0;
    for (std::size_t p = b.size() - kEndSize + 1; p-- > lowest;) {
        if (r.u32(p) == kEndSig && p + kEndSize + r.u16(p + 20) == b.size()) {
            pos = p;
            break;
        }
    }
    if (pos == std::string_view::npos)
        r.fail(b.size(), "no end-of-central-directory record: not a ZIP archive (a torch.save file is one)");
    if (r.u16(pos + 4) != 0 || r.u16(pos + 6) != 0 || r.u16(pos + 8) != r.u16(pos + 10))
        r.fail(pos, "multi-disk ZIP archives are not supported");
    EndRecord e;
    e.entries = r.u16(pos + 10);
    e.cd_size = r.u32(pos + 12);
    e.cd_offset = r.u32(pos + 16);
    e.end = pos;

    // ZIP64: torch.save always writes the locator and the ZIP64 end record before the plain one.
    if (pos >= kEnd64LocatorSize && r.u32(pos - kEnd64LocatorSize) == kEnd64LocatorSig) {
        const std::size_t loc = pos - kEnd64LocatorSize;
        if (r.u32(loc + 4) != 0 || r.u32(loc + 16) != 1)
            r.fail(loc, "multi-disk ZIP64 archives are not supported");
        const std::uint64_t at64 = r.u64(loc + 8);
        if (at64 > loc || loc - at64 < kEnd64Size)
            r.fail(loc, "ZIP64 end record offset " + std::to_string(at64) + " is outside the file");
        const auto at = static_cast<std::size_t>(at64);
        if (r.u32(at) != kEnd64Sig)
            r.fail(at, "bad ZIP64 end-of-central-directory signature");
        const std::uint64_t recordSize = r.u64(at + 4);
        if (recordSize < kEnd64Size - 12 || recordSize > loc - at - 12)
            r.fail(at, "ZIP64 end record size " + std::to_string(recordSize) + " does not fit before its locator");
        if (r.u32(at + 16) != 0 || r.u32(at + 20) != 0 || r.u64(at + 24) != r.u64(at + 32))
            r.fail(at, "multi-disk ZIP64 archives are not supported");
        const std::uint64_t entries = r.u64(at + 32);
        const std::uint64_t cdSize = r.u64(at + 40);
        const std::uint64_t cdOffset = r.u64(at + 48);
        // Where the plain record holds a real value (not the 0xffff.. marker) both must agree.
        if ((e.entries != kSentinel16 && e.entries != entries) || (e.cd_size != kSentinel32 && e.cd_size != cdSize)
            || (e.cd_offset != kSentinel32 && e.cd_offset != cdOffset))
            r.fail(at, "ZIP64 end record disagrees with the end-of-central-directory record");
        e.entries = entries;
        e.cd_size = cdSize;
        e.cd_offset = cdOffset;
        e.end = at;
    } else if (e.entries == kSentinel16 || e.cd_size == kSentinel32 || e.cd_offset == kSentinel32) {
        r.fail(pos, "end record points to ZIP64 values but there is no ZIP64 locator");
    }
    if (e.cd_offset > e.end || e.cd_size > e.end - e.cd_offset)
        r.fail(pos, "central directory (offset " + std::to_string(e.cd_offset) + ", " + std::to_string(e.cd_size)
                        + " bytes) is outside the file");
    return e;
}

// Sizes and offset marked 0xffffffff in a central record are in its ZIP64 extra field (id 1), in
// this order, each present only when marked.
void readZip64Extra(const Reader& r, std::size_t extra, std::size_t extraLen, std::uint64_t& size,
                    std::uint64_t& compressed, std::uint64_t& offset)
{
    std::size_t p = extra;
    const std::size_t end = extra + extraLen;
    while (p + 4 <= end) {
        const std::uint16_t id = r.u16(p);
        const std::size_t len = r.u16(p + 2);
        if (len > end - p - 4)
            r.fail(p, "extra field runs past its record");
        if (id == 1) {
            std::size_t q = p + 4;
            for (std::uint64_t* v : {&size, &compressed, &offset}) {
                if (*v != kSentinel32)
                    continue;
                if (q + 8 > p + 4 + len)
                    r.fail(p, "ZIP64 extra field is too short");
                *v = r.u64(q);
                q += 8;
            }
            return;
        }
        p += 4 + len;
    }
    if (size == kSentinel32 || compressed == kSentinel32 || offset == kSentinel32)
        r.fail(extra, "entry needs a ZIP64 extra field and has none");
}

void checkName(const Reader& r, std::size_t at, const std::string& name)
{
    if (name.empty())
        r.fail(at, "entry with an empty name");
    if (name.front() == '/' || name.find('\\') != std::string::npos || name.find('\0') != std::string::npos)
        r.fail(at, "entry name '" + name + "' is absolute or has a backslash or NUL");
    std::size_t start = 0;
    while (start <= name.size()) {
        const std::size_t slash = std::min(name.find('/', start), name.size());
        if (name.compare(start, slash - start, "..") == 0 && slash - start == 2)
            r.fail(at, "entry name '" + name + "' contains '..'");
        start = slash + 1;
    }
}

}  // namespace

std::uint32_t crc32(std::string_view data)
{
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1u) ? 0xedb88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t c = 0xffffffffu;
    for (const char ch : data)
        c = table[(c ^ static_cast<unsigned char>(ch)) & 0xffu] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

std::vector<ZipEntry> parseZip(std::string_view bytes, const std::string& file, const ZipLimits& limits)
{
    const Reader r(bytes, file);
    if (bytes.size() > limits.max_file_bytes)
        r.fail(0, "file is " + std::to_string(bytes.size()) + " bytes, more than the limit of "
                      + std::to_string(limits.max_file_bytes));
    const EndRecord end = readEndRecords(r);
    if (end.entries > limits.max_entries)
        r.fail(end.end, std::to_string(end.entries) + " entries, more than the limit of "
                            + std::to_string(limits.max_entries));

    struct Span {
        std::size_t begin, end;
        std::size_t entry;
    };
    std::vector<ZipEntry> out;
    std::vector<Span> spans;
    std::set<std::string, std::less<>> names;
    const auto cdEnd = static_cast<std::size_t>(end.cd_offset + end.cd_size);
    std::size_t p = static_cast<std::size_t>(end.cd_offset);
    for (std::uint64_t i = 0; i < end.entries; ++i) {
        if (p + kCentralSize > cdEnd)
            r.fail(p, "central directory is shorter than its " + std::to_string(end.entries) + " entries");
        if (r.u32(p) != kCentralSig)
            r.fail(p, "bad central directory signature " + hex(r.u32(p)));
        const std::uint16_t flags = r.u16(p + 8);
        const std::uint16_t method = r.u16(p + 10);
        const std::uint32_t crc = r.u32(p + 16);
        std::uint64_t compressed = r.u32(p + 20);
        std::uint64_t size = r.u32(p + 24);
        const std::size_t nameLen = r.u16(p + 28);
        const std::size_t extraLen = r.u16(p + 30);
        const std::size_t commentLen = r.u16(p + 32);
        std::uint64_t local = r.u32(p + 42);
        if (p + kCentralSize + nameLen + extraLen + commentLen > cdEnd)
            r.fail(p, "central directory entry runs past the central directory");
        if (nameLen > limits.max_name_bytes)
            r.fail(p, "entry name of " + std::to_string(nameLen) + " bytes is too long");
        std::string name(bytes.substr(p + kCentralSize, nameLen));
        checkName(r, p, name);
        if (flags & 1u)
            r.fail(p, "entry '" + name + "' is encrypted");
        if (method != 0)
            r.fail(p, "entry '" + name + "' is compressed (method " + std::to_string(method)
                          + (method == 8 ? ", deflate" : "")
                          + "); only stored entries are supported (torch.save does not compress)");
        readZip64Extra(r, p + kCentralSize + nameLen, extraLen, size, compressed, local);
        if (compressed != size)
            r.fail(p, "stored entry '" + name + "' has different compressed and uncompressed sizes");
        if (!names.insert(name).second)
            r.fail(p, "duplicate entry '" + name + "'");

        // The local header repeats the name; its sizes are zero when a data descriptor follows
        // (flag bit 3, which torch.save sets), so the central directory's values are the ones used.
        if (local > end.cd_offset || end.cd_offset - local < kLocalSize)
            r.fail(p, "entry '" + name + "' has its local header at " + std::to_string(local) + ", outside the data area");
        const auto lh = static_cast<std::size_t>(local);
        if (r.u32(lh) != kLocalSig)
            r.fail(lh, "bad local header signature for entry '" + name + "'");
        if (r.u16(lh + 8) != method)
            r.fail(lh, "local header of '" + name + "' disagrees on the compression method");
        if (!(r.u16(lh + 6) & 8u) && r.u32(lh + 14) != crc)
            r.fail(lh, "local header of '" + name + "' disagrees on the CRC");
        const std::size_t localName = r.u16(lh + 26);
        const std::size_t localExtra = r.u16(lh + 28);
        r.need(lh + kLocalSize, localName + localExtra, "local header");
        if (bytes.substr(lh + kLocalSize, localName) != name)
            r.fail(lh, "local header name differs from the central directory's '" + name + "'");
        const std::size_t data = lh + kLocalSize + localName + localExtra;
        if (data > end.cd_offset || size > end.cd_offset - data)
            r.fail(lh, "data of entry '" + name + "' (" + std::to_string(size) + " bytes at " + std::to_string(data)
                           + ") runs past the data area, which ends at " + std::to_string(end.cd_offset));
        const std::string_view content = bytes.substr(data, static_cast<std::size_t>(size));
        if (crc32(content) != crc)
            r.fail(data, "CRC mismatch in entry '" + name + "'");
        spans.push_back({lh, data + static_cast<std::size_t>(size), out.size()});
        out.push_back({std::move(name), content, data});
        p += kCentralSize + nameLen + extraLen + commentLen;
    }
    if (p != cdEnd)
        r.fail(p, "central directory has " + std::to_string(cdEnd - p) + " bytes after its last entry");

    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < spans.size(); ++i) {
        if (spans[i].begin < spans[i - 1].end)
            r.fail(spans[i].begin, "entries '" + out[spans[i - 1].entry].name + "' and '" + out[spans[i].entry].name
                                       + "' overlap");
    }
    return out;
}

const ZipEntry* findZipEntry(const std::vector<ZipEntry>& entries, std::string_view name)
{
    for (const auto& e : entries) {
        if (e.name == name)
            return &e;
    }
    return nullptr;
}

}  // namespace moex
