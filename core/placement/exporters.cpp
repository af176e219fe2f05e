#include "placement/exporters.h"

#include "placement/balance.h"
#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "common/number_text.h"
#include "common/plural.h"

#include <algorithm>
#include <stdexcept>

namespace moex {

namespace {

constexpr std::size_t kMaxProblems = 20;

void appendInts(std::string& out, const std::vector<int>& v, const char* sep)
{
    out += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0)
            out += sep;
        out += std::to_string(v[i]);
    }
    out += ']';
}

std::vector<int> gpuRow(const std::vector<ExpertId>& slots)
{
    std::vector<int> out;
    out.reserve(slots.size());
    for (ExpertId e : slots)
        out.push_back(e.value);
    return out;
}

bool sameSharesEverywhere(const Placement& p)
{
    return std::all_of(p.layers.begin(), p.layers.end(),
                       [&](const LayerPlacement& l) { return l.shares == p.layers.front().shares; });
}

std::string nativeYaml(const Placement& p, const ModelSpec& model)
{
    const int G = p.numGpus();
    std::string out = "# moex placement for " + model.name + ": " + std::to_string(p.numLayers()) + " MoE layers, "
                      + std::to_string(G) + " GPUs. Goes into a scenario as its 'placement:' part.\n";
    out += "placement:\n  strategy: explicit\n  layers:\n";
    for (int l = 0; l < p.numLayers(); ++l) {
        const auto& layer = p.layers[static_cast<std::size_t>(l)];
        out += "    # MoE layer " + std::to_string(l) + " = decoder layer "
               + std::to_string(model.moe_layers[static_cast<std::size_t>(l)]) + "\n";
        for (int g = 0; g < layer.numGpus(); ++g) {
            out += g == 0 ? "    - - " : "      - ";
            appendInts(out, gpuRow(layer.gpu_slots[static_cast<std::size_t>(g)]), ", ");
            out += "  # GPU " + std::to_string(g) + "\n";
        }
    }
    const auto& shares = p.layers.front().shares;
    if (!shares.empty()) {
        out += "  shares:\n";
        for (const auto& row : shares) {
            out += "    - [";
            for (std::size_t k = 0; k < row.size(); ++k)
                out += (k > 0 ? ", " : "") + shortestNumber(row[k]);
            out += "]\n";
        }
    }
    return out;
}

std::string sglangJson(const Placement& p, const ModelSpec& model)
{
    const int R = p.layers.front().numSlots();
    std::vector<int> trivial(static_cast<std::size_t>(R));
    for (int s = 0; s < R; ++s)
        trivial[static_cast<std::size_t>(s)] = s % p.num_experts;
    std::vector<int> ordinal(static_cast<std::size_t>(model.num_layers), -1);
    for (int m = 0; m < model.numMoeLayers(); ++m)
        ordinal[static_cast<std::size_t>(model.moe_layers[static_cast<std::size_t>(m)])] = m;

    std::string out = "{\"physical_to_logical_map\": [\n";
    for (int d = 0; d < model.num_layers; ++d) {
        const int m = ordinal[static_cast<std::size_t>(d)];
        appendInts(out, m >= 0 ? p.layers[static_cast<std::size_t>(m)].phy2log() : trivial, ",");
        out += d + 1 < model.num_layers ? ",\n" : "\n";
    }
    out += "]}\n";
    return out;
}

int mtpLayersToWrite(const ModelSpec& model, const ExportOptions& options)
{
    return options.mtp_layers >= 0 ? options.mtp_layers : model.mtp_layers;
}

std::string trtllmYaml(const Placement& p, const ModelSpec& model, const ExportOptions& options)
{
    const int R = p.layers.front().numSlots();
    std::string out = "# TensorRT-LLM MoE load balancer (moe_config.load_balancer) for " + model.name + ", "
                      + std::to_string(p.numGpus()) + " EP ranks; written by moex. Static placement.\n";
    out += "num_slots: " + std::to_string(R) + "\n";
    out += "initial_global_assignments:\n";
    for (int m = 0; m < p.numLayers(); ++m) {
        out += "  " + std::to_string(model.moe_layers[static_cast<std::size_t>(m)]) + ": ";
        appendInts(out, p.layers[static_cast<std::size_t>(m)].phy2log(), ", ");
        out += '\n';
    }
    const int mtp = mtpLayersToWrite(model, options);
    for (int i = 0; i < mtp; ++i) {
        out += "  " + std::to_string(model.num_layers + i) + ": ";
        appendInts(out, p.layers.back().phy2log(), ", ");
        out += "  # MTP layer " + std::to_string(i) + ": the last MoE layer's assignment\n";
    }
    out += "layer_updates_per_iter: 0\n";
    return out;
}

