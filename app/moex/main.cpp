// moex: the desktop explorer. `moex [SCENARIO]` opens the window; with no display it prints the
// scenario's simulated summary; `moex --screenshot OUT.png ...` renders offscreen and exits;
// `moex report STATS --scenario S` writes the load-statistics report (report_html.h).
#include "command_line.h"
#include "main_window.h"
#include "report_html.h"
#include "run_summary.h"
#include "screenshot.h"

#include "common/diagnostics.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"

#include <QApplication>
#include <QDir>
#include <QTimer>

#include <cstdio>
#include <iostream>
#include <stdexcept>

namespace {

QString samplesDir()
{
    const QString env = qEnvironmentVariable("MOEX_SAMPLES_DIR");
    return env.isEmpty() ? QStringLiteral(MOEX_SAMPLES_DIR) : env;
}

// The offscreen platform warns on every window it shows that it cannot propagate size hints:
// noise in --screenshot runs, so it is dropped; everything else passes through.
QtMessageHandler g_defaultHandler = nullptr;
void quietOffscreen(QtMsgType type, const QMessageLogContext& ctx, const QString& msg)
{
    if (msg.contains(QLatin1String("does not support propagateSizeHints")))
        return;
    if (g_defaultHandler)
        g_defaultHandler(type, ctx, msg);
}

int headless(const QString& scenario)
{
    std::fprintf(stderr, "moex: no display (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset): "
                         "printing the scenario's summary instead of opening the window.\n");
    try {
        const moex::Scenario s = moex::loadScenarioFile(scenario.toStdString());
        const moex::Placement p = moex::resolvePlacement(s);
        std::cout << moex::session::headlessSummary(moex::session::summarize(s, p));
        return 0;
    } catch (const moex::InputError& e) {  // bad input: exit 2, as moex-cli
        std::cerr << e.diagnostics().format();
        return 2;
    } catch (const std::invalid_argument& e) {  // a configuration the simulator refuses
        std::cerr << "moex: " << scenario.toStdString() << ": error: " << e.what() << '\n';
        return 2;
    } catch (const std::exception& e) {  // a bug
        std::cerr << "moex: internal error: " << e.what() << '\n';
    }
    return 1;
}

}  // namespace

int main(int argc, char** argv)
{
    QStringList args;
    for (int i = 1; i < argc; ++i)
        args << QString::fromLocal8Bit(argv[i]);
    if (!args.isEmpty() && args.front() == QLatin1String("report")) {
        // moex report STATS --scenario S ...: offscreen, like --screenshot.
        qputenv("QT_QPA_PLATFORM", "offscreen");
        g_defaultHandler = qInstallMessageHandler(quietOffscreen);
        QApplication app(argc, argv);
        return moex::app::runReportCommand(args.mid(1));
    }
    const moex::app::CommandLine cmd = moex::app::parseCommandLine(args);
    if (cmd.help) {
        std::fputs(qPrintable(moex::app::usageText()), stdout);
        return 0;
    }
    if (cmd.version) {
        std::printf("moex %s\n", MOEX_VERSION);
        return 0;
    }
    if (!cmd.error.isEmpty()) {
        std::fprintf(stderr, "moex: %s\n\n%s", qPrintable(cmd.error), qPrintable(moex::app::usageText()));
        return 2;
    }
    const QString samples = samplesDir();
    const QString scenario = cmd.scenario.isEmpty()
                                 ? samples + QStringLiteral("/scenarios/deepseek-r1-decode-nvl72.yaml")
                                 : QDir::current().absoluteFilePath(cmd.scenario);
    if (!cmd.screenshot.isEmpty()) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        g_defaultHandler = qInstallMessageHandler(quietOffscreen);
    }
    else if (moex::app::noDisplay()) {
        if (cmd.engine)
            std::fprintf(stderr, "moex: --source engine needs the window; without a display, "
                                 "`moex-cli run SCENARIO` runs the engine and prints its summary.\n");
        return headless(scenario);
    }

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("moex"));
    QApplication::setApplicationName(QStringLiteral("moex"));
    QApplication::setApplicationVersion(QStringLiteral(MOEX_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("moex"));
    moex::app::initResources();
    app.setStyleSheet(moex::app::styleSheet());
    if (!cmd.screenshot.isEmpty())
        return moex::app::runScreenshot(cmd, samples, scenario);

    moex::app::MainWindow window(samples);
    window.resize(1600, 1000);
    window.show();
    // Open after the first paint so the window appears at once.
    QTimer::singleShot(0, &window, [&window, scenario, engine = cmd.engine] {
        if (window.openScenario(scenario) && engine)
            window.setEngineSource(true);
    });
    return app.exec();
}
