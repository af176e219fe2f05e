// The Load statistics tab (File > Open Load Statistics...): the report of core/run/load_report.h
// for the current scenario, built in the background, shown with the same charts the HTML report
// embeds; a click on a curve's point asks to open that configuration as B; Save as HTML writes
// the report file (report_html.h).
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "run/load_report.h"
#endif

#include <memory>

QT_BEGIN_NAMESPACE
class QLabel;
class QPushButton;
class QTableWidget;
QT_END_NAMESPACE

namespace moex::views {
class LayerImbalanceChart;
class SlotCurveChart;
}  // namespace moex::views

namespace moex::app {

class LoadStatsView : public QWidget {
    Q_OBJECT
public:
    explicit LoadStatsView(QWidget* parent = nullptr);
    ~LoadStatsView() override;

    // Builds the report for `scenario` (its file for the reproduce commands) in a worker thread;
    // emits ready() or failed(). A newer call supersedes one still running.
    void analyse(const Scenario& scenario, const QString& scenarioFile, const QString& statsPath);
    void setReport(std::shared_ptr<const LoadReport> report, const QString& scenarioFile, const QString& statsPath);
    [[nodiscard]] const LoadReport* report() const { return m_report.get(); }
    [[nodiscard]] QString statsPath() const { return m_stats; }
    [[nodiscard]] bool isBusy() const { return m_busy; }
    // The curve's charts (tests click them).
    [[nodiscard]] views::SlotCurveChart* stepChart() const { return m_step; }

    // Writes the HTML report (and the placement beside it); "" or the error.
    QString saveHtml(const QString& path);

signals:
    void ready();
    void failed(const QString& message);
    void openAsB(int reportIndex);  // a curve point (index into report()->curve) to open as B
    void saveRequested();           // Save as HTML clicked

private:
    void showBusy(const QString& text);

    std::shared_ptr<const LoadReport> m_report;
    QString m_scenarioFile, m_stats;
    int m_generation = 0;
    bool m_busy = false;
    QLabel* m_headline;
    QLabel* m_info;
    QPushButton* m_save;
    views::LayerImbalanceChart* m_imbalance;
    views::SlotCurveChart* m_step;
    views::SlotCurveChart* m_users;
    QTableWidget* m_table;
};

}  // namespace moex::app
