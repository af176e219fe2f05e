// StepMetrics snapshots as they travel through signals: immutable and shared, so one step's data
// is never copied per view.
#pragma once

#include <QMetaType>

#include <memory>

namespace moex {
struct StepMetrics;
}

namespace moex::session {
using MetricsPtr = std::shared_ptr<const moex::StepMetrics>;
// Registers MetricsPtr for queued connections (idempotent).
void registerSessionMetaTypes();
}  // namespace moex::session

Q_DECLARE_METATYPE(moex::session::MetricsPtr)
