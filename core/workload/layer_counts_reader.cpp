// Per-layer expert counts (JSON): a counts document, a plain matrix or summary statistics.
#include "workload/trace_routing.h"
#include "common/json_input.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "workload/trace_json_helpers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <unordered_map>

namespace moex {

// ---- Per-layer counts ---------------------------------------------------------------------

namespace {

using nlohmann::json;
using namespace trace_detail;

// Reads one counts document; semantic errors are located at the first occurrence of the offending
// key in the text (the JSON library keeps no positions), which is right for the usual files.
class CountsParser {
public:
    CountsParser(std::string_view text, std::string source, int numExperts)
        : m_text(text), m_source(std::move(source)), m_numExperts(numExperts)
    {
    }

    LayerCounts parse()
    {
        const json j = parseJsonInput(m_text, m_source, 0, "the counts file");
        m_out.source = m_source;
        if (j.is_array())
            matrix(j);
        else if (j.is_object() && j.contains("expert_usage_by_layer"))
            usage(j);
        else if (j.is_object() && j.contains("layer_statistics"))
            summary(j);
        else
            error("", "unrecognised counts file: expected a matrix [[...], ...], or an object with "
                      "\"expert_usage_by_layer\" or \"layer_statistics\"");
        if (m_diags.empty() && m_out.counts.empty())
            error("", "no layers");
        if (!m_diags.empty())
            throw InputError(std::move(m_diags));
        return std::move(m_out);
    }

private:
    Location locate(std::size_t offset) const { return locationOfOffset(m_text, offset, m_source); }
    void error(const std::string& near, std::string message)
    {
        const auto pos = near.empty() ? std::string_view::npos : m_text.find(near);
        m_diags.error(locate(pos == std::string_view::npos ? 0 : pos), std::move(message));
    }
    static std::string quoted(const std::string& key) { return "\"" + key + "\""; }
    // The byte offset of entry `col` of row `row` in a matrix file ([[...], [...]]), for errors
    // that name the line the value is on; the row's start when the row has fewer entries.
    std::size_t matrixOffset(std::size_t row, std::size_t col) const
    {
        int depth = 0;
        std::size_t rowsSeen = 0, colsSeen = 0;
        bool inRow = false, inString = false;
        for (std::size_t i = 0; i < m_text.size(); ++i) {
            const char ch = m_text[i];
            if (inString) {
                if (ch == '\\')
                    ++i;
                else if (ch == '"')
                    inString = false;
                continue;
            }
            if (ch == '"') {
                inString = true;
            } else if (ch == '[') {
                ++depth;
                if (depth == 2) {
                    inRow = rowsSeen++ == row;
                    colsSeen = 0;
                    if (inRow && col == 0)
                        return m_text.find_first_not_of(" \t\r\n", i + 1);
                }
            } else if (ch == ']') {
                if (depth == 2 && inRow)
                    return i;
                --depth;
            } else if (ch == ',' && depth == 2 && inRow && ++colsSeen == col) {
                return m_text.find_first_not_of(" \t\r\n", i + 1);
            }
        }
        return 0;
    }
    void errorAt(std::size_t offset, std::string message) { m_diags.error(locate(offset), std::move(message)); }

