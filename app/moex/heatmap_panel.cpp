#include "heatmap_panel.h"

#include "views/heatmap_widget.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QTabWidget>
#include <QVBoxLayout>

namespace moex::app {

HeatmapPanel::HeatmapPanel(QWidget* parent)
    : QWidget(parent),
      m_load(new views::HeatmapWidget),
      m_traffic(new views::HeatmapWidget),
      m_latency(new views::HeatmapWidget),
      m_sort(new QCheckBox(tr("Sort experts by load"))),
      m_tabs(new QTabWidget),
      m_tiles(new QWidget)
{
    m_load->setTitle(tr("Expert load (token-expert pairs per step)"));
    m_load->setAxisTitles(tr("MoE layer"), tr("expert"));
    m_load->setUnit(tr("pairs"));
    m_load->setColorMap(views::ColorMap::viridis());
    m_traffic->setUnit(tr("MB"));
    m_traffic->setColorMap(views::ColorMap::viridis());
    m_latency->setUnit(tr("ms"));
    m_latency->setColorMap(views::ColorMap::utilisation());

    connect(m_sort, &QCheckBox::toggled, m_load, &views::HeatmapWidget::setSortColumns);
    connect(m_load, &views::HeatmapWidget::cellClicked, this, [this](int row, int) { emit layerSelected(MoeLayers::only(MoeLayerId(row))); });
    connect(m_traffic, &views::HeatmapWidget::cellClicked, this, [this](int row, int) { emit gpuSelected(GpuId(row)); });
    connect(m_latency, &views::HeatmapWidget::cellClicked, this, [this](int, int col) { emit gpuSelected(GpuId(col)); });

    m_loadPage = wrap(m_load, m_sort);
    m_trafficPage = wrap(m_traffic);
    m_latencyPage = wrap(m_latency);
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_loadPage, tr("Expert load"));
    m_tabs->addTab(m_trafficPage, tr("Traffic"));
    m_tabs->addTab(m_latencyPage, QString());
    setUnitsAreRanks(false);
    m_tileGrid = new QGridLayout(m_tiles);
    m_tileGrid->setContentsMargins(0, 0, 0, 0);
    m_tiles->hide();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_tabs);
    layout->addWidget(m_tiles);
}

QWidget* HeatmapPanel::wrap(views::HeatmapWidget* map, QWidget* extra)
{
    auto* page = new QWidget;
    auto* l = new QVBoxLayout(page);
    l->setContentsMargins(4, 4, 4, 4);
    if (extra)
        l->addWidget(extra);
    l->addWidget(map, 1);
    return page;
}

QString HeatmapPanel::latencyTabText() const { return m_ranks ? tr("Rank latency") : tr("GPU latency"); }

void HeatmapPanel::setUnitsAreRanks(bool ranks)
{
    m_ranks = ranks;
    if (ranks) {
        m_traffic->setTitle(tr("Rank \u2192 rank traffic per step, measured (dispatch + combine)"));
        m_traffic->setAxisTitles(tr("source rank"), tr("destination rank"));
        m_latency->setTitle(tr("Per-rank busy time over the last steps, measured"));
        m_latency->setAxisTitles(tr("step"), tr("engine rank"));
    } else {
        m_traffic->setTitle(tr("GPU \u2192 GPU traffic per step (dispatch + combine)"));
        m_traffic->setAxisTitles(tr("source GPU"), tr("destination GPU"));
        m_latency->setTitle(tr("Per-GPU busy time over the last steps"));
        m_latency->setAxisTitles(tr("step"), tr("GPU"));
    }
    const int tab = m_tabs->indexOf(m_latencyPage);
    if (tab >= 0)
        m_tabs->setTabText(tab, latencyTabText());
}

void HeatmapPanel::setTiled(bool tiled)
{
    if (tiled == m_tiles->isVisible())
        return;
    if (tiled) {
        m_tabs->clear();
        m_tileGrid->addWidget(m_loadPage, 0, 0, 1, 2);
        m_tileGrid->addWidget(m_trafficPage, 1, 0);
        m_tileGrid->addWidget(m_latencyPage, 1, 1);
        m_tileGrid->setRowStretch(0, 1);
        m_tileGrid->setRowStretch(1, 1);
        for (QWidget* page : {m_loadPage, m_trafficPage, m_latencyPage})
            page->show();
        m_tabs->hide();
        m_tiles->show();
    } else {
        m_tabs->addTab(m_loadPage, tr("Expert load"));
        m_tabs->addTab(m_trafficPage, tr("Traffic"));
        m_tabs->addTab(m_latencyPage, latencyTabText());
        m_tiles->hide();
        m_tabs->show();
    }
}

void HeatmapPanel::setMetrics(const StepMetrics& m, const std::vector<int>& moeLayerIndices)
{
    const session::Matrix load = session::expertLoadMatrix(m);
    QStringList rowLabels;
    for (int r = 0; r < load.rows; ++r)
        rowLabels << (r < static_cast<int>(moeLayerIndices.size())
                          ? QStringLiteral("L%1").arg(moeLayerIndices[static_cast<std::size_t>(r)])
                          : QString::number(r));
    m_load->setMatrix(load.rows, load.cols, load.values, rowLabels);

    const session::Matrix traffic = session::trafficMatrix(m);
    m_traffic->setMatrix(traffic.rows, traffic.cols, traffic.values);

    m_history.add(m);
    const session::Matrix lat = m_history.matrix();
    QStringList steps;
    for (int s : m_history.steps())
        steps << QString::number(s);
    m_latency->setMatrix(lat.rows, lat.cols, lat.values, steps);
    if (m_gpus != m.num_gpus)
        m_gpus = m.num_gpus;
}

void HeatmapPanel::clearHistory()
{
    m_history.clear();
}

void HeatmapPanel::setSelectedGpu(GpuId gpuId)
{
    const int gpu = gpuId.valid() ? gpuId.value : -1;
    m_traffic->setHighlight(gpu, gpu);
    m_latency->setHighlight(-1, gpu);
}

}  // namespace moex::app
