// Atomic file writes: a reader sees the old file or the new one, never half of either.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace moex {

// A file could not be written (no such directory, no permission, disk full): the user's output
// path, not a fault of the program; the message names the path and the system's reason.
class FileWriteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Writes to a temporary file beside `path`, flushes, then renames over `path`.
// Throws FileWriteError naming the path on failure; the old file is left untouched.
void writeFileAtomically(const std::string& path, std::string_view contents);

// Reads a whole file; throws InputError naming the path when it cannot be read or exceeds maxBytes.
std::string readFile(const std::string& path, std::size_t maxBytes = 256u << 20);

}  // namespace moex
