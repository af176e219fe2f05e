// Topology YAML files (custom graphs and built-in references, samples/topologies).
#include "fuzz_common.h"
#include "topology/topology_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string path = moex::fuzz::asFile(moex::fuzz::bytes(data, size), ".yaml");
    return moex::fuzz::expectInputErrorOnly([&] { moex::loadTopologyFile(path); });
}
