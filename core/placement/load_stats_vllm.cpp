// vLLM EPLB load statistics as JSONL (the proposed dump; FORMATS.md "vLLM"):
//   {"record_type": "eplb_load_stats", "version": 1, "step": 10, "num_ranks": 8,
//    "expert_load": [[...] per MoE layer], "p2l_map": [[...] per MoE layer]}
// expert_load is per physical slot when p2l_map is given (mapped to logical experts with that
// record's own map, since EPLB may have moved experts between records), else per logical expert.
#include "placement/load_stats_formats.h"
#include "common/json_input.h"

#include "common/diagnostics.h"
#include "common/plural.h"
#include "workload/workload.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace moex::detail {

namespace {

constexpr std::size_t kMaxLayers = 4096;
constexpr std::size_t kMaxColumns = 1 << 16;

class VllmParser {
public:
    VllmParser(std::string_view text, const std::string& file) : m_text(text), m_file(file) {}

    LoadStats parse()
    {
        std::size_t pos = 0;
        while (pos < m_text.size()) {
            const std::size_t nl = std::min(m_text.find('\n', pos), m_text.size());
            ++m_line;
            const std::string_view line = m_text.substr(pos, nl - pos);
            pos = nl + 1;
            if (line.find_first_not_of(" \t\r") != std::string_view::npos)
                record(line);
        }
        if (m_records == 0)
            throw InputError(Location{m_file, 0, 0}, "no eplb_load_stats records");
        LoadStats out;
        out.format = "vllm";
        out.indexing = LayerIndexing::moe_ordinal;
        out.num_experts = static_cast<int>(m_sum.front().size());
        out.load = std::move(m_sum);
        out.detail = countOf(static_cast<long long>(m_records), "record") + " summed"
            + (m_physical ? ", physical slots mapped to logical experts" : std::string());
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& message) const
    {
        throw InputError(Location{m_file, m_line, 1}, message);
    }

    // A [layers][columns] array of numbers; counts must be >= 0, map entries integers >= 0.
    std::vector<std::vector<double>> matrix(const nlohmann::json& j, const char* name, bool ids) const
    {
        if (!j.is_array() || j.empty() || j.size() > kMaxLayers)
            fail(std::string("\"") + name + "\" must be a non-empty array of per-layer arrays");
        std::vector<std::vector<double>> out;
        for (std::size_t l = 0; l < j.size(); ++l) {
            const auto& row = j[l];
            if (!row.is_array() || row.empty() || row.size() > kMaxColumns)
                fail(std::string("\"") + name + "\" row " + std::to_string(l) + " must be a non-empty array");
            if (row.size() != j[0].size())
                fail(std::string("\"") + name + "\" row " + std::to_string(l) + " has " + std::to_string(row.size())
                     + " entries, row 0 has " + std::to_string(j[0].size()));
            std::vector<double> r;
            for (std::size_t c = 0; c < row.size(); ++c) {
                const auto& v = row[c];
                const double x = v.is_number() ? v.get<double>() : -1;
                // Counts are tokens: whole numbers (1.5 was summed as is), as TensorRT-LLM's and
                // SGLang's readers require.
                if (!v.is_number() || !(x >= 0) || std::isinf(x) || (ids && (!v.is_number_integer() || x >= kMaxColumns))
                    || (!ids && (x > static_cast<double>(kMaxRecordedCount) || x != std::floor(x))))
                    fail(std::string("\"") + name + "\" row " + std::to_string(l) + ", entry " + std::to_string(c)
                         + (ids ? " must be an expert id from 0 to " + std::to_string(kMaxColumns - 1)
                                : std::string(" must be a whole token count from 0 to 2^40"))
                         + ", found " + jsonSnippet(v));
                r.push_back(x);
            }
            out.push_back(std::move(r));
        }
        return out;
    }

    // Every record's JSON failures (a wrong type on any line) located at its line.
    void record(std::string_view line)
    {
        withJsonErrors(m_file, m_line, [&] { recordUnchecked(line); });
    }

