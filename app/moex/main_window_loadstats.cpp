// File > Open Load Statistics: the Load statistics tab and opening its points as B.
#include "load_stats_view.h"
#include "main_window.h"
#include "scenario_document.h"

#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QStatusBar>

namespace moex::app {

void MainWindow::buildLoadStatsDock()
{
    m_loadStatsView = new LoadStatsView;
    m_loadStatsDock = new QDockWidget(tr("Load statistics"), this);
    m_loadStatsDock->setObjectName(QStringLiteral("loadStatsDock"));
    m_loadStatsDock->setWidget(m_loadStatsView);
    addDockWidget(Qt::BottomDockWidgetArea, m_loadStatsDock);
    tabifyDockWidget(m_predictionDock, m_loadStatsDock);
    connect(m_loadStatsView, &LoadStatsView::failed, this,
            [this](const QString& message) { showError(tr("Cannot analyse the load statistics"), message); });
    connect(m_loadStatsView, &LoadStatsView::ready, this, [this] {
        statusBar()->showMessage(tr("Load statistics analysed: %1").arg(QFileInfo(m_loadStatsView->statsPath()).fileName()),
                                 10000);
    });
    connect(m_loadStatsView, &LoadStatsView::openAsB, this, &MainWindow::openReportPointAsB);
    connect(m_loadStatsView, &LoadStatsView::saveRequested, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save Load Report"), QStringLiteral("report.html"),
                                                          tr("HTML (*.html)"));
        if (path.isEmpty())
            return;
        if (const QString error = m_loadStatsView->saveHtml(path); !error.isEmpty())
            showError(tr("Save failed"), error);
        else
            statusBar()->showMessage(tr("Saved %1 (and the recommended placement beside it)").arg(path), 10000);
    });
}

void MainWindow::chooseLoadStatistics()
{
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open Load Statistics"), QString(),
        tr("Load statistics (*.pt meta_info.json *.jsonl *.json);;All files (*)"));
    if (!path.isEmpty())
        openLoadStatistics(path);
}

void MainWindow::openLoadStatistics(const QString& path)
{
    if (!m_docA->hasScenario()) {
        showError(tr("No scenario"), tr("Open a scenario first: the statistics are analysed for its model and GPUs."));
        return;
    }
    // A TensorRT-LLM statistics folder is opened through its meta_info.json.
    QString stats = QFileInfo(path).absoluteFilePath();
    if (QFileInfo(stats).fileName() == QLatin1String("meta_info.json"))
        stats = QFileInfo(stats).absolutePath();
    m_loadStatsDock->show();
    m_loadStatsDock->raise();
    // The report's verdict and its two charts need more than the charts' strip (they were drawn
    // cut off at 30% of a 1000-pixel window): at least 45% of the height, never less than it has.
    const int wanted = height() * 45 / 100;
    if (isVisible() && m_loadStatsDock->height() < wanted)
        resizeDocks({m_loadStatsDock}, {wanted}, Qt::Vertical);
    m_loadStatsView->analyse(m_docA->scenario(), m_docA->filePath(), stats);
}

bool MainWindow::openReportPointAsB(int reportIndex)
{
    const LoadReport* r = m_loadStatsView->report();
    if (!r || reportIndex < 0 || reportIndex >= static_cast<int>(r->curve.size()) || !m_docA->hasScenario())
        return false;
    const ReportPoint& p = r->curve[static_cast<std::size_t>(reportIndex)];
    if (!p.fits || !confirmDiscardB())
        return false;
    m_docB->copyFrom(*m_docA);
    // The file before the kind (kind counts needs a file to validate); the strategy last: each
    // override re-places B, and only the last one runs the point's (possibly costly) strategy.
    const std::pair<QString, QString> overrides[] = {
        {QStringLiteral("workload.routing.file"), QString::fromStdString(r->scenario.workload.routing.file)},
        {QStringLiteral("workload.routing.kind"), QStringLiteral("counts")},
        {QStringLiteral("placement.redundant_slots"), QString::number(p.redundant_slots)},
        {QStringLiteral("placement.strategy"), QString::fromStdString(p.strategy)}};
    for (const auto& [key, value] : overrides) {
        if (!m_docB->applyOverride(key, value)) {
            showError(tr("Cannot open this configuration as B"), m_docB->lastError());
            return false;
        }
    }
    m_docB->setModified(true);  // a what-if of its own: not to be replaced without asking
    presentB();
    statusBar()->showMessage(tr("B: %1 with %2 slots on the routing of %3 (A keeps its own routing)")
                                 .arg(QString::fromStdString(p.strategy))
                                 .arg(p.slot_count)
                                 .arg(QFileInfo(QString::fromStdString(r->stats_path)).fileName()),
                             10000);
    return true;
}

}  // namespace moex::app
