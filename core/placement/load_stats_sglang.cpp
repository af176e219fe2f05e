// SGLang expert distribution recorder dumps (torch.save). Two layouts:
//   stat mode:              {"rank", "logical_count": int32 [buffer_size, num_layers, E], ...}
//                           already summed over ranks and in logical space; unfilled rows are zero.
//   per_pass / per_token:   {"records": [{"global_physical_count": [L][R], ...}, ...],
//                            "last_physical_to_logical_map": [L][R]}, one file per rank.
// Rows are decoder layers (dense ones included), as SGLang numbers them.
#include "placement/load_stats_formats.h"
#include "placement/torch_archive.h"

#include "common/diagnostics.h"
#include "workload/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace moex::detail {

namespace {

constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxExperts = 1 << 16;

struct Accumulated {
    std::vector<std::vector<double>> load;  // [L][E]
    std::string mode;
    std::int64_t rows = 0;  // buffer rows or records
    std::int64_t nonEmpty = 0;
    std::vector<std::vector<std::vector<double>>> snapshots;  // stat mode: each non-empty buffer row
};

[[noreturn]] void fail(const std::string& file, const std::string& message)
{
    throw InputError(Location{file, 0, 0}, message);
}

const TensorRef& tensorAt(const PickleValue& v, const std::string& file, const std::string& what, std::size_t dims)
{
    if (v.kind != PickleValue::Kind::tensor)
        fail(file, "'" + what + "' must be a tensor, found " + PickleValue::kindName(v.kind));
    if (v.tensor->size.size() != dims)
        fail(file, "'" + what + "' must have " + std::to_string(dims) + " dimensions, found "
                       + std::to_string(v.tensor->size.size()));
    return *v.tensor;
}

void checkCount(double c, const std::string& file, const std::string& what)
{
    if (!(c >= 0) || std::isinf(c) || c != std::floor(c) || c > static_cast<double>(kMaxRecordedCount)) {
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", c);
        fail(file, "'" + what + "' holds " + text + "; token counts must be integers from 0 to 2^40 (a tensor of "
                       "another type, or beyond any real recording)");
    }
}

void addInto(Accumulated& acc, std::vector<std::vector<double>> rows, const std::string& file)
{
    if (acc.load.empty()) {
        acc.load = std::move(rows);
        return;
    }
    if (acc.load.size() != rows.size() || acc.load[0].size() != rows[0].size())
        fail(file, "has " + std::to_string(rows.size()) + " layers x " + std::to_string(rows[0].size())
                       + " experts, the files before it " + std::to_string(acc.load.size()) + " x "
                       + std::to_string(acc.load[0].size()));
    for (std::size_t l = 0; l < rows.size(); ++l) {
        for (std::size_t e = 0; e < rows[l].size(); ++e)
            acc.load[l][e] += rows[l][e];
    }
}

// logical_count [B, L, E] summed over B.
void readStatMode(const TorchArchive& a, const PickleValue& counts, Accumulated& acc)
{
    const std::string& file = a.path();
    // [buffer, layers, experts] as dumped to a file; [layers, experts] is accepted as already summed.
    const std::size_t dims = counts.kind == PickleValue::Kind::tensor && counts.tensor->size.size() == 2 ? 2 : 3;
    const TensorRef& t = tensorAt(counts, file, "logical_count", dims);
    const std::int64_t b = dims == 3 ? t.size[0] : 1;
    const std::int64_t layers = t.size[dims - 2];
    const std::int64_t experts = t.size[dims - 1];
    if (layers < 1 || layers > kMaxLayers || experts < 1 || experts > kMaxExperts)
        fail(file, "'logical_count' has " + std::to_string(layers) + " layers and " + std::to_string(experts)
                       + " experts; expected [buffer, layers, experts] with both positive");
    const std::vector<double> v = a.values(t, "logical_count");
    std::vector<std::vector<double>> sum(static_cast<std::size_t>(layers), std::vector<double>(static_cast<std::size_t>(experts)));
    std::size_t k = 0;
    for (std::int64_t r = 0; r < b; ++r) {
        bool any = false;
        std::vector<std::vector<double>> snapshot(sum.size(), std::vector<double>(static_cast<std::size_t>(experts)));
        for (std::size_t l = 0; l < sum.size(); ++l) {
            for (std::size_t e = 0; e < sum[l].size(); ++e) {
                checkCount(v[k], file, "logical_count");
                any = any || v[k] != 0;
                snapshot[l][e] = v[k];
                sum[l][e] += v[k++];
            }
        }
        acc.nonEmpty += any ? 1 : 0;
        // Snapshots up to kMaxSnapshots (one file's; several files are summed without them): the
        // rows beyond count in the totals only.
        if (any && acc.snapshots.size() < kMaxSnapshots)
            acc.snapshots.push_back(std::move(snapshot));
    }
    acc.rows += b;
    acc.mode = "stat";
    addInto(acc, std::move(sum), file);
}

// records[*].global_physical_count [L][R] summed, then mapped to logical experts.
void readRecordMode(const TorchArchive& a, const PickleValue& records, const PickleValue& map, Accumulated& acc)
{
    const std::string& file = a.path();
    const TensorRef& mt = tensorAt(map, file, "last_physical_to_logical_map", 2);
    const std::int64_t layers = mt.size[0];
    const std::int64_t slots = mt.size[1];
    if (layers < 1 || layers > kMaxLayers || slots < 1 || slots > kMaxExperts)
        fail(file, "'last_physical_to_logical_map' must be [layers, physical slots] with both positive");
    const std::vector<double> p2l = a.values(mt, "last_physical_to_logical_map");
    double maxId = 0;
    for (const double id : p2l) {
        if (!(id >= 0) || id >= static_cast<double>(kMaxExperts) || id != std::floor(id))
            fail(file, "'last_physical_to_logical_map' holds " + std::to_string(id) + "; expert ids must be integers >= 0");
        maxId = std::max(maxId, id);
    }
    if (records.kind != PickleValue::Kind::list)
        fail(file, std::string("'records' must be a list, found ") + PickleValue::kindName(records.kind));

    const auto l = static_cast<std::size_t>(layers);
    const auto r = static_cast<std::size_t>(slots);
    std::vector<double> physical(l * r, 0.0);
    for (std::size_t i = 0; i < records.items.size(); ++i) {
        const std::string what = "records[" + std::to_string(i) + "].global_physical_count";
        const PickleValue* count = records.items[i].get("global_physical_count");
        if (count == nullptr)
            fail(file, "records[" + std::to_string(i) + "] has no 'global_physical_count'");
        const TensorRef& t = tensorAt(*count, file, what, 2);
        if (t.size[0] != layers || t.size[1] != slots)
            fail(file, "'" + what + "' is [" + std::to_string(t.size[0]) + ", " + std::to_string(t.size[1])
                           + "], the physical-to-logical map [" + std::to_string(layers) + ", " + std::to_string(slots) + "]");
        const std::vector<double> v = a.values(t, what);
        bool any = false;
        for (std::size_t k = 0; k < v.size(); ++k) {
            checkCount(v[k], file, what);
            any = any || v[k] != 0;
            physical[k] += v[k];
        }
        acc.nonEmpty += any ? 1 : 0;
    }
    const auto experts = static_cast<std::size_t>(maxId) + 1;
    std::vector<std::vector<double>> logical(l, std::vector<double>(experts, 0.0));
    for (std::size_t layer = 0; layer < l; ++layer) {
        for (std::size_t s = 0; s < r; ++s)
            logical[layer][static_cast<std::size_t>(p2l[layer * r + s])] += physical[layer * r + s];
    }
    acc.rows += static_cast<std::int64_t>(records.items.size());
    acc.mode = "per-pass";
    addInto(acc, std::move(logical), file);
}

}  // namespace

