// moex-cli load-stats FILE [--json OUT|-]: what an expert-load statistics file holds, per layer.
//   moex-cli load-stats expert_distribution_recorder_1718000000.pt
//   moex-cli load-stats trtllm_stats/ --json -
#include "cli_args.h"
#include "format.h"

#include "common/atomic_file.h"
#include "placement/load_stats.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
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
    // Columns as wide as their widest cell and two spaces apart: counts summed over many buffer
    // rows reach 20 digits and more, and ran into the next column at fixed widths.
    std::vector<std::array<std::string, 5>> rows;
    rows.push_back({"layer", "total", "max", "mean", "max/mean"});
    double worst = 0;
    double sum = 0;
    for (int l = 0; l < s.numLayers(); ++l) {
        const double ratio = s.maxOverMean(l);
        worst = std::max(worst, ratio);
        sum += ratio;
        rows.push_back({std::to_string(layerId(s, l)), fixed(s.total(l), 0), fixed(s.max(l), 0), fixed(s.mean(l), 1), fixed(ratio, 3)});
    }
    std::array<std::size_t, 5> width{5, 12, 10, 10, 8};
    for (const auto& row : rows)
        for (std::size_t c = 0; c < row.size(); ++c)
            width[c] = std::max(width[c], row[c].size());
    std::cout << "\n";
    for (const auto& row : rows) {
        for (std::size_t c = 0; c < row.size(); ++c)
            std::cout << pad(row[c], width[c] + (c == 0 ? 1 : 2));
        std::cout << "\n";
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
