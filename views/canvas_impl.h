// TopologyCanvas's private state, shared by its source files (topology_canvas.cpp: building and
// colouring; canvas_interaction.cpp: zoom, pan, drag and drop, menus; canvas_tooltips.cpp).
#pragma once

#include "views/canvas_items.h"
#include "views/canvas_layout.h"
#include "views/canvas_overlay.h"
#include "views/topology_canvas.h"

#include <QGraphicsScene>

#include <map>
#include <vector>

namespace moex::views {

struct LinkStat {
    double bytes = 0;
    double capacity_gbs = 0;
    double util = 0;
};

struct TopologyCanvas::Impl {
    explicit Impl(TopologyCanvas* canvas) : q(canvas) {}

    void buildScene();
    void rebuildChips();
    void recolour();
    void computeLinkStats();
    void updateLegend();
    void fit();
    [[nodiscard]] std::vector<double> shownLoads() const;  // per expert, for the shown layer
    [[nodiscard]] std::vector<double> busyTimes() const;  // per GPU, µs; empty without metrics
    [[nodiscard]] int stragglerGpu() const;               // the busiest GPU, -1 where none stands out
    [[nodiscard]] MoeLayers shownLayers() const;  // `layer` as the signals carry it
    [[nodiscard]] const LinkStat* pairStat(int a, int b) const;
    [[nodiscard]] QString tooltipFor(QGraphicsItem* item) const;
    [[nodiscard]] QString gpuTooltip(int gpu) const;

    TopologyCanvas* q;
    QGraphicsScene scene;
    Topology topo;
    GpuSpeeds speeds;
    QString modelName;
    std::vector<int> moeLayerIndex;  // MoE layer -> decoder layer
    Placement placement;
    StepMetrics metrics;
    bool hasMetrics = false;
    int layer = 0;         // MoE ordinal shown, -1: all layers (shownLayers() outside the canvas)
    int selectedGpu = -1;  // -1: none

    CanvasLayout layout;
    int layoutSlots = 0;
    std::vector<GpuItem*> gpus;
    std::vector<std::vector<ChipItem*>> chips;  // [gpu]
    std::vector<BoxItem*> boxes;
    std::map<int, BoxItem*> boxByNode;
    std::vector<LinkItem*> links;

    // Link figures of the last metrics: NVLink per node (GPU or switch), other links per node pair.
    std::vector<LinkStat> nvlOut, nvlIn;
    std::vector<double> nodeUtil;  // max utilisation of any link touching the node
    std::map<std::pair<int, int>, LinkStat> pairs;
    double loadLo = 0, loadHi = 0, busyLo = 0, busyHi = 0;
    double busyMapHi = 0;  // the busy time the tint's hot end stands for: busyHi, or busyLo + kBusyMinSpan
    static constexpr double kBusyMinSpan = 0.05;
    double busyUnit = 1.0;  // the legend's busy times in µs (1) or ms (1000): timeUnitFor

    CanvasLegend* legend = nullptr;
    double uiScale = 1.0;  // presentation mode
    // The legend at the UI scale, smaller (down to 0.75) where it would cover most of a small
    // viewport, in the bottom-left corner.
    void placeLegend();
    CanvasFeedback* feedback = nullptr;
    CanvasGpuDetail* detail = nullptr;  // the selected GPU's experts, top right
    void updateDetail();
    bool userZoomed = false;

    // Interaction state.
    enum class Mode { none, pan, pressChip, dragChip, pressGpu } mode = Mode::none;
    QPoint pressPos;
    QPoint lastPos;
    ChipItem* pressChip = nullptr;
    int pressGpu = -1;
    ChipItem* ghost = nullptr;
    GpuItem* dropTarget = nullptr;
};

}  // namespace moex::views
