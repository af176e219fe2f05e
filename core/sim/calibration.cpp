#include "sim/calibration.h"

#include "common/atomic_file.h"
#include "common/number_text.h"
#include "common/yaml_reader.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace moex {

namespace {

// A CPU calibration for a machine nobody measured: about 10 GB/s of weights and 20 GFLOP/s per
// thread. Order of magnitude only; `moex-cli calibrate --backend cpu` measures the real curve.
CpuCalibration defaultCpu()
{
    CpuCalibration c;
    c.cpu = "unmeasured CPU";
    c.kernel = "unknown";
    c.cores = 1;
    const std::pair<const char*, double> formats[] = {{"f32", 4}, {"bf16", 2}, {"fp8", 1}, {"mxfp4", 0.625}};
    for (const auto& [name, bytes] : formats) {
        CpuCurve curve;
        for (double t : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0})
            curve.emplace_back(t, std::max(bytes * 1e6 / 10e3, 2.0 * t * 1e6 / 20e3));
        c.expert.emplace_back(name, std::move(curve));
    }
    c.router_gflops = 10;
    c.copy_gbs = 5;
    c.sync_us = 20;
    return c;
}

}  // namespace

std::optional<CpuCurve> CpuCalibration::curveFor(DType weights, int hidden, int inter) const
{
    std::string key = "bf16";
    switch (weights) {
    case DType::fp32: key = "f32"; break;
    case DType::bf16:
    case DType::fp16: key = "bf16"; break;
    case DType::fp8: key = "fp8"; break;
    case DType::mxfp4:
    case DType::nvfp4:
    case DType::int4: key = hidden % 32 == 0 && inter % 32 == 0 ? "mxfp4" : "bf16"; break;
    }
    const auto find = [&key](const CpuCurves& curves) -> const CpuCurve* {
        for (const auto& [name, curve] : curves)
            if (name == key && !curve.empty())
                return &curve;
        return nullptr;
    };
    const CpuCurve* first = find(expert);
    if (first == nullptr)
        return std::nullopt;
    CpuCurve out = *first;
    // The shapes that have this format's curve, rows lengthening (rho falling).
    std::vector<std::pair<double, const CpuCurve*>> shapes{{expert_shape.rho(), first}};
    for (const CpuShapeCurves& s : longer)
        if (const CpuCurve* curve = find(s.curves); curve != nullptr && s.shape.rho() < shapes.back().first)
            shapes.emplace_back(s.shape.rho(), curve);
    if (shapes.size() == 1 || hidden <= 0 || inter <= 0)
        return out;
    const double rho = CpuExpertShape{hidden, inter}.rho();
    if (rho >= shapes.front().first)
        return out;  // rows as short as the first shape's or shorter: its curve
    // The two shapes around rho, or the longest two beyond the longest (on to rho = 0 at most).
    std::size_t k = 1;
    while (k + 1 < shapes.size() && rho < shapes[k].first)
        ++k;
    const auto [rhoA, a] = shapes[k - 1];
    const auto [rhoB, b] = shapes[k];
    const double w = std::min((rhoA - rho) / (rhoA - rhoB), rhoA / (rhoA - rhoB));
    for (auto& [tokens, us] : out) {
        const double from = k == 1 ? us : cpuCurveUs(*a, tokens);
        const double at = from + w * (cpuCurveUs(*b, tokens) - from);
        us = std::max(at, 0.25 * us);  // an extrapolation never prices a weight at under a quarter of a measured one
    }
    return out;
}

double cpuCurveUs(const CpuCurve& curve, double tokens)
{
    if (curve.empty() || tokens <= 0)
        return 0.0;
    if (tokens <= curve.front().first || curve.size() == 1)
        return curve.size() == 1 ? curve.front().second * std::max(1.0, tokens / curve.front().first)
                                 : curve.front().second;
    std::size_t i = 1;
    while (i + 1 < curve.size() && curve[i].first < tokens)
        ++i;
    const auto& [t0, u0] = curve[i - 1];
    const auto& [t1, u1] = curve[i];
    const double slope = t1 > t0 ? (u1 - u0) / (t1 - t0) : 0.0;
    return std::max(0.0, u0 + slope * (tokens - t0));
}

