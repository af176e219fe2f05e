// What kind of moex input a file is, judged from its extension and top-level keys.
#pragma once

#include <string>

namespace moex::cli {

enum class FileKind { scenario, model, topology, hf_config };

// A file read once, with its kind: pipes and process substitutions (`<(...)`) cannot be read twice.
struct InputFile {
    FileKind kind = FileKind::scenario;
    std::string text;
};

// Throws InputError at `path` when it cannot be read (missing, a directory, too large).
InputFile readInputFile(const std::string& path);
FileKind detectFileKind(const std::string& text, const std::string& path);
const char* toString(FileKind k);
// Throws InputError at `path` when --set was given for a file it cannot edit (anything but a
// scenario): the values would be ignored.
void refuseOverrides(FileKind kind, const std::string& path, bool overridesGiven);

}  // namespace moex::cli
