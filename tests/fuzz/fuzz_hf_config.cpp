// Hugging Face config.json (import-hf).
#include "fuzz_common.h"
#include "model/hf_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly(
        [&] { moex::importHfConfig(std::string(moex::fuzz::bytes(data, size)), "config.json"); });
}
