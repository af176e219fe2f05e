// Qt Charts views: step time and tokens/s over steps; per-GPU stacked bars of compute, dispatch,
// combine, idle; expert-load histogram. Each takes StepMetrics and keeps what it plots.
#pragma once

#include <QFont>
#include <QWidget>

#ifndef Q_MOC_RUN
#include "common/ids.h"
#include "metrics/step_metrics.h"
#endif

#include <functional>
#include <memory>
#include <vector>

QT_BEGIN_NAMESPACE
class QChart;
class QChartView;
QT_END_NAMESPACE

namespace moex::views {

class StepTimeChart : public QWidget {
    Q_OBJECT
public:
    explicit StepTimeChart(QWidget* parent = nullptr);
    ~StepTimeChart() override;
    void addStep(const StepMetrics& m);  // keeps the last historyLength() steps
    void clear();
    void setHistoryLength(int steps);
    [[nodiscard]] int historyLength() const;
    [[nodiscard]] int pointCount() const;
    [[nodiscard]] QChart* chart() const;
    // The value axes' titles ("ms", "k tokens/s"): left out where the chart is too narrow for an
    // axis with its title (Qt Charts would cut its labels to "1..." instead).
    [[nodiscard]] bool valueAxisTitlesShown() const;
    // The k tokens/s axis: left out where the chart cannot hold two value axes' labels.
    [[nodiscard]] bool throughputAxisShown() const;
private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

class GpuBreakdownChart : public QWidget {
    Q_OBJECT
public:
    explicit GpuBreakdownChart(QWidget* parent = nullptr);
    ~GpuBreakdownChart() override;
    // One stacked bar per GPU: compute, attention, the dispatch and combine time that overlap did
    // not hide, idle. Each bar adds up to the step: under two-batch overlap a GPU's communication
    // runs beside its compute, and only the part that outlasts it takes time of its own.
    void setMetrics(const StepMetrics& m);
    void setSelectedGpu(GpuId gpu);  // an invalid id: none
    // What a bar is: a GPU (the model) or a rank of the local engine (measured).
    void setBarsAreRanks(bool ranks);
    [[nodiscard]] int barCount() const;  // bars (GPUs) shown
    [[nodiscard]] std::vector<double> barValues(int gpu) const;  // the stacked values of GPU `gpu` in µs, bottom first
    // The unit the value axis and tooltips show: "µs", or "ms" where the tallest bar reaches 10 ms
    // (back to µs below 8 ms).
    [[nodiscard]] QString valueUnit() const;
    // What hovering bar `index` shows: each part's full name and its time in valueUnit() (the
    // legend may have short names, or none, in a narrow chart).
    [[nodiscard]] QString barToolTip(int index) const;
    [[nodiscard]] bool legendShown() const;
    [[nodiscard]] QChart* chart() const;
signals:
    void gpuSelected(moex::GpuId gpu);
protected:
    void resizeEvent(QResizeEvent* event) override;  // as many GPU labels as fit
private:
    void relabel();
    struct Impl;
    std::unique_ptr<Impl> d;
};

class LoadHistogramChart : public QWidget {
    Q_OBJECT
public:
    explicit LoadHistogramChart(QWidget* parent = nullptr);
    ~LoadHistogramChart() override;
    // Histogram of token-expert pairs per expert for one MoE layer, or all layers pooled.
    void setMetrics(const StepMetrics& m, MoeLayers layers);
    [[nodiscard]] int binCount() const;
    [[nodiscard]] std::vector<int> binCounts() const;  // experts per bin
    [[nodiscard]] QChart* chart() const;
protected:
    void resizeEvent(QResizeEvent* event) override;  // as many load labels as fit
private:
    void relabel();
    struct Impl;
    std::unique_ptr<Impl> d;
};

// Multiplies every font of `chart` (title, legend, axis labels and titles) by `factor`:
// presentation mode (Qt Charts' fonts come from its theme, not from the widget's font).
void scaleChartFonts(QChart* chart, double factor);
// Every font of `chart` through `change`.
void changeChartFonts(QChart* chart, const std::function<QFont(QFont)>& change);
// `chart` in a QChartView filling `parent` (which it gives a layout): margins, bold title, legend on top.
QChartView* embedChart(QWidget* parent, QChart* chart);

}  // namespace moex::views
