// MainWindow's documents A and B: wiring each to the window (undo steps for background changes,
// the panel's busy and refused states), opening scenarios (at once or in the background), and the
// what-if copy B (duplicate, ask before discarding, close when A is replaced).
#include "main_window.h"

#include "compare_view.h"
#include "qt_text.h"
#include "scenario_document.h"
#include "sim_runner.h"
#include "undo_commands.h"

#include "views/scenario_panel.h"
#include "views/topology_canvas.h"

#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QStatusBar>
#include <QUndoGroup>
#include <QUndoStack>

namespace moex::app {

using session::ScenarioDocument;

void MainWindow::connectDocument(ScenarioDocument* doc, QUndoStack* stack)
{
    connect(doc, &ScenarioDocument::scenarioChanged, this, [this, doc] { onScenarioChanged(doc); });
    connect(doc, &ScenarioDocument::placementChanged, this, [this, doc] { onPlacementChanged(doc); });
    connect(doc, &ScenarioDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(doc, &ScenarioDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(doc, &ScenarioDocument::errorOccurred, this, [this, doc](const QString& msg) {
        if (doc == document())
            m_panel->showError(msg);
        statusBar()->showMessage(msg.section(QLatin1Char('\n'), 0, 0), 10000);
    });
    connect(doc, &ScenarioDocument::editRefused, this, [this, doc](const QString& msg) {
        if (doc == document())
            m_canvas->showFeedback(msg);
        statusBar()->showMessage(tr("Refused: %1").arg(msg), 8000);
    });
    connect(stack, &QUndoStack::cleanChanged, doc, [doc](bool clean) { doc->setModified(!clean); });
    connect(doc, &ScenarioDocument::overrideApplied, this,
            [stack, doc](const QString& key, const QString& value, const session::DocumentState& before,
                         const session::DocumentState& after) {
                stack->push(new OverrideCommand(doc, key, value, before, after));
            });
    connect(doc, &ScenarioDocument::overrideApplied, this, [this, doc] {
        if (doc == document() && !doc->lastNote().isEmpty())
            m_panel->showNote(tr("Also changed: %1").arg(doc->lastNote()));
    });
    // A refused change: every control shows the scenario's value again (the message stays).
    connect(doc, &ScenarioDocument::overrideRefused, this, [this, doc] {
        if (doc == document() && doc->hasScenario())
            showScenarioInPanel(doc);
    });
    connect(doc, &ScenarioDocument::busyChanged, this, [this, doc](bool busy) {
        if (doc != document())
            return;
        m_panel->setBusy(busy, busy ? pendingText(doc) : QString());
        setStatusBusy(busy);
    });
    // A change queued or merged while another is placed: the message says what is pending now.
    connect(doc, &ScenarioDocument::pendingChanged, this, [this, doc] {
        if (doc == document() && doc->isBusy())
            m_panel->setBusy(true, pendingText(doc));
    });
    connect(doc, &ScenarioDocument::loaded, this, [this, doc](const QString& path) {
        (doc == m_docA ? m_stackA : m_stackB)->clear();
        if (doc == m_docA) {
            // B edited since the user agreed to lose it (A loaded in the background meanwhile): ask again.
            const bool editedSince = m_docB->hasScenario() && (m_stackB->index() != m_bIndexAtNewA || m_docB->isBusy());
            if (editedSince && !confirmDiscardB(true))
                statusBar()->showMessage(tr("What-if B kept with your changes: it is a copy of the previous scenario."),
                                         8000);
            else
                closeB(tr("What-if B closed: it was a copy of the previous scenario."));
        }
        if (m_addLoadedToRecent)
            addRecent(path);
        if (!m_loadMessage.isEmpty())
            statusBar()->showMessage(m_loadMessage, 6000);
    });
    connect(doc, &ScenarioDocument::loadFailed, this, [this](const QString& path, const QString& message) {
        showError(tr("Cannot open %1").arg(QFileInfo(path).fileName()), message);
    });
}

QString MainWindow::pendingText(const ScenarioDocument* doc) const
{
    const auto pending = doc->pendingChanges();
    if (pending.empty())
        return {};
    const auto& first = pending.front();
    QString what = first.isLoad() ? tr("loading %1").arg(QFileInfo(first.value).fileName())
                                  : tr("%1 = %2").arg(first.key, first.value);
    if (pending.size() > 1)
        what += tr(" (+%1 queued)").arg(pending.size() - 1);
    return tr("Placing\u2026 %1").arg(what);
}

void MainWindow::showScenarioInPanel(const ScenarioDocument* doc)
{
    m_panel->setScenario(doc->scenario());
    // Values still being placed stay as the user set them.
    for (const auto& change : doc->pendingChanges())
        if (!change.isLoad())
            m_panel->showValue(change.key, change.value);
}

void MainWindow::openScenarioInBackground(const QString& path, const Overrides& overrides, bool addToRecent,
                                          const QString& message)
{
    if (m_active != 0)
        m_activeCombo->setCurrentIndex(0);
    if (!confirmDiscardB())
        return;
    m_bIndexAtNewA = m_stackB->index();
    m_addLoadedToRecent = addToRecent;
    m_loadMessage = message;
    m_docA->requestLoad(path, overrides);
}

ScenarioDocument* MainWindow::document() const
{
    return m_active == 1 && m_docB->hasScenario() ? m_docB : m_docA;
}

QUndoStack* MainWindow::undoStack() const
{
    return document() == m_docB ? m_stackB : m_stackA;
}

bool MainWindow::confirmDiscardB(bool evenUnmodified)
{
    if (!m_docB->hasScenario() || (!m_docB->isModified() && !evenUnmodified))
        return true;
    const QString question = tr("The what-if copy B has changes that are not in A. Discard them?");
    if (m_confirm)
        return m_confirm(question);
    if (!m_interactive || !isVisible())
        return true;
    return QMessageBox::question(this, tr("Discard what-if B?"), question, QMessageBox::Discard | QMessageBox::Cancel,
                                 QMessageBox::Cancel)
           == QMessageBox::Discard;
}

void MainWindow::closeB(const QString& why)
{
    if (!m_docB->hasScenario())
        return;
    if (m_active == 1)
        setActiveDocument(0);
    m_docB->close();
    m_stackB->clear();
    m_activeCombo->setVisible(false);
    if (auto* label = findChild<QLabel*>(QStringLiteral("activeLabel")))
        label->setVisible(false);
    m_compareView->clear();
    m_compareDock->hide();
    statusBar()->showMessage(why, 8000);
}

bool MainWindow::openScenario(const QString& path, const Overrides& overrides, bool addToRecent)
{
    if (!confirmDiscardB())
        return false;
    m_bIndexAtNewA = m_stackB->index();
    if (m_active != 0)
        m_activeCombo->setCurrentIndex(0);
    statusBar()->showMessage(tr("Loading %1\u2026").arg(QFileInfo(path).fileName()));
    if (m_interactive && isVisible())
        QApplication::setOverrideCursor(Qt::WaitCursor);
    m_syncSimulation = true;  // the caller gets the first step with the scenario
    const bool loaded = m_docA->load(path, overrides);
    m_syncSimulation = false;
    if (m_interactive && isVisible())
        QApplication::restoreOverrideCursor();
    statusBar()->clearMessage();
    if (!loaded) {
        showError(tr("Cannot open %1").arg(QFileInfo(path).fileName()), m_docA->lastError());
        return false;
    }
    m_stackA->clear();
    closeB(tr("What-if B closed: it was a copy of the previous scenario."));
    if (addToRecent)
        addRecent(QFileInfo(path).absoluteFilePath());
    return true;
}

void MainWindow::setActiveDocument(int which)
{
    const int next = which == 1 && m_docB->hasScenario() ? 1 : 0;
    if (m_activeCombo->currentIndex() != next) {
        QSignalBlocker block(m_activeCombo);
        m_activeCombo->setCurrentIndex(next);
    }
    if (next == m_active)
        return;
    m_active = next;
    m_undoGroup->setActiveStack(undoStack());
    onScenarioChanged(document());
    statusBar()->showMessage(next == 1 ? tr("Editing B: changes go to the what-if copy; A stays as it was.")
                                       : tr("Editing A."),
                             6000);
}

void MainWindow::duplicateAsB()
{
    if (!m_docA->hasScenario() || !confirmDiscardB())
        return;
    m_docB->copyFrom(*m_docA);
    presentB();
}

void MainWindow::presentB()
{
    m_stackB->clear();
    m_activeCombo->setVisible(true);
    if (auto* label = findChild<QLabel*>(QStringLiteral("activeLabel")))
        label->setVisible(true);
    m_compareDock->show();
    m_compareDock->raise();
    setActiveDocument(1);
    scheduleCompare();
}

}  // namespace moex::app