LoadStats readSglangStats(const std::vector<std::string>& files)
{
    Accumulated acc;
    for (const auto& file : files) {
        const TorchArchive a(file);
        const PickleValue& root = a.root();
        if (root.kind != PickleValue::Kind::dict)
            fail(file, std::string("the pickled value is a ") + PickleValue::kindName(root.kind)
                           + ", expected the recorder's dict");
        const std::string before = acc.mode;
        if (const PickleValue* counts = root.get("logical_count")) {
            readStatMode(a, *counts, acc);
        } else if (const PickleValue* records = root.get("records")) {
            const PickleValue* map = root.get("last_physical_to_logical_map");
            if (map == nullptr)
                fail(file, "has 'records' but no 'last_physical_to_logical_map' to map physical slots to experts");
            readRecordMode(a, *records, *map, acc);
        } else {
            std::string keys;
            for (const auto& k : root.keys)
                keys += (keys.empty() ? "" : ", ") + k;
            fail(file, "neither 'logical_count' (stat mode) nor 'records' (per_pass / per_token mode) in the dict; it has: "
                           + keys);
        }
        if (!before.empty() && before != acc.mode)
            fail(file, "is a " + acc.mode + " dump, the files before it " + before + " dumps");
    }
    LoadStats out;
    out.format = "sglang";
    out.indexing = LayerIndexing::decoder_all;
    out.num_experts = static_cast<int>(acc.load.front().size());
    out.load = std::move(acc.load);
    // Snapshots only where they are one file's buffer rows, all of the same shape as the sum.
    const bool capped = files.size() == 1 && acc.nonEmpty > static_cast<std::int64_t>(kMaxSnapshots);
    if (files.size() == 1 && acc.snapshots.size() >= 2)
        out.snapshots = std::move(acc.snapshots);
    for (int l = 0; l < out.numLayers(); ++l)
        out.layer_ids.push_back(l);
    out.detail = acc.mode + " mode, " + std::to_string(acc.rows) + (acc.mode == "stat" ? " buffer rows" : " records")
        + " (" + std::to_string(acc.nonEmpty) + " non-empty) summed"
        + (files.size() > 1 ? " over " + std::to_string(files.size()) + " files" : std::string())
        + (capped ? "; per-pass figures of the first " + std::to_string(kMaxSnapshots) + " non-empty rows" : std::string());
    return out;
}

}  // namespace moex::detail
