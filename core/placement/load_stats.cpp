// readLoadStats: which reader a path needs, and the checks against a model.
#include "placement/load_stats.h"
#include "placement/load_stats_formats.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "workload/trace_routing.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace moex {

namespace {

namespace fs = std::filesystem;

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The first non-blank line of a JSONL file names its kind: vLLM records carry a record_type.
bool isVllmJsonl(std::string_view text)
{
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t nl = std::min(text.find('\n', pos), text.size());
        const std::string_view line = text.substr(pos, nl - pos);
        pos = nl + 1;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos)
            continue;
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        return j.is_object() && j.contains("record_type") && j["record_type"] == "eplb_load_stats";
    }
    return false;
}

LoadStats fromLayerCounts(LayerCounts c, std::string format, LayerIndexing indexing)
{
    LoadStats out;
    out.format = std::move(format);
    out.indexing = indexing;
    out.num_experts = c.num_experts;
    out.load = std::move(c.counts);
    if (indexing != LayerIndexing::moe_ordinal)
        out.layer_ids = std::move(c.layer_ids);
    out.reconstructed = c.from_summary;
    return out;
}

LoadStats readJson(const std::string& path)
{
    const std::string text = readFile(path, std::size_t{1} << 30);
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    const bool matrix = first != std::string::npos && text[first] == '[';
    LayerCounts c = parseLayerCounts(text, path);
    const std::string format = matrix ? "json-matrix" : c.from_summary ? "json-summary" : "json-counts";
    LoadStats out = fromLayerCounts(std::move(c), format, matrix ? LayerIndexing::moe_ordinal : LayerIndexing::decoder_ids);
    out.detail = matrix ? "rows are MoE layers in order"
                        : out.reconstructed ? "per-layer summary statistics; per-expert counts reconstructed"
                                            : "per-layer expert counts";
    return out;
}

LoadStats readJsonl(const std::string& path)
{
    const std::string text = readFile(path, std::size_t{1} << 30);
    if (isVllmJsonl(text))
        return detail::parseVllmStats(text, path);
    const TokenTrace trace = parseTokenTrace(text, path);
    LoadStats out = fromLayerCounts(layerCountsFromTrace(trace), "trace", LayerIndexing::decoder_ids);
    out.top_k = trace.top_k;
    out.max_expert_line = trace.max_expert_line;
    out.detail = "per-token routing trace, " + std::to_string(trace.tokens.size()) + " tokens, top-"
        + std::to_string(trace.top_k);
    return out;
}

std::vector<std::string> torchFilesIn(const std::string& folder)
{
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
        if (e.is_regular_file() && lower(e.path().extension().string()) == ".pt")
            files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

double LoadStats::total(int row) const
{
    double sum = 0;
    for (const double v : load.at(static_cast<std::size_t>(row)))
        sum += v;
    return sum;
}

double LoadStats::max(int row) const
{
    const auto& r = load.at(static_cast<std::size_t>(row));
    return r.empty() ? 0.0 : *std::max_element(r.begin(), r.end());
}

double LoadStats::mean(int row) const
{
    const auto& r = load.at(static_cast<std::size_t>(row));
    return r.empty() ? 0.0 : total(row) / static_cast<double>(r.size());
}

double LoadStats::maxOverMean(int row) const
{
    const double m = mean(row);
    return m > 0 ? max(row) / m : 0.0;
}

namespace {

LoadStats readAnyLoadStats(const std::string& path);

}  // namespace

LoadStats readLoadStats(const std::string& path)
{
    LoadStats s = readAnyLoadStats(path);
    // A file with no tokens (an SGLang dump of 0 buffer rows, a recorder that never ran) gave an
    // all-zero table and a placement "fitted" to nothing with balance 1.000.
    const bool any = std::any_of(s.load.begin(), s.load.end(),
                                 [](const std::vector<double>& row) { return std::any_of(row.begin(), row.end(), [](double v) { return v > 0; }); });
    if (!any)
        throw InputError(Location{path, 0, 0}, "the statistics hold no tokens: every expert's count is 0 in every layer ("
                                                   + std::to_string(s.numLayers()) + " layers, " + s.format
                                                   + (s.detail.empty() ? std::string() : ", " + s.detail) + ")");
    return s;
}

namespace {

LoadStats readAnyLoadStats(const std::string& path)
{
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st))
        throw InputError(Location{path, 0, 0}, "no such file or folder");
    if (fs::is_directory(st)) {
        if (fs::exists(fs::path(path) / "meta_info.json"))
            return detail::readTrtllmStats(path);
        std::vector<std::string> files = torchFilesIn(path);
        if (!files.empty())
            return detail::readSglangStats(files);
        throw InputError(Location{path, 0, 0}, "folder has neither meta_info.json (TensorRT-LLM statistics) nor .pt "
                                               "files (SGLang recorder dumps)");
    }
    const fs::path p(path);
    const std::string ext = lower(p.extension().string());
    if (p.filename() == "meta_info.json")
        return detail::readTrtllmStats(p.has_parent_path() ? p.parent_path().string() : std::string("."));
    if (ext == ".pt" || ext == ".pth")
        return detail::readSglangStats({path});
    if (ext == ".jsonl" || ext == ".ndjson")
        return readJsonl(path);
    if (ext == ".json")
        return readJson(path);
    throw InputError(Location{path, 0, 0},
                     "cannot tell the statistics format from the name: expected an SGLang recorder .pt file, a "
                     "TensorRT-LLM folder (or its meta_info.json), a .jsonl (vLLM eplb_load_stats or a per-token "
                     "trace) or a .json (matrix or per-layer counts)");
}

}  // namespace

