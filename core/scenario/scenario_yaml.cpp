// Scenario loading: every problem of the file (and of the files it names) located and reported,
// and nothing returned unless the whole scenario is valid.
#include "scenario/scenario_yaml.h"

#include "common/atomic_file.h"
#include "common/file_kinds.h"
#include "common/yaml_reader.h"
#include "model/hf_import.h"
#include "model/model_yaml.h"
#include "scenario/scenario_checks.h"
#include "scenario/scenario_overrides.h"
#include "topology/topology_yaml.h"

#include <algorithm>
#include <filesystem>

namespace moex {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kTopKeys = {"name", "description", "model", "topology", "workload", "placement",
                                           "gpus", "precision", "overlap", "a2a_kernel", "engine",
                                           "calibration"};

std::string resolvePath(const std::string& baseDir, const std::string& p)
{
    fs::path path(p);
    if (path.is_relative())
        path = fs::path(baseDir) / path;
    return path.lexically_normal().string();  // "dir/../x" must not need "dir" to exist
}

// Reads a path-valued scalar, resolves it and checks that the file exists.
std::optional<std::string> readExistingPath(const YAML::Node& node, YamlReader& r, const std::string& baseDir,
                                            const std::string& what)
{
    if (!node.IsScalar() || node.Scalar().empty()) {
        r.error(node, what + " must be a file path");
        return std::nullopt;
    }
    const std::string resolved = resolvePath(baseDir, node.Scalar());
    std::error_code ec;
    if (fs::is_directory(resolved, ec)) {
        r.error(node, what + " '" + node.Scalar() + "' is a directory, not a file (" + resolved + ")");
        return std::nullopt;
    }
    if (!fs::exists(resolved, ec)) {
        r.error(node, what + " '" + node.Scalar() + "' does not exist (looked for " + resolved + ")");
        return std::nullopt;
    }
    return resolved;
}

// `fileSets`: the --set model.KEY=VALUE overrides (KEY without "model.") for a model given as a
// file, applied to that file's YAML.
void readModelPart(const YAML::Node& node, YamlReader& r, const std::string& baseDir, Scenario& s, bool& ok,
                   const Overrides& fileSets)
{
    try {
        if (node.IsScalar()) {
            auto path = readExistingPath(node, r, baseDir, "model file");
            if (!path) {
                ok = false;
                return;
            }
            ModelYamlEdit edit;
            if (!fileSets.empty())
                edit = [&fileSets](YAML::Node& root, Diagnostics& d) { return applyOverrides(root, fileSets, d, "model."); };
            s.model = loadModelFile(*path, edit);
            s.model_source = {SourceRef::Kind::path, *path};
            return;
        }
        if (node.IsMap() && YamlReader::has(node, "hf_config")) {
            if (!r.expectMap(node, "model", {"hf_config"})) {
                ok = false;
                return;
            }
            const YAML::Node& cnode = node;
            auto path = readExistingPath(cnode["hf_config"], r, baseDir, "hf_config");
            if (!path) {
                ok = false;
                return;
            }
            s.model = importHfConfigFile(*path);
            s.model_source = {SourceRef::Kind::hf_config, *path};
            return;
        }
        const std::size_t before = r.errorCount();
        auto m = readModel(node, r);
        if (m)
            checkModel(*m, node, r);
        if (!m || r.errorCount() != before) {
            ok = false;
            return;
        }
        s.model = *m;
        s.model_source = {SourceRef::Kind::inline_, {}};
    } catch (const InputError& e) {
        // Errors inside the named file are located in that file; say which scenario key led there.
        r.diagnostics().append(e.diagnostics());
        r.error(node, "model could not be loaded (see the errors above)");
        ok = false;
    }
}

void readTopologyPart(const YAML::Node& node, YamlReader& r, const std::string& baseDir, Scenario& s, bool& ok)
{
    try {
        if (node.IsScalar()) {
            auto path = readExistingPath(node, r, baseDir, "topology file");
            if (!path) {
                ok = false;
                return;
            }
            s.topology = loadTopologyFile(*path);
            s.topology_source = {SourceRef::Kind::path, *path};
            return;
        }
        const std::size_t before = r.errorCount();
        if (node.IsMap() && YamlReader::has(node, "builtin")) {
            auto params = readTopologyParams(node, r);
            if (!params || r.errorCount() != before) {
                ok = false;
                return;
            }
            try {
                s.topology = buildTopology(*params);
            } catch (const std::invalid_argument& e) {
                r.error(node, e.what());
                ok = false;
                return;
            }
            s.topology_params = *params;
            s.topology_source = {SourceRef::Kind::builtin, {}};
            return;
        }
        auto t = readCustomTopology(node, r);
        if (!t || r.errorCount() != before) {
            ok = false;
            return;
        }
        s.topology = std::move(*t);
        s.topology_source = {SourceRef::Kind::inline_, {}};
    } catch (const InputError& e) {
        r.diagnostics().append(e.diagnostics());
        r.error(node, "topology could not be loaded (see the errors above)");
        ok = false;
    }
}

}  // namespace

