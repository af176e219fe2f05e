#include "file_kind.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "common/yaml_reader.h"

namespace moex::cli {

FileKind detectFileKind(const std::string& path)
{
    const auto dot = path.rfind('.');
    if (dot != std::string::npos && path.substr(dot) == ".json")
        return FileKind::hf_config;
    std::string text;
    try {
        text = readFile(path, 64u << 20);
    } catch (const InputError&) {
        return FileKind::scenario;  // the loader reports the read error
    }
    Diagnostics ignored;
    const auto node = parseYaml(text, path, ignored);
    if (!node || !node->IsMap())
        return FileKind::scenario;
    const YAML::Node& n = *node;
    for (const char* k : {"topology", "workload", "placement", "model"})
        if (n[k])
            return FileKind::scenario;
    for (const char* k : {"routed_experts", "hidden_size", "experts_per_token"})
        if (n[k])
            return FileKind::model;
    for (const char* k : {"links", "nodes", "builtin"})
        if (n[k])
            return FileKind::topology;
    return FileKind::scenario;
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
