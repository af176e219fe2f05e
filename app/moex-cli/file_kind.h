// What kind of moex input a file is, judged from its extension and top-level keys.
#pragma once

#include <string>

namespace moex::cli {

enum class FileKind { scenario, model, topology, hf_config };

FileKind detectFileKind(const std::string& path);
const char* toString(FileKind k);

}  // namespace moex::cli