    // A count must be a finite number from 0 to kMaxRecordedCount.
    bool count(const json& v, double& out)
    {
        if (!v.is_number())
            return false;
        out = v.get<double>();
        return std::isfinite(out) && out >= 0.0 && out <= static_cast<double>(kMaxRecordedCount);
    }
    // A layer or expert id as a key: digits, no leading zero ("03" would read as a second
    // spelling of "3": its counts added to 3's, or a layer read in another's place).
    static bool integerKey(const std::string& key, int& out)
    {
        if (key.empty() || key.size() > 7 || (key.size() > 1 && key[0] == '0') ||
            !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return false;
        out = std::stoi(key);
        return true;
    }
    bool setExperts(int n, const std::string& near)
    {
        if (n < 1 || n > kMaxExpertId) {
            error(near, "num_experts must be in [1, " + std::to_string(kMaxExpertId) + "]");
            return false;
        }
        if (m_numExperts > 0 && n != m_numExperts) {
            error(near, "the file has " + std::to_string(n) + " experts, expected " + std::to_string(m_numExperts));
            return false;
        }
        m_out.num_experts = n;
        return true;
    }

    void matrix(const json& j)
    {
        for (std::size_t l = 0; l < j.size(); ++l) {
            const json& row = j[l];
            if (!row.is_array() || row.empty()) {
                errorAt(matrixOffset(l, 0), "row " + std::to_string(l) + " must be a non-empty array of counts");
                return;
            }
            // A row gives every expert's count: one shorter than the model's experts is a file
            // cut or of another model, not experts without load.
            if (l == 0 && m_numExperts > 0 && row.size() != static_cast<std::size_t>(m_numExperts)) {
                errorAt(matrixOffset(0, 0), "row 0 has " + std::to_string(row.size()) + " counts, the model has "
                                                + std::to_string(m_numExperts) + " experts (a row gives every expert's count)");
                return;
            }
            if (l == 0 && !setExperts(static_cast<int>(row.size()), ""))
                return;
            if (row.size() != j[0].size()) {
                errorAt(matrixOffset(l, 0), "row " + std::to_string(l) + " has " + std::to_string(row.size())
                                                + " counts, row 0 has " + std::to_string(j[0].size()));
                return;
            }
            std::vector<double> counts(static_cast<std::size_t>(m_out.num_experts), 0.0);
            for (std::size_t e = 0; e < row.size(); ++e)
                if (!count(row[e], counts[e])) {
                    errorAt(matrixOffset(l, e), "row " + std::to_string(l) + ", expert " + std::to_string(e)
                                                    + ": a count must be a number from 0 to 2^40, found " + jsonSnippet(row[e]));
                    return;
                }
            m_out.layer_ids.push_back(static_cast<int>(l));
            m_out.counts.push_back(std::move(counts));
        }
    }

    void usage(const json& j)
    {
        const json& byLayer = j["expert_usage_by_layer"];
        if (!byLayer.is_object())
            return error("\"expert_usage_by_layer\"", "\"expert_usage_by_layer\" must be an object keyed by layer");
        int maxExpert = -1;
        if (const auto it = j.find("num_experts"); it != j.end()) {
            if (!it->is_number_integer())
                return error("\"num_experts\"", "\"num_experts\" must be a positive integer, found " + jsonSnippet(*it));
            // setExperts says what is wrong with the count (out of range, or not the model's).
            if (!setExperts(static_cast<int>(std::clamp<std::int64_t>(it->get<std::int64_t>(), -1, kMaxExpertId + 1)),
                            "\"num_experts\""))
                return;
        } else if (m_numExperts > 0) {
            m_out.num_experts = m_numExperts;
        }
        // Layer order: "layers" when given, else the keys in numeric order.
        std::vector<int> layers;
        if (const auto it = j.find("layers"); it != j.end()) {
            if (!it->is_array())
                return error("\"layers\"", "\"layers\" must be an array of layer ids");
            for (const json& v : *it) {
                if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxLayerId)
                    return error("\"layers\"", "\"layers\" must hold layer ids >= 0, found " + jsonSnippet(v));
                layers.push_back(v.get<int>());
            }
        } else {
            for (const auto& [key, value] : byLayer.items()) {
                int id = 0;
                if (!integerKey(key, id))
                    return error(quoted(key), "layer key " + quoted(key) + " is not a layer id (a number written without leading zeros)");
                layers.push_back(id);
            }
            std::sort(layers.begin(), layers.end());
        }
        std::vector<std::vector<std::pair<int, double>>> entries;
        std::size_t arrayLength = 0;  // of the layers given as lists so far
        for (int layer : layers) {
            const std::string key = std::to_string(layer);
            const auto it = byLayer.find(key);
            if (it == byLayer.end()) {
                error("\"layers\"",
                      "layer " + key + " is listed in \"layers\" but has no entry in \"expert_usage_by_layer\"");
                continue;
            }
            std::vector<std::pair<int, double>> layerCounts;
            const auto add = [&](const std::string& expertKey, int expert, const json& v) {
                double c = 0.0;
                std::string where = "layer " + key;
                where += ", expert ";
                where += expertKey;
                if (expert < 0 || expert >= kMaxExpertId || (m_out.num_experts > 0 && expert >= m_out.num_experts)) {
                    where += " is out of range";
                    if (m_out.num_experts > 0)
                        where += " (num_experts " + std::to_string(m_out.num_experts) + ")";
                    error(quoted(key), where);
                } else if (!count(v, c)) {
                    error(quoted(key), where + ": a count must be a number from 0 to 2^40, found " + jsonSnippet(v));
                } else {
                    layerCounts.emplace_back(expert, c);
                    maxExpert = std::max(maxExpert, expert);
                }
            };
            if (it->is_array()) {
                // A list holds every expert's count: one shorter than the others (or than
                // num_experts) is a file cut or mixed up, not experts without load.
                const std::size_t expected = m_out.num_experts > 0 ? static_cast<std::size_t>(m_out.num_experts) : arrayLength;
                if (expected > 0 && it->size() != expected) {
                    error(quoted(key), "layer " + key + " has " + std::to_string(it->size()) + " counts, "
                                           + (m_out.num_experts > 0 ? "num_experts is " : "the layers before it have ")
                                           + std::to_string(expected) + " (a list gives every expert's count)");
                    entries.push_back({});
                    m_out.layer_ids.push_back(layer);
                    continue;
                }
                arrayLength = it->size();
                for (std::size_t e = 0; e < it->size(); ++e)
                    add(std::to_string(e), static_cast<int>(e), (*it)[e]);
            } else if (it->is_object()) {
                for (const auto& [expertKey, v] : it->items()) {
                    int expert = -1;
                    if (!integerKey(expertKey, expert)) {
                        error(quoted(key), "layer " + key + ": expert key " + quoted(expertKey)
                                               + " is not an expert id (a number written without leading zeros)");
                        continue;
                    }
                    add(quoted(expertKey), expert, v);
                }
            } else {
                error(quoted(key), "layer " + key + " must map expert ids to counts");
            }
            entries.push_back(std::move(layerCounts));
            m_out.layer_ids.push_back(layer);
        }
        if (m_out.num_experts == 0)
            m_out.num_experts = maxExpert + 1;
        for (auto& layerCounts : entries) {
            std::vector<double> counts(static_cast<std::size_t>(std::max(m_out.num_experts, 0)), 0.0);
            for (auto [e, c] : layerCounts)
                counts[static_cast<std::size_t>(e)] += c;
            m_out.counts.push_back(std::move(counts));
        }
    }

