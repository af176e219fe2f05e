#include "file_kind.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "common/file_kinds.h"
#include "common/yaml_reader.h"

namespace moex::cli {

InputFile readInputFile(const std::string& path)
{
    InputFile f;
    f.text = readFile(path, 64u << 20);
    f.kind = detectFileKind(f.text, path);
    return f;
}

FileKind detectFileKind(const std::string& text, const std::string& path)
{
    const auto dot = path.rfind('.');
    const bool json = dot != std::string::npos && path.substr(dot) == ".json";
    Diagnostics ignored;
    const auto node = parseYaml(text, path, ignored);
    switch (node ? classifyInput(*node) : InputKind::unknown) {
    case InputKind::model: return FileKind::model;
    case InputKind::topology: return FileKind::topology;
    case InputKind::hf_config: return FileKind::hf_config;
    // A .json that is none of moex's kinds is read as a config.json (its errors say what it lacks).
    case InputKind::unknown: return json ? FileKind::hf_config : FileKind::scenario;
    default: return FileKind::scenario;  // the scenario loader names any other kind in one error
    }
}

const char* toString(FileKind k)
{
    switch (k) {
    case FileKind::scenario: return "scenario";
    case FileKind::model: return "model";
    case FileKind::topology: return "topology";
    case FileKind::hf_config: return "hf-config";
    }
    return "scenario";
}

void refuseOverrides(FileKind kind, const std::string& path, bool overridesGiven)
{
    if (!overridesGiven || kind == FileKind::scenario)
        return;
    throw InputError(Location{path, 0, 0},
                     std::string("--set edits scenarios; this is ")
                         + (kind == FileKind::hf_config ? std::string("a Hugging Face config.json")
                                                        : "a " + std::string(toString(kind)) + " file")
                         + ", which --set cannot change");
}

}  // namespace moex::cli
