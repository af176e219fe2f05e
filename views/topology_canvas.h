// TopologyCanvas: the drawn system (NVL72 rack: compute trays with 4 GPUs + 2 Grace, NVLink switch
// trays; HGX boards: 8 GPUs around 4 NVSwitch chips, NICs; several HGX nodes with leaf/spine),
// experts as chips on their GPU coloured by load, GPUs tinted by latency with the straggler marked,
// links coloured and thickened by utilisation. Zoom (wheel), pan (drag on empty space), fit.
// Drag an expert chip onto another GPU: move; with Ctrl held: replicate; onto another expert:
// swap. Right-click a GPU: set its speed; a chip: remove that replica (or the GPU's speed). The canvas never edits the placement itself: it reports
// the user's intent through signals and shows what it is given.
#pragma once

#include <QGraphicsView>
#include <QMenu>

#ifndef Q_MOC_RUN
#include "common/ids.h"
#include "metrics/step_metrics.h"
#include "placement/placement.h"
#include "scenario/scenario.h"
#endif

#include <memory>

namespace moex::views {

class TopologyCanvas : public QGraphicsView {
    Q_OBJECT
public:
    explicit TopologyCanvas(QWidget* parent = nullptr);
    ~TopologyCanvas() override;

    // Rebuilds the scene for a scenario (topology drawing, GPUs, links) and its placement.
    void setScenario(const Scenario& scenario, const Placement& placement);
    // Updates the expert chips only (after an edit); same topology.
    void setPlacement(const Placement& placement);
    // Colours from a step's metrics (expert load of the shown layer, GPU latency, link utilisation).
    void setMetrics(const StepMetrics& metrics);
    // MoE layer shown (an index into Placement::layers, clamped to those there are), or all layers
    // (loads summed, chips show the most-loaded experts of each GPU).
    void setLayer(MoeLayers layers);
    [[nodiscard]] MoeLayers layer() const;
    // Highlights one GPU (an invalid id: none); shared selection across views.
    void setSelectedGpu(GpuId gpu);
    // Message shown briefly over the canvas (e.g. why an edit was refused).
    void showFeedback(const QString& text);
    void fitAll();
    // Scene position of a GPU (the middle of its label strip, a point of the GPU that no chip
    // covers, so a drop there is a drop on the GPU) and of an expert chip's centre (tests drive
    // drags with these).
    [[nodiscard]] QPointF gpuScenePos(GpuId gpu) const;
    [[nodiscard]] QPointF expertScenePos(GpuId gpu, ExpertId expert) const;  // null QPointF if not shown
    // The right-click menu of a GPU (speeds 1.0 .. 0.8 and "Custom..."); its actions emit
    // gpuSpeedRequested. Public so that tests can trigger an action without a modal exec().
    [[nodiscard]] QMenu* createSpeedMenu(GpuId gpu, QWidget* parent = nullptr);
    // The right-click menu of an expert chip: "Remove this replica" (enabled when the expert has
    // another replica in the shown layer; emits replicaRemoveRequested), then the GPU's speeds.
    [[nodiscard]] QMenu* createChipMenu(GpuId gpu, ExpertId expert, QWidget* parent = nullptr);
    // What the canvas shows, for tests and the status bar.
    [[nodiscard]] int gpuItemCount() const;
    [[nodiscard]] QColor expertColor(GpuId gpu, ExpertId expert) const;  // invalid if not shown
    [[nodiscard]] QColor gpuColor(GpuId gpu) const;  // the GPU's busy-time tint; invalid if not shown
    [[nodiscard]] QString toolTipAt(const QPointF& scenePos) const;
    [[nodiscard]] QString feedbackText() const;  // the message shown now ("" when none)
    [[nodiscard]] GpuId outlinedStraggler() const;  // the GPU outlined as the straggler; invalid when none
    // The detail card of the selected GPU (its experts, loads), as text; "" when none is shown.
    [[nodiscard]] QString gpuDetailText() const;
    // Presentation mode: the legend and messages drawn `scale` times larger (1 = normal).
    void setUiScale(double scale);
    [[nodiscard]] QSize legendSize() const;
    [[nodiscard]] QString legendText() const;  // the legend's heading and scales as text

signals:
    // The user's intents, in the layer shown (an edit is only asked for in one MoE layer: the
    // all-layers view refuses drags itself).
    void expertMoveRequested(moex::MoeLayers layers, moex::ExpertId expert, moex::GpuId fromGpu, moex::GpuId toGpu);
    void expertReplicateRequested(moex::MoeLayers layers, moex::ExpertId expert, moex::GpuId toGpu);
    void expertSwapRequested(moex::MoeLayers layers, moex::ExpertId expertA, moex::GpuId gpuA, moex::ExpertId expertB,
                             moex::GpuId gpuB);
    void replicaRemoveRequested(moex::MoeLayers layers, moex::ExpertId expert, moex::GpuId gpu);
    void gpuSpeedRequested(moex::GpuId gpu, double speed);
    void gpuSelected(moex::GpuId gpu);
    void layerChanged(moex::MoeLayers layers);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    bool viewportEvent(QEvent* event) override;

private:
    void addSpeedActions(QMenu* menu, GpuId gpu);  // the speed section of the GPU and chip menus

    struct Impl;
    std::unique_ptr<Impl> d;
};

}  // namespace moex::views
