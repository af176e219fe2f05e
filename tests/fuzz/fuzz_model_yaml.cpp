// Model YAML files (samples/models).
#include "fuzz_common.h"
#include "model/model_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = moex::fuzz::asFile(moex::fuzz::bytes(data, size), ".yaml");
    return moex::fuzz::expectInputErrorOnly([&] { moex::loadModelFile(path); });
}
