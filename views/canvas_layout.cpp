#include "views/canvas_layout.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace moex::views {

namespace {

constexpr double kLaneGap = 13;     // below a compute tray: one NVLink lane per GPU
constexpr double kLanePitch = 2.4;
constexpr double kSwitchTrayH = 11;  // two NVLink switch chips a tray: thin bands, the compute trays are what matters
constexpr double kSwitchGap = 5;
constexpr double kNicSize = 9;
constexpr double kBandH = 150;      // leaf/spine band: spines on top, one bus track per leaf below
constexpr double kNetBoxW = 58;
constexpr double kNetBoxH = 16;

struct NicAnchor {
    int node = -1;
    int rail = 0;
    QPointF start;
    std::vector<QPointF> via;  // points before the last segment to the leaf
};

QString q(const std::string& s) { return QString::fromStdString(s); }

double gpuWidth(const ChipGeometry& g) { return std::max(66.0, g.perRow * (g.width + g.gap) + g.gap + 2); }

double gpuHeight(const ChipGeometry& g, int count)
{
    const int rows = std::max(1, (count + g.perRow - 1) / g.perRow);
    return g.header + rows * (g.height + g.gap) + g.gap;
}

LayoutBox box(int node, NodeKind kind, const QRectF& r, const QString& label)
{
    LayoutBox b;
    b.node = node;
    b.kind = kind;
    b.rect = r;
    b.label = label;
    return b;
}

LayoutBox frame(const QRectF& r, const QString& label)
{
    LayoutBox b = box(-1, NodeKind::gpu, r, label);
    b.frame = true;
    return b;
}

bool isNvl72(const Topology& t)
{
    return t.builtin.find("nvl72") != std::string::npos || (t.builtin.empty() && t.count(NodeKind::cpu) > 0);
}

// --- NVL72 --------------------------------------------------------------------------------------

void layoutNvl72Rack(const Topology& t, int rack, QPointF origin, double gpuW, double gpuH, CanvasLayout& out,
                     std::vector<NicAnchor>& nics, double& rackRight, double& rackBottom)
{
    const auto& nodes = t.nodes();
    int npg = 1;
    std::map<std::tuple<int, int, int>, int> gpus, nicByPos;  // (tray, board, slot)
    std::map<std::pair<int, int>, int> cpus, chips;           // (tray, board) / (tray, slot)
    int trays = 0;
    int switchTrays = 0;
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
        const TopoNode& n = nodes[static_cast<std::size_t>(i)];
        if (n.pos.rack != rack)
            continue;
        const auto& p = n.pos;
        switch (n.kind) {
        case NodeKind::gpu: gpus[{p.tray, p.board, p.slot}] = i; trays = std::max(trays, p.tray + 1); break;
        case NodeKind::cpu: cpus[{p.tray, p.board}] = i; break;
        case NodeKind::nvswitch: chips[{p.tray, p.slot}] = i; switchTrays = std::max(switchTrays, p.tray + 1); break;
        case NodeKind::nic: nicByPos[{p.tray, p.board, p.slot}] = i; npg = std::max(npg, p.slot / 2 + 1); break;
        default: break;
        }
    }
    const int rails = 4 * npg;  // NIC slots run 0 .. 2 * npg - 1 per superchip

    const double labelW = 30;
    const double cpuW = 26;
    const double x0 = origin.x() + labelW;
    const double superW = cpuW + 4 + 2 * (gpuW + 4) + 8;
    const double trayRight = x0 + 4 + 2 * superW - 4;
    const double spineX = trayRight + 10;
    const double spineW = 12;
    const double nicX = spineX + spineW + 10;
    const double nicRight = nicX + 2 * npg * (kNicSize + 2) + 2;
    const double riserX0 = nicRight + 8;
    rackRight = riserX0 + rails * 3 + 6;

