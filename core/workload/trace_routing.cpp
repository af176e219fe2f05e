#include "workload/trace_routing.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"

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

namespace {

using nlohmann::json;

constexpr int kMaxLayerId = 1 << 20;
constexpr int kMaxExpertId = 1 << 20;
constexpr std::size_t kMaxTopK = 4096;
// Problem id of records without one: they are keyed by their order within the layer instead.
constexpr std::int64_t kNoProblem = std::numeric_limits<std::int64_t>::min();

struct TokenKeyHash {
    std::size_t operator()(const TokenKey& k) const noexcept
    {
        const auto a = static_cast<std::uint64_t>(k.problem_id);
        const auto b = static_cast<std::uint64_t>(k.token_idx);
        return static_cast<std::size_t>((a * 0x9e3779b97f4a7c15ULL) ^ (b + 0x7f4a7c159e3779b9ULL + (a << 6)));
    }
};

// nlohmann's parse errors read "[json.exception.parse_error.101] parse error at line 1, column 5:
// syntax error while parsing ..."; keep what follows the position.
std::string parseMessage(const json::parse_error& e)
{
    std::string what = e.what();
    const auto pos = what.find(": ", what.find("parse error"));
    return "bad JSON: " + (pos == std::string::npos ? what : what.substr(pos + 2));
}

// An integer JSON value in [0, max] (unsigned values above INT64_MAX included).
bool inRange(const json& v, std::int64_t max)
{
    if (v.is_number_unsigned())
        return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max);
    const auto x = v.get<std::int64_t>();
    return x >= 0 && x <= max;
}

// 1-based column of `needle` in `line`, or 1.
int columnOf(std::string_view line, std::string_view needle)
{
    const auto pos = line.find(needle);
    return pos == std::string_view::npos ? 1 : static_cast<int>(pos) + 1;
}

// Accumulates the records of a JSONL trace, checking each, and builds the TokenTrace.
class TraceBuilder {
public:
    TraceBuilder(std::string source, const TraceReadOptions& options) : m_source(std::move(source)), m_options(options)
    {
    }

