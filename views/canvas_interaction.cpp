// TopologyCanvas interaction: wheel zoom around the cursor, pan by dragging empty space, drag an
// expert chip onto a GPU (move; Ctrl: replicate) or onto another chip (swap), click to select a
// GPU, right-click a GPU for its speed or a chip to remove that replica.
#include "views/canvas_impl.h"

#include <QApplication>
#include <QContextMenuEvent>
#include <QHelpEvent>
#include <QInputDialog>
#include <QMouseEvent>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <cmath>

namespace moex::views {

namespace {
// The topmost chip or GPU under a viewport point, skipping the drag ghost.
QGraphicsItem* pick(const QGraphicsView* view, QPoint pos, const QGraphicsItem* skip)
{
    for (QGraphicsItem* item : view->items(pos)) {
        if (item == skip)
            continue;
        if (item->type() == kChipItemType || item->type() == kGpuItemType)
            return item;
    }
    return nullptr;
}

int gpuOf(QGraphicsItem* item)
{
    if (!item)
        return -1;
    if (item->type() == kChipItemType)
        return static_cast<ChipItem*>(item)->gpu;
    if (item->type() == kGpuItemType)
        return static_cast<GpuItem*>(item)->gpu;
    return -1;
}
}  // namespace

void TopologyCanvas::mousePressEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton) {
        QGraphicsView::mousePressEvent(event);
        return;
    }
    const QPoint pos = event->position().toPoint();
    d->pressPos = d->lastPos = pos;
    QGraphicsItem* item = pick(this, pos, nullptr);
    if (item && item->type() == kChipItemType) {
        d->mode = Impl::Mode::pressChip;
        d->pressChip = static_cast<ChipItem*>(item);
        d->pressGpu = d->pressChip->gpu;
    } else if (item) {
        d->mode = Impl::Mode::pressGpu;
        d->pressGpu = gpuOf(item);
    } else {
        d->mode = Impl::Mode::pan;
        viewport()->setCursor(Qt::ClosedHandCursor);
    }
    event->accept();
}

void TopologyCanvas::mouseMoveEvent(QMouseEvent* event)
{
    const QPoint pos = event->position().toPoint();
    switch (d->mode) {
    case Impl::Mode::pan: {
        const QPoint delta = pos - d->lastPos;
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
        verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
        if (!delta.isNull())
            d->userZoomed = true;  // the user placed the view: stop fitting on resize
        break;
    }
    case Impl::Mode::pressChip:
        if ((pos - d->pressPos).manhattanLength() >= QApplication::startDragDistance()) {
            if (d->layer < 0) {
                showFeedback(tr("Pick a layer to edit: this view sums all layers"));
                d->mode = Impl::Mode::none;
                break;
            }
            ChipItem* src = d->pressChip;
            d->ghost = new ChipItem(src->gpu, src->expert, src->slot, src->rect.translated(-src->rect.center()), nullptr);
            d->ghost->setFill(src->fill);
            d->ghost->setOpacity(0.75);
            d->ghost->setZValue(100);
            d->scene.addItem(d->ghost);
            d->mode = Impl::Mode::dragChip;
        } else {
            break;
        }
        [[fallthrough]];
    case Impl::Mode::dragChip: {
        d->ghost->setPos(mapToScene(pos));
        QGraphicsItem* target = pick(this, pos, d->ghost);
        GpuItem* gpuItem = nullptr;
        const int g = gpuOf(target);
        if (g >= 0 && g != d->pressChip->gpu)
            gpuItem = d->gpus[static_cast<std::size_t>(g)];
        if (gpuItem != d->dropTarget) {
            if (d->dropTarget) {
                d->dropTarget->dropTarget = false;
                d->dropTarget->update();
            }
            d->dropTarget = gpuItem;
            if (gpuItem) {
                gpuItem->dropTarget = true;
                gpuItem->update();
            }
        }
        break;
    }
    default:
        QGraphicsView::mouseMoveEvent(event);
        break;
    }
    d->lastPos = pos;
}

void TopologyCanvas::mouseReleaseEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton) {
        QGraphicsView::mouseReleaseEvent(event);
        return;
    }
    const QPoint pos = event->position().toPoint();
    const Impl::Mode mode = d->mode;
    d->mode = Impl::Mode::none;
    viewport()->unsetCursor();
    if (d->dropTarget) {
        d->dropTarget->dropTarget = false;
        d->dropTarget->update();
        d->dropTarget = nullptr;
    }
    if (mode == Impl::Mode::dragChip) {
        delete d->ghost;
        d->ghost = nullptr;
        ChipItem* src = d->pressChip;
        QGraphicsItem* target = pick(this, pos, nullptr);
        const int toGpu = gpuOf(target);
        const bool replicate = event->modifiers() & Qt::ControlModifier;
        if (toGpu < 0 || toGpu == src->gpu)
            return;  // dropped on empty space or on its own GPU: nothing to do
        const MoeLayers layers = d->shownLayers();
        if (replicate)
            emit expertReplicateRequested(layers, ExpertId(src->expert), GpuId(toGpu));
        else if (target->type() == kChipItemType)
            emit expertSwapRequested(layers, ExpertId(src->expert), GpuId(src->gpu),
                                     ExpertId(static_cast<ChipItem*>(target)->expert), GpuId(toGpu));
        else
            emit expertMoveRequested(layers, ExpertId(src->expert), GpuId(src->gpu), GpuId(toGpu));
        return;
    }
    if ((mode == Impl::Mode::pressChip || mode == Impl::Mode::pressGpu) && d->pressGpu >= 0) {
        setSelectedGpu(GpuId(d->pressGpu));
        emit gpuSelected(GpuId(d->pressGpu));
    }
}