    const double top = origin.y();
    double y = top + 20;
    std::vector<LayoutBox> frames;
    std::vector<LayoutBox> items;
    const int firstBlock = std::min(trays, 10);  // NVIDIA's rack: 10 compute trays, the switches, 8 more
    auto computeTray = [&](int tray) {
        frames.push_back(frame(QRectF(origin.x() + 2, y - 3, trayRight - origin.x() + 1, gpuH + 6),
                               QStringLiteral("C%1").arg(tray)));
        for (int b = 0; b < 2; ++b) {
            const double xs = x0 + 4 + b * superW;
            if (auto it = cpus.find({tray, b}); it != cpus.end())
                items.push_back(box(it->second, NodeKind::cpu, QRectF(xs, y, cpuW, gpuH), QStringLiteral("Grace")));
            for (int s = 0; s < 2; ++s) {
                auto it = gpus.find({tray, b, s});
                if (it == gpus.end())
                    continue;
                const QRectF r(xs + cpuW + 4 + s * (gpuW + 4), y, gpuW, gpuH);
                const int g = nodes[static_cast<std::size_t>(it->second)].gpu.value;
                if (g >= 0 && g < static_cast<int>(out.gpuRects.size()))
                    out.gpuRects[static_cast<std::size_t>(g)] = r;
                const int k = b * 2 + s;
                const double laneY = r.bottom() + 3 + k * kLanePitch;
                LayoutLink l;
                l.kind = LayoutLink::GpuNvlink;
                l.nodeA = it->second;
                l.path.moveTo(r.center().x(), r.bottom());
                l.path.lineTo(r.center().x(), laneY);
                l.path.lineTo(spineX, laneY);
                out.links.push_back(std::move(l));
            }
            for (int s = 0; s < 2 * npg; ++s) {
                auto it = nicByPos.find({tray, b, s});
                if (it == nicByPos.end())
                    continue;
                const int idx = b * 2 * npg + s;
                const QRectF r(nicX + idx % (2 * npg) * (kNicSize + 2) + 0, y + 2 + (idx / (2 * npg)) * (kNicSize + 3),
                               kNicSize, kNicSize);
                items.push_back(box(it->second, NodeKind::nic, r, QString()));
                NicAnchor a;
                a.node = it->second;
                a.rail = idx;
                a.start = QPointF(r.right(), r.center().y());
                const double rx = riserX0 + idx * 3;
                a.via = {QPointF(rx, r.center().y())};
                nics.push_back(a);
            }
        }
        y += gpuH + kLaneGap;
    };
    for (int tray = 0; tray < firstBlock; ++tray)
        computeTray(tray);
    for (int st = 0; st < switchTrays; ++st) {
        frames.push_back(frame(QRectF(origin.x() + 2, y - 3, trayRight - origin.x() + 1, kSwitchTrayH + 6),
                               QStringLiteral("S%1").arg(st)));
        int perTray = 0;
        for (const auto& [key, idx] : chips)
            if (key.first == st)
                ++perTray;
        const double chipH = (kSwitchTrayH - (perTray - 1) * 1.0) / std::max(1, perTray);
        int k = 0;
        for (const auto& [key, idx] : chips) {
            if (key.first != st)
                continue;
            const QRectF r(x0 + 4, y + k * (chipH + 1), trayRight - x0 - 4, chipH);
            items.push_back(box(idx, NodeKind::nvswitch, r, QStringLiteral("NVLink Switch · ") + q(nodes[static_cast<std::size_t>(idx)].name)));
            LayoutLink l;
            l.kind = LayoutLink::SwitchStub;
            l.nodeA = idx;
            l.path.moveTo(r.right(), r.center().y());
            l.path.lineTo(spineX, r.center().y());
            out.links.push_back(std::move(l));
            ++k;
        }
        y += kSwitchTrayH + kSwitchGap;
    }
    for (int tray = firstBlock; tray < trays; ++tray)
        computeTray(tray);
    rackBottom = y;
    // The NVLink spine (cable cartridges at the back of the rack) every GPU and switch reaches.
    LayoutBox spine = box(-1, NodeKind::nvswitch, QRectF(spineX, top + 17, spineW, y - top - 17 - kLaneGap + 6), QString());
    out.boxes.push_back(frame(QRectF(origin.x() - 4, top - 4, rackRight - origin.x() + 8, y - top - kLaneGap + 14),
                              QStringLiteral("Rack %1 · %2 · NVLink domain %1").arg(rack).arg(q(t.builtin.empty() ? t.name : t.builtin))));
    out.boxes.insert(out.boxes.end(), frames.begin(), frames.end());
    out.boxes.insert(out.boxes.end(), items.begin(), items.end());
    out.boxes.push_back(spine);
}

