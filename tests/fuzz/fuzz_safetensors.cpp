// safetensors headers and data (TensorRT-LLM statistics, checkpoints).
#include "fuzz_common.h"
#include "placement/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly([&] {
        for (const auto& t : moex::parseSafetensors(moex::fuzz::bytes(data, size), "fuzz.safetensors"))
            if (t.dtype == "I64" || t.dtype == "I32")
                (void)moex::safetensorsInts(t, "fuzz.safetensors");
    });
}
