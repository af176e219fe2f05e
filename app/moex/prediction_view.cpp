#include "prediction_view.h"

#include "qt_text.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace moex::app {

PredictionView::PredictionView(QWidget* parent) : QWidget(parent), m_status(new QLabel), m_table(new QTableWidget)
{
    setObjectName(QStringLiteral("predictionView"));
    m_status->setWordWrap(true);
    m_table->setColumnCount(4);
    m_table->setHorizontalHeaderLabels({tr("Phase / layer"), tr("Measured ms"), tr("Predicted ms"), tr("Error")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    layout->addWidget(m_status);
    layout->addWidget(m_table, 1);
    showMessage(tr("Run \u25b8 Source \u25b8 Local engine runs the real MoE layers on this machine; "
                   "this table then sets each measured step beside the simulator's prediction of it."));
}

void PredictionView::showMessage(const QString& text)
{
    m_status->setText(text);
    m_table->setRowCount(0);
}

void PredictionView::setRows(const std::vector<PredictionRow>& rows, const QString& calibration, bool measured,
                             const QString& note)
{
    QString status = measured ? tr("Prediction: the simulator on host-cpu with calibration \u201c%1\u201d.").arg(calibration)
                              : tr("Prediction: the simulator on host-cpu with \u201c%1\u201d, not measured on this machine: "
                                   "run <tt>moex-cli calibrate --backend cpu -o FILE</tt> and name FILE as the "
                                   "scenario's <tt>calibration:</tt>.")
                                    .arg(calibration);
    if (!note.isEmpty())
        status += QStringLiteral("<br><b>%1</b> %2").arg(tr("Note:"), note.toHtmlEscaped());
    m_status->setText(status);
    m_table->setRowCount(static_cast<int>(rows.size()));
    for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
        const PredictionRow& r = rows[static_cast<std::size_t>(i)];
        const double err = r.error() * 100.0;
        auto* what = new QTableWidgetItem(session::qs(r.what));
        auto* m = new QTableWidgetItem(QString::number(r.measured_us / 1e3, 'f', 3));
        auto* p = new QTableWidgetItem(QString::number(r.predicted_us / 1e3, 'f', 3));
        auto* e = new QTableWidgetItem(QStringLiteral("%1%2%").arg(err > 0 ? QStringLiteral("+") : QString()).arg(err, 0, 'f', 1));
        for (auto* item : {m, p, e})
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        // Within the target (15%) plain, beyond it marked.
        if (std::abs(err) > 15.0)
            e->setForeground(QColor(0xc6, 0x28, 0x28));
        if (i < 4) {
            QFont bold = what->font();
            bold.setBold(i == 0);
            what->setFont(bold);
        }
        m_table->setItem(i, 0, what);
        m_table->setItem(i, 1, m);
        m_table->setItem(i, 2, p);
        m_table->setItem(i, 3, e);
    }
    m_table->resizeColumnsToContents();
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
}

}  // namespace moex::app
