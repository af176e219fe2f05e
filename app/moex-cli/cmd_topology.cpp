// moex-cli topology NAME [...]: a built-in topology written out as a custom YAML graph.
// moex-cli devices: what CUDA/NCCL this build has and which GPUs this machine offers.
#include "cli_args.h"
#include "commands.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#include "engine/device_info.h"
#include "topology/builtin_topologies.h"
#include "topology/topology_yaml.h"

#include <iostream>
#include <stdexcept>

namespace moex::cli {

int cmdTopology(const Argv& argv)
{
    Args args("topology", argv,
              {{"racks"}, {"nodes"}, {"gpus-per-node"}, {"nics-per-gpu"}, {"output", true, false, 'o'}});
    std::string names;
    for (const auto& n : builtinTopologyNames())
        names += (names.empty() ? "" : "|") + n;
    args.requirePositionals(1, 1, "moex-cli topology " + names + " [--racks N] [--nodes N] [--gpus-per-node N] [--nics-per-gpu N] [-o OUT]");
    TopologyParams p;
    p.builtin = args.positionals().front();
    p.racks = args.intValue("racks", 1, 1, 16);
    p.nodes = args.intValue("nodes", 1, 1, 128);
    p.gpus_per_node = args.intValue("gpus-per-node", 8, 1, 8);
    p.nics_per_gpu = args.intValue("nics-per-gpu", 1, 1, 4);
    Topology t;
    try {
        t = buildTopology(p);
    } catch (const std::invalid_argument& e) {
        throw InputError(Location{"moex-cli topology", 0, 0}, e.what());
    }
    const std::string yaml = "# " + p.builtin + " written out by: moex-cli topology " + p.builtin
        + " (loads like any custom topology)\n" + topologyToYaml(t);
    // A file moex could not read back (scenario files are bounded: common/yaml_reader.h) is not
    // written: the built-in form loads at any size.
    Diagnostics bounds;
    if (!withinYamlBounds(yaml, "the written-out topology", bounds)) {
        const std::string grow = p.builtin.rfind("hgx", 0) == 0 ? "nodes: " + std::to_string(p.nodes)
                                                                : "racks: " + std::to_string(p.racks);
        throw InputError(Location{"moex-cli topology", 0, 0},
                         "written out, " + p.builtin + " at this size is more than moex reads back from a YAML file ("
                             + bounds.items().front().message + "); a scenario takes it as a built-in: topology: {builtin: "
                             + p.builtin + ", " + grow + "}");
    }
    if (auto out = args.value("output"); out && *out != "-")
        writeFileAtomically(*out, yaml);
    else
        std::cout << yaml;
    return 0;
}

int cmdDevices(const Argv& argv)
{
    Args args("devices", argv, {});
    args.requirePositionals(0, 0, "moex-cli devices");
    const DeviceInfo info = probeDevices();
    std::cout << "CUDA backend: " << (info.cuda_built ? "built" : "not built") << '\n';
    std::cout << "NCCL:         ";
    if (info.nccl_built)
        std::cout << "built (version " << info.nccl_version / 10000 << '.' << (info.nccl_version / 100) % 100 << '.'
                  << info.nccl_version % 100 << ")\n";
    else
        std::cout << "not built\n";
    for (const auto& g : info.gpus)
        std::cout << "GPU " << g.index << ": " << g.name << " (sm_" << g.sm_major << g.sm_minor << ", "
                  << static_cast<int>(g.memory_gb + 0.5) << " GB)\n";
    if (info.gpus.empty())
        std::cout << "no usable GPU: " << info.note << '\n';
    return 0;
}

}  // namespace moex::cli
