#include "cli_args.h"

#include "common/diagnostics.h"
#include "common/number_text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace moex::cli {

namespace {

[[noreturn]] void fail(const std::string& command, const std::string& msg)
{
    throw InputError(Location{"moex-cli " + command, 0, 0}, msg);
}

}  // namespace

Args::Args(const std::string& command, const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs)
    : m_command(command)
{
    std::vector<std::string> names;
    for (const auto& s : specs)
        names.push_back("--" + s.name);
    bool onlyPositionals = false;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (onlyPositionals || a.size() < 2 || a[0] != '-' || a == "-") {
            m_positionals.push_back(a);
            continue;
        }
        if (a == "--") {
            onlyPositionals = true;
            continue;
        }
        const OptionSpec* spec = nullptr;
        std::string name;
        std::optional<std::string> inlineValue;
        if (a[1] == '-') {
            name = a.substr(2);
            if (const auto eq = name.find('='); eq != std::string::npos) {
                inlineValue = name.substr(eq + 1);
                name = name.substr(0, eq);
            }
            for (const auto& s : specs)
                if (s.name == name)
                    spec = &s;
        } else if (a.size() == 2) {
            for (const auto& s : specs)
                if (s.short_name == a[1])
                    spec = &s;
            if (spec)
                name = spec->name;
        }
        if (!spec) {
            std::string msg = "unknown option '" + a + "'";
            const std::string hint = didYouMean(a.substr(0, a.find('=')), names);
            if (!hint.empty())
                msg += "; did you mean '" + hint + "'?";
            fail(command, msg + " (see moex-cli help)");
        }
        std::string value;
        if (spec->takes_value) {
            if (inlineValue) {
                value = *inlineValue;
            } else if (i + 1 < argv.size()) {
                value = argv[++i];
                // `--json --seed 3`: the value left out, the next option taken as a file name.
                // (A file so named is still reachable as ./--seed or --json=--seed.)
                const std::string next = value.substr(0, value.find('='));
                const bool isOption = std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& o) {
                    return next == "--" + o.name || (o.short_name != 0 && next == std::string{'-', o.short_name});
                });
                if (isOption)
                    fail(command, "option '" + a + "'" + (a[1] == '-' ? "" : " (--" + name + ")") + " needs a value, but '"
                                      + value + "' follows it, which is an option (to name such a file, write ./" + value
                                      + ")");
            } else {
                // Named as typed: '-o' (--output) where the user wrote -o.
                fail(command, "option '" + a + "'" + (a[1] == '-' ? "" : " (--" + name + ")") + " needs a value");
            }
        } else if (inlineValue) {
            fail(command, "option '--" + name + "' takes no value");
        }
        // `--calibration ""` read as no calibration (the built-in default): an empty value is never
        // one meant (outputs say so themselves, in checkOutputs).
        if (spec->takes_value && value.empty() && name != "json" && name != "output")
            fail(command, "option '" + a.substr(0, a.find('=')) + "'" + (a[1] == '-' ? "" : " (--" + name + ")")
                              + " is given an empty value");
        auto& slot = m_values[name];
        if (!slot.empty() && !spec->repeatable)
            fail(command, "option '" + a.substr(0, a.find('=')) + "'" + (a[1] == '-' ? "" : " (--" + name + ")")
                              + " given more than once");
        slot.push_back(value);
    }
    checkOutputs();
}

