// TopologyCanvas: the drawn system (NVL72 rack: compute trays with 4 GPUs + 2 Grace, NVLink switch
// trays; HGX boards: 8 GPUs around 4 NVSwitch chips, NICs; several HGX nodes with leaf/spine),
// experts as chips on their GPU coloured by load, GPUs tinted by latency with the straggler marked,
// links coloured and thickened by utilisation. Zoom (wheel), pan (drag on empty space), fit.
// Drag an expert chip onto another GPU: move; with Ctrl held: replicate; onto another expert:
// swap. Right-click a GPU: set its speed. The canvas never edits the placement itself: it reports
// the user's intent through signals and shows what it is given.
#pragma once

#include <QGraphicsView>
#include <QMenu>

#ifndef Q_MOC_RUN
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
    // MoE layer shown (index into Placement::layers), or -1 for all layers (loads summed, chips
    // show the most-loaded experts of each GPU).
    void setLayer(int moeLayer);
    [[nodiscard]] int layer() const;
    // Highlights one GPU (-1: none); shared selection across views.
    void setSelectedGpu(int gpu);
    // Message shown briefly over the canvas (e.g. why an edit was refused).
    void showFeedback(const QString& text);
    void fitAll();
    // Scene position of a GPU (the middle of its label strip, a point of the GPU that no chip
    // covers, so a drop there is a drop on the GPU) and of an expert chip's centre (tests drive
    // drags with these).
    [[nodiscard]] QPointF gpuScenePos(int gpu) const;
    [[nodiscard]] QPointF expertScenePos(int gpu, int expert) const;  // null QPointF if not shown
    // The right-click menu of a GPU (speeds 1.0 .. 0.8 and "Custom..."); its actions emit
    // gpuSpeedRequested. Public so that tests can trigger an action without a modal exec().
    [[nodiscard]] QMenu* createSpeedMenu(int gpu, QWidget* parent = nullptr);
    // What the canvas shows, for tests and the status bar.
    [[nodiscard]] int gpuItemCount() const;
    [[nodiscard]] QColor expertColor(int gpu, int expert) const;  // invalid if not shown
    [[nodiscard]] QString toolTipAt(const QPointF& scenePos) const;
    [[nodiscard]] QString feedbackText() const;  // the message shown now ("" when none)
    [[nodiscard]] int outlinedStraggler() const;
    // The detail card of the selected GPU (its experts, loads), as text; "" when none is shown.
    [[nodiscard]] QString gpuDetailText() const;
    // Presentation mode: the legend and messages drawn `scale` times larger (1 = normal).
    void setUiScale(double scale);
    [[nodiscard]] QSize legendSize() const;  // the GPU outlined as the straggler, -1 when none

signals:
    void expertMoveRequested(int moeLayer, int expert, int fromGpu, int toGpu);
    void expertReplicateRequested(int moeLayer, int expert, int toGpu);
    void expertSwapRequested(int moeLayer, int expertA, int gpuA, int expertB, int gpuB);
    void gpuSpeedRequested(int gpu, double speed);
    void gpuSelected(int gpu);
    void layerChanged(int moeLayer);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    bool viewportEvent(QEvent* event) override;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

}  // namespace moex::views
