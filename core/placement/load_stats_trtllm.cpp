// TensorRT-LLM expert statistics: meta_info.json {"num_experts", "num_experts_per_token"} and
// rank{r}.safetensors, keys "{iter}_{layer}" -> int64 [E] tokens routed on that rank. Totals are
// summed over ranks and iterations; layers (absolute decoder indices) come out ascending.
#include "placement/load_stats_formats.h"
#include "common/json_input.h"
#include "placement/safetensors_reader.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "common/plural.h"
#include "workload/workload.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

namespace moex::detail {

namespace {

constexpr int kMaxExperts = 1 << 16;
constexpr int kMaxRanks = 1 << 14;

// "{iter}_{layer}" with both non-negative decimal integers, written without leading zeros ("7_03"
// would be a second spelling of "7_3", its counts added twice); false otherwise.
bool parseKey(const std::string& key, long long& iter, int& layer)
{
    const std::size_t us = key.find('_');
    if (us == std::string::npos || us == 0 || us + 1 == key.size())
        return false;
    if ((us > 1 && key[0] == '0') || (key.size() - us > 2 && key[us + 1] == '0'))
        return false;
    const auto digits = [](char c) { return c >= '0' && c <= '9'; };  // no sign: "-0_3" is "0_3" again
    if (!std::all_of(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(us), digits)
        || !std::all_of(key.begin() + static_cast<std::ptrdiff_t>(us) + 1, key.end(), digits))
        return false;
    const char* b = key.data();
    const auto [p1, e1] = std::from_chars(b, b + us, iter);
    const auto [p2, e2] = std::from_chars(b + us + 1, b + key.size(), layer);
    return e1 == std::errc() && p1 == b + us && e2 == std::errc() && p2 == b + key.size() && iter >= 0 && layer >= 0
        && layer < 100000;
}

constexpr std::int64_t kMaxTokenCount = kMaxRecordedCount;

int readMeta(const std::string& path, int& topK)
{
    const std::string text = readFile(path, 1u << 20);
    JsonKeyOffsets keys;
    const nlohmann::json j = parseJsonInput(text, path, 0, "meta_info.json", keys);
    // At the key when there is one (`pointer`), else at the file.
    const auto fail = [&](const std::string& pointer, const std::string& message) {
        throw InputError(keys.locate(pointer, text, path).value_or(Location{path, 0, 0}), message);
    };
    if (!j.is_object() || !j.contains("num_experts"))
        fail("", "expected {\"num_experts\": E, \"num_experts_per_token\": K}");
    const auto& e = j["num_experts"];
    if (!e.is_number_integer() || e.get<long long>() < 1 || e.get<long long>() > kMaxExperts)
        fail("/num_experts", "\"num_experts\" must be an integer in [1, " + std::to_string(kMaxExperts) + "], found " + jsonSnippet(e));
    const int experts = e.get<int>();
    topK = 0;
    if (j.contains("num_experts_per_token")) {
        const auto& k = j["num_experts_per_token"];
        if (!k.is_number_integer() || k.get<long long>() < 1 || k.get<long long>() > experts)
            fail("/num_experts_per_token", "\"num_experts_per_token\" must be an integer in [1, num_experts], found " + jsonSnippet(k));
        topK = k.get<int>();
    }
    return experts;
}

}  // namespace

LoadStats readTrtllmStats(const std::string& folder)
{
    return withJsonErrors(folder, 0, [&] {
        namespace fs = std::filesystem;
        const std::string metaPath = (fs::path(folder) / "meta_info.json").string();
        LoadStats out;
        out.format = "trtllm";
        out.indexing = LayerIndexing::decoder_ids;
        out.num_experts = readMeta(metaPath, out.top_k);

        std::map<int, std::string> ranks;
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(folder, ec)) {
            const std::string name = entry.path().filename().string();
            constexpr std::string_view prefix = "rank";
            constexpr std::string_view suffix = ".safetensors";
            if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0
                || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
                continue;
            const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
            int r = -1;
            const auto [p, err] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
            if (err != std::errc() || p != digits.data() + digits.size() || r < 0 || r >= kMaxRanks)
                throw InputError(Location{entry.path().string(), 0, 0}, "not a rank{r}.safetensors name");
            ranks[r] = entry.path().string();
        }
        if (ec)
            throw InputError(Location{folder, 0, 0}, "cannot list the folder: " + ec.message());
        if (ranks.empty())
            throw InputError(Location{folder, 0, 0}, "no rank{r}.safetensors files beside meta_info.json");
        // Ranks are numbered 0..N-1; a gap means a file went missing and the totals would be short.
        for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
            if (ranks.count(r) == 0)
                throw InputError(Location{folder, 0, 0}, "rank" + std::to_string(r) + ".safetensors is missing (found "
                                                             + std::to_string(ranks.size()) + " rank files, up to rank"
                                                             + std::to_string(ranks.rbegin()->first) + ")");
        }

        std::map<int, std::vector<double>> totals;
        std::map<long long, int> iterations;
        std::map<long long, std::map<int, std::vector<double>>> perIteration;  // iteration -> layer -> counts over ranks
        for (const auto& rankFile : ranks) {
            const std::string& path = rankFile.second;  // a named variable: lambdas below capture it
            const std::string bytes = readFile(path, std::size_t{1} << 30);
            for (const SafetensorsTensor& t : parseSafetensors(bytes, path)) {
                const auto fail = [&](const std::string& message) {
                    throw InputError(Location{path, 0, 0}, "safetensors byte " + std::to_string(t.offset) + ": tensor '"
                                                               + t.name + "' " + message);
                };
                long long iter = 0;
                int layer = 0;
                if (!parseKey(t.name, iter, layer))
                    fail("is not named \"{iteration}_{layer}\" (numbers without leading zeros)");
                const std::vector<std::int64_t> counts = safetensorsInts(t, path);
                if (t.shape.size() != 1 || t.shape[0] != out.num_experts)
                    fail("must have shape [" + std::to_string(out.num_experts) + "] (num_experts in meta_info.json)");
                auto& row = totals[layer];
                row.resize(static_cast<std::size_t>(out.num_experts), 0.0);
                auto& iterRow = perIteration[iter][layer];
                iterRow.resize(static_cast<std::size_t>(out.num_experts), 0.0);
                for (std::size_t e = 0; e < counts.size(); ++e) {
                    if (counts[e] < 0)
                        fail("has a negative count " + std::to_string(counts[e]) + " for expert " + std::to_string(e));
                    if (counts[e] > kMaxTokenCount)
                        fail("has a count of " + std::to_string(counts[e]) + " for expert " + std::to_string(e)
                             + ", beyond any real recording (at most 2^40 tokens per iteration and layer)");
                    row[e] += static_cast<double>(counts[e]);
                    iterRow[e] += static_cast<double>(counts[e]);
                }
                ++iterations[iter];
            }
        }
        if (totals.empty())
            throw InputError(Location{ranks.begin()->second, 0, 0}, "no \"{iteration}_{layer}\" tensors");
        for (auto& [layer, row] : totals) {
            out.layer_ids.push_back(layer);
            out.load.push_back(std::move(row));
        }
        // One snapshot per iteration that recorded every layer (on some rank: with pipeline
        // parallelism each rank records its own stage's layers), rows as the totals'. An
        // iteration missing layers (a rank's file ending earlier than the others') counts in the
        // totals only: its imbalance would be of part of the model. Bounded by the keys the files
        // hold (scattered keys, "0_0", "1_1", ..., made no complete iteration and no snapshot;
        // filled in, they grew with the square of the file) and by kMaxSnapshots.
        std::size_t partial = 0, beyond = 0;
        for (const auto& [iter, layers] : perIteration) {
            if (layers.size() != totals.size()) {
                ++partial;
                continue;
            }
            if (out.snapshots.size() == kMaxSnapshots) {
                ++beyond;
                continue;
            }
            auto& snap = out.snapshots.emplace_back();
            for (const auto& [layer, row] : layers)
                snap.push_back(row);
        }
        if (out.snapshots.size() < 2)
            out.snapshots.clear();
        out.detail = countOf(static_cast<long long>(ranks.size()), "rank") + ", "
            + countOf(static_cast<long long>(iterations.size()), "iteration") + " " + std::to_string(iterations.begin()->first)
            + (iterations.size() > 1 ? ".." + std::to_string(iterations.rbegin()->first) : std::string()) + " summed"
            + (partial > 0 ? "; " + countOf(static_cast<long long>(partial), "iteration") + " without every layer left out of the per-iteration figures" : std::string())
            + (beyond > 0 ? "; per-iteration figures of the first " + std::to_string(kMaxSnapshots) + " iterations" : std::string());
        return out;
    });
}

}  // namespace moex::detail
