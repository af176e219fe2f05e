// libFuzzer targets for every reader of outside input (issue 18). Each target hands the bytes to
// one reader: a located InputError is the expected answer to bad input; anything else — a crash,
// a sanitizer report, another exception, a hang past -timeout — is a bug the fuzzer saves the
// input of. Built by the `fuzz` preset (clang, -fsanitize=fuzzer,address,undefined), run by
// .ci/fuzz for 30 s each on the seed corpora of tests/fuzz/corpus and the samples.
#pragma once

#include "common/diagnostics.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace moex::fuzz {

inline std::string_view bytes(const std::uint8_t* data, std::size_t size)
{
    return {reinterpret_cast<const char*>(data), size};
}

// Runs `read`; only InputError is an answer. Anything else escapes, and libFuzzer reports it.
template <class F>
int expectInputErrorOnly(F&& read)
{
    try {
        read();
    } catch (const InputError&) {
    }
    return 0;
}

// For readers that take a path: the bytes in a per-process file (tmpfs when there is one).
inline std::string asFile(std::string_view text, const char* ext)
{
    static const std::string path = [&] {
        const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        return std::string(dir) + "/moex-fuzz-" + std::to_string(getpid()) + ext;
    }();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
    return path;
}

}  // namespace moex::fuzz