// --- HGX ----------------------------------------------------------------------------------------

struct HgxNode {
    std::vector<int> gpus;   // node indices, by slot
    std::vector<int> chips;
    std::vector<int> nics;
    std::string label;
};

void layoutHgxNode(const Topology& t, const HgxNode& n, int index, QPointF origin, double gpuW, double gpuH,
                   bool nicsTop, CanvasLayout& out, std::vector<NicAnchor>& nics, double& width, double& height)
{
    const auto& nodes = t.nodes();
    const double pad = 6;
    const double title = 15;
    const double nicRow = 16;
    const double swW = 56;
    const int count = static_cast<int>(n.gpus.size());
    const int leftCount = count > 4 ? (count + 1) / 2 : count;
    const int rows = std::max(1, leftCount);
    const double pitch = gpuH + 6;
    const double colH = rows * pitch - 6;
    const bool twoCols = count > leftCount;
    width = pad + gpuW + 14 + swW + (twoCols ? 14 + gpuW : 0) + pad;
    height = title + nicRow + colH + pad + 2;
    const double gpuTop = origin.y() + title + (nicsTop ? nicRow : 0);
    const double leftX = origin.x() + pad;
    const double swX = leftX + gpuW + 14;
    const double rightX = swX + swW + 14;
    out.boxes.insert(out.boxes.begin(), frame(QRectF(origin, QSizeF(width, height)),
                                              QStringLiteral("Node %1 · %2").arg(index).arg(q(n.label))));
    for (int i = 0; i < count; ++i) {
        const bool left = i < leftCount;
        const int row = left ? i : i - leftCount;
        const QRectF r(left ? leftX : rightX, gpuTop + row * pitch, gpuW, gpuH);
        const int g = nodes[static_cast<std::size_t>(n.gpus[static_cast<std::size_t>(i)])].gpu.value;
        if (g >= 0 && g < static_cast<int>(out.gpuRects.size()))
            out.gpuRects[static_cast<std::size_t>(g)] = r;
        if (!n.chips.empty()) {
            LayoutLink l;
            l.kind = LayoutLink::GpuNvlink;
            l.nodeA = n.gpus[static_cast<std::size_t>(i)];
            l.path.moveTo(left ? r.right() : r.left(), r.center().y());
            l.path.lineTo(left ? swX : swX + swW, r.center().y());
            out.links.push_back(std::move(l));
        }
    }
    const int c = static_cast<int>(n.chips.size());
    const double chipH = c > 0 ? (colH - (c - 1) * 4.0) / c : 0;
    for (int k = 0; k < c; ++k) {
        const int idx = n.chips[static_cast<std::size_t>(k)];
        out.boxes.push_back(box(idx, NodeKind::nvswitch, QRectF(swX, gpuTop + k * (chipH + 4), swW, chipH),
                                q(nodes[static_cast<std::size_t>(idx)].name)));
    }
    const int m = static_cast<int>(n.nics.size());
    const double nicY = nicsTop ? origin.y() + title + 2 : gpuTop + colH + 4;
    const double innerW = width - 2 * pad;
    for (int k = 0; k < m; ++k) {
        const double cx = origin.x() + pad + (k + 0.5) * innerW / m;
        const QRectF r(cx - kNicSize / 2 - 1, nicY, kNicSize + 2, kNicSize);
        const int idx = n.nics[static_cast<std::size_t>(k)];
        out.boxes.push_back(box(idx, NodeKind::nic, r, QString()));
        NicAnchor a;
        a.node = idx;
        a.rail = nodes[static_cast<std::size_t>(idx)].pos.slot;
        a.start = nicsTop ? QPointF(cx, r.top()) : QPointF(cx, r.bottom());
        nics.push_back(a);
    }
}