void checkLoadShape(const LoadStats& stats, int numMoeLayers, int numExperts, const std::string& file)
{
    Diagnostics d;
    const Location at{file, 0, 0};
    if (stats.numLayers() != numMoeLayers)
        d.error(at, "load statistics file has " + std::to_string(stats.numLayers()) + " layers but the model has "
                        + std::to_string(numMoeLayers) + " MoE layers");
    if (stats.num_experts > numExperts && stats.max_expert_line > 0)
        d.error(Location{file, stats.max_expert_line, 0},
                "expert id " + std::to_string(stats.num_experts - 1) + " is out of range: the model has "
                    + std::to_string(numExperts) + " experts (0.." + std::to_string(numExperts - 1) + ")");
    else if (stats.num_experts != numExperts)
        d.error(at, "load statistics file has " + std::to_string(stats.num_experts) + " experts but the model has "
                        + std::to_string(numExperts));
    for (std::size_t l = 0; l < stats.load.size() && d.empty(); ++l) {
        if (stats.load[l].size() != static_cast<std::size_t>(numExperts))
            d.error(at, "load statistics row " + std::to_string(l) + " has " + std::to_string(stats.load[l].size())
                            + " experts but the model has " + std::to_string(numExperts));
    }
    if (!d.empty())
        throw InputError(std::move(d));
}

namespace {

// Each snapshot's rows `rows`, in that order.
std::vector<std::vector<std::vector<double>>> selectSnapshotRows(const std::vector<std::vector<std::vector<double>>>& snapshots,
                                                                 const std::vector<std::size_t>& rows)
{
    std::vector<std::vector<std::vector<double>>> out;
    out.reserve(snapshots.size());
    for (const auto& snap : snapshots) {
        auto& picked = out.emplace_back();
        for (const std::size_t r : rows)
            picked.push_back(snap.at(r));
    }
    return out;
}

}  // namespace

LoadStats alignToModel(const LoadStats& stats, const ModelSpec& model, const std::string& file)
{
    LoadStats out = stats;
    // Every refusal names both shapes: what the file holds and what the model needs.
    const auto shapes = [&] {
        std::string ids;
        if (!stats.layer_ids.empty())
            ids = ", ids " + std::to_string(stats.layer_ids.front()) + ".." + std::to_string(stats.layer_ids.back());
        std::string modelIds;
        if (!model.moe_layers.empty())
            modelIds = ", ids " + std::to_string(model.moe_layers.front()) + ".." + std::to_string(model.moe_layers.back());
        return " (the file: " + std::to_string(stats.numLayers()) + " layers" + ids + " of " + std::to_string(stats.num_experts)
               + " experts; " + model.name + ": " + std::to_string(model.numMoeLayers()) + " MoE layers" + modelIds
               + " of " + std::to_string(model.routed_experts) + " experts)";
    };
    const auto fail = [&](const std::string& message) { throw InputError(Location{file, 0, 0}, message + shapes()); };
    if (stats.indexing == LayerIndexing::decoder_all && model.num_layers != model.numMoeLayers()) {
        // SGLang lists every decoder layer; the dense ones' rows carry nothing and are dropped.
        if (stats.numLayers() != model.num_layers)
            fail("load statistics file has " + std::to_string(stats.numLayers()) + " layers but the model has "
                 + std::to_string(model.num_layers) + " decoder layers (" + stats.format
                 + " lists every decoder layer, dense ones included)");
        out.load.clear();
        out.layer_ids.clear();
        std::vector<std::size_t> rows;
        for (const int l : model.moe_layers) {
            out.load.push_back(stats.load[static_cast<std::size_t>(l)]);
            out.layer_ids.push_back(l);
            rows.push_back(static_cast<std::size_t>(l));
        }
        out.snapshots = selectSnapshotRows(stats.snapshots, rows);
        out.indexing = LayerIndexing::decoder_ids;
    } else if (stats.indexing == LayerIndexing::decoder_ids && !stats.layer_ids.empty()
               && stats.layer_ids != model.moe_layers) {
        // Ids 0..n-1 over n MoE layers are ordinals (traces of models whose every layer is MoE
        // number them so); other ids must be the model's MoE layers exactly. Not TensorRT-LLM's:
        // it writes decoder layer indices (DeepSeek-R1: 3..60), so its 0..57 are not R1's layers.
        bool ordinal = stats.numLayers() == model.numMoeLayers() && stats.format != "trtllm";
        for (int l = 0; ordinal && l < stats.numLayers(); ++l)
            ordinal = stats.layer_ids[static_cast<std::size_t>(l)] == l;
        if (!ordinal) {
            for (const int id : stats.layer_ids) {
                if (!model.isMoeLayer(id))
                    fail("load statistics file has layer " + std::to_string(id) + ", which is not an MoE layer of "
                         + model.name);
            }
            for (const int id : model.moe_layers) {
                if (std::find(stats.layer_ids.begin(), stats.layer_ids.end(), id) == stats.layer_ids.end())
                    fail("load statistics file has no row for MoE layer " + std::to_string(id) + " of " + model.name);
            }
            // Rows in the model's layer order (a counts file may list its layers in any order).
            out.load.clear();
            out.layer_ids.clear();
            std::vector<std::size_t> rows;
            for (const int id : model.moe_layers) {
                const auto it = std::find(stats.layer_ids.begin(), stats.layer_ids.end(), id);
                rows.push_back(static_cast<std::size_t>(it - stats.layer_ids.begin()));
                out.load.push_back(stats.load[rows.back()]);
                out.layer_ids.push_back(id);
            }
            out.snapshots = selectSnapshotRows(stats.snapshots, rows);
        }
    }
    checkLoadShape(out, model.numMoeLayers(), model.routed_experts, file);
    return out;
}

}  // namespace moex
