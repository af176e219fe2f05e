// Tooltip texts of the canvas items, built on demand from the last scenario and metrics.
#include "views/canvas_impl.h"

#include "metrics/gpu_busy.h"

#include <algorithm>

namespace moex::views {

namespace {
QString gb(double bytes) { return QString::number(bytes / 1e9, 'f', bytes >= 1e9 ? 2 : 4) + QStringLiteral(" GB"); }
QString us(double v) { return QString::number(v, 'f', 1) + QStringLiteral(" µs"); }
QString pct(double u) { return QString::number(u * 100, 'f', 1) + QStringLiteral(" %"); }
QString row(const QString& k, const QString& v)
{
    return QStringLiteral("<tr><td>") + k + QStringLiteral("</td><td align=right>&nbsp;") + v + QStringLiteral("</td></tr>");
}
}  // namespace

QString TopologyCanvas::Impl::gpuTooltip(int g) const
{
    const auto& node = topo.node(topo.gpuNode(GpuId(g)));
    QString html = QStringLiteral("<b>GPU %1</b> (%2, %3)").arg(g).arg(QString::fromStdString(node.name),
                                                                   QString::fromStdString(topo.gpu.name));
    if (g == stragglerGpu())
        html += QStringLiteral(" <span style='color:#c00'><b>straggler</b></span>");
    html += QStringLiteral("<table>");
    const double speed = hasMetrics && g < static_cast<int>(metrics.gpus.size()) ? metrics.gpus[static_cast<std::size_t>(g)].speed
                                                                                : speeds.of(g);
    html += row(TopologyCanvas::tr("speed"), QString::number(speed, 'f', 2));
    if (hasMetrics && g < static_cast<int>(metrics.gpus.size())) {
        const GpuMetrics& m = metrics.gpus[static_cast<std::size_t>(g)];
        html += row(TopologyCanvas::tr("HBM used"), QString::number(m.hbm_used_gb, 'f', 1) + QStringLiteral(" / ")
                                                        + QString::number(topo.gpu.hbm_usable_gb, 'f', 0) + QStringLiteral(" GB"));
        html += row(TopologyCanvas::tr("expert compute"), us(m.compute_us));
        html += row(TopologyCanvas::tr("attention + dense"), us(m.attention_us));
        html += row(TopologyCanvas::tr("dispatch"), us(m.dispatch_us));
        html += row(TopologyCanvas::tr("combine"), us(m.combine_us));
        html += row(TopologyCanvas::tr("idle"), us(m.idle_us));
        html += row(TopologyCanvas::tr("busy"), us(gpuBusyUs(metrics, static_cast<std::size_t>(g))));
        html += row(TopologyCanvas::tr("token-expert pairs"), QString::number(m.expert_pairs));
    }
    html += QStringLiteral("</table>");
    if (g < static_cast<int>(chips.size()) && !chips[static_cast<std::size_t>(g)].empty()) {
        html += layer >= 0 ? TopologyCanvas::tr("<b>Experts in MoE layer %1</b> (load):<br>").arg(layer)
                           : TopologyCanvas::tr("<b>Most loaded experts, all layers</b>:<br>");
        QStringList parts;
        for (const ChipItem* c : chips[static_cast<std::size_t>(g)])
            parts << QStringLiteral("%1%2 (%3)").arg(c->expert).arg(c->replica ? QStringLiteral("ʳ") : QString())
                         .arg(hasMetrics ? formatQuantity(c->load) : QStringLiteral("–"));
        html += parts.join(QStringLiteral(", "));
    }
    return html;
}

QString TopologyCanvas::Impl::tooltipFor(QGraphicsItem* item) const
{
    switch (item->type()) {
    case kChipItemType: {
        const auto* c = static_cast<const ChipItem*>(item);
        QString html = QStringLiteral("<b>Expert %1</b> on GPU %2").arg(c->expert).arg(c->gpu);
        html += layer >= 0 ? TopologyCanvas::tr("<br>MoE layer %1").arg(layer) : TopologyCanvas::tr("<br>all layers");
        if (hasMetrics) {
            double total = 0;
            for (double v : shownLoads())
                total += v;
            html += TopologyCanvas::tr("<br>load: %1 token-expert pairs (%2 of the layer)")
                        .arg(formatQuantity(c->load))
                        .arg(total > 0 ? pct(c->load / total) : QStringLiteral("–"));
        }
        if (c->replica && layer >= 0 && layer < placement.numLayers()) {
            const auto counts = placement.layers[static_cast<std::size_t>(layer)].replicaCounts(placement.num_experts);
            html += TopologyCanvas::tr("<br>replicated: %1 copies in this layer").arg(counts[static_cast<std::size_t>(c->expert)]);
        }
        if (layer >= 0)
            html += TopologyCanvas::tr("<br><i>drag to another GPU to move, Ctrl+drag to replicate, onto a chip to swap; "
                                       "right-click to remove a replica</i>");
        return html;
    }
    case kGpuItemType:
        return gpuTooltip(static_cast<const GpuItem*>(item)->gpu);
    case kLinkItemType: {
        const auto* l = static_cast<const LinkItem*>(item);
        const auto& nodes = topo.nodes();
        auto name = [&](int n) {
            return n >= 0 && n < static_cast<int>(nodes.size()) ? QString::fromStdString(nodes[static_cast<std::size_t>(n)].name)
                                                                 : QString();
        };
        QString html;
        if (l->kind == LinkItem::GpuNvlink || l->kind == LinkItem::SwitchStub) {
            const auto a = static_cast<std::size_t>(l->nodeA);
            const bool gpu = l->kind == LinkItem::GpuNvlink;
            html = gpu ? TopologyCanvas::tr("<b>NVLink of %1</b> (all its switch links)").arg(name(l->nodeA))
                       : TopologyCanvas::tr("<b>%1</b> ↔ NVLink spine").arg(name(l->nodeA));
            html += QStringLiteral("<table>");
            if (a < nvlOut.size()) {
                html += row(TopologyCanvas::tr("sent"), gb(nvlOut[a].bytes));
                html += row(TopologyCanvas::tr("received"), gb(nvlIn[a].bytes));
                html += row(TopologyCanvas::tr("utilisation"), pct(std::max(nvlOut[a].util, nvlIn[a].util)));
            }
            if (gpu)
                html += row(TopologyCanvas::tr("capacity"), QString::number(topo.gpu.nvlink_gbs_per_dir, 'f', 0)
                                                                  + TopologyCanvas::tr(" GB/s per direction"));
            html += QStringLiteral("</table>");
        } else {
            html = QStringLiteral("<b>%1 ↔ %2</b><table>").arg(name(l->nodeA), name(l->nodeB));
            const LinkStat* s = pairStat(l->nodeA, l->nodeB);
            html += row(TopologyCanvas::tr("bytes (both ways)"), gb(s ? s->bytes : 0));
            double cap = s ? s->capacity_gbs : 0;
            for (const TopoLink& tl : topo.links())
                if (tl.from.value == l->nodeA && tl.to.value == l->nodeB)
                    cap = tl.capacity_gbs;
            html += row(TopologyCanvas::tr("capacity"), QString::number(cap, 'f', 0) + TopologyCanvas::tr(" GB/s per direction"));
            html += row(TopologyCanvas::tr("utilisation"), pct(s ? s->util : 0));
            html += QStringLiteral("</table>");
        }
        return html;
    }
    case kBoxItemType: {
        const auto* b = static_cast<const BoxItem*>(item);
        if (b->kind == BoxItem::Frame)
            return {};
        if (b->node < 0)
            return TopologyCanvas::tr("<b>NVLink spine</b><br>cable cartridges joining every GPU of the rack to every "
                                      "NVLink Switch chip; each GPU's line is its aggregate NVLink traffic");
        const TopoNode& n = topo.nodes()[static_cast<std::size_t>(b->node)];
        QString html = QStringLiteral("<b>%1</b> (%2)").arg(QString::fromStdString(n.name),
                                                          QString::fromStdString(std::string(toString(n.kind))));
        const auto i = static_cast<std::size_t>(b->node);
        if (n.kind == NodeKind::nic && n.gpu.valid())
            html += TopologyCanvas::tr("<br>serves GPU %1").arg(n.gpu.value);
        if (n.kind == NodeKind::cpu)
            html += TopologyCanvas::tr("<br>Grace CPU, NVLink-C2C to its two GPUs (no modelled traffic)");
        if (n.kind == NodeKind::nvswitch && i < nvlIn.size())
            html += TopologyCanvas::tr("<br>through: %1").arg(gb(nvlIn[i].bytes));
        if (i < nodeUtil.size() && hasMetrics)
            html += TopologyCanvas::tr("<br>busiest port: %1").arg(pct(nodeUtil[i]));
        int ports = 0;
        for (const TopoLink& tl : topo.links())
            ports += tl.from.value == b->node ? 1 : 0;
        html += TopologyCanvas::tr("<br>%1 links").arg(ports);
        return html;
    }
    default:
        return {};
    }
}

}  // namespace moex::views