// --- network band -------------------------------------------------------------------------------

// side: leaves and spines in two columns right of `left`, spread over [bandTop, right] vertically
// (one NVL72 rack: the drawing is tall, so the network goes beside it).
void layoutNetwork(const Topology& t, double left, double right, double bandTop, bool between,
                   const std::vector<NicAnchor>& nics, CanvasLayout& out, bool side = false)
{
    const auto& nodes = t.nodes();
    std::vector<int> leaves, spines;
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
        if (nodes[static_cast<std::size_t>(i)].kind == NodeKind::leaf)
            leaves.push_back(i);
        else if (nodes[static_cast<std::size_t>(i)].kind == NodeKind::spine)
            spines.push_back(i);
    }
    auto byPos = [&](int a, int b) {
        const auto& pa = nodes[static_cast<std::size_t>(a)].pos;
        const auto& pb = nodes[static_cast<std::size_t>(b)].pos;
        return std::tie(pa.board, pa.slot) < std::tie(pb.board, pb.slot);
    };
    std::sort(leaves.begin(), leaves.end(), byPos);
    std::sort(spines.begin(), spines.end(), byPos);
    (void)between;
    const double spineY = bandTop + 8;
    // One horizontal bus track per leaf: NICs drop onto their leaf's track, the leaf sits on it.
    const double trackTop = bandTop + 44;
    const double trackBottom = bandTop + kBandH - 14;
    const int nLeaves = static_cast<int>(leaves.size());
    std::map<int, double> trackY;
    for (int k = 0; k < nLeaves; ++k)
        trackY[leaves[static_cast<std::size_t>(k)]] =
            nLeaves > 1 ? trackTop + k * (trackBottom - trackTop) / (nLeaves - 1) : (trackTop + trackBottom) / 2;
    std::map<int, QRectF> rects;
    auto place = [&](const std::vector<int>& list, double y, NodeKind kind) {
        const int n = static_cast<int>(list.size());
        const double step = (right - left) / std::max(1, n);
        const double w = std::min(kNetBoxW, step - 6);
        for (int k = 0; k < n; ++k) {
            const QRectF r = side ? QRectF(y, bandTop + (k + 0.5) * (right - bandTop) / std::max(1, n) - kNetBoxH / 2,
                                           kNetBoxW, kNetBoxH)
                                  : QRectF(left + (k + 0.5) * step - w / 2,
                                           kind == NodeKind::leaf ? trackY[list[static_cast<std::size_t>(k)]] - 7 : y, w,
                                           kind == NodeKind::leaf ? 14 : kNetBoxH);
            rects[list[static_cast<std::size_t>(k)]] = r;
            out.boxes.push_back(box(list[static_cast<std::size_t>(k)], kind, r,
                                    q(nodes[static_cast<std::size_t>(list[static_cast<std::size_t>(k)])].name)));
        }
    };
    place(spines, side ? left + kNetBoxW + 40 : spineY, NodeKind::spine);
    place(leaves, side ? left : 0, NodeKind::leaf);
    // Which leaf each NIC and spine is cabled to, from the link graph.
    std::map<int, std::vector<int>> nicLeaf;
    std::vector<std::pair<int, int>> leafSpine;
    for (const TopoLink& l : t.links()) {
        const auto& a = nodes[l.from.index()];
        const auto& b = nodes[l.to.index()];
        if (a.kind == NodeKind::nic && b.kind == NodeKind::leaf)
            nicLeaf[l.from.value].push_back(l.to.value);
        else if (a.kind == NodeKind::leaf && b.kind == NodeKind::spine)
            leafSpine.emplace_back(l.from.value, l.to.value);
    }
    for (const NicAnchor& a : nics) {
        for (int leaf : nicLeaf[a.node]) {
            const QRectF lr = rects[leaf];
            LayoutLink l;
            l.kind = LayoutLink::Network;
            l.nodeA = a.node;
            l.nodeB = leaf;
            l.path.moveTo(a.start);
            for (const QPointF& p : a.via)
                l.path.lineTo(p);
            // Down (or up) to the leaf's track, then along it into the leaf.
            const double x = l.path.currentPosition().x();
            l.path.lineTo(x, lr.center().y());
            if (side)
                l.path.lineTo(lr.left(), lr.center().y());
            else
                l.path.lineTo(x < lr.center().x() ? lr.left() : lr.right(), lr.center().y());
            out.links.push_back(std::move(l));
        }
    }
    for (const auto& [leaf, spine] : leafSpine) {
        LayoutLink l;
        l.kind = LayoutLink::LeafSpine;
        l.nodeA = leaf;
        l.nodeB = spine;
        if (side) {
            l.path.moveTo(rects[leaf].right(), rects[leaf].center().y());
            l.path.lineTo(rects[spine].left(), rects[spine].center().y());
        } else {
            // Up to the spine's own bus just below the spine row, along it, up into the spine.
            const int k = static_cast<int>(std::find(spines.begin(), spines.end(), spine) - spines.begin());
            const double busY = spineY + kNetBoxH + 5 + k * 3.0;
            l.path.moveTo(rects[leaf].center().x(), rects[leaf].top());
            l.path.lineTo(rects[leaf].center().x(), busY);
            l.path.lineTo(rects[spine].center().x(), busY);
            l.path.lineTo(rects[spine].center().x(), rects[spine].bottom());
        }
        out.links.push_back(std::move(l));
    }
}

}  // namespace

