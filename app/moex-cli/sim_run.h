// Running a scenario through the simulator for a number of steps: shared by simulate, compare and bench.
#pragma once

#include "metrics/step_metrics.h"
#include "scenario/scenario.h"

#include <string>
#include <vector>

namespace moex::cli {

struct SimRun {
    Scenario scenario;
    StepMetrics last;               // the final step in full
    std::vector<StepTotals> steps;  // every step's totals
    StepTotals mean;                // mean over steps (the reported summary)
    std::vector<double> wall_us;    // simulator wall time per step
    double median_wall_us = 0;
    std::string calibration;        // name of the calibration used
};

SimRun runSimulation(const Scenario& s, int steps, long long seed, const std::string& calibrationFile);

// Node names of the topology, index -> name (for the JSON link list).
std::vector<std::string> nodeNames(const Scenario& s);

// Writes JSON to `target` ("-" = stdout) atomically.
void writeJson(const std::string& target, const std::string& text);

double median(std::vector<double> v);

}  // namespace moex::cli
