// vLLM EPLB load statistics, JSON Lines.
#include "fuzz_common.h"
#include "placement/load_stats_formats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly(
        [&] { moex::detail::parseVllmStats(moex::fuzz::bytes(data, size), "fuzz.jsonl"); });
}
