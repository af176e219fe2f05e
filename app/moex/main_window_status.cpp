// The main window's title and status bar: where the numbers come from, the step, step time,
// tokens/s (per kW where there is a power model) and the imbalance with its cost.
#include "main_window.h"

#include "qt_text.h"
#include "scenario_document.h"
#include "sim_runner.h"

#include "metrics/step_metrics.h"

#include <QAction>
#include <QLabel>
#include <QLocale>
#include <QStatusBar>

#include <cmath>

namespace moex::app {

using session::MetricsPtr;
using session::ScenarioDocument;

namespace {

QString grouped(double v)
{
    return QLocale(QLocale::English).toString(static_cast<qlonglong>(std::llround(v)));
}

QLabel* statusField(const QString& tip)
{
    auto* l = new QLabel;
    l->setToolTip(tip);
    l->setContentsMargins(6, 0, 6, 0);
    return l;
}

}  // namespace

void MainWindow::buildStatusBar()
{
    m_statusSource = statusField(tr("Where the numbers come from"));
    m_statusStep = statusField(tr("The figures beside this are from this step; the Compare view and a tour's captions "
                                  "give the mean of the run's steps after its warm-up"));
    m_statusStepTime = statusField(tr("Step time: one forward pass of the whole model"));
    m_statusTokens = statusField(tr("Tokens per second, whole system"));
    m_statusPerKw = statusField(tr("Tokens per second per kW of GPU + switch power"));
    m_statusImbalance = statusField(tr("Imbalance: max / mean GPU load, mean over MoE layers (1 = perfect); "
                                       "cost: the share of MoE time that spreading each layer's expert work "
                                       "evenly over the GPUs would save"));
    for (QLabel* l : {m_statusSource, m_statusStep, m_statusStepTime, m_statusTokens, m_statusPerKw, m_statusImbalance})
        statusBar()->addPermanentWidget(l);
}

void MainWindow::updateTitle()
{
    ScenarioDocument* doc = document();
    QString name = m_docA->hasScenario() ? m_docA->displayName() : tr("no scenario");
    if (doc == m_docB)
        name += tr(" \u2014 what-if B");
    setWindowTitle(tr("%1[*] \u2014 moex").arg(name));
    setWindowModified(doc->isModified());
    if (auto* save = action(QStringLiteral("actionSave")))
        save->setEnabled(doc == m_docA && m_docA->hasScenario());
}

QString MainWindow::statusText() const
{
    QStringList parts;
    for (QLabel* l : {m_statusSource, m_statusStep, m_statusStepTime, m_statusTokens, m_statusPerKw, m_statusImbalance})
        parts << l->text();
    return parts.join(QStringLiteral(" | "));
}

void MainWindow::updateStatus()
{
    const MetricsPtr m = m_latest;
    m_statusSource->setText(tr("source: %1").arg(m ? session::qs(m->source) : m_runner->sourceName()));
    if (!m) {
        for (QLabel* l : {m_statusStep, m_statusStepTime, m_statusTokens, m_statusPerKw, m_statusImbalance})
            l->clear();
        return;
    }
    const StepTotals& t = m->summary;
    // The fields after it are this step's (the compare view and a tour's captions give means).
    m_statusStep->setText(tr("step %1").arg(m->step));
    m_statusStepTime->setText(tr("%1 ms/step").arg(t.step_time_us / 1000.0, 0, 'f', 2));
    m_statusTokens->setText(tr("%1 tok/s").arg(grouped(t.tokens_per_s)));
    // Measured ranks have no power model: no tokens per kW to show.
    m_statusPerKw->setText(t.tokens_per_s_per_kw > 0 ? tr("%1 tok/s/kW").arg(grouped(t.tokens_per_s_per_kw)) : tr("tok/s/kW n/a"));
    QString imbalance = tr("imbalance %1").arg(t.imbalance, 0, 'f', 3);
    if (t.moe_time_balanced_us > 0 && t.moe_time_us > 0)  // the simulator's floor; engines leave it 0
        imbalance += tr(", costs %1%").arg(100.0 * (t.moe_time_us - t.moe_time_balanced_us) / t.moe_time_us, 0, 'f', 2);
    m_statusImbalance->setText(imbalance);
    fitStatusFields();
}

void MainWindow::fitStatusFields()
{
    // The fields as wide as their text, never cut at the window's edge: where the bar is too
    // narrow (a small window in presentation mode) the step, then tokens per kW, then the source
    // give way; step time, tokens/s and the imbalance stay. The status bar's margins, the spacing
    // between fields and its size grip are the 40 px held back.
    const QList<QLabel*> all = {m_statusSource, m_statusStep, m_statusStepTime, m_statusTokens, m_statusPerKw, m_statusImbalance};
    const QList<QLabel*> optional = {m_statusStep, m_statusPerKw, m_statusSource};  // first to go first
    const int room = statusBar()->width() - 40;
    int total = 0;
    for (QLabel* l : all)
        total += l->text().isEmpty() ? 0 : l->sizeHint().width();
    // Decided first, set once: this runs on every step, and a field shown then hidden again would
    // relayout the bar each time.
    QList<QLabel*> hidden;
    for (QLabel* l : optional) {
        if (total <= room)
            break;
        hidden << l;
        total -= l->sizeHint().width();
    }
    for (QLabel* l : all)
        l->setVisible(!hidden.contains(l));
}

void MainWindow::resizeEvent(QResizeEvent* event)
{
    QMainWindow::resizeEvent(event);
    fitStatusFields();
}

void MainWindow::setStatusBusy(bool busy)
{
    // The previous numbers stay, greyed, until the new scenario's first step replaces them.
    for (QLabel* l : {m_statusStep, m_statusStepTime, m_statusTokens, m_statusPerKw, m_statusImbalance})
        l->setEnabled(!busy);
}

}  // namespace moex::app
