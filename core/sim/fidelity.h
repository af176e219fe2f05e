// Fidelity: every published communication measurement of FACTS.md section 2 set up as a scenario
// and predicted by the step model with the default calibration of its hardware generation, each
// tagged fit or check (docs/CALIBRATION.md).
//   moex-cli bench fidelity [--json OUT]
#pragma once

#include "sim/calibration.h"

#include <string>
#include <vector>

namespace moex {

struct FidelityPoint {
    std::string name;
    double measured = 0;
    double predicted = 0;
    std::string unit;     // "GB/s", "us" or "tok/s/GPU"
    std::string source;   // where the measurement was published
    // "fit": a value of the default calibration was chosen with this point in view; "check": no
    // calibration value was chosen on it (a held-out measurement the model must predict).
    std::string role = "fit";
    // "communication" (one all-to-all phase, target ±25%) or "end-to-end" (a deployment's
    // throughput, run/fidelity_e2e.h, target ±30%).
    std::string kind = "communication";
    // The term of the model that bounds the error, where one is known (docs/CALIBRATION.md).
    std::string bound_by{};
    [[nodiscard]] double error() const { return measured != 0 ? (predicted - measured) / measured : 0.0; }
};

// The calibrations the points are predicted with: one per generation the bench covers.
struct FidelityCalibrations {
    Calibration hopper = defaultCalibration(GpuArch::hopper);
    Calibration blackwell = defaultCalibration(GpuArch::blackwell);
    [[nodiscard]] const Calibration& of(GpuArch arch) const { return arch == GpuArch::blackwell ? blackwell : hopper; }
};

std::vector<FidelityPoint> runFidelity(const FidelityCalibrations& calibrations = {});

}  // namespace moex
