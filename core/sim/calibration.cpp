#include "sim/calibration.h"

#include "common/atomic_file.h"
#include "common/yaml_reader.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace moex {

Calibration defaultCalibration(GpuArch arch)
{
    Calibration c;
    if (arch == GpuArch::hopper) {
        // Fitted to: DeepEP intranode EP8 on H800 (153/158 GB/s of 200), NCCL all-to-all on H100
        // (370 of 450 GB/s busbw), DeepEP internode EP16-64 over CX7 (43-58 GB/s of ~50).
        c.name = "hopper-default";
        c.nvlink_efficiency = 0.70;
        c.network_efficiency = 0.96;
        c.dispatch_floor_us = 25;
        c.combine_floor_us = 35;
        c.gemm_efficiency = 0.70;
        c.gemm_tile_tokens = 64;
    } else {
        // Fitted to the GB200 one-sided all-to-all of TensorRT-LLM (tech blog 18): EP8 and EP64
        // at 2048 tokens (312/399 us dispatch, 323/372 us combine) and the small-batch floor.
        c.name = "blackwell-default";
        c.nvlink_efficiency = 0.56;
        c.network_efficiency = 0.96;
        c.dispatch_floor_us = 19;
        c.combine_floor_us = 31;
        c.gemm_efficiency = 0.70;
        c.gemm_tile_tokens = 128;
    }
    return c;
}

namespace {

// The numeric keys of a calibration file, in the order they are written, with their range: one
// list that reading, the accepted keys and writing all follow. `name` (text) and
// `gemm_tile_tokens` (integer, written after gemm_efficiency) are handled beside it.
struct NumericKey {
    const char* key;
    double Calibration::*field;
    double lo, hi;
};
constexpr double kUs = 1e5;  // microsecond fields: 0 .. 0.1 s
const NumericKey kNumericKeys[] = {
    {"nvlink_efficiency", &Calibration::nvlink_efficiency, 0.01, 1.0},
    {"network_efficiency", &Calibration::network_efficiency, 0.01, 1.0},
    {"pcie_efficiency", &Calibration::pcie_efficiency, 0.01, 1.0},
    {"dispatch_floor_us", &Calibration::dispatch_floor_us, 0.0, kUs},
    {"combine_floor_us", &Calibration::combine_floor_us, 0.0, kUs},
    {"ll_message_us", &Calibration::ll_message_us, 0.0, kUs},
    {"gemm_efficiency", &Calibration::gemm_efficiency, 0.01, 1.0},
    {"gemm_launch_us", &Calibration::gemm_launch_us, 0.0, kUs},
    {"hbm_efficiency", &Calibration::hbm_efficiency, 0.01, 1.0},
    {"attention_efficiency", &Calibration::attention_efficiency, 0.01, 1.0},
    {"activation_reserve_gb", &Calibration::activation_reserve_gb, 0.0, 1000.0},
};
constexpr const char* kTileKey = "gemm_tile_tokens";

}  // namespace

Calibration loadCalibrationFile(const std::string& path, const Calibration& base)
{
    Diagnostics diags;
    const std::string text = readFile(path, 1u << 20);
    auto node = parseYaml(text, path, diags);
    if (!node)
        throw InputError(diags);
    YamlReader r(path, diags);
    Calibration c = base;
    std::vector<std::string> keys = {"name", kTileKey};
    for (const NumericKey& k : kNumericKeys)
        keys.emplace_back(k.key);
    if (r.expectMap(*node, "calibration", keys)) {
        const YAML::Node& n = *node;
        if (auto v = r.getString(n, "name", false))
            c.name = *v;
        for (const NumericKey& k : kNumericKeys)
            if (auto v = r.getDouble(n, k.key, false, k.lo, k.hi))
                c.*k.field = *v;
        if (auto v = r.getInt(n, kTileKey, false, 1, 1024))
            c.gemm_tile_tokens = static_cast<int>(*v);
    }
    if (!diags.empty())
        throw InputError(diags);
    return c;
}

std::string calibrationToYaml(const Calibration& c)
{
    // yaml-cpp quotes the name when it needs it; numbers use the shortest text that reads back exactly.
    YAML::Emitter out;
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << c.name;
    for (const NumericKey& k : kNumericKeys) {
        const double v = c.*k.field;
        char text[40];
        for (int prec = 1; prec <= 17; ++prec) {
            std::snprintf(text, sizeof text, "%.*g", prec, v);
            if (std::strtod(text, nullptr) == v)
                break;
        }
        out << YAML::Key << k.key << YAML::Value << std::string(text);
        if (std::string_view(k.key) == "gemm_efficiency")
            out << YAML::Key << kTileKey << YAML::Value << c.gemm_tile_tokens;
    }
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

}  // namespace moex
