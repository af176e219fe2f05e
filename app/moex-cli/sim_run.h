// Running a scenario through the simulator for a number of steps (simulate, compare, bench): the
// core run loop (run/run_loop.h) on the "sim" source, with the scenario and calibration kept.
#pragma once

#include "run/run_loop.h"
#include "scenario/scenario.h"

#include <string>
#include <vector>

namespace moex::cli {

using moex::median;

struct SimRun : RunResult {
    Scenario scenario;
    std::string calibration;  // name of the calibration used
};

SimRun runSimulation(const Scenario& s, int steps, long long seed, const std::string& calibrationFile);

// Node names of the topology, index -> name (for the JSON link list).
std::vector<std::string> nodeNames(const Scenario& s);

// The samples folder the benchmarks read ($MOEX_SAMPLES, else the source tree's samples/).
std::string samplesDir();

// What a `run --json` file records of the model the engine ran, in words ("Mixtral-8x7B: hidden
// 4096, experts 8 x 14336, top-2, bf16 weights"): `compare --measured` reads the scenario again
// and refuses it where this differs (the scenario or its model file changed since the run).
std::string runModelIdentity(const Scenario& s);

// Writes JSON to `target` ("-" = stdout) atomically.
void writeJson(const std::string& target, const std::string& text);

}  // namespace moex::cli