    void summary(const json& j)
    {
        const json& stats = j["layer_statistics"];
        if (!stats.is_object())
            return error("\"layer_statistics\"", "\"layer_statistics\" must be an object keyed by layer");
        if (const auto it = j.find("num_experts"); it != j.end()) {
            if (!it->is_number_integer())
                return error("\"num_experts\"", "\"num_experts\" must be a positive integer, found " + jsonSnippet(*it));
            // setExperts says what is wrong with the count (out of range, or not the model's).
            if (!setExperts(static_cast<int>(std::clamp<std::int64_t>(it->get<std::int64_t>(), -1, kMaxExpertId + 1)),
                            "\"num_experts\""))
                return;
        } else if (m_numExperts > 0) {
            m_out.num_experts = m_numExperts;
        } else {
            return error("\"layer_statistics\"", "summary statistics need \"num_experts\"");
        }
        std::vector<std::pair<int, const json*>> layers;
        for (const auto& [key, value] : stats.items()) {
            int id = 0;
            if (!integerKey(key, id))
                return error(quoted(key), "layer key " + quoted(key) + " is not a layer id (a number written without leading zeros)");
            layers.emplace_back(id, &value);
        }
        std::sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [id, value] : layers) {
            const std::string key = quoted(std::to_string(id));
            double v[6] = {};
            const char* names[6] = {"min_usage", "q25", "median", "q75", "max_usage", "total_usage"};
            for (int i = 0; i < 6; ++i) {
                const auto it = value->find(names[i]);
                if (i == 5 && it == value->end() && value->contains("mean") && count((*value)["mean"], v[5])) {
                    v[5] *= m_out.num_experts;
                    continue;
                }
                if (it == value->end() || !count(*it, v[i])) {
                    error(key, "layer " + std::to_string(id) + ": \"" + names[i] + "\" must be a number >= 0");
                    return;
                }
            }
            double zeros = 0.0;
            if (const auto it = value->find("zero_usage_experts"); it != value->end())
                count(*it, zeros);
            m_out.layer_ids.push_back(id);
            m_out.counts.push_back(reconstruct(m_out.num_experts, v, static_cast<int>(zeros), id));
        }
        m_out.from_summary = true;
    }

