// Per-token routing traces (JSONL): TraceBuilder checks each record and builds the TokenTrace.
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

namespace {

using nlohmann::json;
using namespace trace_detail;

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


// Accumulates the records of a JSONL trace, checking each, and builds the TokenTrace.
class TraceBuilder {
public:
    TraceBuilder(std::string source, const TraceReadOptions& options) : m_source(std::move(source)), m_options(options)
    {
    }

    void line(std::string_view text, int lineNo)
    {
        withJsonErrors(m_source, lineNo, [&] { lineUnchecked(text, lineNo); });
    }

    void lineUnchecked(std::string_view text, int lineNo)
    {
        if (lineNo == 1 && text.starts_with("\xEF\xBB\xBF"))
            text.remove_prefix(3);  // UTF-8 byte order mark
        if (!text.empty() && text.back() == '\r')
            text.remove_suffix(1);
        if (text.find_first_not_of(" \t") == std::string_view::npos)
            return;
        json j;
        try {
            j = parseJsonInput(text, m_source, lineNo, "the record");
        } catch (const InputError& e) {
            // A syntax error, a key given twice, nesting too deep: this record's, reported with the others.
            return m_diags.append(e.diagnostics());
        }
        if (!j.is_object())
            return error(lineNo, 1, "a record must be a JSON object, found " + std::string(j.type_name()));

        const auto layerIt = j.find("layer");
        if (layerIt == j.end())
            return error(lineNo, 1, "missing \"layer\"");
        if (!layerIt->is_number_integer() || !inRange(*layerIt, kMaxLayerId))
            return error(lineNo, columnOf(text, "\"layer\""),
                         "\"layer\" must be an integer in [0, " + std::to_string(kMaxLayerId) + "], found " +
                             jsonSnippet(*layerIt));
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
                                 jsonSnippet(e));
            if (e.is_number_unsigned() && e.get<std::uint64_t>() >= static_cast<std::uint64_t>(kMaxExpertId))
                return error(lineNo, expertsCol, "expert id " + jsonSnippet(e) + " is too large");
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
                             std::string("\"") + names[i] + "\" must be an integer, found " + jsonSnippet(*it));
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
            if (static_cast<int>(id) > m_maxExpert) {
                m_maxExpert = static_cast<int>(id);
                m_maxExpertLine = lineNo;
            }
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
        t.max_expert_line = m_maxExpertLine;
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
    int m_maxExpertLine = 0;
};


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

}  // namespace moex
