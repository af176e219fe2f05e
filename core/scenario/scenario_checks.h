// The parts of a scenario after model and topology: workload, placement, GPU speeds, precision,
// engine, and the cross-checks that need model and topology together (memory capacity).
#pragma once

#include "common/yaml_reader.h"
#include "scenario/scenario.h"

namespace moex {

struct ScenarioChecks {
    YamlReader& r;
    std::string baseDir;
    bool modelOk;  // model loaded: checks that need it may run
    bool topoOk;   // topology loaded
};

void readWorkload(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void readPlacementPart(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void readGpus(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void readPrecisionAndEngine(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void checkCapacity(const YAML::Node& root, const Scenario& s, ScenarioChecks& c);

// Memory one GPU needs for its expert slots and the replicated non-expert weights, in bytes.
double weightBytesPerGpu(const Scenario& s, int slotsPerGpu);

}  // namespace moex