Calibration defaultCalibration(GpuArch arch)
{
    Calibration c;
    if (arch == GpuArch::cpu) {
        // The CPU engine's ranks: no GEMM tiles, no launches, no NVLink; the CPU section carries
        // the rates (host-cpu is predicted by the CPU path of the simulator).
        c.name = "cpu-default";
        c.gemm_tile_tokens = 1;
        c.gemm_launch_us = 0;
        c.small_kernel_us = 0;
        c.dispatch_floor_us = 0;
        c.combine_floor_us = 0;
        c.activation_reserve_gb = 0;
        c.cpu = defaultCpu();
    } else if (arch == GpuArch::hopper) {
        // Fitted to: DeepEP intranode EP8 on H800 (153/158 GB/s of 200), NCCL all-to-all on H100
        // (370 of 450 GB/s busbw), DeepEP internode EP16-64 over CX7 (43-58 GB/s of ~50); the
        // per-message cost to DeepEP's low-latency dispatch at EP8-256 (77-194 us, 128 tokens).
        c.name = "hopper-default";
        c.nvlink_efficiency = 0.70;
        c.network_efficiency = 0.96;
        c.dispatch_floor_us = 25;
        c.combine_floor_us = 35;
        c.ll_message_us = 0.026;
        // DeepEP's normal kernels take Buffer.num_sms = 20 SMs (deep_ep/buffers/legacy.py) of an
        // H100/H800/H200's 132.
        c.overlap_sm_share = 0.85;  // 112 / 132
        // Two-batch overlap with low-latency kernels gains 1.255x at 256 tokens per GPU in
        // SGLang's decode ablation (LMSYS blog 2025-05-05, EP72 on H100): about 63% of each stage's
        // shorter side hides, not all of it (docs/CALIBRATION.md).
        c.ll_overlap_efficiency = 0.63;
        c.gemm_efficiency = 0.70;
        c.gemm_tile_tokens = 64;
    } else {
        // Fitted to the GB200 one-sided all-to-all of TensorRT-LLM (tech blog 18): EP8 and EP64
        // at 2048 tokens (312/399 us dispatch, 323/372 us combine) and the small-batch floor.
        // DeepEP's low-latency per-message cost has no Blackwell measurement: Hopper's value.
        c.name = "blackwell-default";
        c.nvlink_efficiency = 0.56;
        c.ll_message_us = 0.026;
        c.overlap_sm_share = 0.865;  // 128 / 148: 20 of a B200's 148 SMs (B300, 160 SMs: 0.875; one value per generation)
        c.ll_overlap_efficiency = 0.63;  // no Blackwell measurement: Hopper's value
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
    {"overlap_sm_share", &Calibration::overlap_sm_share, 0.01, 1.0},
    {"ll_overlap_efficiency", &Calibration::ll_overlap_efficiency, 0.0, 1.0},
    {"gemm_efficiency", &Calibration::gemm_efficiency, 0.01, 1.0},
    {"gemm_launch_us", &Calibration::gemm_launch_us, 0.0, kUs},
    {"small_kernel_us", &Calibration::small_kernel_us, 0.0, kUs},
    {"hbm_efficiency", &Calibration::hbm_efficiency, 0.01, 1.0},
    {"attention_efficiency", &Calibration::attention_efficiency, 0.01, 1.0},
    {"activation_reserve_gb", &Calibration::activation_reserve_gb, 0.0, 1000.0},
    {"power_comm_weight", &Calibration::power_comm_weight, 0.0, 1.0},
};
constexpr const char* kTileKey = "gemm_tile_tokens";
constexpr const char* kCpuKey = "cpu";
const std::vector<std::string> kCpuKeys{"model", "kernel", "cores", "router_gflops", "copy_gbs", "sync_us",
                                        "expert_us_per_mweight", "expert_shape", "expert_longer",
                                        "expert_long_us_per_mweight", "expert_long_shape"};
const std::vector<std::string> kCpuFormats{"f32", "bf16", "fp8", "mxfp4"};

// Per format, a list of [tokens, us] points, tokens rising.
void readCurves(const YAML::Node& curves, const std::string& key, YamlReader& r, CpuCurves& out)
{
    if (!r.expectMap(curves, key, kCpuFormats))
        return;
    out.clear();
    for (const auto& item : curves) {
        if (!item.first.IsScalar())
            continue;  // expectMap said so ("keys of ... must be plain names")
        const std::string name = item.first.Scalar();
        const YAML::Node& list = item.second;
        CpuCurve curve;
        if (!list.IsSequence() || list.size() == 0) {
            r.error(list, "'" + name + "' must be a non-empty list of [tokens, microseconds] points");
            continue;
        }
        for (const auto& point : list) {
            if (!point.IsSequence() || point.size() != 2) {
                r.error(point, "a point of '" + name + "' must be [tokens, microseconds]");
                continue;
            }
            const auto t = r.asDouble(point[0], "tokens", 1, 1e6);
            const auto us = r.asDouble(point[1], "microseconds per million weights", 1e-3, 1e9);
            if (!t || !us)
                continue;
            if (!curve.empty() && *t <= curve.back().first) {
                r.error(point[0], "tokens must rise along '" + name + "' (" + std::to_string(*t) + " after "
                                      + std::to_string(curve.back().first) + ")");
                continue;
            }
            curve.emplace_back(*t, *us);
        }
        out.emplace_back(name, std::move(curve));
    }
}

// [hidden, inter] of the expert a set of curves was measured on.
void readShape(const YAML::Node& n, const std::string& key, YamlReader& r, CpuExpertShape& out)
{
    if (!n.IsSequence() || n.size() != 2) {
        r.error(n, "'" + key + "' must be [hidden, inter], the expert's dimensions the curves were measured at");
        return;
    }
    const auto h = r.asInt(n[0], "hidden", 1, 1 << 20);
    const auto i = r.asInt(n[1], "inter", 1, 1 << 20);
    if (h && i)
        out = {static_cast<int>(*h), static_cast<int>(*i)};
}

void readCpu(const YAML::Node& n, YamlReader& r, CpuCalibration& c)
{
    if (!r.expectMap(n, "cpu calibration", kCpuKeys))
        return;
    if (auto v = r.getString(n, "model", false))
        c.cpu = *v;
    if (auto v = r.getString(n, "kernel", false))
        c.kernel = *v;
    if (auto v = r.getInt(n, "cores", true, 1, 4096))
        c.cores = static_cast<int>(*v);
    if (auto v = r.getDouble(n, "router_gflops", true, 1e-3, 1e6))
        c.router_gflops = *v;
    if (auto v = r.getDouble(n, "copy_gbs", true, 1e-3, 1e5))
        c.copy_gbs = *v;
    if (auto v = r.getDouble(n, "sync_us", false, 0, kUs))
        c.sync_us = *v;
    if (!YamlReader::has(n, "expert_us_per_mweight")) {
        r.error(n, "missing required key 'expert_us_per_mweight' (per format, a list of [tokens, us] points)");
        return;
    }
    // One measurement: nothing of the base's curves or shapes is kept.
    c.expert_shape = {};
    c.longer.clear();
    readCurves(n["expert_us_per_mweight"], "expert_us_per_mweight", r, c.expert);
    if (YamlReader::has(n, "expert_shape"))
        readShape(n["expert_shape"], "expert_shape", r, c.expert_shape);
    const bool oneLonger = YamlReader::has(n, "expert_long_us_per_mweight");  // files before expert_longer
    if (oneLonger != YamlReader::has(n, "expert_long_shape")) {
        r.error(n, "'expert_long_us_per_mweight' and 'expert_long_shape' go together (the curves and the shape they were measured at)");
        return;
    }
    if (oneLonger && YamlReader::has(n, "expert_longer")) {
        r.error(n, "'expert_longer' replaces 'expert_long_us_per_mweight' and 'expert_long_shape': give one of them");
        return;
    }
    const auto add = [&](const YAML::Node& shapeNode, const YAML::Node& curvesNode, const std::string& curvesKey) {
        CpuShapeCurves s{{0, 0}, {}};
        readShape(shapeNode, "shape", r, s.shape);
        readCurves(curvesNode, curvesKey, r, s.curves);
        if (s.shape.hidden <= 0)
            return;
        const double before = c.longer.empty() ? c.expert_shape.rho() : c.longer.back().shape.rho();
        if (!(s.shape.rho() < before)) {
            r.error(shapeNode, "each longer shape's rows must be longer than the shape's before it: (2 / hidden + 1 / inter) / 3 smaller");
            return;
        }
        c.longer.push_back(std::move(s));
    };
    if (oneLonger)
        add(n["expert_long_shape"], n["expert_long_us_per_mweight"], "expert_long_us_per_mweight");
    if (YamlReader::has(n, "expert_longer")) {
        const YAML::Node& list = n["expert_longer"];
        if (!list.IsSequence()) {
            r.error(list, "'expert_longer' must be a list of {shape: [hidden, inter], us_per_mweight: {format: [[tokens, us], ...]}}");
            return;
        }
        for (const auto& entry : list) {
            if (!r.expectMap(entry, "expert_longer entry", {"shape", "us_per_mweight"}))
                continue;
            if (!YamlReader::has(entry, "shape") || !YamlReader::has(entry, "us_per_mweight")) {
                r.error(entry, "an 'expert_longer' entry needs 'shape' and 'us_per_mweight'");
                continue;
            }
            add(entry["shape"], entry["us_per_mweight"], "us_per_mweight");
        }
    }
}

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
    std::vector<std::string> keys = {"name", kTileKey, kCpuKey};
    for (const NumericKey& k : kNumericKeys)
        keys.emplace_back(k.key);
    if (r.expectMap(*node, "calibration", keys)) {
        const YAML::Node& n = *node;
        if (auto v = r.getName(n, "name", false))
            c.name = *v;
        for (const NumericKey& k : kNumericKeys)
            if (auto v = r.getDouble(n, k.key, false, k.lo, k.hi))
                c.*k.field = *v;
        if (auto v = r.getInt(n, kTileKey, false, 1, 1024))
            c.gemm_tile_tokens = static_cast<int>(*v);
        if (YamlReader::has(n, kCpuKey))
            readCpu(n[kCpuKey], r, c.cpu);
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
        out << YAML::Key << k.key << YAML::Value << shortestNumber(c.*k.field);
        if (std::string_view(k.key) == "gemm_efficiency")
            out << YAML::Key << kTileKey << YAML::Value << c.gemm_tile_tokens;
    }
    if (c.cpu.cores > 0) {
        const CpuCalibration& cpu = c.cpu;
        out << YAML::Key << kCpuKey << YAML::Value << YAML::BeginMap;
        out << YAML::Key << "model" << YAML::Value << cpu.cpu;
        out << YAML::Key << "kernel" << YAML::Value << cpu.kernel;
        out << YAML::Key << "cores" << YAML::Value << cpu.cores;
        out << YAML::Key << "router_gflops" << YAML::Value << shortestNumber(cpu.router_gflops);
        out << YAML::Key << "copy_gbs" << YAML::Value << shortestNumber(cpu.copy_gbs);
        out << YAML::Key << "sync_us" << YAML::Value << shortestNumber(cpu.sync_us);
        const auto curves = [&out](const char* key, const CpuCurves& all) {
            out << YAML::Key << key << YAML::Value << YAML::BeginMap;
            for (const auto& [name, curve] : all) {
                out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginSeq;
                for (const auto& [t, us] : curve)
                    out << YAML::Flow << YAML::BeginSeq << shortestNumber(t) << shortestNumber(us) << YAML::EndSeq;
                out << YAML::EndSeq;
            }
            out << YAML::EndMap;
        };
        const auto shape = [&out](const char* key, const CpuExpertShape& s) {
            out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq << s.hidden << s.inter << YAML::EndSeq;
        };
        curves("expert_us_per_mweight", cpu.expert);
        shape("expert_shape", cpu.expert_shape);
        if (!cpu.longer.empty()) {
            out << YAML::Key << "expert_longer" << YAML::Value << YAML::BeginSeq;
            for (const CpuShapeCurves& s : cpu.longer) {
                out << YAML::BeginMap;
                shape("shape", s.shape);
                curves("us_per_mweight", s.curves);
                out << YAML::EndMap;
            }
            out << YAML::EndSeq;
        }
        out << YAML::EndMap;
    }
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

}  // namespace moex
