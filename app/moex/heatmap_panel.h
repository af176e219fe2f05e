// The heatmaps dock: expert load (MoE layer x expert, sortable), GPU x GPU traffic, per-GPU
// latency over the last steps — three HeatmapWidgets in tabs (or tiled, for screenshots).
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "heatmap_data.h"
#include "common/ids.h"
#include "metrics/step_metrics.h"
#endif

class QCheckBox;
class QGridLayout;
class QTabWidget;

namespace moex::views {
class HeatmapWidget;
}

namespace moex::app {

class HeatmapPanel : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapPanel(QWidget* parent = nullptr);

    void setMetrics(const StepMetrics& m, const std::vector<int>& moeLayerIndices);
    void clearHistory();
    void setSelectedGpu(GpuId gpu);  // an invalid id: none
    void setTiled(bool tiled);  // all three side by side instead of tabs
    // What a row / column of traffic and latency is: a GPU (the model) or a local engine rank.
    void setUnitsAreRanks(bool ranks);

    [[nodiscard]] views::HeatmapWidget* expertLoad() const { return m_load; }
    [[nodiscard]] views::HeatmapWidget* traffic() const { return m_traffic; }
    [[nodiscard]] views::HeatmapWidget* latency() const { return m_latency; }

signals:
    void gpuSelected(moex::GpuId gpu);
    void layerSelected(moex::MoeLayers layers);  // a row of the expert-load heatmap: one MoE layer

private:
    QWidget* wrap(views::HeatmapWidget* map, QWidget* extra = nullptr);
    [[nodiscard]] QString latencyTabText() const;

    views::HeatmapWidget* m_load;
    views::HeatmapWidget* m_traffic;
    views::HeatmapWidget* m_latency;
    QWidget* m_loadPage;
    QWidget* m_trafficPage;
    QWidget* m_latencyPage;
    QCheckBox* m_sort;
    QTabWidget* m_tabs;
    QWidget* m_tiles;
    QGridLayout* m_tileGrid;
    session::LatencyHistory m_history{60};
    int m_gpus = 0;
    bool m_ranks = false;
};

}  // namespace moex::app