    void line(std::string_view text, int lineNo)
    {
        if (lineNo == 1 && text.starts_with("\xEF\xBB\xBF"))
            text.remove_prefix(3);  // UTF-8 byte order mark
        if (!text.empty() && text.back() == '\r')
            text.remove_suffix(1);
        if (text.find_first_not_of(" \t") == std::string_view::npos)
            return;
        json j;
        try {
            j = json::parse(text);
        } catch (const json::parse_error& e) {
            const auto col = std::clamp<std::size_t>(e.byte, 1, text.size() + 1);
            return error(lineNo, static_cast<int>(col), parseMessage(e));
        } catch (const json::exception& e) {
            return error(lineNo, 1, std::string("bad JSON: ") + e.what());
        }
        if (!j.is_object())
            return error(lineNo, 1, "a record must be a JSON object, found " + std::string(j.type_name()));

        const auto layerIt = j.find("layer");
        if (layerIt == j.end())
            return error(lineNo, 1, "missing \"layer\"");
        if (!layerIt->is_number_integer() || !inRange(*layerIt, kMaxLayerId))
            return error(lineNo, columnOf(text, "\"layer\""),
                         "\"layer\" must be an integer in [0, " + std::to_string(kMaxLayerId) + "], found " +
                             layerIt->dump());
        const int layer = layerIt->get<int>();

        const auto expertsIt = j.find("experts");
        if (expertsIt == j.end())
            return error(lineNo, 1, "missing \"experts\"");
        const int expertsCol = columnOf(text, "\"experts\"");
        if (!expertsIt->is_array())
            return error(lineNo, expertsCol,
                         "\"experts\" must be an array of expert ids, found " + std::string(expertsIt->type_name()));
        if (expertsIt->empty() || expertsIt->size() > kMaxTopK)
            return error(lineNo, expertsCol, "\"experts\" must hold 1 to " + std::to_string(kMaxTopK) + " expert ids");
        m_experts.clear();
        for (const json& e : *expertsIt) {
            if (!e.is_number_integer())
                return error(lineNo, expertsCol,
                             "\"experts\" must hold integer expert ids, found " + std::string(e.type_name()) + " " +
                                 e.dump());
            if (e.is_number_unsigned() && e.get<std::uint64_t>() >= static_cast<std::uint64_t>(kMaxExpertId))
                return error(lineNo, expertsCol, "expert id " + e.dump() + " is too large");
            const auto id = e.get<std::int64_t>();
            if (id < 0)
                return error(lineNo, expertsCol, "expert id " + std::to_string(id) + " is negative");
            if (m_options.num_experts > 0 && id >= m_options.num_experts)
                return error(lineNo, expertsCol,
                             "expert id " + std::to_string(id) + " is out of range: num_experts is " +
                                 std::to_string(m_options.num_experts));
            if (id >= kMaxExpertId)
                return error(lineNo, expertsCol, "expert id " + std::to_string(id) + " is too large");
            if (std::find(m_experts.begin(), m_experts.end(), id) != m_experts.end())
                return error(lineNo, expertsCol, "expert " + std::to_string(id) + " appears twice in one record");
            m_experts.push_back(static_cast<std::int32_t>(id));
        }
        if (m_topK == 0) {
            m_topK = static_cast<int>(m_experts.size());
            m_topKLine = lineNo;
        } else if (static_cast<int>(m_experts.size()) != m_topK) {
            return error(lineNo, expertsCol,
                         "inconsistent top-k: this record has " + std::to_string(m_experts.size()) +
                             " experts, the record at line " + std::to_string(m_topKLine) + " has " +
                             std::to_string(m_topK));
        }

        std::int64_t ids[2] = {kNoProblem, 0};
        bool has[2] = {false, false};
        const char* names[2] = {"problem_id", "token_idx"};
        for (int i = 0; i < 2; ++i) {
            const auto it = j.find(names[i]);
            if (it == j.end())
                continue;
            if (!it->is_number_integer())
                return error(lineNo, columnOf(text, std::string("\"") + names[i] + "\""),
                             std::string("\"") + names[i] + "\" must be an integer, found " + it->dump());
            ids[i] = it->get<std::int64_t>();
            has[i] = true;
        }

        auto [slot, added] = m_layerIndex.try_emplace(layer, m_layers.size());
        if (added)
            m_layers.emplace_back();
        Pending& p = m_layers[slot->second];
        // Without token_idx a record is the n-th token of its layer.
        const TokenKey key{has[0] ? ids[0] : kNoProblem, has[1] ? ids[1] : static_cast<std::int64_t>(p.tokens.size())};
        auto [tok, fresh] = m_tokenIndex.try_emplace(key, static_cast<std::int32_t>(m_tokens.size()));
        if (fresh)
            m_tokens.push_back(key);
        p.tokens.push_back(tok->second);
        p.lines.push_back(lineNo);
        p.experts.insert(p.experts.end(), m_experts.begin(), m_experts.end());
        for (auto id : m_experts)
            m_maxExpert = std::max(m_maxExpert, static_cast<int>(id));
    }

    void lineTooLong(int lineNo)
    {
        error(lineNo, 1, "line is longer than " + std::to_string(m_options.max_line_bytes) + " bytes");
    }

