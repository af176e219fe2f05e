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
    // The --set flags that decide what a GPU holds (placement, model, topology, precision), e.g.
    // "--set placement.redundant_slots=128": what a capacity error blames, with the file.
    std::string capacityFlags = {};
};

void readWorkload(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void readPlacementPart(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void readGpus(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void readPrecisionAndEngine(const YAML::Node& root, Scenario& s, ScenarioChecks& c);
void checkCapacity(const YAML::Node& root, const Scenario& s, ScenarioChecks& c);

// Memory one GPU needs for its expert slots and the replicated non-expert weights, in bytes.
double weightBytesPerGpu(const Scenario& s, int slotsPerGpu);
// "weights do not fit: …" when the scenario's slots per GPU, model and precision need more than
// the GPU's usable memory; empty when they fit. checkCapacity and moex-cli place (--slots) ask it.
std::string capacityProblem(const Scenario& s);

}  // namespace moex
