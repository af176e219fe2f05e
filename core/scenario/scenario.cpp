#include "scenario/scenario.h"

#include <filesystem>

namespace moex {

double GpuSpeeds::of(int gpu) const
{
    const auto it = per_gpu.find(gpu);
    return it == per_gpu.end() ? default_speed : it->second;
}

int Scenario::slotsPerGpu() const
{
    const int g = topology.numGpus();
    if (g <= 0)
        return 0;
    if (placement.explicit_slots)
        return placement.explicit_slots->maxSlotsPerGpu();
    const int total = model.routed_experts + placement.redundant_slots;
    return (total + g - 1) / g;
}

std::vector<FileRead> filesRead(const Scenario& s)
{
    std::vector<FileRead> files;
    const auto add = [&files](const char* role, const std::string& path) {
        if (!path.empty())
            files.push_back({role, path});
    };
    add("the scenario", s.file);
    if (s.model_source.kind == SourceRef::Kind::path || s.model_source.kind == SourceRef::Kind::hf_config)
        add("its model", s.model_source.path);
    if (s.topology_source.kind == SourceRef::Kind::path)
        add("its topology", s.topology_source.path);
    if (s.workload.routing.kind != RoutingKind::synthetic)
        add("its routing file", s.workload.routing.file);
    add("its calibration", s.calibration);
    add("its checkpoint", s.engine.checkpoint);
    return files;
}

std::optional<FileRead> inputNamed(const Scenario& s, const std::string& path)
{
    namespace fs = std::filesystem;
    for (const FileRead& f : filesRead(s)) {
        std::error_code ec;
        if (fs::equivalent(path, f.path, ec) && !ec)
            return f;
        // A folder read as a whole (a checkpoint's shards and index, a statistics folder): any file
        // in it, at any depth, by any name.
        if (!fs::is_directory(f.path, ec))
            continue;
        const fs::path folder = fs::canonical(f.path, ec);
        if (ec)
            continue;
        const fs::path target = fs::weakly_canonical(fs::absolute(path, ec), ec);
        if (ec)
            continue;
        auto t = target.begin();
        bool inside = true;
        for (auto d = folder.begin(); d != folder.end() && inside; ++d, ++t)
            inside = t != target.end() && *t == *d;
        if (inside && t != target.end())
            return FileRead{"a file of " + f.role + " folder", f.path};
    }
    return std::nullopt;
}

std::string_view toString(Overlap o)
{
    return o == Overlap::none ? "none" : "two-batch";
}

std::string_view toString(A2AKernel k)
{
    return k == A2AKernel::deepep ? "deepep" : "one-sided";
}

std::string_view toString(Backend b)
{
    switch (b) {
    case Backend::sim: return "sim";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
    case Backend::remote: return "remote";
    }
    return "sim";
}

}  // namespace moex
