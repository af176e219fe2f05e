// What the window tests and the UI benchmark share: the sample paths, the window shown as the
// screenshots show it, and the scenario panel's fields found by their form labels.
#pragma once

#include "main_window.h"

#include "views/scenario_panel.h"

#include <QLabel>
#include <QString>
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

}  // namespace moex::app::test
