// What the window tests and the UI benchmark share: the sample paths, the window shown as the
// screenshots show it, the scenario panel's fields found by their form labels, and the Qt
// warnings a test run records.
#pragma once

#include "main_window.h"
#include "screenshot.h"

#include "views/scenario_panel.h"

#include <QApplication>
#include <QLabel>
#include <QString>
#include <QStringList>
#include <QTest>

namespace moex::app::test {

inline QString samples() { return QStringLiteral(MOEX_SAMPLES_DIR); }
inline QString sample(const char* name) { return samples() + QStringLiteral("/scenarios/") + QLatin1String(name); }

// The window at the screenshots' size, shown and exposed, asking nothing of a user (no dialogs).
inline bool showForTest(MainWindow& w)
{
    w.setInteractive(false);
    w.resize(1600, 1000);
    w.show();
    return QTest::qWaitForWindowExposed(&w);
}

// The panel's spin box or combo in the form row labelled `label`; null when there is none.
template <class T>
T* panelField(views::ScenarioPanel* panel, const QString& label)
{
    for (auto* l : panel->findChildren<QLabel*>())
        if (l->text() == label && l->buddy())
            return qobject_cast<T*>(l->buddy());
    return nullptr;
}

// The Qt warnings (and criticals) logged since the list was last cleared; the offscreen platform
// plugin's notice that it cannot propagate size hints is the test platform talking, not the
// application, and is left out. startRecordingWarnings installs the handler (initTestCase).
inline QStringList& recordedWarnings()
{
    static QStringList warnings;
    return warnings;
}
inline QtMessageHandler& previousMessageHandler()
{
    static QtMessageHandler previous = nullptr;
    return previous;
}
inline void recordWarning(QtMsgType type, const QMessageLogContext& ctx, const QString& msg)
{
    const bool platformNoise = msg.contains(QLatin1String("does not support propagateSizeHints"));
    if ((type == QtWarningMsg || type == QtCriticalMsg || type == QtFatalMsg) && !platformNoise)
        recordedWarnings() << msg;
    if (previousMessageHandler())
        previousMessageHandler()(type, ctx, msg);
}
inline void startRecordingWarnings() { previousMessageHandler() = qInstallMessageHandler(recordWarning); }

// A window test's initTestCase: settings under `configDir` (never the user's), the app's
// resources and style sheet as the app has them, warnings recorded. Each test function then
// starts with clearWarnings() (init) and ends with QVERIFY2(noWarnings(), warningText()) (cleanup).
inline void setUpWindowTests(const QString& configDir)
{
    qputenv("XDG_CONFIG_HOME", configDir.toUtf8());
    initResources();
    qApp->setStyleSheet(styleSheet());
    startRecordingWarnings();
}
inline void clearWarnings() { recordedWarnings().clear(); }
inline bool noWarnings() { return recordedWarnings().isEmpty(); }
inline QByteArray warningText() { return recordedWarnings().join(QLatin1Char('\n')).toLocal8Bit(); }

}  // namespace moex::app::test
