// TopologyCanvas: building the scene once per scenario and recolouring it per step.
#include "views/canvas_impl.h"
#include "views/chart_axes.h"

#include "metrics/gpu_busy.h"

#include <QResizeEvent>
#include <QScrollBar>

#include <algorithm>
#include <cmath>

namespace moex::views {

namespace {
QColor tint(const QColor& c, double amount)  // mix with white: amount 0 = white, 1 = c
{
    auto mix = [amount](int v) { return static_cast<int>(std::lround(255 + (v - 255) * amount)); };
    return QColor(mix(c.red()), mix(c.green()), mix(c.blue()));
}

BoxItem::Kind boxKind(const LayoutBox& b)
{
    if (b.frame)
        return BoxItem::Frame;
    switch (b.kind) {
    case NodeKind::nvswitch: return BoxItem::Switch;
    case NodeKind::nic: return BoxItem::Nic;
    case NodeKind::cpu: return BoxItem::Cpu;
    case NodeKind::leaf: return BoxItem::Leaf;
    case NodeKind::spine: return BoxItem::Spine;
    case NodeKind::gpu: break;
    }
    return BoxItem::Frame;
}
}  // namespace

TopologyCanvas::TopologyCanvas(QWidget* parent) : QGraphicsView(parent), d(std::make_unique<Impl>(this))
{
    setScene(&d->scene);
    d->scene.setItemIndexMethod(QGraphicsScene::BspTreeIndex);
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setViewportUpdateMode(QGraphicsView::MinimalViewportUpdate);
    setOptimizationFlags(QGraphicsView::DontSavePainterState);
    setCacheMode(QGraphicsView::CacheBackground);
    setBackgroundBrush(QColor(0xfb, 0xfb, 0xfc));
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setDragMode(QGraphicsView::NoDrag);
    setMouseTracking(true);
    setMinimumSize(320, 240);
    d->legend = new CanvasLegend(this);
    d->feedback = new CanvasFeedback(this);
    d->detail = new CanvasGpuDetail(this);
    d->updateLegend();
}

TopologyCanvas::~TopologyCanvas()
{
    // Items hold no back pointers, but the scene must go before the overlays' parent.
    d->scene.clear();
}

void TopologyCanvas::setScenario(const Scenario& scenario, const Placement& placement)
{
    d->topo = scenario.topology;
    d->speeds = scenario.speeds;
    d->modelName = QString::fromStdString(scenario.model.name);
    d->moeLayerIndex = scenario.model.moe_layers;
    d->placement = placement;
    d->hasMetrics = false;
    d->metrics = {};
    d->layer = std::clamp(d->layer, -1, std::max(0, placement.numLayers() - 1));
    d->buildScene();
    d->userZoomed = false;
    d->fit();
}

void TopologyCanvas::setPlacement(const Placement& placement)
{
    d->placement = placement;
    if (placement.maxSlotsPerGpu() > d->layoutSlots || placement.numGpus() != static_cast<int>(d->gpus.size())) {
        d->buildScene();  // a GPU got more slots than its box holds: lay out again
        return;
    }
    if (d->layer >= placement.numLayers())
        d->layer = placement.numLayers() - 1;
    d->rebuildChips();
    d->recolour();
}

void TopologyCanvas::setMetrics(const StepMetrics& metrics)
{
    d->metrics = metrics;
    d->hasMetrics = true;
    if (d->layer < 0)
        d->rebuildChips();  // all layers: which experts are the most loaded depends on the step
    d->recolour();
}

void TopologyCanvas::setLayer(MoeLayers layers)
{
    const int moeLayer = layers.isAll() ? -1 : std::clamp(layers.layer().value, 0, std::max(0, d->placement.numLayers() - 1));
    if (moeLayer == d->layer)
        return;
    d->layer = moeLayer;
    d->rebuildChips();
    d->recolour();
    emit layerChanged(layer());
}

MoeLayers TopologyCanvas::layer() const { return d->shownLayers(); }

MoeLayers TopologyCanvas::Impl::shownLayers() const
{
    return layer < 0 ? MoeLayers::all() : MoeLayers::only(MoeLayerId(layer));
}

void TopologyCanvas::setSelectedGpu(GpuId gpu)
{
    d->selectedGpu = gpu.valid() ? gpu.value : -1;
    for (GpuItem* g : d->gpus) {
        const bool sel = g->gpu == d->selectedGpu;
        if (g->selected != sel) {
            g->selected = sel;
            g->update();
        }
    }
    d->updateDetail();
}

QString TopologyCanvas::gpuDetailText() const { return d->detail->plainText(); }

void TopologyCanvas::Impl::updateDetail()
{
    const int g = selectedGpu;
    if (g < 0 || g >= static_cast<int>(chips.size()) || chips[static_cast<std::size_t>(g)].empty()) {
        detail->hide();
        return;
    }
    std::vector<GpuDetailRow> rows;
    for (const ChipItem* c : chips[static_cast<std::size_t>(g)])
        rows.push_back({c->fill, c->expert, c->replica, c->load});
    const QString where = layer >= 0 ? TopologyCanvas::tr("MoE layer %1").arg(layer) : TopologyCanvas::tr("all layers");
    detail->setContent(TopologyCanvas::tr("GPU %1 \u00b7 %2 \u00b7 pairs per step").arg(g).arg(where), std::move(rows),
                       loadHi, hasMetrics);
    const QRect vp = q->viewport()->geometry();
    detail->move(vp.right() - detail->width() - 8, vp.top() + 8);
    detail->show();
    detail->raise();
}

void TopologyCanvas::showFeedback(const QString& text) { d->feedback->showMessage(text); }

QString TopologyCanvas::feedbackText() const { return d->feedback->isVisible() ? d->feedback->text() : QString(); }

void TopologyCanvas::fitAll()
{
    d->userZoomed = false;
    d->fit();
}

QPointF TopologyCanvas::gpuScenePos(GpuId gpu) const
{
    if (!gpu.valid() || gpu.index() >= d->gpus.size())
        return {};
    const QRectF r = d->gpus[gpu.index()]->rect;
    return {r.center().x(), r.top() + d->layout.chip.header / 2};
}

QPointF TopologyCanvas::expertScenePos(GpuId gpu, ExpertId expert) const
{
    if (!gpu.valid() || gpu.index() >= d->chips.size())
        return {};
    for (ChipItem* c : d->chips[gpu.index()])
        if (c->expert == expert.value)
            return c->mapToScene(c->rect.center());
    return {};
}

int TopologyCanvas::gpuItemCount() const
{
    int n = 0;
    for (QGraphicsItem* item : d->scene.items())
        n += item->type() == kGpuItemType ? 1 : 0;
    return n;
}

QColor TopologyCanvas::expertColor(GpuId gpu, ExpertId expert) const
{
    if (!gpu.valid() || gpu.index() >= d->chips.size())
        return {};
    for (ChipItem* c : d->chips[gpu.index()])
        if (c->expert == expert.value)
            return c->fill;
    return {};
}

QColor TopologyCanvas::gpuColor(GpuId gpu) const
{
    return gpu.valid() && gpu.index() < d->gpus.size() ? d->gpus[gpu.index()]->fill : QColor();
}

void TopologyCanvas::resizeEvent(QResizeEvent* event)
{
    QGraphicsView::resizeEvent(event);
    d->placeLegend();
    if (!d->detail->isHidden())
        d->updateDetail();
    if (d->feedback->isVisible())
        d->feedback->move((width() - d->feedback->width()) / 2, 12);
    if (!d->userZoomed)
        d->fit();
}

// --- Impl: building -----------------------------------------------------------------------------

void TopologyCanvas::Impl::buildScene()
{
    mode = Mode::none;
    pressChip = nullptr;
    ghost = nullptr;
    dropTarget = nullptr;
    scene.clear();
    gpus.clear();
    chips.clear();
    boxes.clear();
    boxByNode.clear();
    links.clear();
    layoutSlots = std::max(1, placement.maxSlotsPerGpu());
    layout = layoutTopology(topo, layoutSlots);
    for (const LayoutBox& b : layout.boxes) {
        auto* item = new BoxItem(boxKind(b), b.node, b.rect, b.label);
        scene.addItem(item);
        boxes.push_back(item);
        if (b.node >= 0)
            boxByNode[b.node] = item;
    }
    for (const LayoutLink& l : layout.links) {
        auto* item = new LinkItem(static_cast<LinkItem::Kind>(l.kind), l.nodeA, l.nodeB, l.path);
        scene.addItem(item);
        links.push_back(item);
    }
    for (int g = 0; g < topo.numGpus(); ++g) {
        auto* item = new GpuItem(g, layout.gpuRects[static_cast<std::size_t>(g)]);
        // The CPU engine's ranks (host-cpu) are threads on this machine, not GPUs.
        item->setLabel((topo.gpu.arch == GpuArch::cpu ? QStringLiteral("rank %1") : QStringLiteral("GPU %1")).arg(g));
        item->selected = g == selectedGpu;
        scene.addItem(item);
        gpus.push_back(item);
    }
    chips.assign(gpus.size(), {});
    scene.setSceneRect(layout.sceneRect);
    // Generous margins around the drawing so that panning and the legend offset are never clamped:
    // twice its longer side on every side. (Its own width and height were not enough for a wide
    // drawing fitted to a small view: the view then shows more height than the drawing has, the
    // centre moved to keep the legend's rows free was clamped, and the legend covered the nodes.)
    const QRectF r = layout.sceneRect;
    const double m = 2.0 * std::max(r.width(), r.height());
    q->setSceneRect(r.adjusted(-m, -m, m, m));
    rebuildChips();
    recolour();
}

void TopologyCanvas::Impl::rebuildChips()
{
    const int numGpus = static_cast<int>(gpus.size());
    const int E = placement.num_experts;
    std::vector<std::vector<std::pair<int, bool>>> shown(static_cast<std::size_t>(numGpus));  // (expert, replica)
    if (layer >= 0 && layer < placement.numLayers()) {
        const LayerPlacement& lp = placement.layers[static_cast<std::size_t>(layer)];
        const auto counts = lp.replicaCounts(E);
        for (int g = 0; g < std::min(numGpus, lp.numGpus()); ++g)
            for (ExpertId e : lp.gpu_slots[static_cast<std::size_t>(g)])
                shown[static_cast<std::size_t>(g)].emplace_back(
                    e.value, e.valid() && e.index() < counts.size() && counts[e.index()] > 1);
    } else if (placement.numLayers() > 0) {
        // All layers: per GPU, the experts it holds weighted by their load summed over the layers
        // (or by how many layers place them there, before any metrics), the heaviest first.
        for (int g = 0; g < numGpus; ++g) {
            std::map<int, double> weight;
            for (int l = 0; l < placement.numLayers(); ++l) {
                const LayerPlacement& lp = placement.layers[static_cast<std::size_t>(l)];
                if (g >= lp.numGpus())
                    continue;
                const LayerMetrics* lm = hasMetrics && l < static_cast<int>(metrics.layers.size())
                                             ? &metrics.layers[static_cast<std::size_t>(l)] : nullptr;
                for (ExpertId e : lp.gpu_slots[static_cast<std::size_t>(g)]) {
                    double w = 1;
                    if (lm && e.index() < lm->expert_load.size())
                        w = static_cast<double>(lm->expert_load[e.index()]);
                    weight[e.value] += w;
                }
            }
            std::vector<std::pair<double, int>> order;
            for (const auto& [e, w] : weight)
                order.emplace_back(-w, e);
            std::sort(order.begin(), order.end());
            for (int k = 0; k < std::min(layoutSlots, static_cast<int>(order.size())); ++k)
                shown[static_cast<std::size_t>(g)].emplace_back(order[static_cast<std::size_t>(k)].second, false);
        }
    }
    for (int g = 0; g < numGpus; ++g) {
        auto& list = chips[static_cast<std::size_t>(g)];
        const auto& want = shown[static_cast<std::size_t>(g)];
        const int n = std::min(static_cast<int>(want.size()), layoutSlots);
        while (static_cast<int>(list.size()) > n) {
            delete list.back();
            list.pop_back();
        }
        GpuItem* gi = gpus[static_cast<std::size_t>(g)];
        for (int k = 0; k < n; ++k) {
            const auto [expert, replica] = want[static_cast<std::size_t>(k)];
            if (k >= static_cast<int>(list.size()))
                list.push_back(new ChipItem(g, expert, k, chipRect(layout.chip, gi->rect, k), gi));
            ChipItem* c = list[static_cast<std::size_t>(k)];
            if (c->expert != expert || c->replica != replica) {
                c->replica = replica;
                c->setExpert(expert);
            }
        }
    }
}

// --- Impl: colouring ----------------------------------------------------------------------------

std::vector<double> TopologyCanvas::Impl::shownLoads() const
{
    std::vector<double> loads(static_cast<std::size_t>(std::max(0, placement.num_experts)), 0.0);
    if (!hasMetrics)
        return loads;
    auto add = [&](const LayerMetrics& lm) {
        for (std::size_t e = 0; e < std::min(loads.size(), lm.expert_load.size()); ++e)
            loads[e] += static_cast<double>(lm.expert_load[e]);
    };
    if (layer >= 0) {
        if (layer < static_cast<int>(metrics.layers.size()))
            add(metrics.layers[static_cast<std::size_t>(layer)]);
    } else {
        for (const LayerMetrics& lm : metrics.layers)
            add(lm);
    }
    return loads;
}

void TopologyCanvas::setUiScale(double scale)
{
    d->uiScale = scale;
    d->placeLegend();
    d->fit();
}

QSize TopologyCanvas::legendSize() const { return d->legend->size(); }
QString TopologyCanvas::legendText() const { return d->legend->plainText(); }

GpuId TopologyCanvas::outlinedStraggler() const
{
    for (std::size_t g = 0; g < d->gpus.size(); ++g)
        if (d->gpus[g]->straggler)
            return GpuId(static_cast<int>(g));
    return {};
}

std::vector<double> TopologyCanvas::Impl::busyTimes() const
{
    std::vector<double> busy;
    if (hasMetrics && metrics.gpus.size() >= gpus.size())
        for (std::size_t g = 0; g < gpus.size(); ++g)
            busy.push_back(gpuBusyUs(metrics, g));
    return busy;
}

// The GPU the tint shows busiest, in every view: the step's busy time (the step less the GPU's
// waits) is what makes the others wait. Where every GPU takes within 0.5% of the same time, no GPU
// is "the straggler": none is outlined. (The per-layer slowest GPU and the CLI's straggler_gpu, the
// GPU slowest in the most layers, can be another GPU: outlined here, with the tint saying
// otherwise, it read as a contradiction.)
namespace {
int busiestOf(const std::vector<double>& busy)
{
    if (busy.empty())
        return -1;
    const auto [mn, mx] = std::minmax_element(busy.begin(), busy.end());
    return *mx > *mn * 1.005 ? static_cast<int>(mx - busy.begin()) : -1;
}
}  // namespace

int TopologyCanvas::Impl::stragglerGpu() const { return busiestOf(busyTimes()); }

void TopologyCanvas::Impl::computeLinkStats()
{
    const auto& nodes = topo.nodes();
    const std::size_t n = nodes.size();
    nvlOut.assign(n, {});
    nvlIn.assign(n, {});
    nodeUtil.assign(n, 0.0);
    pairs.clear();
    if (!hasMetrics)
        return;
    auto isNvl = [](NodeKind k) { return k == NodeKind::gpu || k == NodeKind::nvswitch; };
    for (const LinkMetrics& lm : metrics.links) {
        if (lm.from < 0 || lm.to < 0 || static_cast<std::size_t>(lm.from) >= n || static_cast<std::size_t>(lm.to) >= n)
            continue;
        const auto a = static_cast<std::size_t>(lm.from);
        const auto b = static_cast<std::size_t>(lm.to);
        nodeUtil[a] = std::max(nodeUtil[a], lm.utilization);
        nodeUtil[b] = std::max(nodeUtil[b], lm.utilization);
        if (isNvl(nodes[a].kind) && isNvl(nodes[b].kind)) {
            nvlOut[a].bytes += lm.bytes;
            nvlOut[a].util = std::max(nvlOut[a].util, lm.utilization);
            nvlIn[b].bytes += lm.bytes;
            nvlIn[b].util = std::max(nvlIn[b].util, lm.utilization);
            continue;
        }
        LinkStat& s = pairs[{std::min(lm.from, lm.to), std::max(lm.from, lm.to)}];
        s.bytes += lm.bytes;
        s.util = std::max(s.util, lm.utilization);
        s.capacity_gbs = std::max(s.capacity_gbs, lm.capacity_gbs);
    }
}

const LinkStat* TopologyCanvas::Impl::pairStat(int a, int b) const
{
    auto it = pairs.find({std::min(a, b), std::max(a, b)});
    return it == pairs.end() ? nullptr : &it->second;
}

void TopologyCanvas::Impl::recolour()
{
    const ColorMap viridis = ColorMap::viridis();
    const ColorMap util = ColorMap::utilisation();
    // Expert chips by load in the shown layer.
    const std::vector<double> loads = shownLoads();
    loadLo = loadHi = 0;
    if (hasMetrics && !loads.empty()) {
        const auto [mn, mx] = std::minmax_element(loads.begin(), loads.end());
        loadLo = *mn;
        loadHi = *mx;
    }
    const QColor neutral(0x9a, 0xa8, 0xb8);
    for (auto& list : chips)
        for (ChipItem* c : list) {
            const bool known = hasMetrics && c->expert >= 0 && static_cast<std::size_t>(c->expert) < loads.size();
            c->load = known ? loads[static_cast<std::size_t>(c->expert)] : 0;
            c->setFill(known ? viridis.map(c->load, loadLo, loadHi) : neutral);
        }
    // GPUs tinted by busy time, the straggler outlined, slow GPUs with their speed.
    const std::vector<double> busy = busyTimes();
    const int straggler = busiestOf(busy);  // stragglerGpu(), without computing the busy times twice
    busyLo = busyHi = busyMapHi = 0;
    if (!busy.empty()) {
        const auto [mn, mx] = std::minmax_element(busy.begin(), busy.end());
        busyLo = *mn;
        busyHi = *mx;
        // The colours span at least 5% above the least busy GPU: a 0.2% spread stretched over the
        // whole map painted balanced GPUs from green to red.
        busyMapHi = std::max(busyHi, busyLo * (1.0 + kBusyMinSpan));
    }
    for (std::size_t g = 0; g < gpus.size(); ++g) {
        GpuItem* item = gpus[g];
        const double speed = hasMetrics && g < metrics.gpus.size() ? metrics.gpus[g].speed : speeds.of(static_cast<int>(g));
        const QString note = speed < 0.999 ? QStringLiteral("×%1").arg(speed, 0, 'f', 2) : QString();
        // A light tint, so that the chips stay the strongest colour.
        const QColor fill = !busy.empty() && busyMapHi > busyLo ? tint(util.map(busy[g], busyLo, busyMapHi), 0.45)
                            : hasMetrics                       ? tint(util.at(0), 0.45)
                                                               : QColor(0xee, 0xf0, 0xf3);
        const bool strag = static_cast<int>(g) == straggler;
        if (item->fill != fill || item->note != note || item->straggler != strag) {
            item->fill = fill;
            item->setNote(note, strag);
            item->update();
        }
    }
    // Links and the switches/NICs they end at.
    computeLinkStats();
    for (LinkItem* l : links) {
        double u = 0;
        double bytes = 0;
        switch (l->kind) {
        case LinkItem::GpuNvlink:
        case LinkItem::SwitchStub:
            if (l->nodeA >= 0 && static_cast<std::size_t>(l->nodeA) < nvlOut.size()) {
                const auto a = static_cast<std::size_t>(l->nodeA);
                u = std::max(nvlOut[a].util, nvlIn[a].util);
                bytes = nvlOut[a].bytes + nvlIn[a].bytes;
            }
            break;
        case LinkItem::Network:
        case LinkItem::LeafSpine:
            if (const LinkStat* s = pairStat(l->nodeA, l->nodeB)) {
                u = s->util;
                bytes = s->bytes;
            }
            break;
        }
        l->setUtilisation(u, util.at(u), bytes <= 0);
    }
    for (BoxItem* b : boxes) {
        // Switch chips show their load through their links (and tooltips): a stripe on each of the
        // 18 NVL72 chips only added noise.
        if (b->node < 0 || b->kind == BoxItem::Frame || b->kind == BoxItem::Cpu || b->kind == BoxItem::Switch)
            continue;
        const double u = static_cast<std::size_t>(b->node) < nodeUtil.size() ? nodeUtil[static_cast<std::size_t>(b->node)] : 0;
        const QColor accent = hasMetrics && u > 0 ? util.at(u) : QColor();
        if (accent != b->accent) {
            b->accent = accent;
            b->update();
        }
    }
    updateLegend();
    updateDetail();
}

void TopologyCanvas::Impl::updateLegend()
{
    QString heading = modelName.isEmpty() ? TopologyCanvas::tr("No scenario")
                                          : modelName + QLatin1Char('\n') + layout.title + QLatin1Char('\n');
    if (!modelName.isEmpty()) {
        if (layer >= 0) {
            const int decoder = layer < static_cast<int>(moeLayerIndex.size()) ? moeLayerIndex[static_cast<std::size_t>(layer)] : layer;
            heading += TopologyCanvas::tr("MoE layer %1 (decoder layer %2)").arg(layer).arg(decoder);
        } else {
            heading += TopologyCanvas::tr("All MoE layers summed (drag disabled)");
        }
    }
    legend->setHeading(heading);
    legend->setUnitNoun(topo.gpu.arch == GpuArch::cpu ? TopologyCanvas::tr("rank") : TopologyCanvas::tr("GPU"));
    double linkHi = 0;
    for (double u : nodeUtil)
        linkHi = std::max(linkHi, u);
    // Busy time in ms from 10 ms (a rack's 18 ms step read "15.4k – 15.6k µs", the CPU engine's
    // "460.7k – 531.7k µs"), back to µs below 8 ms, as the breakdown chart's axis.
    busyUnit = timeUnitFor(busyHi, busyUnit);
    const bool busyMs = busyUnit > 1;
    legend->setScales({
        {layer >= 0 ? TopologyCanvas::tr("Expert load, this layer") : TopologyCanvas::tr("Expert load, all layers"), ColorMap::viridis(), loadLo, loadHi,
         TopologyCanvas::tr("token-expert pairs"), hasMetrics, 0, QString()},
        {topo.gpu.arch == GpuArch::cpu ? TopologyCanvas::tr("Rank busy time") : TopologyCanvas::tr("GPU busy time"),
         ColorMap::utilisation(), busyLo / busyUnit, busyHi / busyUnit, busyMs ? QStringLiteral("ms") : QStringLiteral("µs"), hasMetrics,
         busyMapHi / busyUnit,
         busyHi > busyLo && busyLo > 0 ? TopologyCanvas::tr("spread %1%").arg(100.0 * (busyHi - busyLo) / busyLo, 0, 'f', busyHi < busyLo * 1.1 ? 1 : 0)
                         : QString()},
        {TopologyCanvas::tr("Link utilisation"), ColorMap::utilisation(), 0, 100, QStringLiteral("%"), hasMetrics, 0,
         TopologyCanvas::tr("max %1").arg(linkHi * 100, 0, 'f', 0)},
    });
    placeLegend();
}

void TopologyCanvas::Impl::placeLegend()
{
    const QRect vp = q->viewport()->geometry();
    const QSize n = legend->naturalSize();
    double s = uiScale;
    if (n.width() > 0 && n.height() > 0)
        s = std::min({s, 0.5 * vp.width() / n.width(), 0.6 * vp.height() / n.height()});
    legend->setScale(std::max(0.75, s));
    legend->move(vp.left() + 8, vp.bottom() - legend->height() - 8);
    legend->raise();
}

void TopologyCanvas::Impl::fit()
{
    const QRectF content = layout.sceneRect;
    const QSize vp = q->viewport()->size();
    if (content.isEmpty() || vp.width() < 10 || vp.height() < 10)
        return;
    // Keep the legend's column free when the drawing is narrower than the view.
    const double legendW = legend->width() + 16;
    const double s1 = std::min((vp.width() - legendW) / content.width(), vp.height() / content.height());
    const double s2 = std::min(vp.width() / content.width(), (vp.height() - legend->height() - 16) / content.height());
    const bool beside = s1 >= s2;
    const double s = std::max(0.01, std::max(s1, s2)) * 0.98;
    q->setTransform(QTransform::fromScale(s, s));
    QPointF centre = content.center();
    if (beside)
        centre.rx() -= legendW / 2 / s;
    else
        centre.ry() += (legend->height() + 16) / 2.0 / s;
    q->centerOn(centre);
}

}  // namespace moex::views