Scenario loadScenarioText(const std::string& text, const std::string& file, const Overrides& overrides)
{
    Diagnostics diags;
    auto parsed = parseYaml(text, file, diags);
    if (!parsed)
        throw InputError(diags);
    YAML::Node root = *parsed;
    std::vector<NodeOrigin> origins;
    Overrides modelFileSets;  // --set model.KEY=VALUE where the model is a file: set in that file's YAML
    if (!overrides.empty()) {
        static const std::string kModel = "model.";
        Overrides sets;
        for (const auto& o : overrides)  // (model.hf_config names the config.json: the scenario's own key)
            (o.first.compare(0, kModel.size(), kModel) == 0 && o.first != "model.hf_config" ? modelFileSets : sets).push_back(o);
        origins = applyOverrides(root, sets, diags);  // first: a --set model=FILE decides which file
        const YAML::Node& croot = root;
        if (!modelFileSets.empty() && croot.IsMap() && croot["model"] && croot["model"].IsMap() && croot["model"]["hf_config"]) {
            // A config.json is imported, not edited: say how to get a model whose keys can be set.
            for (const auto& [key, value] : modelFileSets)
                diags.error(Location{"--set " + key + "=" + value, 0, 0},
                            "the scenario's model is imported from a config.json (model.hf_config), whose keys --set "
                            "cannot change; write it as model YAML (moex-cli import-hf CONFIG.json -o model.yaml), "
                            "name that file as the model, and set its keys");
            modelFileSets.clear();
        } else if (!modelFileSets.empty() && !(croot.IsMap() && croot["model"] && croot["model"].IsScalar())) {
            // An inline model (or none): its keys are the scenario's own.
            std::vector<NodeOrigin> more = applyOverrides(root, modelFileSets, diags);
            origins.insert(origins.end(), more.begin(), more.end());
            modelFileSets.clear();
        } else {
            for (auto& o : modelFileSets)
                o.first.erase(0, kModel.size());
        }
        if (!diags.empty())
            throw InputError(diags);
    }
    YamlReader r(file, diags, std::move(origins));
    if (root.IsNull() || !root.IsDefined()) {
        const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
        r.error(root, std::string(blank ? "the file is empty" : "the file holds no value (only comments, or a null)")
                          + "; a scenario needs at least 'model' and 'topology'");
        throw InputError(diags);
    }
    if (const std::string other = wrongKindMessage(classifyInput(root), InputKind::scenario); !other.empty()) {
        r.error(root, other);
        throw InputError(diags);
    }
    if (!r.expectMap(root, "scenario", kTopKeys))
        throw InputError(diags);

    const std::string baseDir = fs::path(file).has_parent_path() ? fs::absolute(fs::path(file)).parent_path().string()
                                                                 : fs::current_path().string();
    Scenario s;
    s.file = file.empty() ? std::string() : fs::absolute(fs::path(file)).lexically_normal().string();
    const YAML::Node& croot = root;

    if (auto name = r.getName(croot, "name", false))
        s.name = *name;
    else if (!file.empty())
        s.name = fs::path(file).stem().string();

    bool modelOk = YamlReader::has(croot, "model");
    if (!modelOk)
        r.error(root, "missing required key 'model'");
    else
        readModelPart(croot["model"], r, baseDir, s, modelOk, modelFileSets);

    bool topoOk = YamlReader::has(croot, "topology");
    if (!topoOk)
        r.error(root, "missing required key 'topology'");
    else
        readTopologyPart(croot["topology"], r, baseDir, s, topoOk);

    ScenarioChecks checks{r, baseDir, modelOk, topoOk};
    // The flags that change what a GPU holds: its slots, the model's sizes, the GPUs, the weights'
    // format (not a name, the routing prior or the exchange's precision).
    for (const auto& [key, value] : overrides) {
        const bool holds = key == "placement" || key == "placement.redundant_slots" || key == "model"
                           || (key.starts_with("model.") && key != "model.name" && !key.starts_with("model.routing"))
                           || key == "topology" || (key.starts_with("topology.") && key != "topology.name")
                           || key == "precision" || key == "precision.weights";
        if (holds)
            checks.capacityFlags += (checks.capacityFlags.empty() ? "" : " ") + std::string("--set ") + key + "=" + value;
    }
    readWorkload(croot, s, checks);
    readPlacementPart(croot, s, checks);
    readGpus(croot, s, checks);
    readPrecisionAndEngine(croot, s, checks);
    if (modelOk && topoOk)
        checkCapacity(croot, s, checks);

    if (!diags.empty())
        throw InputError(diags);
    // A slot count the strategies refuse (eplb: slots a multiple of the GPUs) is the flag's doing
    // where a flag changed the experts, the GPUs or the slots.
    for (const auto& [key, value] : overrides) {
        const bool shapes = key == "placement" || key.starts_with("placement.strategy") || key.starts_with("placement.redundant_slots")
                            || key == "topology" || key.starts_with("topology.") || key == "model" || key.starts_with("model.");
        if (shapes)
            s.placement.flags += (s.placement.flags.empty() ? "" : " ") + std::string("--set ") + key + "=" + value;
        // The engine's errors (memory, ranks, tokens) are the flag's where a flag set its section.
        if (key.starts_with("engine."))
            s.engine.flags[key.substr(7)] = "--set " + key + "=" + value;
    }
    return s;
}

Scenario loadScenarioFile(const std::string& path, const Overrides& overrides)
{
    const std::string text = readFile(path, 64u << 20);
    return loadScenarioText(text, path, overrides);
}

}  // namespace moex
