// The moex-cli commands (DESIGN.md section 4). Each returns the process exit code:
// 0 success, 2 bad input (InputError, printed by main with its locations), 1 internal failure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace moex::cli {

using Argv = std::vector<std::string>;

int cmdValidate(const Argv& argv);
int cmdShow(const Argv& argv);
int cmdImportHf(const Argv& argv);
int cmdTopology(const Argv& argv);
int cmdDevices(const Argv& argv);
int cmdSimulate(const Argv& argv);
int cmdCompare(const Argv& argv);
int cmdBench(const Argv& argv);
int cmdLoadStats(const Argv& argv);
int cmdPlace(const Argv& argv);
int cmdRun(const Argv& argv);
int cmdCalibrate(const Argv& argv);
// compare --measured RUN.json: predicted (host-cpu) vs measured (a `run --json` of the CPU engine).
// calibrationFiles: none (the built-in guess), one, or two measured right before and after the run
// (the prediction is then the mean of the two, and each is shown).
int compareMeasured(const std::string& runFile, const std::vector<std::string>& calibrationFiles,
                    const std::optional<std::string>& jsonOut);

}  // namespace moex::cli
