// Fixtures of the config.json import tests (tst_hf_import, tst_hf_import_errors).
#pragma once

#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include <nlohmann/json.hpp>
#endif

#include <QByteArray>

namespace moex::test {

// The hand-written configs of the tests are about one key each; every real config.json gives
// num_attention_heads, which import-hf requires. `json` with "num_attention_heads": 8 added as its
// last key where it is an object that lacks it (appended at the end, so that the lines and columns
// the tests expect of every other key stay). Invalid JSON and other values are left as they are.
inline QByteArray withHeads(const QByteArray& json)
{
    if (!nlohmann::json::accept(json.toStdString()))
        return json;
    const nlohmann::json j = nlohmann::json::parse(json.toStdString());
    const bool inText = j.is_object() && j.contains("text_config") && j["text_config"].is_object()
        && j["text_config"].contains("num_attention_heads");
    if (!j.is_object() || j.contains("num_attention_heads") || inText)
        return json;
    const qsizetype close = json.lastIndexOf('}');
    QByteArray out = json.left(close);
    out.append(j.empty() ? "" : ", ");
    out.append("\"num_attention_heads\": 8");
    out.append(json.mid(close));
    return out;
}

}  // namespace moex::test
