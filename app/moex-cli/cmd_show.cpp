// moex-cli show FILE: parameters, expert bytes, topology and memory of a scenario, model or config.json.
#include "cli_args.h"
#include "commands.h"
#include "file_kind.h"
#include "format.h"

#include "model/hf_import.h"
#include "model/layer_pattern.h"
#include "model/model_yaml.h"
#include "scenario/scenario_checks.h"
#include "scenario/scenario_yaml.h"
#include "topology/topology_yaml.h"

#include <iostream>

namespace moex::cli {

namespace {

void printModel(const ModelSpec& m, DType weights)
{
    const double expertBytes = static_cast<double>(m.expertParams()) * bytesPerElement(weights);
    std::cout << "model            " << m.name << '\n'
              << "  parameters     " << humanCount(static_cast<double>(m.totalParams())) << " total, "
              << humanCount(static_cast<double>(m.activeParams())) << " active per token\n"
              << "  layers         " << m.num_layers << " (" << m.numMoeLayers() << " MoE";
    if (!m.moe_layers.empty())
        std::cout << ", first MoE layer " << m.moe_layers.front();
    std::cout << ")\n";
    if (!m.layer_kinds.empty()) {
        std::cout << "  stack          " << formatLayerPattern(m.layer_kinds) << " (";
        const char* sep = "";
        for (MixerKind k : {MixerKind::attention, MixerKind::sliding, MixerKind::linear, MixerKind::mamba, MixerKind::none})
            if (const int n = m.countMixer(k); n > 0) {
                std::cout << sep << n << ' ' << toString(k);
                sep = ", ";
            }
        std::cout << ")\n";
    }
    std::cout << "  experts        " << m.routed_experts << " routed, top-" << m.experts_per_token << ", "
              << m.shared_experts << " shared";
    if (m.expert_groups > 1)
        std::cout << ", " << m.expert_groups << " groups / " << m.groups_per_token << " per token";
    std::cout << ", " << toString(m.scoring) << " scoring\n"
              << "  one expert     " << humanCount(static_cast<double>(m.expertParams())) << " parameters = " << ffnMatrices(m.activation) << " × "
              << m.hidden_size << " × " << m.moe_intermediate_size << " (" << toString(m.activation) << "), " << humanBytes(expertBytes) << " in "
              << toString(weights) << " (" << static_cast<long long>(expertBytes) << " bytes)\n"
              << "  non-expert     " << humanCount(static_cast<double>(m.non_expert_params)) << " parameters in "
              << toString(m.non_expert_dtype) << ", attention " << toString(m.attention.kind) << '\n';
}

void printScenario(const Scenario& s)
{
    printModel(s.model, s.precision.weights);
    const Topology& t = s.topology;
    std::cout << "topology         " << (t.builtin.empty() ? t.name : t.builtin) << ": " << t.numGpus() << " × "
              << t.gpu.name << " in " << countOf(t.numDomains(), "NVLink domain") << ", " << t.count(NodeKind::nvswitch)
              << " NVSwitch chips, " << t.count(NodeKind::nic) << " NICs\n";
    std::cout << "workload         " << toString(s.workload.phase) << ", " << s.workload.tokens_per_gpu
              << " tokens per GPU per step, context " << s.workload.context_tokens;
    if (s.workload.context_cv > 0)
        std::cout << " (cv " << s.workload.context_cv << ")";
    std::cout << ", routing " << toString(s.workload.routing.kind) << '\n';
    const int slots = s.slotsPerGpu();
    std::cout << "placement        " << s.placement.strategy << ", " << countOf(slots, "expert slot") << " per GPU ("
              << s.model.routed_experts << " experts";
    if (!s.placement.explicit_slots)
        std::cout << " + " << s.placement.redundant_slots << " redundant";
    std::cout << ")\n";
    const double weights = weightBytesPerGpu(s, slots);
    const double usable = t.gpu.hbm_usable_gb * 1e9;
    const double kvPerSeq = s.model.cacheBytesPerSequence(s.workload.context_tokens, bytesPerElement(DType::bf16));
    std::cout << "memory per GPU   weights " << humanBytes(weights) << " of " << humanBytes(usable) << " usable, "
              << humanBytes(usable - weights) << " left; KV cache " << humanBytes(kvPerSeq) << " per sequence at "
              << s.workload.context_tokens << " tokens (bf16"
              << (s.model.countMixer(MixerKind::linear) + s.model.countMixer(MixerKind::mamba) > 0
                      ? std::string(", recurrent state ") + std::string(toString(s.model.state_dtype))
                      : std::string())
              << ")";
    if (kvPerSeq > 0 && usable > weights)
        std::cout << " → room for " << static_cast<long long>((usable - weights) / kvPerSeq) << " sequences";
    std::cout << '\n';
    std::cout << "precision        weights " << toString(s.precision.weights) << ", dispatch "
              << toString(s.precision.dispatch) << ", combine " << toString(s.precision.combine) << "; overlap "
              << toString(s.overlap) << "; a2a kernel " << toString(s.a2a_kernel) << "; engine " << toString(s.engine.backend) << '\n';
    if (!s.speeds.per_gpu.empty() || s.speeds.default_speed != 1.0) {
        std::cout << "GPU speeds       default " << fixed(s.speeds.default_speed, 2);
        for (const auto& [g, v] : s.speeds.per_gpu)
            std::cout << ", gpu" << g << " " << fixed(v, 2);
        std::cout << '\n';
    }
    std::cout << "status           valid, ready to simulate\n";
}

}  // namespace

int cmdShow(const Argv& argv)
{
    Args args("show", argv, {{"set", true, true}});
    args.requirePositionals(1, 1, "moex-cli show FILE [--set KEY=VALUE]...");
    const std::string& path = args.positionals().front();
    const InputFile file = readInputFile(path);
    const FileKind kind = file.kind;
    refuseOverrides(kind, path, !args.overrides().empty());
    switch (kind) {
    case FileKind::scenario:
        printScenario(loadScenarioText(file.text, path, args.overrides()));
        break;
    case FileKind::model: {
        const ModelSpec m = loadModelText(file.text, path);
        printModel(m, m.weight_dtype);
        break;
    }
    case FileKind::hf_config: {
        const ModelSpec m = importHfConfig(file.text, path);
        printModel(m, m.weight_dtype);
        break;
    }
    case FileKind::topology: {
        const Topology t = loadTopologyText(file.text, path);
        std::cout << "topology " << t.name << ": " << t.numGpus() << " × " << t.gpu.name << ", "
                  << countOf(t.numDomains(), "NVLink domain") << ", " << t.count(NodeKind::nvswitch) << " NVSwitch chips, "
                  << t.count(NodeKind::nic) << " NICs, " << t.links().size() << " directed links\n";
        break;
    }
    }
    return 0;
}

}  // namespace moex::cli
