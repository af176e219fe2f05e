// Writing topologies as YAML: one flow-style line per node and per (bidirectional) link, so that a
// written-out NVL72 stays readable and diffable, and numbers in their shortest exact form, so that
// reading the text back gives the same doubles (and therefore the same routes).
#include "common/number_text.h"
#include "topology/topology_detail.h"
#include "topology/topology_yaml.h"

#include <cctype>
#include <cstdio>

namespace moex {

namespace {

// Plain when unambiguous in a flow mapping, else double-quoted.
std::string scalar(const std::string& s)
{
    static const char* const reserved[] = {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"};
    bool plain = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
    for (char c : s)
        plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/');
    for (const char* r : reserved) {
        std::string lower;
        for (char c : s)
            lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        plain = plain && lower != r;
    }
    if (plain)
        return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// The GPU as a built-in key, a built-in with overrides, or all figures.
std::string gpuYaml(const GpuSpec& g)
{
    std::string baseKey;
    for (const std::string& key : detail::builtinGpuNames()) {
        const GpuSpec& b = *builtinGpu(key);
        if (detail::sameSpec(b, g))
            return key;
        if (baseKey.empty() && b.name == g.name)
            baseKey = key;
    }
    const GpuSpec* base = baseKey.empty() ? nullptr : builtinGpu(baseKey);
    std::string out;
    auto field = [&](const char* key, const std::string& text, bool same) {
        if (!same)
            out += std::string(out.empty() ? "" : ", ") + key + ": " + text;
    };
    if (base)
        out = "base: " + baseKey;
    field("name", scalar(g.name), base && base->name == g.name);
    field("arch", std::string(toString(g.arch)), base && base->arch == g.arch);
    field("hbm_gb", shortestNumber(g.hbm_gb), base && base->hbm_gb == g.hbm_gb);
    field("hbm_usable_gb", shortestNumber(g.hbm_usable_gb), base && base->hbm_usable_gb == g.hbm_usable_gb);
    field("hbm_bw_gbs", shortestNumber(g.hbm_bw_gbs), base && base->hbm_bw_gbs == g.hbm_bw_gbs);
    field("bf16_tflops", shortestNumber(g.bf16_tflops), base && base->bf16_tflops == g.bf16_tflops);
    field("fp8_tflops", shortestNumber(g.fp8_tflops), base && base->fp8_tflops == g.fp8_tflops);
    field("fp4_tflops", shortestNumber(g.fp4_tflops), base && base->fp4_tflops == g.fp4_tflops);
    field("nvlink_gbs_per_dir", shortestNumber(g.nvlink_gbs_per_dir), base && base->nvlink_gbs_per_dir == g.nvlink_gbs_per_dir);
    field("nvlink_links", std::to_string(g.nvlink_links), base && base->nvlink_links == g.nvlink_links);
    field("tdp_w", shortestNumber(g.tdp_w), base && base->tdp_w == g.tdp_w);
    field("idle_w", shortestNumber(g.idle_w), base && base->idle_w == g.idle_w);
    return "{" + out + "}";
}

bool reverseOf(const TopoLink& a, const TopoLink& b)
{
    return a.from == b.to && a.to == b.from && a.kind == b.kind && a.capacity_gbs == b.capacity_gbs &&
           a.latency_us == b.latency_us;
}

}  // namespace

std::string topologyToYaml(const Topology& t)
{
    std::string out;
    out += "name: " + scalar(t.name) + "\n";
    out += "gpu: " + gpuYaml(t.gpu) + "\n";
    out += std::string("pxn: ") + (t.pxn ? "true" : "false") + "\n";
    out += "switch_power_w: " + shortestNumber(t.switch_power_w) + "\n";
    out += "nodes:\n";
    for (const TopoNode& n : t.nodes()) {
        out += "  - {name: " + scalar(n.name) + ", kind: " + std::string(toString(n.kind));
        const bool inDomain = n.kind == NodeKind::gpu || n.kind == NodeKind::nvswitch;
        if (inDomain || n.domain != -1)
            out += ", domain: " + std::to_string(n.domain);
        out += ", rack: " + std::to_string(n.pos.rack) + ", tray: " + std::to_string(n.pos.tray) +
               ", board: " + std::to_string(n.pos.board) + ", slot: " + std::to_string(n.pos.slot);
        if (n.kind == NodeKind::nic && n.gpu.valid() && n.gpu.value < t.numGpus())
            out += ", gpu: " + scalar(t.node(t.gpuNode(n.gpu)).name);
        out += "}\n";
    }
    out += "links:";
    const auto& links = t.links();
    if (links.empty())
        out += " []";
    out += "\n";
    for (std::size_t i = 0; i < links.size(); ++i) {
        const TopoLink& l = links[i];
        const bool pair = i + 1 < links.size() && reverseOf(l, links[i + 1]);
        out += "  - {from: " + scalar(t.node(l.from).name) + ", to: " + scalar(t.node(l.to).name) +
               ", kind: " + std::string(toString(l.kind)) + ", gbs: " + shortestNumber(l.capacity_gbs) +
               ", latency_us: " + shortestNumber(l.latency_us);
        if (!pair)
            out += ", bidirectional: false";
        out += "}\n";
        if (pair)
            ++i;
    }
    return out;
}

std::string topologyParamsToYaml(const TopologyParams& p)
{
    const TopologyParams d;
    std::string out = "{builtin: " + scalar(p.builtin);
    if (p.racks != d.racks)
        out += ", racks: " + std::to_string(p.racks);
    if (p.nodes != d.nodes)
        out += ", nodes: " + std::to_string(p.nodes);
    if (p.gpus_per_node != d.gpus_per_node)
        out += ", gpus_per_node: " + std::to_string(p.gpus_per_node);
    if (p.ranks != d.ranks)
        out += ", ranks: " + std::to_string(p.ranks);
    if (p.nics_per_gpu != d.nics_per_gpu)
        out += ", nics_per_gpu: " + std::to_string(p.nics_per_gpu);
    if (p.nic_gbs != d.nic_gbs)
        out += ", nic_gbs: " + shortestNumber(p.nic_gbs);
    if (p.nvlink_gbs != d.nvlink_gbs)
        out += ", nvlink_gbs: " + shortestNumber(p.nvlink_gbs);
    if (p.gpus_per_leaf != d.gpus_per_leaf)
        out += ", gpus_per_leaf: " + std::to_string(p.gpus_per_leaf);
    return out + "}";
}

}  // namespace moex