std::string vllmAscendJson(const Placement& p)
{
    const int G = p.numGpus();
    std::string out = "{\"moe_layer_count\": " + std::to_string(p.numLayers()) + ",\n \"layer_list\": [\n";
    for (int m = 0; m < p.numLayers(); ++m) {
        const auto& layer = p.layers[static_cast<std::size_t>(m)];
        out += "  {\"layer_id\": " + std::to_string(m) + ", \"device_count\": " + std::to_string(G)
               + ", \"device_list\": [\n";
        for (int g = 0; g < G; ++g) {
            out += "    {\"device_id\": " + std::to_string(g) + ", \"device_expert\": ";
            appendInts(out, gpuRow(layer.gpu_slots[static_cast<std::size_t>(g)]), ",");
            out += g + 1 < G ? "},\n" : "}\n";
        }
        out += m + 1 < p.numLayers() ? "  ]},\n" : "  ]}\n";
    }
    out += " ]}\n";
    return out;
}

// EPLB tensors from a placement: replicas of an expert in slot order (rank = order of appearance).
EplbResult eplbTensors(const Placement& p)
{
    EplbResult r;
    r.num_layers = p.numLayers();
    r.num_experts = p.num_experts;
    r.num_replicas = p.layers.front().numSlots();
    int maxCnt = 1;
    for (const auto& layer : p.layers) {
        r.phy2log.push_back(layer.phy2log());
        r.logcnt.push_back(layer.replicaCounts(p.num_experts));
        maxCnt = std::max(maxCnt, *std::max_element(r.logcnt.back().begin(), r.logcnt.back().end()));
    }
    for (std::size_t l = 0; l < r.phy2log.size(); ++l) {
        std::vector<std::vector<int>> rows(static_cast<std::size_t>(p.num_experts));
        for (std::size_t s = 0; s < r.phy2log[l].size(); ++s)
            rows[static_cast<std::size_t>(r.phy2log[l][s])].push_back(static_cast<int>(s));
        for (auto& row : rows)
            row.resize(static_cast<std::size_t>(maxCnt), -1);
        r.log2phy.push_back(std::move(rows));
    }
    return r;
}

}  // namespace

std::string_view toString(ExportFormat f)
{
    switch (f) {
    case ExportFormat::native: return "native";
    case ExportFormat::sglang: return "sglang";
    case ExportFormat::trtllm: return "trtllm";
    case ExportFormat::vllm_ascend: return "vllm-ascend";
    case ExportFormat::eplb: return "eplb";
    }
    return "?";
}

const std::vector<ExportFormat>& allExportFormats()
{
    static const std::vector<ExportFormat> all = {ExportFormat::native, ExportFormat::sglang, ExportFormat::trtllm,
                                                  ExportFormat::vllm_ascend, ExportFormat::eplb};
    return all;
}

ExportFormat exportFormatFromString(std::string_view name)
{
    std::string known;
    for (ExportFormat f : allExportFormats()) {
        if (toString(f) == name)
            return f;
        known += (known.empty() ? "" : ", ") + std::string(toString(f));
    }
    throw std::invalid_argument("unknown export format '" + std::string(name) + "' (known: " + known + ")");
}

bool exportNeedsDistinctReplicas(ExportFormat f)
{
    return f == ExportFormat::vllm_ascend;
}

