// Routing traces, JSON Lines of {"layer", "experts"} records.
#include "fuzz_common.h"
#include "workload/trace_routing.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly([&] { moex::parseTokenTrace(moex::fuzz::bytes(data, size), "fuzz.jsonl"); });
}
