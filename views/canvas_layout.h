// Where the canvas draws each element of a topology: an NVL72 rack as built (10 compute trays,
// 9 NVLink switch trays, 8 compute trays; per GPU one NVLink line to the rack's switch spine), HGX
// nodes (8 GPUs in two columns around the NVSwitch chips, NICs on the edge facing the network),
// and leaf/spine switches in a band above (or between two rows of) the racks/nodes.
#pragma once

#ifndef Q_MOC_RUN
#include "topology/topology.h"
#endif

#include <QPainterPath>
#include <QRectF>
#include <QString>

#include <vector>

namespace moex::views {

struct ChipGeometry {
    double width = 22;
    double height = 13;
    double gap = 2;
    double header = 12;  // GPU label above the chips
    int perRow = 4;
};

struct LayoutBox {
    int node = -1;  // topology node index, -1 for frames
    NodeKind kind = NodeKind::gpu;
    bool frame = false;
    QRectF rect;
    QString label;
};

struct LayoutLink {
    enum Kind { GpuNvlink, SwitchStub, Network, LeafSpine } kind = GpuNvlink;
    int nodeA = -1;
    int nodeB = -1;
    QPainterPath path;
};

struct CanvasLayout {
    std::vector<QRectF> gpuRects;  // by GPU index
    std::vector<LayoutBox> boxes;  // switches, NICs, CPUs, leaf/spine, frames (frames first)
    std::vector<LayoutLink> links;
    ChipGeometry chip;
    QRectF sceneRect;
    QString title;
};

// slotsPerGpu: the most chips one GPU shows.
CanvasLayout layoutTopology(const Topology& topo, int slotsPerGpu);

// Chip rectangle (scene units) of local slot `slot` inside a GPU drawn at `gpuRect`.
QRectF chipRect(const ChipGeometry& g, const QRectF& gpuRect, int slot);

}  // namespace moex::views
