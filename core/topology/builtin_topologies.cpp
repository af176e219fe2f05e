#include "topology/builtin_topologies.h"

#include "common/number_text.h"
#include "topology/topology_detail.h"

#include <cmath>
#include <stdexcept>

namespace moex {

namespace {

const std::vector<std::string>& names()
{
    static const std::vector<std::string> list{"gb200-nvl72", "gb300-nvl72", "hgx-h100",
                                               "hgx-h800",    "hgx-h200",    "hgx-b200", "host-cpu"};
    return list;
}

std::string joined(const std::vector<std::string>& items)
{
    std::string out;
    for (const auto& s : items)
        out += (out.empty() ? "" : ", ") + s;
    return out;
}

void checkRange(const char* what, int value, int lo, int hi, const std::string& builtin)
{
    if (value < lo || value > hi)
        throw std::invalid_argument(std::string(what) + " = " + std::to_string(value) + " is out of range [" +
                                    std::to_string(lo) + ", " + std::to_string(hi) + "] for " + builtin);
}

void checkRate(const char* what, double value)
{
    if (!std::isfinite(value) || value < 0)
        throw std::invalid_argument(std::string(what) + " must be a finite number >= 0 (0 keeps the default), got " +
                                    shortestNumber(value));
}

void validate(const TopologyParams& p)
{
    if (detail::isHostCpu(p.builtin)) {
        checkRange("ranks", p.ranks, 1, 256, p.builtin);
        if (p.racks != 1 || p.nodes != 1 || p.gpus_per_node != 8)
            throw std::invalid_argument("host-cpu is this one machine: it grows by 'ranks' only");
        return;
    }
    if (p.ranks != 1)
        throw std::invalid_argument("'ranks' applies to host-cpu only");
    if (!detail::isNvl72(p.builtin) && !detail::isHgx(p.builtin))
        throw std::invalid_argument("unknown built-in topology '" + p.builtin + "'; valid names: " + joined(names()));
    if (detail::isNvl72(p.builtin)) {
        checkRange("racks", p.racks, 1, 16, p.builtin);
        if (p.nodes != 1)
            throw std::invalid_argument("'nodes' applies to hgx-* topologies; " + p.builtin +
                                        " grows by 'racks' (72 GPUs each)");
        if (p.gpus_per_node != 8)
            throw std::invalid_argument("'gpus_per_node' applies to hgx-* topologies; " + p.builtin +
                                        " always has 72 GPUs per rack");
    } else {
        if (p.racks != 1)
            throw std::invalid_argument("'racks' applies to NVL72 topologies; " + p.builtin + " grows by 'nodes'");
        checkRange("nodes", p.nodes, 1, 128, p.builtin);
        checkRange("gpus_per_node", p.gpus_per_node, 1, 8, p.builtin);
    }
    checkRange("nics_per_gpu", p.nics_per_gpu, 1, 4, p.builtin);
    checkRange("gpus_per_leaf", p.gpus_per_leaf, 0, 4096, p.builtin);
    checkRate("nic_gbs", p.nic_gbs);
    checkRate("nvlink_gbs", p.nvlink_gbs);
}

}  // namespace

bool detail::isNvl72(const std::string& key)
{
    return key == "gb200-nvl72" || key == "gb300-nvl72";
}

bool detail::isHostCpu(const std::string& key)
{
    return key == "host-cpu";
}

bool detail::isHgx(const std::string& key)
{
    return key == "hgx-h100" || key == "hgx-h800" || key == "hgx-h200" || key == "hgx-b200";
}

std::vector<std::string> builtinTopologyNames()
{
    return names();
}

Topology buildTopology(const TopologyParams& p)
{
    validate(p);
    Topology t = detail::isHostCpu(p.builtin) ? detail::buildHostCpu(p)
        : detail::isNvl72(p.builtin)        ? detail::buildNvl72(p)
                                            : detail::buildHgx(p);
    t.builtin = p.builtin;
    t.finalize();
    return t;
}

}  // namespace moex
