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

void applyOverrides(YAML::Node& root, const Overrides& overrides, Diagnostics& diags)
{
    for (const auto& [key, value] : overrides) {
        const std::string where = "--set " + key + "=" + value;
        if (!root.IsMap()) {
            diags.error(Location{where, 0, 0}, "the file is not a mapping, nothing to override");
            continue;
        }
        YAML::Node cur = root;
        std::size_t start = 0;
        bool ok = true;
        std::string walked;
        while (true) {
            const std::size_t dot = key.find('.', start);
            const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            walked += (walked.empty() ? "" : ".") + part;
            if (dot == std::string::npos) {
                YAML::Node existing = cur[part];
                if (existing && (existing.IsMap() || existing.IsSequence())) {
                    diags.error(Location{where, 0, 0}, "'" + walked + "' is not a scalar; --set overrides scalars only");
                    ok = false;
                    break;
                }
                cur[part] = value;
                break;
            }
            YAML::Node next = cur[part];
            if (!next || next.IsNull()) {
                cur[part] = YAML::Node(YAML::NodeType::Map);
                next = cur[part];
            } else if (!next.IsMap()) {
                diags.error(Location{where, 0, 0}, "'" + walked + "' is not a mapping (it is "
                                                       + (next.IsScalar() ? "the value '" + next.Scalar() + "'" : std::string("a list"))
                                                       + "), so '" + key + "' cannot be set");
                ok = false;
                break;
            }
            cur.reset(next);
            start = dot + 1;
        }
        (void)ok;
    }
}

}  // namespace moex
