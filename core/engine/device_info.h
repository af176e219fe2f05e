// What accelerators this build and this machine offer; plain C++ so CPU-only builds link it too.
#pragma once

#include <string>
#include <vector>

namespace moex {

struct GpuDevice {
    int index = 0;
    std::string name;
    int sm_major = 0;
    int sm_minor = 0;
    double memory_gb = 0;
};

struct DeviceInfo {
    bool cuda_built = false;   // compiled with the CUDA backend
    bool nccl_built = false;   // compiled with NCCL
    int nccl_version = 0;      // e.g. 22803 for 2.28.3; 0 when not built
    std::vector<GpuDevice> gpus;
    std::string note;          // why no GPU is usable, when none is
};

DeviceInfo probeDevices();

}  // namespace moex