QRectF chipRect(const ChipGeometry& g, const QRectF& gpuRect, int slot)
{
    const int r = slot / g.perRow;
    const int c = slot % g.perRow;
    return QRectF(gpuRect.left() + g.gap + 1 + c * (g.width + g.gap), gpuRect.top() + g.header + r * (g.height + g.gap),
                  g.width, g.height);
}

CanvasLayout layoutTopology(const Topology& t, int slotsPerGpu)
{
    CanvasLayout out;
    slotsPerGpu = std::max(1, slotsPerGpu);
    out.chip.perRow = slotsPerGpu <= 8 ? slotsPerGpu : (slotsPerGpu + 1) / 2;
    out.chip.perRow = std::min(out.chip.perRow, 10);
    out.gpuRects.assign(static_cast<std::size_t>(t.numGpus()), QRectF());
    const double gpuW = gpuWidth(out.chip);
    const double gpuH = gpuHeight(out.chip, slotsPerGpu);
    std::vector<NicAnchor> nics;
    const auto& nodes = t.nodes();
    out.title = q(t.name) + (t.gpu.arch == GpuArch::cpu ? QStringLiteral(" · %1 CPU engine ranks") : QStringLiteral(" · %1 GPUs")).arg(t.numGpus());

    if (isNvl72(t)) {
        int racks = 0;
        for (const auto& n : nodes)
            racks = std::max(racks, n.pos.rack + 1);
        double x = 0;
        double bottom = 0;
        for (int r = 0; r < racks; ++r) {
            double right = 0;
            layoutNvl72Rack(t, r, QPointF(x, 0), gpuW, gpuH, out, nics, right, bottom);
            x = right + 40;
        }
        if (racks == 1) {
            const double netLeft = x - 40 + 30;
            layoutNetwork(t, netLeft, bottom - 40, 20, false, nics, out, true);
            out.sceneRect = QRectF(-12, -12, netLeft + 2 * kNetBoxW + 40 + 24, bottom + 12);
        } else {
            layoutNetwork(t, 0, x - 40, -kBandH - 10, false, nics, out);
            out.sceneRect = QRectF(-12, -kBandH - 22, x - 40 + 24, bottom + kBandH + 24);
        }
    } else {
        std::map<std::pair<int, int>, HgxNode> groups;
        for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
            const TopoNode& n = nodes[static_cast<std::size_t>(i)];
            const std::pair<int, int> key{n.pos.rack, n.pos.tray};
            if (n.kind == NodeKind::gpu)
                groups[key].gpus.push_back(i);
            else if (n.kind == NodeKind::nvswitch)
                groups[key].chips.push_back(i);
            else if (n.kind == NodeKind::nic)
                groups[key].nics.push_back(i);
        }
        auto bySlot = [&](int a, int b) {
            return nodes[static_cast<std::size_t>(a)].pos.slot < nodes[static_cast<std::size_t>(b)].pos.slot;
        };
        std::vector<HgxNode> list;
        for (auto& [key, g] : groups) {
            if (g.gpus.empty())
                continue;
            std::sort(g.gpus.begin(), g.gpus.end(), bySlot);
            std::sort(g.chips.begin(), g.chips.end(), bySlot);
            std::sort(g.nics.begin(), g.nics.end(), bySlot);
            g.label = t.builtin.empty() ? t.name : t.builtin;
            list.push_back(std::move(g));
        }
        const int n = static_cast<int>(list.size());
        const int rowsOfNodes = n > 4 ? 2 : 1;
        const int cols = (n + rowsOfNodes - 1) / std::max(1, rowsOfNodes);
        double w = 0;
        double h = 0;
        double rowH = 0;
        double totalW = 0;
        // Row 0 above the band when there are two rows (NICs facing down), else below it.
        const double bandTop = rowsOfNodes == 2 ? 0 : -kBandH - 10;
        double row0Bottom = 0;
        for (int i = 0; i < n; ++i) {
            const int row = rowsOfNodes == 2 ? i / cols : 0;
            const int col = rowsOfNodes == 2 ? i % cols : i;
            const bool nicsTop = !(rowsOfNodes == 2 && row == 0);
            double x = col * (w + 20);
            double y = 0;
            if (rowsOfNodes == 2 && row == 0)
                y = -10 - (rowH > 0 ? rowH : 0);
            else if (rowsOfNodes == 2)
                y = kBandH + 10;
            CanvasLayout scratch;  // measure first node size
            if (i == 0) {
                std::vector<NicAnchor> tmp;
                scratch.gpuRects.assign(out.gpuRects.size(), QRectF());
                layoutHgxNode(t, list[0], 0, QPointF(0, 0), gpuW, gpuH, true, scratch, tmp, w, h);
                rowH = h;
                x = 0;
                if (rowsOfNodes == 2)
                    y = -10 - rowH;
            }
            double nw = 0;
            double nh = 0;
            layoutHgxNode(t, list[static_cast<std::size_t>(i)], i, QPointF(x, y), gpuW, gpuH, nicsTop, out, nics, nw, nh);
            totalW = std::max(totalW, x + nw);
            if (row == 0)
                row0Bottom = std::max(row0Bottom, y + nh);
        }
        layoutNetwork(t, 0, totalW, bandTop, rowsOfNodes == 2, nics, out);
        // No NICs (host-cpu: the CPU engine's ranks on this machine): no network band to keep
        // room for, so the drawing is the node alone and fits the view at its size.
        const double top = rowsOfNodes == 2 ? -10 - rowH : nics.empty() ? 0.0 : bandTop;
        const double bottom = rowsOfNodes == 2 ? kBandH + 10 + rowH : rowH;
        (void)row0Bottom;
        out.sceneRect = QRectF(-12, top - 12, totalW + 24, bottom - top + 24);
    }
    // Frames first so that they are drawn (and hit-tested) below everything else.
    std::stable_partition(out.boxes.begin(), out.boxes.end(), [](const LayoutBox& b) { return b.frame; });
    return out;
}

}  // namespace moex::views