void Args::checkOutputs() const
{
    // An output (--json, -o) that names a file the command reads would replace it: the scenario
    // turned into JSON, a config.json into YAML. The same file by any name (a link, ./x, ../d/x).
    std::vector<std::string> inputs = m_positionals;
    for (const auto& [name, values] : m_values)
        if (name != "json" && name != "output" && name != "set")
            inputs.insert(inputs.end(), values.begin(), values.end());
    for (const char* output : {"json", "output"}) {
        const auto out = value(output);
        if (!out || *out == "-")
            continue;
        // A run or a calibration can take minutes: an output that cannot be written is an error
        // before, not after (the write itself is atomic and says why it failed).
        const std::string flag = output == std::string("json") ? "--json " : "-o ";
        if (out->empty())
            fail(m_command, flag + "\"\": the output's file name is empty");
        const std::filesystem::path target(*out);
        const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
            fail(m_command, flag + *out + ": there is no directory " + dir.string());
        if (std::filesystem::is_directory(target, ec))
            fail(m_command, flag + *out + ": is a directory; name a file in it");
        // The file is written next to itself and renamed over it: that directory must take a new
        // file (/proc, a read-only mount did not, and said so after minutes of work). A device or
        // FIFO is written straight through, so it needs no such room.
        // Through a link (/dev/stdout to a file, /proc/self/fd/1) the file is written where the
        // link leads, as writeFileAtomically does: the probe goes there (one that cannot be
        // resolved is left to the write itself).
        std::filesystem::path real = target;
        std::filesystem::path realDir = dir;
        bool check = true;
        if (std::filesystem::is_symlink(std::filesystem::symlink_status(target, ec))) {
            real = std::filesystem::canonical(target, ec);
            check = !ec;
            realDir = real.parent_path();
        }
        const auto kind = check ? std::filesystem::status(real, ec).type() : std::filesystem::file_type::unknown;
        if (kind == std::filesystem::file_type::not_found || kind == std::filesystem::file_type::regular) {
            std::string probe = (realDir / ".moex-write-check-XXXXXX").string();
            const int fd = ::mkstemp(probe.data());
            if (fd < 0)
                fail(m_command, flag + *out + ": cannot write a file in " + realDir.string() + ": " + std::strerror(errno));
            ::close(fd);
            ::unlink(probe.c_str());
        }
        for (const std::string& in : inputs) {
            if (in != "-" && std::filesystem::equivalent(*out, in, ec) && !ec)
                fail(m_command, "'" + flag + *out
                                    + "' is the input file " + in + ": writing it would replace the input; name another file");
        }
    }
}

void refuseOutputOverInputs(const std::string& command, const std::string& flag, const std::string& out, const Scenario& s)
{
    if (out == "-")
        return;
    if (const auto f = inputNamed(s, out))
        fail(command, "'" + flag + " " + out + "' is " + f->role + " (" + f->path + ")"
                          + (f->role == "the scenario" || s.file.empty() ? std::string() : " of " + s.file)
                          + ": writing it would replace that input; name another file");
}

void Args::checkOutputsAgainst(const Scenario& s) const
{
    if (const auto out = value("json"))
        refuseOutputOverInputs(m_command, "--json", *out, s);
    if (const auto out = value("output"))
        refuseOutputOverInputs(m_command, "-o", *out, s);
}

std::optional<std::string> Args::value(const std::string& name) const
{
    const auto it = m_values.find(name);
    if (it == m_values.end() || it->second.empty())
        return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? std::vector<std::string>{} : it->second;
}

int Args::intValue(const std::string& name, int fallback, int min, int max) const
{
    const auto v = value(name);
    if (!v)
        return fallback;
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(v->front())))
        fail(m_command, "option '--" + name + "' needs an integer, got '" + *v + "'");
    if (errno == ERANGE || x < min || x > max)
        fail(m_command, "option '--" + name + "' = " + *v + " is out of range [" + std::to_string(min) + ", "
                            + std::to_string(max) + "]");
    return static_cast<int>(x);
}

double Args::doubleValue(const std::string& name, double fallback, double min, double max) const
{
    const auto v = value(name);
    if (!v)
        return fallback;
    char* end = nullptr;
    const double x = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !std::isfinite(x) || std::isspace(static_cast<unsigned char>(v->front())))
        fail(m_command, "option '--" + name + "' needs a number, got '" + *v + "'");
    if (x < min || x > max)
        fail(m_command, "option '--" + name + "' = " + *v + " is out of range [" + shortestNumber(min) + ", "
                            + shortestNumber(max) + "]");
    return x;
}

Overrides Args::overrides() const
{
    Overrides out;
    for (const auto& v : values("set")) {
        out.push_back(parseOverride(v));
        // The same key twice: one of the two values would be dropped in silence.
        for (std::size_t i = 0; i + 1 < out.size(); ++i)
            if (out[i].first == out.back().first)
                fail(m_command, "--set " + out.back().first + " given twice (=" + out[i].second + " and =" + out.back().second
                                    + "); give it once");
    }
    return out;
}

void Args::requirePositionals(std::size_t min, std::size_t max, const std::string& usage) const
{
    if (m_positionals.size() < min || m_positionals.size() > max)
        fail(m_command, (m_positionals.size() < min ? "missing argument" : "too many arguments") + std::string("; usage: ")
                            + usage);
}

}  // namespace moex::cli
