// moex --screenshot: renders the window (or one part of it) offscreen after a few simulated steps
// and saves a PNG of exactly the requested size, atomically.
#pragma once

#include "command_line.h"

namespace moex::app {

// Returns the process exit code (0 saved, 1 scenario or write error). Needs a QApplication.
int runScreenshot(const CommandLine& cmd, const QString& samplesDir, const QString& scenario);

// Registers the icon and style sheet of resources/moex.qrc (the GUI is a static library).
void initResources();
// The application style sheet (resources/moex.qss).
QString styleSheet();

}  // namespace moex::app
