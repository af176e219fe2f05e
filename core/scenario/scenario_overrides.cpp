// --set KEY=VALUE: overrides of scalars by dotted path, applied to the parsed YAML before validation.
#include "scenario/scenario_overrides.h"

#include "common/diagnostics.h"

namespace moex {

std::pair<std::string, std::string> parseOverride(const std::string& arg)
{
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
        throw InputError(Location{"--set", 0, 0}, "expected KEY=VALUE (e.g. workload.tokens_per_gpu=256), got '" + arg + "'");
    const std::string key = arg.substr(0, eq);
    if (key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
        throw InputError(Location{"--set", 0, 0}, "malformed key '" + key + "' in '" + arg + "'");
    return {key, arg.substr(eq + 1)};
}

namespace {

// The key node of `name` in the mapping `map` (the one yaml-cpp made when the key was new).
YAML::Node keyNode(const YAML::Node& map, const std::string& name)
{
    for (auto it = map.begin(); it != map.end(); ++it)
        if (it->first.IsScalar() && it->first.Scalar() == name)
            return it->first;
    return {};
}

}  // namespace

std::vector<NodeOrigin> applyOverrides(YAML::Node& root, const Overrides& overrides, Diagnostics& diags, const std::string& shownPrefix)
{
    std::vector<NodeOrigin> origins;
    for (const auto& [key, value] : overrides) {
        const std::string where = "--set " + shownPrefix + key + "=" + value;
        if (!root.IsMap()) {
            diags.error(Location{where, 0, 0}, "the file is not a mapping, nothing to override");
            continue;
        }
        YAML::Node cur = root;
        std::size_t start = 0;
        std::string walked = shownPrefix.empty() ? std::string() : shownPrefix.substr(0, shownPrefix.size() - 1);
        while (true) {
            const std::size_t dot = key.find('.', start);
            const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            walked += (walked.empty() ? "" : ".") + part;
            if (dot == std::string::npos) {
                YAML::Node existing = cur[part];
                if (existing && (existing.IsMap() || existing.IsSequence())) {
                    diags.error(Location{where, 0, 0}, "'" + walked + "' is not a scalar; --set overrides scalars only");
                    break;
                }
                const bool isNew = !existing;
                const YAML::Node fresh(value);  // a node of its own: no mark of the file's old value
                cur[part] = fresh;
                origins.push_back({fresh, where});
                if (isNew)
                    origins.push_back({keyNode(cur, part), where});
                break;
            }
            YAML::Node next = cur[part];
            if (!next || next.IsNull()) {
                const bool isNew = !next;
                cur[part] = YAML::Node(YAML::NodeType::Map);
                next = cur[part];
                origins.push_back({next, where});
                if (isNew)
                    origins.push_back({keyNode(cur, part), where});
            } else if (!next.IsMap()) {
                diags.error(Location{where, 0, 0}, "'" + walked + "' is not a mapping (it is "
                                                       + (next.IsScalar() ? "the value '" + next.Scalar() + "'" : std::string("a list"))
                                                       + "), so '" + shownPrefix + key + "' cannot be set");
                break;
            }
            cur.reset(next);
            start = dot + 1;
        }
    }
    return origins;
}

}  // namespace moex
