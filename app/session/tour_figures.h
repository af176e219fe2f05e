// A guided tour's captions quote figures computed when the tour runs, never prose written
// beforehand: each step's scenario is summarised as `moex-cli simulate` does (its own placement,
// kSummarySteps steps), and placeholders in the caption are filled from those summaries.
//
// Placeholders (N, A, B: 1-based step numbers; without @N: the step the caption belongs to):
//   {step_ms} {step_ms@N}     mean step time, ms          {ktok_s} {ktok_s@N}  thousand tokens/s
//   {imbalance} {imbalance@N} max/mean GPU load           {comm_ms} {comm_ms@N} dispatch + combine, ms
//   {moe_ms} {moe_ms@N}       MoE layers, ms
//   {loss@A,B}                step B's step time minus step A's, ms (what B's change costs)
//   {recovered@A,B}           the share of that loss this step wins back: (B - this) / (B - A), in %
// A figure not known yet (being computed, or its step failed) shows as "…".
#pragma once

#include "samples_catalog.h"

#ifndef Q_MOC_RUN
#include "common/cancel.h"
#endif

#include <QString>

#include <string>
#include <vector>

namespace moex::session {

struct TourStepFigures {
    bool ok = false;
    double step_ms = 0;
    double ktok_s = 0;
    double imbalance = 1;
    double comm_ms = 0;
    double moe_ms = 0;
    std::string error;  // when !ok
};

// Every step of `tour`, summarised. A step whose scenario does not load or place has ok = false
// and its error; throws only Cancelled.
std::vector<TourStepFigures> tourFigures(const Tour& tour, const CancelToken& cancel = {});

// `caption` of step `step` (0-based) with its placeholders filled from `figures` (which may be
// empty: every figure then shows as "…"). Unknown placeholders stay as they are written.
QString fillCaption(const QString& caption, int step, const std::vector<TourStepFigures>& figures);

}  // namespace moex::session
