// moex-cli load-stats FILE [--json OUT|-]: what an expert-load statistics file holds, per layer.
//   moex-cli load-stats expert_distribution_recorder_1718000000.pt
//   moex-cli load-stats trtllm_stats/ --json -
#include "cli_args.h"
#include "format.h"

#include "common/atomic_file.h"
#include "placement/load_stats.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>

namespace moex::cli {

int cmdLoadStats(const std::vector<std::string>& argv);  // registered in commands.h by main

namespace {

const char* indexingText(LayerIndexing i)
{
    switch (i) {
    case LayerIndexing::moe_ordinal: return "MoE layers in order";
    case LayerIndexing::decoder_ids: return "decoder-layer indices";
    case LayerIndexing::decoder_all: return "every decoder layer, dense ones included";
    }
    return "";
}

int layerId(const LoadStats& s, int row)
{
    return s.layer_ids.empty() ? row : s.layer_ids[static_cast<std::size_t>(row)];
}

nlohmann::json toJson(const std::string& path, const LoadStats& s)
{
    nlohmann::json j;
    j["file"] = path;
    j["format"] = s.format;
    j["detail"] = s.detail;
    j["num_layers"] = s.numLayers();
    j["num_experts"] = s.num_experts;
    j["top_k"] = s.top_k;
    j["reconstructed"] = s.reconstructed;
    nlohmann::json layers = nlohmann::json::array();
    for (int l = 0; l < s.numLayers(); ++l) {
        layers.push_back({{"layer", layerId(s, l)},
                          {"total", s.total(l)},
                          {"max", s.max(l)},
                          {"mean", s.mean(l)},
                          {"max_over_mean", s.maxOverMean(l)},
                          {"expert_load", s.load[static_cast<std::size_t>(l)]}});
    }
    j["layers"] = std::move(layers);
    return j;
}

std::string pad(const std::string& s, std::size_t width)
{
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

void printTable(const std::string& path, const LoadStats& s)
{
    std::cout << path << "\n"
              << "  format:  " << s.format << (s.detail.empty() ? "" : " (" + s.detail + ")") << "\n"
              << "  layers:  " << s.numLayers() << " (" << indexingText(s.indexing) << ")\n"
              << "  experts: " << s.num_experts << (s.top_k > 0 ? ", top-" + std::to_string(s.top_k) : "") << "\n";
    if (s.reconstructed)
        std::cout << "  note:    the file has per-layer summaries only; per-expert counts are a reconstruction\n";
    std::cout << "\n" << pad("layer", 6) << pad("total", 14) << pad("max", 12) << pad("mean", 12)
              << pad("max/mean", 10) << "\n";
    double worst = 0;
    double sum = 0;
    for (int l = 0; l < s.numLayers(); ++l) {
        const double ratio = s.maxOverMean(l);
        worst = std::max(worst, ratio);
        sum += ratio;
        std::cout << pad(std::to_string(layerId(s, l)), 6) << pad(fixed(s.total(l), 0), 14) << pad(fixed(s.max(l), 0), 12)
                  << pad(fixed(s.mean(l), 1), 12) << pad(fixed(ratio, 3), 10) << "\n";
    }
    if (s.numLayers() > 0)
        std::cout << "\nmax/mean over layers: mean " << fixed(sum / s.numLayers(), 3) << ", worst " << fixed(worst, 3)
                  << "\n";
}

}  // namespace

int cmdLoadStats(const std::vector<std::string>& argv)
{
    Args args("load-stats", argv, {{"json", true, false}});
    args.requirePositionals(1, 1, "moex-cli load-stats FILE [--json OUT|-]");
    const std::string& path = args.positionals().front();
    const LoadStats stats = readLoadStats(path);
    if (const auto out = args.value("json")) {
        const std::string text = toJson(path, stats).dump(2) + "\n";
        if (*out == "-")
            std::cout << text;
        else
            writeFileAtomically(*out, text);
        return 0;
    }
    printTable(path, stats);
    return 0;
}

}  // namespace moex::cli