    TokenTrace finish()
    {
        if (!m_diags.empty())
            throw InputError(std::move(m_diags));
        if (m_layers.empty())
            throw InputError(Location{m_source, 0, 0}, "no routing records");
        TokenTrace t;
        t.source = m_source;
        t.num_experts = m_options.num_experts > 0 ? m_options.num_experts : m_maxExpert + 1;
        t.top_k = m_topK;
        t.num_layers = static_cast<int>(m_layers.size());
        t.tokens = std::move(m_tokens);
        const auto k = static_cast<std::size_t>(m_topK);
        for (const auto& [layer, slot] : m_layerIndex) {  // ascending layer id
            Pending& p = m_layers[slot];
            std::vector<std::size_t> order(p.tokens.size());
            for (std::size_t i = 0; i < order.size(); ++i)
                order[i] = i;
            std::stable_sort(order.begin(), order.end(),
                             [&](std::size_t a, std::size_t b) { return p.tokens[a] < p.tokens[b]; });
            std::vector<std::int32_t> tokens(order.size());
            std::vector<std::int32_t> experts(order.size() * k);
            for (std::size_t i = 0; i < order.size(); ++i) {
                tokens[i] = p.tokens[order[i]];
                std::copy_n(p.experts.begin() + static_cast<std::ptrdiff_t>(order[i] * k), k,
                            experts.begin() + static_cast<std::ptrdiff_t>(i * k));
                if (i > 0 && tokens[i] == tokens[i - 1]) {
                    const TokenKey& key = t.tokens[static_cast<std::size_t>(tokens[i])];
                    error(p.lines[order[i]], 1,
                          "duplicate record for token " + describe(key) + " at layer " + std::to_string(layer) +
                              " (first at line " + std::to_string(p.lines[order[i - 1]]) + ")");
                }
            }
            t.layer_ids.push_back(layer);
            t.layer_tokens.push_back(std::move(tokens));
            t.layer_experts.push_back(std::move(experts));
            p = Pending{};  // release as we go
        }
        if (!m_diags.empty())
            throw InputError(std::move(m_diags));
        return t;
    }

private:
    struct Pending {
        std::vector<std::int32_t> tokens;
        std::vector<std::int32_t> experts;
        std::vector<int> lines;
    };

    static std::string describe(const TokenKey& key)
    {
        if (key.problem_id == kNoProblem)
            return "#" + std::to_string(key.token_idx);
        return "(problem_id " + std::to_string(key.problem_id) + ", token_idx " + std::to_string(key.token_idx) + ")";
    }
    void error(int line, int col, std::string message)
    {
        m_diags.error(Location{m_source, line, col}, std::move(message));
    }

    std::string m_source;
    TraceReadOptions m_options;
    Diagnostics m_diags;
    std::map<int, std::size_t> m_layerIndex;  // file layer -> m_layers slot
    std::vector<Pending> m_layers;
    std::unordered_map<TokenKey, std::int32_t, TokenKeyHash> m_tokenIndex;
    std::vector<TokenKey> m_tokens;
    std::vector<std::int32_t> m_experts;  // of the current record
    int m_topK = 0;
    int m_topKLine = 0;
    int m_maxExpert = -1;
};

std::string sizeMessage(std::size_t size, std::size_t limit)
{
    return "file is " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(limit);
}

}  // namespace

TokenTrace parseTokenTrace(std::string_view text, const std::string& source, const TraceReadOptions& options)
{
    if (text.size() > options.max_file_bytes)
        throw InputError(Location{source, 0, 0}, sizeMessage(text.size(), options.max_file_bytes));
    TraceBuilder builder(source, options);
    int lineNo = 1;
    while (!text.empty()) {
        const auto end = text.find('\n');
        const std::string_view line = text.substr(0, end);
        if (line.size() > options.max_line_bytes)
            builder.lineTooLong(lineNo);
        else
            builder.line(line, lineNo);
        if (end == std::string_view::npos)
            break;
        text.remove_prefix(end + 1);
        ++lineNo;
    }
    return builder.finish();
}

TokenTrace readTokenTrace(const std::string& path, const TraceReadOptions& options)
{
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file)
        throw InputError(Location{path, 0, 0}, "cannot open file: " + std::generic_category().message(errno));
    std::error_code ec;
    if (const auto size = std::filesystem::file_size(path, ec); !ec && size > options.max_file_bytes)
        throw InputError(Location{path, 0, 0}, sizeMessage(static_cast<std::size_t>(size), options.max_file_bytes));
    // Streamed in chunks: memory is bounded by the trace itself, never by one huge line.
    TraceBuilder builder(path, options);
    std::vector<char> chunk(std::size_t{1} << 20);
    std::string line;
    bool tooLong = false;
    std::size_t total = 0;
    int lineNo = 1;
    const auto flush = [&] {
        if (tooLong)
            builder.lineTooLong(lineNo);
        else
            builder.line(line, lineNo);
        line.clear();
        tooLong = false;
        ++lineNo;
    };
    for (;;) {
        const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), file.get());
        if (n == 0)
            break;
        total += n;
        if (total > options.max_file_bytes)
            throw InputError(Location{path, 0, 0}, sizeMessage(total, options.max_file_bytes) + " (or more)");
        std::string_view data(chunk.data(), n);
        while (!data.empty()) {
            const auto end = data.find('\n');
            const std::string_view part = data.substr(0, end);
            if (!tooLong && line.size() + part.size() > options.max_line_bytes) {
                tooLong = true;
                line.clear();
            }
            if (!tooLong)
                line.append(part);
            if (end == std::string_view::npos)
                break;
            flush();
            data.remove_prefix(end + 1);
        }
    }
    if (std::ferror(file.get()))
        throw InputError(Location{path, 0, 0}, "cannot read file");
    if (!line.empty() || tooLong)
        flush();
    return builder.finish();
}

