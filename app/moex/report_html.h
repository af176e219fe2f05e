// The load-statistics report as one self-contained HTML file (issue 21): the analysis of
// core/run/load_report.h with its charts drawn by the window's own Qt Charts and heatmap widgets
// and embedded as SVG, and the recommended placement written next to it in the serving system's
// format, with the flag that loads it.
//
//   moex report STATS --scenario S [-o report.html] [--slots R1,R2,...] [--strategies eplb,search,gem] [--set K=V]...
#pragma once

#include <QString>
#include <QStringList>

#ifndef Q_MOC_RUN
#include "run/load_report.h"
#endif
#include "views/report_charts.h"

#include <vector>

namespace moex::app {

struct ReportFiles {
    QString html;          // the report
    QString placement;     // the recommended placement's export ("" when EPLB should stay off)
    QString format;        // its format (sglang, trtllm, vllm-ascend, native)
    QString load_flag;     // how the serving system loads it
    int charts = 0;        // SVG charts embedded
};

// The report's curve as lines per strategy (slots per GPU against step time in ms, or users).
std::vector<views::CurveLine> reportCurveLines(const LoadReport& r, bool users);

// The export format a statistics file's serving system loads, and the flag or key that loads `file`.
QString exportFormatFor(const LoadReport& r);
QString loadFlagFor(const LoadReport& r, const QString& file);

// Writes the placement export (atomically, next to `htmlPath`) and then the HTML (atomically).
// `sets`: the KEY=VALUE overrides the scenario was loaded with (shown in the reproduce command).
// Returns an error message, or "" (and fills `out`).
QString writeReport(const LoadReport& r, const QString& scenarioFile, const QString& statsPath, const QString& htmlPath,
                    ReportFiles* out, const QStringList& sets = {});

// `moex report ...`: parses its arguments (those after "report"), builds and writes the report
// offscreen; exit code 0, 2 on bad input (a located error), 1 on a bug.
int runReportCommand(const QStringList& args);

}  // namespace moex::app
