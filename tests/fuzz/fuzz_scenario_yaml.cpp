// Scenario YAML (inline models and topologies included), as `validate` and the window read it.
#include "fuzz_common.h"
#include "scenario/scenario_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly(
        [&] { moex::loadScenarioText(std::string(moex::fuzz::bytes(data, size)), "fuzz.yaml"); });
}