    void recordUnchecked(std::string_view line)
    {
        const nlohmann::json j = parseJsonInput(line, m_file, m_line, "the record");
        if (!j.is_object() || j.value("record_type", std::string()) != "eplb_load_stats")
            fail("expected an object with \"record_type\": \"eplb_load_stats\"");
        if (j.contains("version") && j["version"] != 1)
            fail("unsupported version " + jsonSnippet(j["version"]) + " (version 1 is read)");
        // Not used, but a record that carries them with nonsense is not the recorder's.
        if (j.contains("step") && (!j["step"].is_number_integer() || j["step"].get<long long>() < 0))
            fail("\"step\" must be an integer >= 0, found " + jsonSnippet(j["step"]));
        if (j.contains("num_ranks") && (!j["num_ranks"].is_number_integer() || j["num_ranks"].get<long long>() < 1
                                        || j["num_ranks"].get<long long>() > (1 << 20)))
            fail("\"num_ranks\" must be an integer in [1, 2^20], found " + jsonSnippet(j["num_ranks"]));
        if (!j.contains("expert_load"))
            fail("missing \"expert_load\"");
        std::vector<std::vector<double>> load = matrix(j["expert_load"], "expert_load", false);
        const bool physical = j.contains("p2l_map");
        if (m_records > 0 && physical != m_physical)
            fail("some records have \"p2l_map\" and others do not");
        m_physical = physical;
        if (physical) {
            const auto map = matrix(j["p2l_map"], "p2l_map", true);
            if (map.size() != load.size() || map[0].size() != load[0].size())
                fail("\"p2l_map\" is " + std::to_string(map.size()) + " x " + std::to_string(map[0].size())
                     + ", \"expert_load\" " + std::to_string(load.size()) + " x " + std::to_string(load[0].size()));
            // vLLM's EPLB gives every logical expert at least one of the layer's slots: a map that
            // names an expert beyond its slot count, or leaves one out, is not a recorder's.
            const std::size_t slots = map[0].size();
            std::size_t experts = 0;
            for (std::size_t l = 0; l < map.size(); ++l) {
                for (const double id : map[l]) {
                    if (static_cast<std::size_t>(id) >= slots)
                        fail("\"p2l_map\" layer " + std::to_string(l) + " maps a slot to expert "
                             + std::to_string(static_cast<std::size_t>(id)) + ", but " + std::to_string(slots)
                             + " slots hold at most " + std::to_string(slots) + " experts (ids 0 to "
                             + std::to_string(slots - 1) + ")");
                    experts = std::max(experts, static_cast<std::size_t>(id) + 1);
                }
            }
            for (std::size_t l = 0; l < map.size(); ++l) {
                std::vector<char> seen(experts, 0);
                for (const double id : map[l])
                    seen[static_cast<std::size_t>(id)] = 1;
                if (const auto gap = std::find(seen.begin(), seen.end(), 0); gap != seen.end())
                    fail("\"p2l_map\" layer " + std::to_string(l) + " gives expert "
                         + std::to_string(gap - seen.begin()) + " no slot (the map names experts 0 to "
                         + std::to_string(experts - 1) + "; every expert has at least one slot)");
            }
            if (m_records > 0)  // an expert with no slot in this record still has its column
                experts = std::max(experts, m_sum[0].size());
            std::vector<std::vector<double>> logical(load.size(), std::vector<double>(experts, 0.0));
            for (std::size_t l = 0; l < load.size(); ++l) {
                for (std::size_t s = 0; s < load[l].size(); ++s)
                    logical[l][static_cast<std::size_t>(map[l][s])] += load[l][s];
            }
            load = std::move(logical);
        }
        if (m_records == 0) {
            m_sum = std::move(load);
        } else {
            if (load.size() != m_sum.size() || (!physical && load[0].size() != m_sum[0].size()))
                fail("\"expert_load\" is " + std::to_string(load.size()) + " x " + std::to_string(load[0].size())
                     + ", earlier records " + std::to_string(m_sum.size()) + " x " + std::to_string(m_sum[0].size()));
            for (std::size_t l = 0; l < load.size(); ++l) {
                m_sum[l].resize(std::max(m_sum[l].size(), load[l].size()), 0.0);
                for (std::size_t e = 0; e < load[l].size(); ++e)
                    m_sum[l][e] += load[l][e];
            }
        }
        ++m_records;
    }

    std::string_view m_text;
    const std::string& m_file;
    int m_line = 0;
    int m_records = 0;
    bool m_physical = false;
    std::vector<std::vector<double>> m_sum;
};

}  // namespace

LoadStats parseVllmStats(std::string_view text, const std::string& file)
{
    return VllmParser(text, file).parse();
}

}  // namespace moex::detail
