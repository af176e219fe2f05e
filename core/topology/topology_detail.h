// Helpers shared by the topology sources (builders, routing, YAML); not part of the API.
#pragma once

#include "topology/builtin_topologies.h"
#include "topology/gpu_spec.h"
#include "topology/topology.h"

#include <string>
#include <vector>

namespace moex::detail {

std::vector<std::string> builtinGpuNames();
bool sameSpec(const GpuSpec& a, const GpuSpec& b);

// Builders behind buildTopology(); `p` is already validated.
Topology buildNvl72(const TopologyParams& p);
Topology buildHgx(const TopologyParams& p);
bool isNvl72(const std::string& key);
bool isHgx(const std::string& key);
Topology buildHostCpu(const TopologyParams& p);
bool isHostCpu(const std::string& key);

// Rail-optimised leaf/spine fabric over NICs grouped by rail (see builtin_fabric.cpp). Returns the
// number of 400 Gb/s-equivalent switch ports it used (for the switch power estimate).
double addRailFabric(Topology& t, const std::vector<std::vector<NodeId>>& nicsByRail, double nicGbs, int nicsPerLeaf);

// Latency defaults per link traversal. Order-of-magnitude figures, not measurements: calibration
// (DESIGN.md 5, step 3) refines them per hardware; YAML overrides them per link.
inline constexpr double kNvlinkLinkUs = 0.25;  // GPU <-> NVLink switch chip, each way
inline constexpr double kC2cLinkUs = 0.2;      // Grace <-> GPU over NVLink-C2C
inline constexpr double kPcieNicLinkUs = 1.0;  // GPU <-> NIC: PCIe plus the NIC's own processing
inline constexpr double kNetworkLinkUs = 0.6;  // NIC <-> leaf, leaf <-> spine (cable + switch)

// Power estimates (not published per part; order of magnitude for tokens/s per kW): an NVSwitch
// chip, a NIC, and an InfiniBand switch port per 400 Gb/s of attached capacity (a 64-port
// Quantum-2 switch draws about 1.1 kW in service, ~17 W a port). Switch ports are charged by use so
// that one HGX node does not carry a whole fabric's switches.
inline constexpr double kHopperNvswitchW = 100;
inline constexpr double kNvlink5SwitchChipW = 250;
inline constexpr double kConnectX7W = 25;
inline constexpr double kConnectX8W = 35;
inline constexpr double kIbPortW = 17;

}  // namespace moex::detail