int TokenTrace::find(int layer, int token) const
{
    const auto& tokensAt = layer_tokens.at(static_cast<std::size_t>(layer));
    const auto it = std::lower_bound(tokensAt.begin(), tokensAt.end(), token);
    return it != tokensAt.end() && *it == token ? static_cast<int>(it - tokensAt.begin()) : -1;
}

std::vector<std::int64_t> TokenTrace::expertCounts(int layer) const
{
    std::vector<std::int64_t> counts(static_cast<std::size_t>(std::max(num_experts, 0)), 0);
    for (auto e : layer_experts.at(static_cast<std::size_t>(layer)))
        if (e >= 0 && e < num_experts)
            ++counts[static_cast<std::size_t>(e)];
    return counts;
}

// ---- Per-layer counts ---------------------------------------------------------------------

namespace {

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
        json j;
        try {
            j = json::parse(m_text);
        } catch (const json::parse_error& e) {
            throw InputError(locate(std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, m_text.size())),
                             parseMessage(e));
        }
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
    Location locate(std::size_t offset) const
    {
        Location loc{m_source, 1, 1};
        for (std::size_t i = 0; i < offset && i < m_text.size(); ++i) {
            if (m_text[i] == '\n') {
                ++loc.line;
                loc.column = 1;
            } else {
                ++loc.column;
            }
        }
        return loc;
    }
    void error(const std::string& near, std::string message)
    {
        const auto pos = near.empty() ? std::string_view::npos : m_text.find(near);
        m_diags.error(locate(pos == std::string_view::npos ? 0 : pos), std::move(message));
    }
    static std::string quoted(const std::string& key) { return "\"" + key + "\""; }

    // A count must be a finite number >= 0.
    bool count(const json& v, double& out)
    {
        if (!v.is_number())
            return false;
        out = v.get<double>();
        return std::isfinite(out) && out >= 0.0;
    }
    static bool integerKey(const std::string& key, int& out)
    {
        if (key.empty() || key.size() > 7 ||
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
                error("", "row " + std::to_string(l) + " must be a non-empty array of counts");
                return;
            }
            if (l == 0 && !setExperts(m_numExperts > 0 ? std::max(m_numExperts, static_cast<int>(row.size()))
                                                       : static_cast<int>(row.size()),
                                      ""))
                return;
            if (row.size() != j[0].size()) {
                error("", "row " + std::to_string(l) + " has " + std::to_string(row.size()) + " counts, row 0 has " +
                              std::to_string(j[0].size()));
                return;
            }
            std::vector<double> counts(static_cast<std::size_t>(m_out.num_experts), 0.0);
            for (std::size_t e = 0; e < row.size(); ++e)
                if (!count(row[e], counts[e])) {
                    error("", "row " + std::to_string(l) + ", expert " + std::to_string(e) +
                                  ": a count must be a number >= 0, found " + row[e].dump());
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
            if (!it->is_number_integer() || !setExperts(it->get<int>(), "\"num_experts\""))
                return error("\"num_experts\"", "\"num_experts\" must be a positive integer");
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
                    return error("\"layers\"", "\"layers\" must hold layer ids >= 0, found " + v.dump());
                layers.push_back(v.get<int>());
            }
        } else {
            for (const auto& [key, value] : byLayer.items()) {
                int id = 0;
                if (!integerKey(key, id))
                    return error(quoted(key), "layer key " + quoted(key) + " is not a layer id");
                layers.push_back(id);
            }
            std::sort(layers.begin(), layers.end());
        }
        std::vector<std::vector<std::pair<int, double>>> entries;
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
                    error(quoted(key), where + ": a count must be a number >= 0, found " + v.dump());
                } else {
                    layerCounts.emplace_back(expert, c);
                    maxExpert = std::max(maxExpert, expert);
                }
            };
            if (it->is_array()) {
                for (std::size_t e = 0; e < it->size(); ++e)
                    add(std::to_string(e), static_cast<int>(e), (*it)[e]);
            } else if (it->is_object()) {
                for (const auto& [expertKey, v] : it->items()) {
                    int expert = -1;
                    if (!integerKey(expertKey, expert))
                        expert = -1;
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
            if (!it->is_number_integer() || !setExperts(it->get<int>(), "\"num_experts\""))
                return error("\"num_experts\"", "\"num_experts\" must be a positive integer");
        } else if (m_numExperts > 0) {
            m_out.num_experts = m_numExperts;
        } else {
            return error("\"layer_statistics\"", "summary statistics need \"num_experts\"");
        }
        std::vector<std::pair<int, const json*>> layers;
        for (const auto& [key, value] : stats.items()) {
            int id = 0;
            if (!integerKey(key, id))
                return error(quoted(key), "layer key " + quoted(key) + " is not a layer id");
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
    if (text.size() > (std::size_t{1} << 30))
        throw InputError(Location{source, 0, 0}, sizeMessage(text.size(), std::size_t{1} << 30));
    return CountsParser(text, source, numExperts).parse();
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

// ---- TraceRouting --------------------------------------------------------------------------

void TraceRouting::init(const ModelSpec& model, const Workload& workload, int numGpus, int traceLayers,
                        int traceExperts, const std::string& source, bool allowLayerCycling)
{
    const auto fail = [&](const std::string& message) { throw InputError(Location{source, 0, 0}, message); };
    m_numLayers = model.numMoeLayers();
    m_numExperts = model.routed_experts;
    m_topK = model.experts_per_token;
    m_tokensPerGpu = workload.tokens_per_gpu;
    m_numGpus = numGpus;
    if (m_numLayers < 1 || m_numExperts < 1 || m_topK < 1 || m_topK > m_numExperts)
        fail("the model needs MoE layers, routed experts and 1 <= experts_per_token <= routed_experts");
    if (m_tokensPerGpu < 0 || m_numGpus < 1)
        fail("tokens_per_gpu must be >= 0 and the number of GPUs positive");
    if (static_cast<double>(m_numLayers) * m_numGpus * m_numExperts > 1e9)
        fail("layers x GPUs x experts is too large");
    if (traceLayers < 1)
        fail("the trace has no layers");
    if (traceLayers != m_numLayers && !allowLayerCycling)
        fail("the trace has " + std::to_string(traceLayers) + " MoE layers but the model has " +
             std::to_string(m_numLayers) + (traceLayers < m_numLayers ? " (fewer" : " (more") +
             " in the file); allow layer cycling to map model layer l to trace layer l % " +
             std::to_string(traceLayers));
    if (traceExperts != m_numExperts)
        fail("the trace has " + std::to_string(traceExperts) + " experts but the model has " +
             std::to_string(m_numExperts) + " routed experts" +
             (traceExperts < m_numExperts ? " (give the reader the model's expert count when the trace never "
                                            "routes to the last ones)"
                                          : ""));
    m_traceLayers = traceLayers;
}

TraceRouting::TraceRouting(TokenTrace trace, const ModelSpec& model, const Workload& workload, int numGpus,
                           TraceRoutingOptions options)
    : m_mode(options.mode)
{
    init(model, workload, numGpus, trace.num_layers, trace.num_experts, trace.source, options.allow_layer_cycling);
    if (m_mode == TraceMode::aggregated) {
        initQuotas(layerCountsFromTrace(trace).counts);
        return;
    }
    if (trace.top_k != m_topK)
        throw InputError(Location{trace.source, 0, 0}, "the trace routes each token to " + std::to_string(trace.top_k) +
                                                           " experts but the model's experts_per_token is " +
                                                           std::to_string(m_topK) + " (aggregated mode accepts it)");
    // Each token's record per layer; a token missing from a layer borrows the next one present.
    const auto numTokens = trace.tokens.size();
    m_recordOf.resize(static_cast<std::size_t>(trace.num_layers));
    for (int l = 0; l < trace.num_layers; ++l) {
        auto& rec = m_recordOf[static_cast<std::size_t>(l)];
        rec.assign(numTokens, -1);
        const auto& present = trace.layer_tokens[static_cast<std::size_t>(l)];
        for (std::size_t i = 0; i < present.size(); ++i)
            rec[static_cast<std::size_t>(present[i])] = static_cast<std::int32_t>(i);
        std::int32_t nextPresent = 0;  // the first record wraps around to the end
        for (std::size_t t = numTokens; t-- > 0;) {
            if (rec[t] >= 0)
                nextPresent = rec[t];
            else
                rec[t] = nextPresent;
        }
    }
    m_trace = std::move(trace);
}

TraceRouting::TraceRouting(const LayerCounts& counts, const ModelSpec& model, const Workload& workload, int numGpus,
                           bool allowLayerCycling)
    : m_mode(TraceMode::aggregated)
{
    init(model, workload, numGpus, counts.numLayers(), counts.num_experts, counts.source, allowLayerCycling);
    initQuotas(counts.counts);
}

void TraceRouting::initQuotas(const std::vector<std::vector<double>>& totals)
{
    // Each source routes N = tokens * top_k pairs; expert x gets N * share, but at most `tokens`
    // (one pair per token): the excess is spread over the others in proportion (water-filling).
    const auto ne = static_cast<std::size_t>(m_numExperts);
    const double pairs = static_cast<double>(m_tokensPerGpu) * m_topK;
    const double cap = m_tokensPerGpu;
    m_quota.assign(totals.size(), std::vector<double>(ne, 0.0));
    for (std::size_t l = 0; l < totals.size(); ++l) {
        std::vector<double>& q = m_quota[l];
        std::vector<char> fixed(ne, 0);
        for (std::size_t x = 0; x < ne; ++x)
            q[x] = x < totals[l].size() ? totals[l][x] : 0.0;
        for (;;) {
            double free = 0.0;
            double fixedPairs = 0.0;
            std::size_t freeCount = 0;
            for (std::size_t x = 0; x < ne; ++x) {
                if (fixed[x]) {
                    fixedPairs += cap;
                } else {
                    free += q[x];
                    ++freeCount;
                }
            }
            const double scale = free > 0.0 ? (pairs - fixedPairs) / free : 0.0;
            bool capped = false;
            for (std::size_t x = 0; x < ne; ++x) {
                if (fixed[x])
                    continue;
                q[x] = free > 0.0 ? q[x] * scale : (pairs - fixedPairs) / static_cast<double>(freeCount);
                if (q[x] > cap) {
                    q[x] = cap;
                    fixed[x] = 1;
                    capped = true;
                }
            }
            if (!capped)
                break;
        }
    }
    m_carry.assign(static_cast<std::size_t>(m_numLayers), std::vector<double>(ne, 0.0));
    m_frac.assign(ne, 0.0);
    m_order.assign(ne, 0);
}

void TraceRouting::reset()
{
    m_step = 0;
    for (auto& c : m_carry)
        std::fill(c.begin(), c.end(), 0.0);
}

void TraceRouting::next(RoutingSample& out)
{
    const auto rowsSize = static_cast<std::size_t>(m_numGpus) * static_cast<std::size_t>(m_numExperts);
    if (out.num_gpus != m_numGpus || out.num_experts != m_numExperts || out.numLayers() != m_numLayers ||
        out.counts.front().size() != rowsSize)
        out.resize(m_numLayers, m_numGpus, m_numExperts, m_tokensPerGpu, m_topK);
    out.tokens_per_gpu = m_tokensPerGpu;
    out.top_k = m_topK;
    if (m_mode == TraceMode::replay)
        nextReplay(out);
    else
        nextAggregated(out);
    ++m_step;
}

void TraceRouting::nextReplay(RoutingSample& out)
{
    // Step i takes the next tokens_per_gpu * numGpus tokens (wrapping), slot j to source j % G. The
    // same tokens at every layer, so a token stays on its source GPU through the model.
    const auto numTokens = static_cast<std::int64_t>(m_trace.tokens.size());
    const std::int64_t slots = static_cast<std::int64_t>(m_tokensPerGpu) * m_numGpus;
    const std::int64_t start = (m_step % numTokens) * (slots % numTokens) % numTokens;
    const auto k = static_cast<std::size_t>(m_topK);
    for (int l = 0; l < m_numLayers; ++l) {
        const auto tl = static_cast<std::size_t>(traceLayerOf(l));
        const std::int32_t* rec = m_recordOf[tl].data();
        const std::int32_t* experts = m_trace.layer_experts[tl].data();
        auto& counts = out.counts[static_cast<std::size_t>(l)];
        std::fill(counts.begin(), counts.end(), 0);
        std::int64_t t = start;
        int src = 0;
        for (std::int64_t j = 0; j < slots; ++j) {
            const std::int32_t* e = experts + static_cast<std::size_t>(rec[t]) * k;
            std::int32_t* row = counts.data() + static_cast<std::size_t>(src) * static_cast<std::size_t>(m_numExperts);
            for (std::size_t i = 0; i < k; ++i)
                ++row[e[i]];
            if (++t == numTokens)
                t = 0;
            if (++src == m_numGpus)
                src = 0;
        }
    }
}

void TraceRouting::nextAggregated(RoutingSample& out)
{
    // Each row gets its quota rounded to integers that sum to tokens * top_k exactly; what rounding
    // took or gave is carried to the next row (and step), so the sum over sources stays within a
    // pair of quota x sources for every expert (error diffusion).
    const int pairs = m_tokensPerGpu * m_topK;
    const int cap = m_tokensPerGpu;
    const auto ne = static_cast<std::size_t>(m_numExperts);
    for (int l = 0; l < m_numLayers; ++l) {
        const std::vector<double>& quota = m_quota[static_cast<std::size_t>(traceLayerOf(l))];
        std::vector<double>& carry = m_carry[static_cast<std::size_t>(l)];
        for (int s = 0; s < m_numGpus; ++s) {
            std::int32_t* row = out.row(l, s).data();
            int sum = 0;
            for (std::size_t x = 0; x < ne; ++x) {
                const double want = quota[x] + carry[x];
                row[x] = static_cast<std::int32_t>(std::clamp(std::floor(want), 0.0, static_cast<double>(cap)));
                m_frac[x] = want - row[x];
                sum += row[x];
            }
            // Hand out (or take back) the difference by largest (smallest) remainder; repeat passes
            // only when an expert's cap or zero blocks one.
            while (sum != pairs) {
                const bool give = sum < pairs;
                std::size_t n = 0;
                for (std::size_t x = 0; x < ne; ++x)
                    if (give ? row[x] < cap : row[x] > 0)
                        m_order[n++] = static_cast<std::int32_t>(x);
                const std::size_t need = std::min<std::size_t>(n, static_cast<std::size_t>(std::abs(pairs - sum)));
                if (need == 0)
                    break;  // cannot happen: pairs <= experts x cap
                const auto byFrac = [&](std::int32_t a, std::int32_t b) {
                    const double fa = m_frac[static_cast<std::size_t>(a)];
                    const double fb = m_frac[static_cast<std::size_t>(b)];
                    return give ? (fa > fb || (fa == fb && a < b)) : (fa < fb || (fa == fb && a < b));
                };
                std::nth_element(m_order.begin(), m_order.begin() + static_cast<std::ptrdiff_t>(need - 1),
                                 m_order.begin() + static_cast<std::ptrdiff_t>(n), byFrac);
                for (std::size_t i = 0; i < need; ++i) {
                    const auto x = static_cast<std::size_t>(m_order[i]);
                    row[x] += give ? 1 : -1;
                    m_frac[x] += give ? -1.0 : 1.0;
                    sum += give ? 1 : -1;
                }
            }
            for (std::size_t x = 0; x < ne; ++x)
                carry[x] = m_frac[x];
        }
    }
}

}  // namespace moex
