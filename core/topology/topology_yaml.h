// Topology YAML: either {builtin: NAME, racks/nodes/gpus_per_node/nics_per_gpu...} or a custom
// graph (gpu spec, nodes with kind/name/position/domain, links with capacity/latency).
#pragma once

#include "common/yaml_reader.h"
#include "topology/builtin_topologies.h"
#include "topology/topology.h"

#include <optional>
#include <string>

namespace moex {

// {builtin: NAME, racks: N, nodes: N, gpus_per_node: N, nics_per_gpu: N, nic_gbs: X, nvlink_gbs: X}
std::optional<TopologyParams> readTopologyParams(const YAML::Node& node, YamlReader& reader);
// A custom graph mapping (name, gpu, pxn, nodes, links).
std::optional<Topology> readCustomTopology(const YAML::Node& node, YamlReader& reader);
// Either of the two above (a mapping with 'builtin' is built-in; any other mapping is custom).
std::optional<Topology> readTopology(const YAML::Node& node, YamlReader& reader);

Topology loadTopologyFile(const std::string& path);  // throws InputError with every diagnostic
// The same from text already read (`file` names it in diagnostics).
Topology loadTopologyText(const std::string& text, const std::string& file);
// Custom-graph YAML of any topology: built-ins written out this way load like a custom file.
std::string topologyToYaml(const Topology& t);
// The {builtin: ...} mapping of params, as a YAML flow mapping (for scenario save).
std::string topologyParamsToYaml(const TopologyParams& p);

}  // namespace moex
