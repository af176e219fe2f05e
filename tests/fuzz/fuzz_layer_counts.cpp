// Per-layer expert counts files (matrices, expert_usage_by_layer, per-layer objects).
#include "fuzz_common.h"
#include "workload/trace_routing.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly(
        [&] { moex::parseLayerCounts(moex::fuzz::bytes(data, size), "fuzz.json", 0); });
}