std::vector<std::string> exportProblems(const Placement& p, const ModelSpec& model, ExportFormat fmt,
                                        const ExportOptions& options)
{
    std::vector<std::string> problems;
    const int E = model.routed_experts;
    if (p.num_experts != E)
        problems.push_back("the placement is for " + std::to_string(p.num_experts) + " experts, the model "
                           + model.name + " has " + std::to_string(E));
    if (p.numLayers() != model.numMoeLayers())
        problems.push_back("the placement has " + std::to_string(p.numLayers()) + " layers, the model has "
                           + std::to_string(model.numMoeLayers()) + " MoE layers (one placement layer each)");
    for (std::size_t i = 0; i < model.moe_layers.size(); ++i) {
        const int d = model.moe_layers[i];
        if (d < 0 || d >= model.num_layers || (i > 0 && d <= model.moe_layers[i - 1])) {
            problems.push_back("the model's MoE layer indices must ascend within 0.." + std::to_string(model.num_layers - 1)
                               + " (entry " + std::to_string(i) + " is " + std::to_string(d) + ")");
            break;
        }
    }
    if (!problems.empty())
        return problems;
    if (p.layers.empty())
        return {"nothing to export: the model has no MoE layers"};
    const int G = p.numGpus();
    if (G == 0)
        return {"the placement has no GPUs"};
    for (const auto& s : checkPlacement(p, E, G))
        problems.push_back("MoE " + s);
    if (fmt == ExportFormat::native) {
        if (!sameSharesEverywhere(p))
            problems.push_back("replica shares differ between MoE layers; the native format holds one shares table "
                               "for all layers");
    } else {
        const int R0 = p.layers.front().numSlots();
        for (int l = 0; l < p.numLayers(); ++l) {
            const auto& layer = p.layers[static_cast<std::size_t>(l)];
            const int R = layer.numSlots();
            const std::string where = "MoE layer " + std::to_string(l) + ": ";
            if (layer.numGpus() != G)
                continue;  // checkPlacement reported it
            if (R % G != 0) {
                problems.push_back(where + std::to_string(R) + " slots do not divide evenly over " + std::to_string(G)
                                   + " GPUs (each EP rank owns R/G consecutive slots); use a multiple of "
                                   + std::to_string(G) + ", e.g. " + std::to_string((R / G + 1) * G));
            } else {
                for (int g = 0; g < G; ++g) {
                    const auto n = layer.gpu_slots[static_cast<std::size_t>(g)].size();
                    if (static_cast<int>(n) != R / G) {
                        problems.push_back(where + "GPU " + std::to_string(g) + " holds " + std::to_string(n)
                                           + " slots, but every GPU must hold the same number (" + std::to_string(R)
                                           + " slots / " + std::to_string(G) + " GPUs = " + std::to_string(R / G) + ")");
                        break;
                    }
                }
            }
            if (R != R0)
                problems.push_back(where + std::to_string(R) + " slots, but MoE layer 0 has " + std::to_string(R0)
                                   + "; " + std::string(toString(fmt)) + " needs one slot count for all layers");
        }
    }
    if (exportNeedsDistinctReplicas(fmt)) {
        for (const auto& c : findColocatedReplicas(p))
            problems.push_back("MoE layer " + std::to_string(c.moe_layer) + ": GPU " + std::to_string(c.gpu) + " holds "
                               + std::to_string(c.copies) + " copies of expert " + std::to_string(c.expert)
                               + "; vllm-ascend keeps one local slot per expert and takes the slots per rank from "
                                 "rank 0's distinct experts, so this file would load and route tokens to the wrong "
                                 "experts. Use strategy eplb (not eplb-exact), or let moex-cli place / File > Export "
                                 "separate the copies (they do for this format)");
    }
    if (fmt == ExportFormat::trtllm && options.mtp_layers > 64)
        problems.push_back("at most 64 MTP layers can be written, not " + std::to_string(options.mtp_layers));
    if (problems.size() > kMaxProblems) {
        const auto more = problems.size() - kMaxProblems;
        problems.resize(kMaxProblems);
        problems.push_back("... and " + countOf(static_cast<long long>(more), "more problem"));
    }
    return problems;
}

std::string exportPlacement(const Placement& p, const ModelSpec& model, ExportFormat fmt, const ExportOptions& options)
{
    const auto problems = exportProblems(p, model, fmt, options);
    if (!problems.empty()) {
        Diagnostics d;
        const Location where{"export to " + std::string(toString(fmt)), 0, 0};
        for (const auto& s : problems)
            d.error(where, s);
        throw InputError(std::move(d));
    }
    switch (fmt) {
    case ExportFormat::native: return nativeYaml(p, model);
    case ExportFormat::sglang: return sglangJson(p, model);
    case ExportFormat::trtllm: return trtllmYaml(p, model, options);
    case ExportFormat::vllm_ascend: return vllmAscendJson(p);
    case ExportFormat::eplb: return eplbResultToJson(eplbTensors(p));
    }
    throw std::logic_error("unhandled export format");
}

void writePlacementExport(const std::string& path, const Placement& p, const ModelSpec& model, ExportFormat fmt,
                          const ExportOptions& options)
{
    const std::string text = exportPlacement(p, model, fmt, options);  // refuses before any file is touched
    writeFileAtomically(path, text);
}

Placement placementForExport(const Placement& p, ExportFormat fmt, const std::vector<std::vector<double>>& load,
                             int gpusPerDomain, std::optional<SeparationReport>& separated)
{
    separated.reset();
    Placement out = p;
    if (exportNeedsDistinctReplicas(fmt) && !findColocatedReplicas(p).empty())
        separated = separateColocatedReplicas(out, load, gpusPerDomain);
    return out;
}

std::string eplbResultToJson(const EplbResult& r)
{
    std::string out = "{\"phy2log\": [\n";
    for (std::size_t l = 0; l < r.phy2log.size(); ++l) {
        appendInts(out, r.phy2log[l], ",");
        out += l + 1 < r.phy2log.size() ? ",\n" : "\n";
    }
    out += "],\n\"log2phy\": [\n";
    for (std::size_t l = 0; l < r.log2phy.size(); ++l) {
        out += '[';
        for (std::size_t e = 0; e < r.log2phy[l].size(); ++e) {
            if (e > 0)
                out += ',';
            appendInts(out, r.log2phy[l][e], ",");
        }
        out += l + 1 < r.log2phy.size() ? "],\n" : "]\n";
    }
    out += "],\n\"logcnt\": [\n";
    for (std::size_t l = 0; l < r.logcnt.size(); ++l) {
        appendInts(out, r.logcnt[l], ",");
        out += l + 1 < r.logcnt.size() ? ",\n" : "\n";
    }
    out += "]}\n";
    return out;
}

}  // namespace moex
