// Scenario saving: YAML that loads back into an equal scenario; paths written relative to the file.
#include "common/atomic_file.h"
#include "common/number_text.h"
#include "model/model_yaml.h"
#include "scenario/scenario_yaml.h"
#include "topology/topology_yaml.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

namespace moex {

namespace fs = std::filesystem;

namespace {

std::string relativeTo(const std::string& path, const std::string& dir)
{
    if (dir.empty())
        return path;
    std::error_code ec;
    const fs::path rel = fs::path(path).lexically_relative(fs::path(dir));
    return (ec || rel.empty()) ? path : rel.string();
}

void emitSlots(YAML::Emitter& out, const LayerPlacement& layer)
{
    out << YAML::BeginSeq;
    for (const auto& g : layer.gpu_slots) {
        out << YAML::Flow << YAML::BeginSeq;
        for (ExpertId e : g)
            out << e.value;
        out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
}

bool sameLayout(const Placement& p)
{
    for (const auto& l : p.layers)
        if (l.gpu_slots != p.layers.front().gpu_slots || l.shares != p.layers.front().shares)
            return false;
    return true;
}

}  // namespace

std::string scenarioToYaml(const Scenario& s, const std::string& dir)
{
    YAML::Emitter out;
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << s.name;

    out << YAML::Key << "model" << YAML::Value;
    switch (s.model_source.kind) {
    case SourceRef::Kind::path:
        out << relativeTo(s.model_source.path, dir);
        break;
    case SourceRef::Kind::hf_config:
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "hf_config" << YAML::Value
            << relativeTo(s.model_source.path, dir) << YAML::EndMap;
        break;
    default:
        out << YAML::Load(modelToYaml(s.model));
        break;
    }

    out << YAML::Key << "topology" << YAML::Value;
    switch (s.topology_source.kind) {
    case SourceRef::Kind::path:
        out << relativeTo(s.topology_source.path, dir);
        break;
    case SourceRef::Kind::builtin:
        out << YAML::Flow << YAML::Load(topologyParamsToYaml(s.topology_params));
        break;
    default:
        out << YAML::Load(topologyToYaml(s.topology));
        break;
    }

    const Workload& w = s.workload;
    out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "phase" << YAML::Value << std::string(toString(w.phase));
    out << YAML::Key << "tokens_per_gpu" << YAML::Value << w.tokens_per_gpu;
    out << YAML::Key << "context_tokens" << YAML::Value << w.context_tokens;
    if (w.context_cv > 0)
        out << YAML::Key << "context_cv" << YAML::Value << shortestNumber(w.context_cv);
    out << YAML::Key << "routing" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "kind" << YAML::Value << std::string(toString(w.routing.kind));
    if (w.routing.kind == RoutingKind::synthetic) {
        out << YAML::Key << "skew" << YAML::Value << shortestNumber(w.routing.skew);
        out << YAML::Key << "hot_experts" << YAML::Value << shortestNumber(w.routing.hot_experts);
        out << YAML::Key << "coactivation_groups" << YAML::Value << w.routing.coactivation_groups;
        out << YAML::Key << "drift" << YAML::Value << shortestNumber(w.routing.drift);
    }
    // Written whatever the kind: a file set before the kind that reads it (two --set edits) survives.
    if (!w.routing.file.empty())
        out << YAML::Key << "file" << YAML::Value << relativeTo(w.routing.file, dir);
    if (w.routing.layer_cycling)
        out << YAML::Key << "layer_cycling" << YAML::Value << true;
    // The seed whatever the kind too: a switch from a replayed file back to the generator keeps it.
    out << YAML::Key << "seed" << YAML::Value << w.routing.seed;
    out << YAML::EndMap << YAML::EndMap;

    const PlacementSpec& p = s.placement;
    out << YAML::Key << "placement" << YAML::Value << YAML::BeginMap;
    if (p.explicit_slots) {
        out << YAML::Key << "strategy" << YAML::Value << "explicit";
        if (sameLayout(*p.explicit_slots)) {
            out << YAML::Key << "slots" << YAML::Value;
            emitSlots(out, p.explicit_slots->layers.front());
        } else {
            out << YAML::Key << "layers" << YAML::Value << YAML::BeginSeq;
            for (const auto& l : p.explicit_slots->layers)
                emitSlots(out, l);
            out << YAML::EndSeq;
        }
        const auto& shares = p.explicit_slots->layers.front().shares;
        if (!shares.empty()) {
            out << YAML::Key << "shares" << YAML::Value << YAML::BeginSeq;
            for (const auto& row : shares) {
                out << YAML::Flow << YAML::BeginSeq;
                for (double v : row)
                    out << shortestNumber(v);
                out << YAML::EndSeq;
            }
            out << YAML::EndSeq;
        }
    } else {
        out << YAML::Key << "strategy" << YAML::Value << p.strategy;
        out << YAML::Key << "redundant_slots" << YAML::Value << p.redundant_slots;
        if (p.strategy == "search")
            out << YAML::Key << "budget_ms" << YAML::Value << shortestNumber(p.budget_ms);
    }
    if (p.load_steps != kDefaultLoadSteps)
        out << YAML::Key << "load_steps" << YAML::Value << p.load_steps;
    out << YAML::EndMap;

    if (s.speeds.default_speed != 1.0 || !s.speeds.per_gpu.empty()) {
        out << YAML::Key << "gpus" << YAML::Value << YAML::BeginMap << YAML::Key << "speed" << YAML::Value
            << YAML::Flow << YAML::BeginMap;
        out << YAML::Key << "default" << YAML::Value << shortestNumber(s.speeds.default_speed);
        for (const auto& [g, v] : s.speeds.per_gpu)
            out << YAML::Key << ("gpu" + std::to_string(g)) << YAML::Value << shortestNumber(v);
        out << YAML::EndMap << YAML::EndMap;
    }

    out << YAML::Key << "precision" << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (s.precision_weights_set)
        out << YAML::Key << "weights" << YAML::Value << std::string(toString(s.precision.weights));
    out << YAML::Key << "dispatch" << YAML::Value << std::string(toString(s.precision.dispatch));
    out << YAML::Key << "combine" << YAML::Value << std::string(toString(s.precision.combine));
    out << YAML::EndMap;
    out << YAML::Key << "overlap" << YAML::Value << std::string(toString(s.overlap));
    if (s.a2a_kernel != A2AKernel::deepep)
        out << YAML::Key << "a2a_kernel" << YAML::Value << std::string(toString(s.a2a_kernel));
    out << YAML::Key << "engine" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "backend" << YAML::Value << std::string(toString(s.engine.backend));
    if (!s.engine.host.empty())
        out << YAML::Key << "host" << YAML::Value << s.engine.host;
    if (s.engine.ranks != 1)
        out << YAML::Key << "ranks" << YAML::Value << s.engine.ranks;
    if (!s.engine.layers.empty()) {
        out << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (int d : s.engine.layers)
            out << d;
        out << YAML::EndSeq;
    }
    if (s.engine.weights != EngineWeights::automatic)
        out << YAML::Key << "weights" << YAML::Value << (s.engine.weights == EngineWeights::own ? "own" : "shared");
    if (s.engine.gemm != EngineGemm::automatic)
        out << YAML::Key << "gemm" << YAML::Value << (s.engine.gemm == EngineGemm::engine ? "engine" : "openblas");
    if (s.engine.tokens > 0)
        out << YAML::Key << "tokens" << YAML::Value << s.engine.tokens;
    if (s.engine.seed != 1)
        out << YAML::Key << "seed" << YAML::Value << s.engine.seed;
    if (s.engine.workload_routing)
        out << YAML::Key << "routing" << YAML::Value << "workload";
    if (s.engine.memory_gb > 0)
        out << YAML::Key << "memory_gb" << YAML::Value << s.engine.memory_gb;
    if (!s.engine.checkpoint.empty())
        out << YAML::Key << "checkpoint" << YAML::Value << relativeTo(s.engine.checkpoint, dir);
    out << YAML::EndMap;
    if (!s.calibration.empty())
        out << YAML::Key << "calibration" << YAML::Value << relativeTo(s.calibration, dir);
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

std::string scenarioToYaml(const Scenario& s)
{
    const std::string dir = s.file.empty() ? std::string() : fs::path(s.file).parent_path().string();
    return scenarioToYaml(s, dir);
}

void saveScenarioFile(const Scenario& s, const std::string& path)
{
    const std::string dir = fs::absolute(fs::path(path)).parent_path().string();
    writeFileAtomically(path, scenarioToYaml(s, dir));
}

}  // namespace moex
