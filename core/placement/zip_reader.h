// A minimal, strict ZIP reader for the archives torch.save writes (stored entries, ZIP64 records).
//
//   const std::string bytes = readFile("expert_distribution_recorder.pt", ZipLimits{}.max_file_bytes);
//   for (const ZipEntry& e : parseZip(bytes, path)) use(e.name, e.data);
//
// Untrusted input: every offset and size is checked against the file, entries may not overlap,
// names may not climb out of the archive, and compressed or encrypted entries are refused (zlib is
// not linked, and torch.save never compresses). Problems throw InputError at the file, with the
// byte offset in the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex {

struct ZipLimits {
    std::size_t max_file_bytes = std::size_t{1} << 30;
    std::size_t max_entries = std::size_t{1} << 18;
    std::size_t max_name_bytes = 1024;
};

struct ZipEntry {
    std::string name;
    std::string_view data;    // view into the bytes given to parseZip
    std::size_t offset = 0;   // byte offset of data in the file
};

// Entries in central-directory order. The views point into `bytes`, which must outlive them.
std::vector<ZipEntry> parseZip(std::string_view bytes, const std::string& file, const ZipLimits& limits = {});

// The entry named `name`, or nullptr.
const ZipEntry* findZipEntry(const std::vector<ZipEntry>& entries, std::string_view name);

// CRC-32 (ISO-HDLC, as ZIP uses it); exposed so that tests can build valid archives.
std::uint32_t crc32(std::string_view data);

}  // namespace moex
