// The HTML load-statistics report: XHTML (well-formed XML, so that it can be parsed back), inline
// SVG drawn by the window's widgets through QSvgGenerator, the placement export beside it.
#include "report_html.h"

#include "views/charts.h"
#include "views/heatmap_widget.h"
#include "views/report_charts.h"
#include "views/topology_canvas.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "placement/exporters.h"
#include "scenario/scenario_overrides.h"
#include "scenario/scenario_yaml.h"

#include <QApplication>
#include <QAbstractAxis>
#include <QChart>
#include <QLegend>
#include <QLayout>
#include <QBuffer>
#include <QDir>
#include <QFileInfo>
#include <QPainter>
#include <QSvgGenerator>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

namespace moex::app {

namespace {

QString esc(const QString& s) { return s.toHtmlEscaped(); }
QString esc(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }
QString num(double v, int decimals) { return QString::number(v, 'f', decimals); }

// Every font of the chart in a family browsers have (the SVG names the family, it embeds no glyphs).
void useSansFonts(QChart* chart)
{
    views::changeChartFonts(chart, [](QFont f) {
        f.setFamilies({QStringLiteral("DejaVu Sans"), QStringLiteral("Arial"), QStringLiteral("sans-serif")});
        return f;
    });
}

// The widget drawn into SVG at `size`, without the XML declaration (it is inlined).
QString widgetSvg(QWidget* w, QSize size, const QString& title)
{
    w->resize(size);
    w->ensurePolished();
    if (w->layout())
        w->layout()->activate();
    w->setAttribute(Qt::WA_DontShowOnScreen);
    w->show();  // offscreen: lays the chart view's scene out
    QApplication::processEvents();
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator gen;
    gen.setOutputDevice(&buffer);
    gen.setSize(size);
    gen.setViewBox(QRect(QPoint(0, 0), size));
    gen.setTitle(title);
    QPainter p(&gen);
    w->render(&p);
    p.end();
    w->hide();
    QString svg = QString::fromUtf8(buffer.data());
    const int start = svg.indexOf(QLatin1String("<svg"));
    return start >= 0 ? svg.mid(start) : svg;
}

// The window's topology canvas for a placement and a step: links coloured by utilisation, GPUs by
// busy time, the chips by the load of all layers.
QString topologySvg(const LoadReport& r, const Placement& placement, const StepMetrics& metrics, const QString& title)
{
    views::TopologyCanvas canvas;
    canvas.setScenario(r.scenario, placement);
    canvas.setLayer(MoeLayers::all());
    canvas.setMetrics(metrics);
    canvas.resize(QSize(960, 640));
    canvas.fitAll();
    return widgetSvg(&canvas, QSize(960, 640), title);
}

QString trafficSvg(const std::vector<double>& traffic, int gpus, const QString& title, double maxBytes)
{
    // Same size as the curves: two fit side by side in the page.
    views::HeatmapWidget w;
    QFont font = w.font();
    font.setFamilies({QStringLiteral("DejaVu Sans"), QStringLiteral("Arial"), QStringLiteral("sans-serif")});
    w.setFont(font);
    std::vector<double> mb(traffic.size());
    for (std::size_t i = 0; i < traffic.size(); ++i)
        mb[i] = traffic[i] / 1e6;
    w.setMatrix(gpus, gpus, mb);
    w.setTitle(title);
    w.setAxisTitles(QObject::tr("source GPU"), QObject::tr("destination GPU"));
    w.setUnit(QObject::tr("MB"));
    w.setColorMap(views::ColorMap::viridis());
    w.setRange(0, maxBytes / 1e6);  // one scale for off and on: the colours compare
    // The heatmap paints its cells as one image: a browser would smooth it into blurs.
    QString svg = widgetSvg(&w, QSize(480, 420), title);
    svg.replace(QLatin1String("<image "), QLatin1String("<image style=\"image-rendering:pixelated\" "));
    return svg;
}

QString pointRow(const LoadReport& r, const ReportPoint& p, bool recommended)
{
    const double base = r.baseline.step_time_us;
    QString row = recommended ? QStringLiteral("<tr class=\"rec\">") : QStringLiteral("<tr>");
    row += QStringLiteral("<td>%1</td><td>%2</td><td>%3</td>").arg(esc(p.strategy)).arg(p.slots_per_gpu).arg(p.slot_count);
    if (!p.fits) {
        row += QStringLiteral("<td colspan=\"5\">does not fit: the weights need %1 GB per GPU</td></tr>")
                   .arg(num(p.hbm_used_gb, 1));
        return row;
    }
    row += QStringLiteral("<td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td>")
               .arg(num(p.balance, 3), num(p.moe_time_us / 1000.0, 2), num(p.step_time_us / 1000.0, 2),
                    base > 0 ? num(100.0 * (p.step_time_us / base - 1.0), 1) + QStringLiteral("%") : QString(),
                    QString::number(p.max_concurrent_users));
    row += QStringLiteral("</tr>");
    return row;
}

}  // namespace

std::vector<views::CurveLine> reportCurveLines(const LoadReport& r, bool users)
{
    std::vector<views::CurveLine> lines;
    for (std::size_t i = 0; i < r.curve.size(); ++i) {
        const ReportPoint& p = r.curve[i];
        if (!p.fits)
            continue;
        if (lines.empty() || lines.back().name != QString::fromStdString(p.strategy))
            lines.push_back({QString::fromStdString(p.strategy), {}, {}, {}});
        lines.back().x.push_back(p.slots_per_gpu);
        lines.back().y.push_back(users ? static_cast<double>(p.max_concurrent_users) : p.step_time_us / 1000.0);
        lines.back().point.push_back(static_cast<int>(i));
    }
    return lines;
}

QString exportFormatFor(const LoadReport& r)
{
    if (r.format == "sglang")
        return QStringLiteral("sglang");
    if (r.format == "trtllm")
        return QStringLiteral("trtllm");
    if (r.format == "vllm")
        return QStringLiteral("vllm-ascend");
    return QStringLiteral("native");
}

QString loadFlagFor(const LoadReport& r, const QString& file)
{
    const QString f = exportFormatFor(r);
    const int redundant = r.recommended >= 0 ? r.curve[static_cast<std::size_t>(r.recommended)].redundant_slots : 0;
    if (f == QLatin1String("sglang"))
        return QStringLiteral("python -m sglang.launch_server ... --init-expert-location %1 --ep-num-redundant-experts %2")
            .arg(file)
            .arg(redundant);
    if (f == QLatin1String("trtllm"))
        return QStringLiteral("extra LLM API options YAML: moe_config: {load_balancer: %1}").arg(file);
    if (f == QLatin1String("vllm-ascend"))
        return QStringLiteral("vllm-ascend additional config: expert_map_path: %1").arg(file);
    return QStringLiteral("a moex scenario: moex-cli simulate SCENARIO --set placement.strategy=... (native placement file %1)").arg(file);
}

QString writeReport(const LoadReport& r, const QString& scenarioFile, const QString& statsPath, const QString& htmlPath,
                    ReportFiles* out, const QStringList& sets)
{
    ReportFiles files;
    files.html = htmlPath;
    files.format = exportFormatFor(r);
    const QFileInfo info(htmlPath);
    try {
        // The recommended placement, in the serving system's format, next to the report.
        if (r.recommended >= 0) {
            const QString ext = files.format == QLatin1String("trtllm") ? QStringLiteral(".yaml") : QStringLiteral(".json");
            files.placement = info.absolutePath() + QLatin1Char('/') + info.completeBaseName() + QStringLiteral("-placement-")
                              + files.format + ext;
            const ExportFormat fmt = exportFormatFromString(files.format.toStdString());
            std::optional<SeparationReport> separated;
            const int domains = std::max(1, r.scenario.topology.numDomains());
            const Placement p = placementForExport(r.recommended_placement, fmt, r.file_load, r.gpus / domains, separated);
            writePlacementExport(files.placement.toStdString(), p, r.scenario.model, fmt);
            files.load_flag = loadFlagFor(r, QFileInfo(files.placement).fileName());
        }
    } catch (const std::exception& e) {
        return QStringLiteral("cannot write the placement next to the report: %1").arg(QString::fromUtf8(e.what()));
    }

    QStringList svgs;
    // Imbalance per layer.
    {
        views::LayerImbalanceChart chart;
        chart.setData(r.layer_ids, r.layer_imbalance, r.imbalance_p90);
        useSansFonts(chart.chart());
        svgs << widgetSvg(&chart, QSize(960, 360), chart.chart()->title());
    }
    // What each strategy buys: step time and users against slots per GPU.
    {
        views::SlotCurveChart time;
        time.setData(QObject::tr("Step time against slots per GPU"), QObject::tr("ms per step"), reportCurveLines(r, false),
                     r.baseline.step_time_us / 1000.0, r.recommended);
        useSansFonts(time.chart());
        svgs << widgetSvg(&time, QSize(640, 380), QObject::tr("step time"));
        views::SlotCurveChart users;
        users.setData(QObject::tr("Concurrent users the KV cache holds"), QObject::tr("users (whole system)"),
                      reportCurveLines(r, true), static_cast<double>(r.baseline.max_concurrent_users), r.recommended);
        useSansFonts(users.chart());
        svgs << widgetSvg(&users, QSize(640, 380), QObject::tr("users"));
    }
    double maxTraffic = 1;
    for (const auto* t : {&r.traffic_off, &r.traffic_on})
        for (double b : *t)
            maxTraffic = std::max(maxTraffic, b);
    svgs << trafficSvg(r.traffic_off, r.gpus, QObject::tr("GPU \u2192 GPU traffic, EPLB off (MB per step)"), maxTraffic);
    svgs << trafficSvg(r.traffic_on, r.gpus,
                       r.recommended >= 0 ? QObject::tr("GPU \u2192 GPU traffic, recommended placement (MB per step)")
                                          : QObject::tr("GPU \u2192 GPU traffic, EPLB off (recommended)"),
                       maxTraffic);
    svgs << topologySvg(r, r.baseline_placement, r.metrics_off, QObject::tr("links, EPLB off"));
    svgs << topologySvg(r, r.recommended_placement, r.metrics_on, QObject::tr("links, recommended"));
    files.charts = static_cast<int>(svgs.size());

    const QString stats = QFileInfo(statsPath).fileName();
    QString h;
    h += QStringLiteral("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
                        "<meta charset=\"utf-8\"/>\n<title>moex load report: %1</title>\n<style>\n"
                        "body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222;line-height:1.45}\n"
                        "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}\n"
                        ".headline{font-size:1.15em;background:#eef3fb;border-left:4px solid #3b528b;padding:.6em 1em}\n"
                        "table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .5em;text-align:right}\n"
                        "th{background:#f4f4f4}td:first-child{text-align:left}tr.rec{background:#fdebd0;font-weight:bold}\n"
                        "code{font-size:.85em}pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;padding:.5em;font-size:.8em}svg{display:block;margin:1em 0;max-width:100%;height:auto}\n"
                        ".pair{display:flex;gap:1em;flex-wrap:wrap}.pair>svg{flex:1 1 45%;min-width:320px;margin:0}\n</style>\n</head>\n<body>\n")
             .arg(esc(stats));
    h += QStringLiteral("<h1>Should EPLB be on? %1 on %2</h1>\n").arg(esc(stats), esc(r.scenario_name));
    h += QStringLiteral("<p class=\"headline\">%1</p>\n").arg(esc(r.recommendation));
    if (!files.placement.isEmpty())
        h += QStringLiteral("<p>The recommended placement is written next to this report as <code>%1</code> (%2); load it with "
                            "<code>%3</code>.</p>\n")
                 .arg(esc(QFileInfo(files.placement).fileName()), esc(files.format), esc(files.load_flag));

    h += QStringLiteral("<h2 id=\"file\">The file</h2>\n<table>\n");
    h += QStringLiteral("<tr><td>statistics</td><td>%1</td></tr>\n").arg(esc(statsPath));
    h += QStringLiteral("<tr><td>format</td><td>%1 (%2)</td></tr>\n").arg(esc(r.format), esc(r.detail));
    h += QStringLiteral("<tr><td>scenario</td><td>%1</td></tr>\n").arg(esc(scenarioFile));
    h += QStringLiteral("<tr><td>shape</td><td>%1 MoE layers, %2 experts, %3 GPUs, %4</td></tr>\n</table>\n")
             .arg(r.moe_layers)
             .arg(r.experts)
             .arg(r.gpus)
             .arg(r.snapshots == 1 ? QStringLiteral("1 snapshot") : QStringLiteral("%1 snapshots").arg(r.snapshots));

    h += QStringLiteral("<h2 id=\"balance\">Balance with EPLB off</h2>\n<p>Max/mean GPU load of each MoE layer when the experts sit "
                        "in id order (contiguous), from the file's counts. Over the layers: median %1, 90th percentile "
                        "%2, 99th %3, worst %4.</p>\n")
             .arg(num(r.imbalance_p50, 3), num(r.imbalance_p90, 3), num(r.imbalance_p99, 3), num(r.imbalance_max, 3));
    h += svgs[0] + QLatin1Char('\n');

    h += QStringLiteral("<h2 id=\"hottest\">Hottest experts</h2>\n<table>\n<tr><th>layer</th><th>expert</th><th>share of the layer</th>"
                        "<th>× the layer's mean</th><th>hot in snapshots</th></tr>\n");
    for (const HotExpert& e : r.hottest)
        h += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3%</td><td>%4</td><td>%5</td></tr>\n")
                 .arg(e.decoder_layer)
                 .arg(e.expert)
                 .arg(num(100.0 * e.share, 1), num(e.over_mean, 2),
                      e.stability < 0 ? QStringLiteral("one snapshot") : num(100.0 * e.stability, 0) + QStringLiteral("%"));
    h += QStringLiteral("</table>\n<p>\"Hot in snapshots\": of the file's snapshots, the share in which the expert is "
                        "among its layer's %1 hottest: a hot expert that stays hot is what static redundancy "
                        "fixes; one that moves needs rebalancing.</p>\n")
             .arg(r.hot_count);

    h += QStringLiteral("<h2 id=\"strategies\">What each strategy buys</h2>\n<p>Each point is the scenario simulated for 10 steps "
                        "with the file as its routing and the strategy's placement; more slots per GPU hold "
                        "redundant copies of hot experts and cost KV-cache memory, so fewer users fit.</p>\n");
    h += QStringLiteral("<div class=\"pair\">") + svgs[1] + svgs[2] + QStringLiteral("</div>\n");
    h += QStringLiteral("<table>\n<tr><th>strategy</th><th>slots per GPU</th><th>slots</th><th>max/mean load</th>"
                        "<th>MoE ms</th><th>step ms</th><th>vs EPLB off</th><th>users</th></tr>\n");
    h += pointRow(r, r.baseline, r.recommended < 0);
    for (std::size_t i = 0; i < r.curve.size(); ++i)
        h += pointRow(r, r.curve[i], static_cast<int>(i) == r.recommended);
    h += QStringLiteral("</table>\n");
    const ReportPoint& shown = r.recommended >= 0 ? r.curve[static_cast<std::size_t>(r.recommended)] : r.baseline;
    h += QStringLiteral("<p>Any row is reproduced by <code>moex-cli simulate</code> with the file as the routing and "
                        "the row's strategy and redundant slots (slots − %1); the %2 row:</p>\n<pre>%3</pre>\n")
             .arg(r.experts)
             .arg(r.recommended >= 0 ? QStringLiteral("recommended") : QStringLiteral("EPLB-off"))
             .arg(esc(reproduceCommand(scenarioFile.toStdString(), r.scenario.workload.routing.file, shown, 10)
                      + [&] {
                            std::string extra;
                            for (const QString& kv : sets)
                                extra += " --set " + kv.toStdString();
                            return extra;
                        }()));
    if (!r.refused.empty()) {
        h += QStringLiteral("<p>Not tried:</p>\n<ul>\n");
        for (const std::string& why : r.refused)
            h += QStringLiteral("<li>%1</li>\n").arg(esc(why));
        h += QStringLiteral("</ul>\n");
    }

    h += QStringLiteral("<h2 id=\"traffic\">Traffic, EPLB off and on</h2>\n<div class=\"pair\">") + svgs[3] + svgs[4]
         + QStringLiteral("</div>\n");
    h += QStringLiteral("<p>Per link, as the window's canvas draws it (links coloured by utilisation in the last "
                        "simulated step, GPUs by busy time, chips by load over all layers): EPLB off, then %1.</p>\n"
                        )
             .arg(r.recommended >= 0 ? QStringLiteral("the recommended placement") : QStringLiteral("again EPLB off (recommended)"))
         + svgs[5] + svgs[6];
    h += QStringLiteral("<p>Made by moex from %1.</p>\n</body>\n</html>\n").arg(esc(stats));

    // As every output of moex: atomically, a device or FIFO written straight through and its
    // failure an error (QSaveFile said nothing of /dev/full).
    try {
        const QByteArray bytes = h.toUtf8();
        writeFileAtomically(htmlPath.toStdString(), std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    if (out)
        *out = files;
    return {};
}

int runReportCommand(const QStringList& args)
{
    const QString usage = QStringLiteral(
        "usage: moex report STATS --scenario S [-o report.html] [--slots R1,R2,...] [--strategies eplb,search,gem]\n"
        "                   [--set KEY=VALUE]...\n");
    QString stats, scenario, output = QStringLiteral("report.html"), slotList, strategies;
    QStringList sets;
    for (int i = 0; i < args.size(); ++i) {
        const QString a = args[i];
        // A missing or empty value is "needs a value" (an empty --slots ran the default slots).
        auto value = [&](QString& into) {
            if (i + 1 >= args.size())
                return false;
            into = args[++i];
            return !into.isEmpty();
        };
        bool ok = true;
        if (a == QLatin1String("--scenario"))
            ok = value(scenario);
        else if (a == QLatin1String("-o") || a == QLatin1String("--output"))
            ok = value(output);
        else if (a == QLatin1String("--slots"))
            ok = value(slotList);
        else if (a == QLatin1String("--strategies"))
            ok = value(strategies);
        else if (a == QLatin1String("--set")) {
            QString kv;
            ok = value(kv);
            sets << kv;
        }
        else if (a.startsWith(QLatin1Char('-')) || !stats.isEmpty()) {
            std::fprintf(stderr, "moex report: unexpected argument '%s'\n%s", qPrintable(a), qPrintable(usage));
            return 2;
        } else
            stats = a;
        if (!ok) {
            std::fprintf(stderr, "moex report: %s needs a value\n%s", qPrintable(a), qPrintable(usage));
            return 2;
        }
    }
    if (stats.isEmpty() || scenario.isEmpty()) {
        std::fprintf(stderr, "moex report: a statistics file and --scenario are required\n%s", qPrintable(usage));
        return 2;
    }
    try {
        Overrides overrides;
        for (const QString& kv : sets)
            overrides.push_back(parseOverride(kv.toStdString()));
        const Scenario s = loadScenarioFile(scenario.toStdString(), overrides);
        // The report never replaces what it reads: the statistics, the scenario and its files.
        // The report is a file with its placement export beside it: '-' would be a file named '-'.
        if (output == QLatin1String("-"))
            throw InputError(Location{"-o", 0, 0}, "the report is an HTML file with the recommended placement written beside "
                                                   "it: give a file name, not '-'");
        const QString target = QFileInfo(QDir::current().absoluteFilePath(output)).canonicalFilePath();
        if (!target.isEmpty() && QFileInfo(stats).canonicalFilePath() == target)
            throw InputError(Location{"-o", 0, 0}, "'" + output.toStdString() + "' is the statistics file " + stats.toStdString()
                                                       + ": writing it would replace the input; name another file");
        if (const auto f = inputNamed(s, output.toStdString()))
            throw InputError(Location{"-o", 0, 0}, "'" + output.toStdString() + "' is " + f->role + " (" + f->path
                                                       + "): writing it would replace that input; name another file");
        LoadReportOptions options;
        if (args.contains(QStringLiteral("--strategies"))) {
            options.strategies.clear();
            for (const QString& part : strategies.split(QLatin1Char(','))) {
                const std::string name = part.trimmed().toStdString();
                if (name.empty())
                    throw InputError(Location{"--strategies", 0, 0}, "'" + strategies.toStdString() + "' has an empty name: give eplb, search, gem separated by commas");
                if (std::find(options.strategies.begin(), options.strategies.end(), name) != options.strategies.end())
                    throw InputError(Location{"--strategies", 0, 0}, "'" + name + "' is given twice");
                // A name the report does not try would leave it with nothing to compare, and a
                // recommendation from nothing ("keep EPLB off").
                if (name != "eplb" && name != "search" && name != "gem")
                    throw InputError(Location{"--strategies", 0, 0}, "'" + name + "' is not a strategy the report tries: eplb, search, gem");
                options.strategies.push_back(name);
            }
            if (options.strategies.empty())
                throw InputError(Location{"--strategies", 0, 0}, "no strategy given: name one or more of eplb, search, gem");
        }
        if (!slotList.isEmpty()) {
            // Total slots per layer (as `moex-cli place --slots`): each a multiple of the GPUs, at least the experts.
            const int G = s.topology.numGpus();
            const int E = s.model.routed_experts;
            const int fewest = (E + G - 1) / G;
            for (const QString& part : slotList.split(QLatin1Char(','))) {
                bool ok = false;
                const int total = part.trimmed().toInt(&ok);
                // At most 16 redundant slots per expert, as `place --slots` and placement.redundant_slots.
                if (ok && total > 17 * E)
                    throw InputError(Location{"--slots", 0, 0}, "'" + part.toStdString() + "' slots for " + std::to_string(E)
                                                                     + " experts: at most " + std::to_string(17 * E)
                                                                     + " (16 redundant slots per expert)");
                if (!ok || total < E || total % G != 0)
                    throw InputError(Location{"--slots", 0, 0},
                                     "'" + part.toStdString() + "' is not a slot count of " + std::to_string(G)
                                         + " GPUs holding " + std::to_string(E) + " experts: give multiples of "
                                         + std::to_string(G) + " from " + std::to_string(fewest * G));
                if (std::find(options.extra_slots_per_gpu.begin(), options.extra_slots_per_gpu.end(), total / G - fewest)
                    != options.extra_slots_per_gpu.end())
                    throw InputError(Location{"--slots", 0, 0}, "'" + part.toStdString() + "' is given twice");
                options.extra_slots_per_gpu.push_back(total / G - fewest);
            }
        }
        const LoadReport r = buildLoadReport(s, stats.toStdString(), options);
        ReportFiles files;
        const QString error = writeReport(r, scenario, stats, QDir::current().absoluteFilePath(output), &files, sets);
        if (!error.isEmpty()) {
            std::fprintf(stderr, "moex report: %s\n", qPrintable(error));
            return 2;
        }
        std::cout << r.recommendation << "\n";
        std::cout << "wrote " << files.html.toStdString() << " (" << files.charts << " charts)";
        if (!files.placement.isEmpty())
            std::cout << " and " << files.placement.toStdString() << " (" << files.format.toStdString() << "; load with: "
                      << files.load_flag.toStdString() << ")";
        std::cout << "\n";
        return 0;
    } catch (const InputError& e) {
        std::cerr << e.diagnostics().format();
        return 2;
    } catch (const std::invalid_argument& e) {
        std::cerr << "moex report: error: " << e.what() << '\n';
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "moex report: internal error: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace moex::app
