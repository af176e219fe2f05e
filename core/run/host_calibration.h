// Measuring this machine for the host-cpu topology (`moex-cli calibrate --backend cpu`): the CPU
// engine's own kernels timed on every core at once, so that the simulator can predict the engine
// (DESIGN.md section 6). What is measured, per thread with all threads busy:
//   expert curve   one expert FFN pass (gate, up, SwiGLU, down: engine/moe_layer.h ffnForward) per
//                  weight format at 1 .. 128 tokens, in microseconds per million weights; each
//                  thread cycles through experts of its own that together exceed the caches, so
//                  the weights stream from memory as they do in the engine
//   router         the fp32 gate GEMV and top-k (engine route()) in GFLOP/s
//   copy           rows copied (std::copy of floats) in GB/s
//   sync           one std::barrier across the threads
// The calibration shape (hidden 2048, expert 1024) is none of the samples' models, so predictions
// on them test the model rather than replay the calibration.
#pragma once

#include "sim/calibration.h"

#include <functional>
#include <string>

namespace moex {

struct HostCalibrationOptions {
    int threads = 0;     // 0: every core this process may use
    bool quick = false;  // fewer token counts, shorter timings, one longer shape (tests)
    std::function<void(const std::string&)> progress;  // one line per measurement
};

// Throws std::runtime_error when a measurement cannot run.
Calibration measureHostCalibration(const HostCalibrationOptions& options = {});

}  // namespace moex
