#include "model/hf_json.h"
#include "common/json_input.h"

#include <cmath>

namespace moex::hf {

std::string describe(const Json& value)
{
    const std::string dump = jsonSnippet(value);
    switch (value.type()) {
    case Json::value_t::string: return "string " + dump;
    case Json::value_t::boolean: return "boolean " + dump;
    case Json::value_t::array: return "array " + dump;
    case Json::value_t::object: return "object";
    case Json::value_t::null: return "null";
    default: return dump;
    }
}

ConfigReader::ConfigReader(const Json& root, const std::string& text, std::string file, Diagnostics& diags,
                           const JsonKeyOffsets* keys)
    : m_root(root), m_keys(keys), m_source(text), m_file(std::move(file)), m_diags(diags)
{
    auto it = root.find("text_config");
    if (it != root.end() && it->is_object())
        m_text = &*it;
}

const Json* ConfigReader::find(const std::string& key) const
{
    for (const Json* scope : {m_text, &m_root}) {
        if (!scope)
            continue;
        auto it = scope->find(key);
        if (it != scope->end() && !it->is_null())
            return &*it;
    }
    return nullptr;
}

const Json* ConfigReader::object(const std::string& key) const
{
    for (const Json* scope : {&m_root, m_text}) {
        if (!scope)
            continue;
        auto it = scope->find(key);
        if (it != scope->end() && it->is_object())
            return &*it;
    }
    return nullptr;
}

std::string ConfigReader::objectPointer(const std::string& key) const
{
    for (const Json* scope : {&m_root, m_text}) {
        if (!scope)
            continue;
        auto it = scope->find(key);
        if (it != scope->end() && it->is_object())
            return (scope == m_text ? "/text_config/" : "/") + jsonPointerToken(key);
    }
    return {};
}

Location ConfigReader::at(const std::string& key) const
{
    const bool inText = m_text && m_text->contains(key) && !(*m_text)[key].is_null();
    return atPointer((inText ? "/text_config/" : "/") + jsonPointerToken(key), key);
}

void ConfigReader::errorAt(const std::string& pointer, const std::string& key, const std::string& message)
{
    m_diags.error(atPointer(pointer, key), message);
}

Location ConfigReader::atPointer(const std::string& pointer, const std::string& key) const
{
    if (m_keys)
        if (auto where = m_keys->locate(pointer, m_source, m_file))
            return *where;
    // Without offsets (or a key written with escapes): a key spelled once in the file can still be pointed at.
    const std::string quoted = '"' + key + '"';
    const std::size_t first = m_source.find(quoted);
    if (first == std::string::npos || m_source.find(quoted, first + 1) != std::string::npos)
        return {m_file, 0, 0};
    return locationOfOffset(m_source, first, m_file);
}

void ConfigReader::error(const std::string& key, const std::string& message)
{
    m_diags.error(at(key), message);
}

void ConfigReader::errorAtFile(const std::string& message)
{
    m_diags.error({m_file, 0, 0}, message);
}

std::optional<std::int64_t> ConfigReader::integer(const std::string& key, std::int64_t min, std::int64_t max)
{
    const Json* v = find(key);
    if (!v)
        return std::nullopt;
    std::int64_t value = 0;
    if (v->is_number_integer()) {
        if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
            error(key, "'" + key + "' = " + jsonSnippet(*v) + " is out of range [" + std::to_string(min) + ", "
                           + std::to_string(max) + "]");
            return std::nullopt;
        }
        value = v->get<std::int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>()
               && std::fabs(v->get<double>()) < 9e15) {
        value = static_cast<std::int64_t>(v->get<double>());  // some exporters write 7168.0
    } else {
        error(key, "'" + key + "' must be an integer, got " + describe(*v));
        return std::nullopt;
    }
    if (value < min || value > max) {
        error(key, "'" + key + "' = " + std::to_string(value) + " is out of range [" + std::to_string(min) + ", "
                       + std::to_string(max) + "]");
        return std::nullopt;
    }
    return value;
}

std::optional<double> ConfigReader::number(const std::string& key, double min, double max)
{
    const Json* v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_number()) {
        error(key, "'" + key + "' must be a number, got " + describe(*v));
        return std::nullopt;
    }
    const double value = v->get<double>();
    if (!(value >= min && value <= max)) {
        error(key, "'" + key + "' = " + jsonSnippet(*v) + " is out of range");
        return std::nullopt;
    }
    return value;
}

std::optional<std::string> ConfigReader::string(const std::string& key)
{
    const Json* v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_string()) {
        error(key, "'" + key + "' must be a string, got " + describe(*v));
        return std::nullopt;
    }
    return v->get<std::string>();
}

std::optional<bool> ConfigReader::boolean(const std::string& key)
{
    const Json* v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_boolean()) {
        error(key, "'" + key + "' must be true or false, got " + describe(*v));
        return std::nullopt;
    }
    return v->get<bool>();
}

std::optional<std::vector<std::int64_t>> ConfigReader::integerList(const std::string& key, std::int64_t min,
                                                                   std::int64_t max)
{
    const Json* v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_array()) {
        error(key, "'" + key + "' must be a list of integers, got " + describe(*v));
        return std::nullopt;
    }
    std::vector<std::int64_t> out;
    for (const Json& item : *v) {
        if (!item.is_number_integer() || item.get<std::int64_t>() < min || item.get<std::int64_t>() > max) {
            error(key, "'" + key + "' must hold integers in [" + std::to_string(min) + ", " + std::to_string(max)
                           + "], got " + describe(item));
            return std::nullopt;
        }
        out.push_back(item.get<std::int64_t>());
    }
    return out;
}

}  // namespace moex::hf
