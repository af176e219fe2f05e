#include "engine/device_info.h"

#if defined(MOEX_HAVE_CUDA)
#include "engine/cuda/device_probe.h"
#endif

namespace moex {

DeviceInfo probeDevices()
{
    DeviceInfo info;
#if defined(MOEX_HAVE_CUDA)
    cuda::probe(info);
#else
    info.note = "built without CUDA (CPU-only build)";
#endif
    return info;
}

}  // namespace moex
