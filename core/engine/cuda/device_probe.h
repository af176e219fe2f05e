// Plain C++ entry points of the CUDA probe (no CUDA types cross this header).
#pragma once

#include "engine/device_info.h"

namespace moex::cuda {

// Fills gpus (or note) from the CUDA runtime, and nccl_version from NCCL when built with it.
void probe(DeviceInfo& info);

}  // namespace moex::cuda