void TopologyCanvas::wheelEvent(QWheelEvent* event)
{
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0)
        return;
    const double current = transform().m11();
    const double factor = std::clamp(std::pow(1.2, steps), 0.02 / current, 40.0 / current);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    scale(factor, factor);
    d->userZoomed = true;
    event->accept();
}

QMenu* TopologyCanvas::createSpeedMenu(GpuId gpuId, QWidget* parent)
{
    auto* menu = new QMenu(parent ? parent : this);
    addSpeedActions(menu, gpuId);
    return menu;
}

QMenu* TopologyCanvas::createChipMenu(GpuId gpu, ExpertId expert, QWidget* parent)
{
    auto* menu = new QMenu(parent ? parent : this);
    menu->addSection(tr("Expert %1 on GPU %2").arg(expert.value).arg(gpu.value));
    QAction* remove = menu->addAction(tr("Remove this replica"));
    if (d->layer < 0) {
        remove->setEnabled(false);
        remove->setText(tr("Remove this replica (pick a layer: this view sums all layers)"));
    } else if (d->layer < d->placement.numLayers()) {
        const LayerPlacement& lp = d->placement.layers[static_cast<std::size_t>(d->layer)];
        const auto counts = lp.replicaCounts(d->placement.num_experts);
        const bool another = expert.valid() && expert.index() < counts.size() && counts[expert.index()] > 1;
        remove->setEnabled(another);
        if (!another)
            remove->setText(tr("Remove this replica (it is the expert's only copy)"));
    }
    const MoeLayers layers = d->shownLayers();
    connect(remove, &QAction::triggered, this, [this, layers, expert, gpu] { emit replicaRemoveRequested(layers, expert, gpu); });
    addSpeedActions(menu, gpu);
    return menu;
}

void TopologyCanvas::addSpeedActions(QMenu* menu, GpuId gpuId)
{
    const int gpu = gpuId.value;
    menu->addSection(tr("GPU %1 speed").arg(gpu));
    const double current = d->hasMetrics && gpuId.valid() && gpuId.index() < d->metrics.gpus.size()
                               ? d->metrics.gpus[gpuId.index()].speed : d->speeds.of(gpu);
    for (double s : {1.0, 0.95, 0.9, 0.85, 0.8}) {
        QAction* a = menu->addAction(QString::number(s, 'f', 2));
        a->setCheckable(true);
        a->setChecked(std::abs(s - current) < 1e-6);
        a->setData(s);
        connect(a, &QAction::triggered, this, [this, gpuId, s] { emit gpuSpeedRequested(gpuId, s); });
    }
    menu->addSeparator();
    QAction* custom = menu->addAction(tr("Custom…"));
    custom->setData(-1.0);
    connect(custom, &QAction::triggered, this, [this, gpu, gpuId, current] {
        bool ok = false;
        const double s = QInputDialog::getDouble(this, tr("GPU %1 speed").arg(gpu),
                                                 tr("Speed factor (1.0 = nominal, slower < 1):"), current, 0.01, 10.0, 2,
                                                 &ok);
        if (ok)
            emit gpuSpeedRequested(gpuId, s);
    });
}

void TopologyCanvas::contextMenuEvent(QContextMenuEvent* event)
{
    QGraphicsItem* item = pick(this, event->pos(), nullptr);
    const int gpu = gpuOf(item);
    if (gpu < 0) {
        event->ignore();
        return;
    }
    QMenu* menu = item->type() == kChipItemType
                      ? createChipMenu(GpuId(gpu), ExpertId(static_cast<ChipItem*>(item)->expert), this)
                      : createSpeedMenu(GpuId(gpu), this);
    menu->exec(event->globalPos());
    menu->deleteLater();
}

bool TopologyCanvas::viewportEvent(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const QString text = toolTipAt(mapToScene(help->pos()));
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, viewport());
        return true;
    }
    return QGraphicsView::viewportEvent(event);
}

QString TopologyCanvas::toolTipAt(const QPointF& scenePos) const
{
    for (QGraphicsItem* item : d->scene.items(scenePos)) {
        if (item == d->ghost)
            continue;
        const QString text = d->tooltipFor(item);
        if (!text.isEmpty())
            return text;
    }
    return {};
}

}  // namespace moex::views
