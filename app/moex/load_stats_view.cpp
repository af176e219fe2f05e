#include "load_stats_view.h"

#include "mailbox.h"
#include "report_html.h"
#include "views/report_charts.h"

#include "common/diagnostics.h"

#include <QApplication>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QTableWidget>
#include <QThreadPool>
#include <QVBoxLayout>

namespace moex::app {

LoadStatsView::LoadStatsView(QWidget* parent)
    : QWidget(parent),
      m_headline(new QLabel),
      m_info(new QLabel),
      m_save(new QPushButton(tr("Save as HTML\u2026"))),
      m_imbalance(new views::LayerImbalanceChart),
      m_step(new views::SlotCurveChart),
      m_users(new views::SlotCurveChart),
      m_table(new QTableWidget)
{
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    outer->addWidget(scroll);
    auto* page = new QWidget;
    auto* v = new QVBoxLayout(page);
    m_headline->setWordWrap(true);
    m_headline->setObjectName(QStringLiteral("loadStatsHeadline"));
    m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont f = m_headline->font();
    f.setPointSizeF(f.pointSizeF() * 1.15);
    f.setBold(true);
    m_headline->setFont(f);
    m_headline->setText(tr("File \u25b8 Open Load Statistics\u2026 reads an SGLang recorder (.pt), a TensorRT-LLM "
                           "statistics folder (its meta_info.json) or vLLM eplb_load_stats (.jsonl) and answers: should "
                           "EPLB be on for this scenario, and with how many slots?"));
    m_info->setWordWrap(true);
    m_info->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* top = new QHBoxLayout;
    top->addWidget(m_headline, 1);
    top->addWidget(m_save, 0, Qt::AlignTop);
    m_save->setEnabled(false);
    v->addLayout(top);
    v->addWidget(m_info);
    auto* curves = new QHBoxLayout;
    m_step->setMinimumHeight(280);
    m_users->setMinimumHeight(280);
    curves->addWidget(m_step);
    curves->addWidget(m_users);
    v->addLayout(curves);
    m_imbalance->setMinimumHeight(260);
    v->addWidget(m_imbalance);
    m_table->setColumnCount(8);
    m_table->setHorizontalHeaderLabels({tr("strategy"), tr("slots per GPU"), tr("slots"), tr("max/mean load"),
                                        tr("MoE ms"), tr("step ms"), tr("vs EPLB off"), tr("users")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setMinimumHeight(220);
    v->addWidget(m_table);
    scroll->setWidget(page);

    connect(m_step, &views::SlotCurveChart::pointClicked, this, &LoadStatsView::openAsB);
    connect(m_users, &views::SlotCurveChart::pointClicked, this, &LoadStatsView::openAsB);
    // A double-clicked row opens its configuration too (row 0 is EPLB off).
    connect(m_table, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        if (row >= 1 && m_report && row - 1 < static_cast<int>(m_report->curve.size())
            && m_report->curve[static_cast<std::size_t>(row - 1)].fits)
            emit openAsB(row - 1);
    });
    connect(m_save, &QPushButton::clicked, this, &LoadStatsView::saveRequested);  // the window asks where
}

LoadStatsView::~LoadStatsView() = default;

void LoadStatsView::showBusy(const QString& text)
{
    m_headline->setText(text);
    m_save->setEnabled(false);
}

void LoadStatsView::analyse(const Scenario& scenario, const QString& scenarioFile, const QString& statsPath)
{
    const int generation = ++m_generation;
    m_busy = true;
    showBusy(tr("Analysing %1: every strategy and slot count, simulated\u2026").arg(QFileInfo(statsPath).fileName()));
    QPointer<LoadStatsView> self(this);
    session::Mailbox* back = &session::applicationMailbox();  // outlives the view, which may close meanwhile
    const std::string stats = statsPath.toStdString();
    session::startJob(*QThreadPool::globalInstance(), [self, back, scenario, stats, scenarioFile, statsPath, generation] {
        std::shared_ptr<const LoadReport> report;
        QString error;
        try {
            report = std::make_shared<const LoadReport>(buildLoadReport(scenario, stats, LoadReportOptions{}));
        } catch (const InputError& e) {
            error = QString::fromStdString(e.diagnostics().format());
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        // The application's mailbox outlives the view: the call checks that the view still exists.
        back->post([self, report, error, scenarioFile, statsPath, generation] {
            LoadStatsView* view = self.data();
            if (view == nullptr || generation != view->m_generation)
                return;  // closed, or superseded by a newer file
            view->m_busy = false;
            if (!report) {
                view->showBusy(tr("Could not analyse %1").arg(QFileInfo(statsPath).fileName()));
                emit view->failed(error.trimmed());
                return;
            }
            view->setReport(report, scenarioFile, statsPath);
            emit view->ready();
        });
    });
}

void LoadStatsView::setReport(std::shared_ptr<const LoadReport> report, const QString& scenarioFile,
                              const QString& statsPath)
{
    m_report = std::move(report);
    m_scenarioFile = scenarioFile;
    m_stats = statsPath;
    const LoadReport& r = *m_report;
    m_headline->setText(QString::fromStdString(r.recommendation));
    m_info->setText(tr("%1 (%2, %3) on %4: %5 MoE layers, %6 experts, %7 GPUs. With EPLB off the max/mean GPU load "
                       "over layers is %8 median, %9 at the 90th percentile, %10 worst. Click a point (or double-click "
                       "a row) to open that configuration as B.")
                        .arg(QFileInfo(statsPath).fileName(), QString::fromStdString(r.format),
                             QString::fromStdString(r.detail), QString::fromStdString(r.scenario_name))
                        .arg(r.moe_layers)
                        .arg(r.experts)
                        .arg(r.gpus)
                        .arg(r.imbalance_p50, 0, 'f', 3)
                        .arg(r.imbalance_p90, 0, 'f', 3)
                        .arg(r.imbalance_max, 0, 'f', 3));
    m_imbalance->setData(r.layer_ids, r.layer_imbalance, r.imbalance_p90);
    m_step->setData(tr("Step time against slots per GPU"), tr("ms per step"), reportCurveLines(r, false),
                    r.baseline.step_time_us / 1000.0, r.recommended);
    m_users->setData(tr("Concurrent users the KV cache holds"), tr("users"), reportCurveLines(r, true),
                     static_cast<double>(r.baseline.max_concurrent_users), r.recommended);
    m_table->setRowCount(static_cast<int>(r.curve.size()) + 1);
    auto fill = [&](int row, const ReportPoint& p, bool recommended) {
        const double base = r.baseline.step_time_us;
        const QStringList cells = {
            QString::fromStdString(p.strategy),
            QString::number(p.slots_per_gpu),
            QString::number(p.slot_count),
            p.fits ? QString::number(p.balance, 'f', 3) : tr("does not fit"),
            p.fits ? QString::number(p.moe_time_us / 1000.0, 'f', 2) : QString(),
            p.fits ? QString::number(p.step_time_us / 1000.0, 'f', 2) : QString(),
            p.fits && base > 0 ? QString::number(100.0 * (p.step_time_us / base - 1.0), 'f', 1) + QLatin1Char('%') : QString(),
            p.fits ? QString::number(p.max_concurrent_users) : QString()};
        for (int c = 0; c < cells.size(); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setTextAlignment(c == 0 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
            if (recommended) {
                QFont bold = item->font();
                bold.setBold(true);
                item->setFont(bold);
                item->setBackground(QColor(0xfd, 0xeb, 0xd0));
            }
            m_table->setItem(row, c, item);
        }
    };
    fill(0, r.baseline, r.recommended < 0);
    for (std::size_t i = 0; i < r.curve.size(); ++i)
        fill(static_cast<int>(i) + 1, r.curve[i], static_cast<int>(i) == r.recommended);
    m_save->setEnabled(true);
}

QString LoadStatsView::saveHtml(const QString& path)
{
    if (!m_report)
        return tr("no load statistics analysed yet");
    return writeReport(*m_report, m_scenarioFile, m_stats, path, nullptr);
}

}  // namespace moex::app
