#include "command_line.h"

#include <QFileInfo>
#include <QRegularExpression>

namespace moex::app {

QString usageText()
{
    return QStringLiteral(
        "usage: moex [SCENARIO] [--source sim|engine] [--screenshot OUT.png] [--view all|topology|heatmaps|compare]\n"
        "            [--size WxH] [--presentation] [--tour TOUR.yaml [--tour-step N]] [--gpu N] [--load-stats STATS]\n"
        "       moex report STATS --scenario S [-o report.html] [--slots R1,R2,...] [--strategies eplb,search,gem]\n"
        "                   [--set KEY=VALUE]...\n"
        "\n"
        "Opens the moex explorer on SCENARIO (default: samples/scenarios/deepseek-r1-decode-nvl72.yaml).\n"
        "Without a display it prints the scenario's simulated summary instead.\n"
        "`moex report` turns a serving system's expert-load statistics (SGLang .pt, TensorRT-LLM folder,\n"
        "vLLM JSONL) into an HTML report: should EPLB be on, with how many slots; offscreen.\n"
        "\n"
        "  --source sim|engine   where the numbers come from: the analytical model (default) or the real\n"
        "                        MoE layers run on this machine's CPU (the window's Run > Source)\n"
        "  --screenshot OUT.png  render the window offscreen after a few simulated steps, save it, exit\n"
        "  --view NAME           what to render: all (default), topology, heatmaps, compare\n"
        "  --size WxH            image size in pixels (default 1600x1000)\n"
        "  --presentation        with --screenshot: View > Presentation mode on\n"
        "  --tour TOUR.yaml      with --screenshot: that guided tour at step N (--tour-step N, default 1)\n"
        "  --gpu N               with --screenshot: GPU N selected, its experts' card shown\n"
        "  --load-stats STATS    with --screenshot: STATS analysed in the Load statistics tab (File > Open Load Statistics)\n"
        "  -h, --help            this text\n"
        "  --version             the version\n");
}

CommandLine parseCommandLine(const QStringList& args)
{
    CommandLine c;
    bool viewGiven = false, sizeGiven = false;
    auto value = [&](int& i, const QString& flag) -> QString {
        const QString a = args[i];
        const int eq = a.indexOf(QLatin1Char('='));
        if (eq > 0)
            return a.mid(eq + 1);
        if (i + 1 >= args.size()) {
            c.error = QStringLiteral("%1 needs a value").arg(flag);
            return {};
        }
        return args[++i];
    };
    bool screenshotOnly = false;
    bool tourStepGiven = false;
    for (int i = 0; i < args.size() && c.error.isEmpty(); ++i) {
        const QString a = args[i];
        const QString flag = a.section(QLatin1Char('='), 0, 0);
        if (a == QLatin1String("-h") || a == QLatin1String("--help")) {
            c.help = true;
        } else if (a == QLatin1String("--version")) {
            c.version = true;
        } else if (flag == QLatin1String("--screenshot")) {
            c.screenshot = value(i, flag);
            if (c.error.isEmpty() && c.screenshot.isEmpty())
                c.error = QStringLiteral("--screenshot needs an output file name");
        } else if (flag == QLatin1String("--source")) {
            const QString v = value(i, flag);
            if (c.error.isEmpty() && v != QLatin1String("sim") && v != QLatin1String("engine"))
                c.error = QStringLiteral("--source '%1' is not one of: sim, engine").arg(v);
            c.engine = v == QLatin1String("engine");
        } else if (flag == QLatin1String("--view")) {
            c.view = value(i, flag);
            viewGiven = true;
            static const QStringList views = {QStringLiteral("all"), QStringLiteral("topology"),
                                              QStringLiteral("heatmaps"), QStringLiteral("compare")};
            if (c.error.isEmpty() && !views.contains(c.view))
                c.error = QStringLiteral("--view '%1' is not one of: %2").arg(c.view, views.join(QStringLiteral(", ")));
        } else if (flag == QLatin1String("--size")) {
            const QString v = value(i, flag);
            sizeGiven = true;
            static const QRegularExpression re(QStringLiteral("^(\\d{1,9})[xX](\\d{1,9})$"));
            const auto m = re.match(v);
            if (!c.error.isEmpty())
                break;
            if (!m.hasMatch()) {
                c.error = QStringLiteral("--size '%1' must be WIDTHxHEIGHT, e.g. 1600x1000").arg(v);
            } else {
                c.size = QSize(m.captured(1).toInt(), m.captured(2).toInt());
                if (c.size.width() < 320 || c.size.height() < 240 || c.size.width() > 8192 || c.size.height() > 8192)
                    c.error = QStringLiteral("--size %1 is out of range (320x240 .. 8192x8192)").arg(v);
            }
        } else if (a == QLatin1String("--presentation")) {
            c.presentation = true;
            screenshotOnly = true;
        } else if (flag == QLatin1String("--tour")) {
            c.tour = value(i, flag);
            screenshotOnly = true;
        } else if (flag == QLatin1String("--gpu")) {
            const QString v = value(i, flag);
            bool ok = false;
            c.gpu = v.toInt(&ok);
            if (c.error.isEmpty() && (!ok || c.gpu < 0))
                c.error = QStringLiteral("--gpu '%1' must be a GPU index (0, 1, ...)").arg(v);
            screenshotOnly = true;
        } else if (flag == QLatin1String("--load-stats")) {
            c.loadStats = value(i, flag);
            screenshotOnly = true;
        } else if (flag == QLatin1String("--tour-step")) {
            const QString v = value(i, flag);
            bool ok = false;
            c.tourStep = v.toInt(&ok);
            tourStepGiven = true;
            if (c.error.isEmpty() && (!ok || c.tourStep < 1 || c.tourStep > 99))
                c.error = QStringLiteral("--tour-step '%1' must be a step number from 1").arg(v);
            screenshotOnly = true;
        } else if (a.startsWith(QLatin1Char('-')) && a != QLatin1String("-")) {
            c.error = QStringLiteral("unknown option '%1'").arg(a);
        } else if (c.scenario.isEmpty()) {
            c.scenario = a;
        } else {
            c.error = QStringLiteral("more than one scenario given ('%1' and '%2')").arg(c.scenario, a);
        }
    }
    if (c.error.isEmpty() && c.screenshot.isEmpty() && (viewGiven || sizeGiven || screenshotOnly))
        c.error = QStringLiteral("--view, --size, --presentation, --tour, --gpu and --load-stats only apply with --screenshot OUT.png");
    if (c.error.isEmpty() && tourStepGiven && c.tour.isEmpty())
        c.error = QStringLiteral("--tour-step applies with --tour TOUR.yaml");
    if (c.error.isEmpty() && !c.tour.isEmpty() && !c.scenario.isEmpty())
        c.error = QStringLiteral("--tour plays its own steps' scenarios: give no SCENARIO with it ('%1')").arg(c.scenario);
    // The screenshot is a PNG, and never a file it reads: `moex --screenshot SCENARIO` (the output
    // name left out) wrote a PNG over the scenario.
    if (c.error.isEmpty() && !c.screenshot.isEmpty()) {
        if (!c.screenshot.endsWith(QLatin1String(".png"), Qt::CaseInsensitive))
            c.error = QStringLiteral("--screenshot '%1' must name a .png file").arg(c.screenshot);
        const QString out = QFileInfo(c.screenshot).canonicalFilePath();
        for (const QString& in : {c.scenario, c.tour, c.loadStats})
            if (c.error.isEmpty() && !out.isEmpty() && !in.isEmpty() && QFileInfo(in).canonicalFilePath() == out)
                c.error = QStringLiteral("--screenshot '%1' is the input file %2: writing it would replace the input; name another file")
                              .arg(c.screenshot, in);
    }
    return c;
}

bool noDisplay()
{
    return qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
           && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

}  // namespace moex::app
