// Small bridges between core's std::string world and Qt strings, and error text of core exceptions.
#pragma once

#include <QString>

#include <exception>
#include <string>

namespace moex::session {

inline QString qs(const std::string& s) { return QString::fromStdString(s); }
inline std::string ss(const QString& s) { return s.toStdString(); }

// InputError: every located diagnostic, one per line; anything else: what().
QString errorText(const std::exception& e);

}  // namespace moex::session
