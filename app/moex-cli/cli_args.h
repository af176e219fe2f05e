// Command-line arguments of one moex-cli command: positionals, --options with values, flags.
// Bad flags are input errors (exit 2) that say what was expected.
#pragma once

#include "scenario/scenario_yaml.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moex::cli {

struct OptionSpec {
    std::string name;        // without dashes, e.g. "json"
    bool takes_value = true;
    bool repeatable = false;
    char short_name = 0;     // e.g. 'o'
};

// Throws (location "moex-cli COMMAND") when `out` (given with `flag`, "--json" or "-o") is a file
// the scenario reads (filesRead: the scenario, its model, topology, routing file, ...) by any name:
// writing it would replace that input. "-" (standard output) is never one.
void refuseOutputOverInputs(const std::string& command, const std::string& flag, const std::string& out, const Scenario& s);

class Args {
public:
    // Throws InputError (location "moex-cli COMMAND") on unknown options or missing values.
    Args(const std::string& command, const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs);

    [[nodiscard]] const std::vector<std::string>& positionals() const { return m_positionals; }
    [[nodiscard]] bool has(const std::string& name) const { return m_values.count(name) > 0; }
    [[nodiscard]] std::optional<std::string> value(const std::string& name) const;
    [[nodiscard]] std::vector<std::string> values(const std::string& name) const;
    [[nodiscard]] int intValue(const std::string& name, int fallback, int min, int max) const;
    [[nodiscard]] double doubleValue(const std::string& name, double fallback, double min, double max) const;
    [[nodiscard]] Overrides overrides() const;  // every --set KEY=VALUE
    void requirePositionals(std::size_t min, std::size_t max, const std::string& usage) const;
    // Throws when --json or -o names a file the scenario reads (filesRead: its model, topology,
    // routing file, ...), by any name: writing it would replace that input.
    void checkOutputsAgainst(const Scenario& s) const;

private:
    // Throws when --json or -o names the same file as an input (a positional or another option),
    // a directory, or a file in a directory that is not there.
    void checkOutputs() const;

    std::string m_command;
    std::vector<std::string> m_positionals;
    std::map<std::string, std::vector<std::string>> m_values;
};

}  // namespace moex::cli
