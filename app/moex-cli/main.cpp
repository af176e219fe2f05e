// moex-cli: the moex engine headless, scriptable, for CI and batch studies.
//   moex-cli validate samples/scenarios/*.yaml
//   moex-cli show samples/scenarios/deepseek-r1-decode-nvl72.yaml
#include "commands.h"
#include "common/atomic_file.h"
#include "common/diagnostics.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

namespace {

struct Command {
    const char* name;
    int (*run)(const moex::cli::Argv&);
    const char* usage;
};

const Command kCommands[] = {
    {"validate", moex::cli::cmdValidate, "validate FILE... [--set KEY=VALUE]...   check scenario/model/topology files"},
    {"show", moex::cli::cmdShow, "show FILE [--set KEY=VALUE]...           summary of a scenario, model or config.json"},
    {"import-hf", moex::cli::cmdImportHf, "import-hf CONFIG.json [-o MODEL.yaml]     model YAML from a Hugging Face config"},
    {"topology", moex::cli::cmdTopology,
     "topology NAME [--racks N] [--nodes N] [--gpus-per-node N] [--nics-per-gpu N] [-o OUT]   write a built-in as YAML"},
    {"simulate", moex::cli::cmdSimulate,
     "simulate SCENARIO [--steps N] [--seed S] [--json OUT|-] [--calibration F] [--set KEY=VALUE]..."},
    {"run", moex::cli::cmdRun,
     "run SCENARIO [--backend cpu] [--ranks N] [--steps N] [--json OUT|-] [--set KEY=VALUE]...   the real MoE layers"},
    {"compare", moex::cli::cmdCompare, "compare A B [--steps N] [--json OUT|-]   side by side, ratios B/A, term by term"},
    {"compare", moex::cli::cmdCompare,
     "compare --measured RUN.json [--calibration BEFORE [--calibration AFTER]] [--json OUT|-]   predicted (host-cpu) vs measured engine run"},
    {"calibrate", moex::cli::cmdCalibrate,
     "calibrate --backend cpu -o FILE [--threads N] [--quick]   measure this CPU for the host-cpu topology"},
    {"place", moex::cli::cmdPlace, "place SCENARIO --strategy S [--slots R] [--load F] --format F -o OUT   placement export"},
    {"load-stats", moex::cli::cmdLoadStats, "load-stats FILE [--json OUT|-]   any supported statistics/trace file, per-layer max/mean"},
    {"bench", moex::cli::cmdBench, "bench sim|fidelity|place|engine [--scenario S] [--steps N] [--json OUT|-]   benchmarks"},
    {"devices", moex::cli::cmdDevices, "devices                                   CUDA/NCCL in this build and on this machine"},
};

void printHelp(std::FILE* to)
{
    std::fprintf(to, "moex-cli — explore Mixture-of-Experts deployments from the command line\n\nCommands:\n");
    for (const auto& c : kCommands)
        std::fprintf(to, "  moex-cli %s\n", c.usage);
    std::fprintf(to, "  moex-cli --version\n");
    std::fprintf(to, "\nExit codes: 0 success, 2 bad input (errors say FILE:LINE:COL), 1 internal failure.\n");
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        printHelp(stderr);
        return 2;
    }
    const std::string name = argv[1];
    // "moex-cli help CMD" and "moex-cli CMD --help": that command's usage lines.
    const auto commandHelp = [](const std::string& command) {
        bool known = false;
        for (const auto& c : kCommands)
            if (command == c.name) {
                std::printf("usage: moex-cli %s\n", c.usage);
                known = true;
            }
        return known;
    };
    if (name == "--version" || name == "-V") {
        std::printf("moex-cli %s\n", MOEX_VERSION);
        return 0;
    }
    if (name == "help" || name == "--help" || name == "-h") {
        if (argc < 3) {
            printHelp(stdout);
            return 0;
        }
        if (commandHelp(argv[2]))
            return 0;
        std::fprintf(stderr, "moex-cli help: error: unknown command '%s'\n", argv[2]);
        printHelp(stderr);
        return 2;
    }
    if (argc == 3 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h") && commandHelp(name))
        return 0;
    moex::cli::Argv rest(argv + 2, argv + argc);
    for (const auto& c : kCommands) {
        if (name != c.name)
            continue;
        try {
            const int code = c.run(rest);
            // Output to standard output (a summary, `--json -`, `-o -`) that did not reach it (a full
            // disk, a closed descriptor) is lost: an error, never exit 0.
            errno = 0;
            std::cout.flush();
            if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
                const int error = errno;
                std::cerr << "moex-cli " << name << ": error: cannot write to standard output"
                          << (error != 0 ? std::string(": ") + std::strerror(error) : std::string()) << '\n';
                return 2;
            }
            return code;
        } catch (const moex::InputError& e) {
            std::cerr << e.diagnostics().format();
            return 2;
        } catch (const moex::FileWriteError& e) {  // an output path the user gave cannot be written
            std::cerr << "moex-cli " << name << ": error: " << e.what() << '\n';
            return 2;
        } catch (const std::bad_alloc&) {  // not a bug: what was asked for needs more memory than there is
            std::cerr << "moex-cli " << name << ": error: out of memory (a smaller run: fewer tokens, layers or ranks)\n";
            return 2;
        } catch (const std::exception& e) {
            std::cerr << "moex-cli " << name << ": internal error: " << e.what() << '\n';
            return 1;
        }
    }
    std::vector<std::string> names;
    for (const auto& c : kCommands)
        names.emplace_back(c.name);
    std::string hint = moex::didYouMean(name, names);
    std::cerr << "moex-cli: error: unknown command '" << name << "'"
              << (hint.empty() ? std::string() : "; did you mean '" + hint + "'?") << " (moex-cli help lists them)\n";
    return 2;
}
