// End-to-end check points: published throughputs of whole deployments, each set up as a scenario
// as closely as the publication states its conditions and run as `moex-cli simulate` runs it
// (placement fitted to earlier steps, the mean of the steps after). None of them was used to
// choose a calibration value: all are `check` points of `moex-cli bench fidelity`
// (docs/CALIBRATION.md, "End-to-end check points").
#pragma once

#include "sim/fidelity.h"

#include <string>
#include <vector>

namespace moex {

// The end-to-end target of issue 20: |error| at most 30% on check points.
inline constexpr double kEndToEndTarget = 0.30;
// The communication target: |error| at most 25% on every point.
inline constexpr double kCommunicationTarget = 0.25;

// Runs every end-to-end point with the models of `modelsDir` (samples/models) for `steps` steps,
// with the calibrations given (every deployment here is Hopper).
std::vector<FidelityPoint> runEndToEndFidelity(const std::string& modelsDir, int steps = 5,
                                               const FidelityCalibrations& calibrations = {});

}  // namespace moex
