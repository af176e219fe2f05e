#include "sim/calibration.h"

#include "common/atomic_file.h"
#include "common/yaml_reader.h"

#include <cstdio>
#include <cstdlib>


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

Calibration loadCalibrationFile(const std::string& path, const Calibration& base)
{
    Diagnostics diags;
    const std::string text = readFile(path, 1u << 20);
    auto node = parseYaml(text, path, diags);
    if (!node)
        throw InputError(diags);
    YamlReader r(path, diags);
    Calibration c = base;
    const std::vector<std::string> keys = {"name", "nvlink_efficiency", "network_efficiency", "pcie_efficiency",
                                           "dispatch_floor_us", "combine_floor_us",
                                           "ll_message_us", "gemm_efficiency", "gemm_tile_tokens", "gemm_launch_us",
                                           "hbm_efficiency", "attention_efficiency", "activation_reserve_gb"};
    if (r.expectMap(*node, "calibration", keys)) {
        const YAML::Node& n = *node;
        if (auto v = r.getString(n, "name", false))
            c.name = *v;
        auto eff = [&](const char* key, double& field) {
            if (auto v = r.getDouble(n, key, false, 0.01, 1.0))
                field = *v;
        };
        auto us = [&](const char* key, double& field) {
            if (auto v = r.getDouble(n, key, false, 0.0, 1e5))
                field = *v;
        };
        eff("nvlink_efficiency", c.nvlink_efficiency);
        eff("network_efficiency", c.network_efficiency);
        eff("pcie_efficiency", c.pcie_efficiency);
        eff("gemm_efficiency", c.gemm_efficiency);
        eff("hbm_efficiency", c.hbm_efficiency);
        eff("attention_efficiency", c.attention_efficiency);
        us("dispatch_floor_us", c.dispatch_floor_us);
        us("combine_floor_us", c.combine_floor_us);
        us("ll_message_us", c.ll_message_us);
        us("gemm_launch_us", c.gemm_launch_us);
        if (auto v = r.getDouble(n, "activation_reserve_gb", false, 0.0, 1000.0))
            c.activation_reserve_gb = *v;
        if (auto v = r.getInt(n, "gemm_tile_tokens", false, 1, 1024))
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
    auto num = [&](const char* key, double v) {
        char text[40];
        for (int prec = 1; prec <= 17; ++prec) {
            std::snprintf(text, sizeof text, "%.*g", prec, v);
            if (std::strtod(text, nullptr) == v)
                break;
        }
        out << YAML::Key << key << YAML::Value << std::string(text);
    };
    num("nvlink_efficiency", c.nvlink_efficiency);
    num("network_efficiency", c.network_efficiency);
    num("pcie_efficiency", c.pcie_efficiency);
    num("dispatch_floor_us", c.dispatch_floor_us);
    num("combine_floor_us", c.combine_floor_us);
    num("ll_message_us", c.ll_message_us);
    num("gemm_efficiency", c.gemm_efficiency);
    out << YAML::Key << "gemm_tile_tokens" << YAML::Value << c.gemm_tile_tokens;
    num("gemm_launch_us", c.gemm_launch_us);
    num("hbm_efficiency", c.hbm_efficiency);
    num("attention_efficiency", c.attention_efficiency);
    num("activation_reserve_gb", c.activation_reserve_gb);
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

}  // namespace moex
