// moex [SCENARIO] [--source sim|engine] [--screenshot OUT.png [--view all|topology|heatmaps|compare] [--size WxH]
//      [--presentation] [--tour TOUR.yaml [--tour-step N]] [--gpu N] [--load-stats STATS]]
// Parsed before QApplication exists (the screenshot mode chooses the offscreen platform).
#pragma once

#include <QSize>
#include <QString>
#include <QStringList>

namespace moex::app {

struct CommandLine {
    QString scenario;     // empty: the default sample
    QString screenshot;   // output PNG; empty: interactive
    QString view = QStringLiteral("all");
    QSize size{1600, 1000};
    bool engine = false;  // --source engine: the real MoE layers on this CPU (Run > Source > Local engine)
    bool presentation = false;  // --presentation: View > Presentation mode on
    QString tour;               // --tour: the tour to show (its step's scenario replaces SCENARIO)
    int tourStep = 1;           // --tour-step, 1-based
    int gpu = -1;               // --gpu N: that GPU selected (its detail card shown)
    QString loadStats;          // --load-stats STATS: that file analysed, the Load statistics tab shown
    bool help = false;
    bool version = false;
    QString error;        // non-empty: bad flags (exit 2)
};

CommandLine parseCommandLine(const QStringList& args);  // args without the program name
QString usageText();

// No display to open a window on: no DISPLAY, no WAYLAND_DISPLAY and QT_QPA_PLATFORM unset.
bool noDisplay();

}  // namespace moex::app
