// Qt Charts views of the load-statistics report (core/run/load_report.h), fed plain values so that
// views stay free of the run layer: the per-layer imbalance with EPLB off, and a strategy curve
// (a figure against slots per GPU, one line per strategy, EPLB off as a dashed level). The same
// widgets draw the window's Load Statistics tab and, rendered to SVG, the HTML report.
#pragma once

#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

QT_BEGIN_NAMESPACE
class QChart;
QT_END_NAMESPACE

namespace moex::views {

class LayerImbalanceChart : public QWidget {
    Q_OBJECT
public:
    explicit LayerImbalanceChart(QWidget* parent = nullptr);
    ~LayerImbalanceChart() override;
    // One bar per MoE layer (labelled with its decoder index), the 90th percentile as a line.
    void setData(const std::vector<int>& layerIds, const std::vector<double>& imbalance, double p90);
    [[nodiscard]] int barCount() const;
    [[nodiscard]] QChart* chart() const;
private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

struct CurveLine {
    QString name;                   // the strategy
    std::vector<double> x, y;       // slots per GPU, the figure
    std::vector<int> point;         // the report's index of each point (for pointClicked)
};

class SlotCurveChart : public QWidget {
    Q_OBJECT
public:
    explicit SlotCurveChart(QWidget* parent = nullptr);
    ~SlotCurveChart() override;
    // Lines against slots per GPU; `baseline` (EPLB off) as a dashed level; `marked` (a report
    // index, -1 none) drawn as a large dot: the recommendation.
    void setData(const QString& title, const QString& yTitle, const std::vector<CurveLine>& lines, double baseline,
                 int marked);
    [[nodiscard]] int pointCount() const;  // points over all lines
    [[nodiscard]] QChart* chart() const;
signals:
    void pointClicked(int reportIndex);  // a click on (or near) a point of a line
private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

}  // namespace moex::views
