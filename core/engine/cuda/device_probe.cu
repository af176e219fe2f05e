// CUDA device probe: the first CUDA translation unit, so CI compiles the CUDA path from the start.
#include "engine/cuda/device_probe.h"

#include <cuda_runtime.h>
#if defined(MOEX_HAVE_NCCL)
#include <nccl.h>
#endif

#include <string>

namespace moex::cuda {

namespace {

__global__ void touchKernel(int* out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *out = 42;
}

// Launches one tiny kernel and reads its result back: proves the device really runs our code.
bool launchWorks(std::string& why)
{
    int* d = nullptr;
    if (cudaError_t e = cudaMalloc(&d, sizeof(int)); e != cudaSuccess) {
        why = std::string("cudaMalloc: ") + cudaGetErrorString(e);
        return false;
    }
    touchKernel<<<1, 32>>>(d);
    int h = 0;
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess) {
        why = std::string("kernel launch: ") + cudaGetErrorString(e);
        return false;
    }
    if (h != 42) {
        why = "kernel ran but returned a wrong value";
        return false;
    }
    return true;
}

}  // namespace

void probe(DeviceInfo& info)
{
    info.cuda_built = true;
#if defined(MOEX_HAVE_NCCL)
    info.nccl_built = true;
    int v = 0;
    if (ncclGetVersion(&v) == ncclSuccess)
        info.nccl_version = v;
#endif
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        info.note = std::string("CUDA runtime: ") + cudaGetErrorString(e);
        return;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
            continue;
        info.gpus.push_back({i, prop.name, prop.major, prop.minor,
                             static_cast<double>(prop.totalGlobalMem) / 1e9});
    }
    if (count > 0) {
        std::string why;
        if (cudaSetDevice(0) != cudaSuccess || !launchWorks(why)) {
            info.note = why.empty() ? "cannot use device 0" : why;
            info.gpus.clear();
        }
    } else {
        info.note = "no CUDA device present";
    }
}

}  // namespace moex::cuda