    // Per-expert counts consistent with a layer's summary: the quantile function is piecewise
    // linear through min, q25, median and q75; the top quarter rises as a power curve from q75 to
    // the maximum, its exponent chosen so the counts add up to the total; the `zeros` smallest are 0.
    static std::vector<double> reconstruct(int n, const double (&v)[6], int zeros, int layerId)
    {
        const auto un = static_cast<std::size_t>(n);
        std::vector<double> sorted(un, 0.0);
        const double last = n - 1;
        const double knotX[4] = {0.0, 0.25 * last, 0.5 * last, 0.75 * last};
        for (std::size_t i = 0; i < un; ++i) {
            const double x = static_cast<double>(i);
            for (int k = 0; k < 3; ++k)
                if (x <= knotX[k + 1] || k == 2) {
                    const double span = knotX[k + 1] - knotX[k];
                    const double t = span > 0.0 ? std::clamp((x - knotX[k]) / span, 0.0, 1.0) : 1.0;
                    sorted[i] = v[k] + t * (v[k + 1] - v[k]);
                    break;
                }
        }
        zeros = std::clamp(zeros, 0, n - 1);
        for (std::size_t i = 0; i < static_cast<std::size_t>(zeros); ++i)
            sorted[i] = 0.0;
        sorted[un - 1] = v[4];
        std::vector<std::size_t> tail;
        for (std::size_t i = 0; i + 1 < un; ++i)
            if (static_cast<double>(i) > knotX[3])
                tail.push_back(i);
        double fixed = 0.0;
        for (std::size_t i = 0; i < un; ++i)
            if (std::find(tail.begin(), tail.end(), i) == tail.end())
                fixed += sorted[i];
        const auto tailSum = [&](double gamma) {
            double sum = 0.0;
            for (std::size_t i : tail) {
                const double u = (static_cast<double>(i) - knotX[3]) / (last - knotX[3]);
                sum += sorted[i] = v[3] + (v[4] - v[3]) * std::pow(u, gamma);
            }
            return sum;
        };
        double lo = 0.01;
        double hi = 100.0;
        for (int it = 0; it < 100; ++it) {  // the tail sum falls as gamma grows
            const double mid = std::sqrt(lo * hi);
            (tailSum(mid) + fixed > v[5] ? lo : hi) = mid;
        }
        tailSum(std::sqrt(lo * hi));
        // Where the curve cannot reach the total, scale all but the maximum.
        double rest = 0.0;
        for (std::size_t i = 0; i + 1 < un; ++i)
            rest += sorted[i];
        if (rest > 0.0 && v[5] > v[4])
            for (std::size_t i = 0; i + 1 < un; ++i)
                sorted[i] *= (v[5] - v[4]) / rest;
        // Which expert holds which count is not in the file: a fixed shuffle per layer.
        std::vector<double> counts(un);
        std::vector<std::size_t> perm(un);
        for (std::size_t i = 0; i < un; ++i)
            perm[i] = i;
        std::uint64_t state = 0x2545f4914f6cdd1dULL ^ static_cast<std::uint64_t>(layerId);
        for (std::size_t i = un - 1; i > 0; --i) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            std::swap(perm[i], perm[(state >> 33) % (i + 1)]);
        }
        for (std::size_t i = 0; i < un; ++i)
            counts[perm[i]] = sorted[i];
        return counts;
    }

    std::string_view m_text;
    std::string m_source;
    int m_numExperts = 0;
    Diagnostics m_diags;
    LayerCounts m_out;
};

}  // namespace

LayerCounts parseLayerCounts(std::string_view text, const std::string& source, int numExperts)
{
    return withJsonErrors(source, 0, [&] {
        if (text.size() > (std::size_t{1} << 30))
            throw InputError(Location{source, 0, 0}, sizeMessage(text.size(), std::size_t{1} << 30));
        return CountsParser(text, source, numExperts).parse();
    });
}

LayerCounts readLayerCounts(const std::string& path, int numExperts)
{
    return parseLayerCounts(readFile(path, std::size_t{1} << 30), path, numExperts);
}

LayerCounts layerCountsFromTrace(const TokenTrace& trace)
{
    LayerCounts out;
    out.source = trace.source;
    out.num_experts = trace.num_experts;
    out.layer_ids = trace.layer_ids;
    for (int l = 0; l < trace.num_layers; ++l) {
        const auto c = trace.expertCounts(l);
        out.counts.emplace_back(c.begin(), c.end());
    }
    return out;
}

double LayerCounts::total(int layer) const
{
    const auto& c = counts.at(static_cast<std::size_t>(layer));
    double sum = 0.0;
    for (double v : c)
        sum += v;
    return sum;
}

double LayerCounts::maxOverMean(int layer) const
{
    const auto& c = counts.at(static_cast<std::size_t>(layer));
    const double sum = total(layer);
    if (c.empty() || !(sum > 0.0))
        return 0.0;
    return *std::max_element(c.begin(), c.end()) / (sum / static_cast<double>(c.size()));
}

}  // namespace moex
