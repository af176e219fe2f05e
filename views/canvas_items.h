// The QGraphicsItems of the topology canvas: GPUs, expert chips, boxes (switches, NICs, CPUs,
// leaf/spine switches, tray frames) and links. Cheap by design: no effects, no per-item caches,
// text skipped when it would be drawn smaller than a few pixels.
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QStaticText>
#include <QString>

namespace moex::views {

// A label laid out once (QStaticText) and drawn aligned in a rectangle: drawing hundreds of
// short labels per frame through QPainter::drawText(rect, flags) re-lays them out every time.
class CachedText {
public:
    void set(const QString& text, const QFont& font);
    void draw(QPainter* p, const QRectF& r, Qt::Alignment align) const;
    [[nodiscard]] const QString& text() const { return m_text; }
    [[nodiscard]] double width() const { return m_size.width(); }

private:
    QString m_text;
    QFont m_font;
    QStaticText m_static;
    QSizeF m_size;
};

enum CanvasItemType {
    kGpuItemType = QGraphicsItem::UserType + 1,
    kChipItemType,
    kBoxItemType,
    kLinkItemType,
};

class GpuItem : public QGraphicsItem {
public:
    GpuItem(int gpu, const QRectF& rect);
    [[nodiscard]] int type() const override { return kGpuItemType; }
    [[nodiscard]] QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

    int gpu;
    QRectF rect;
    QColor fill{0xee, 0xf0, 0xf3};
    void setLabel(const QString& label);
    void setNote(const QString& note, bool straggler);  // note: e.g. "×0.85" for a slow GPU
    CachedText label;
    CachedText right;  // note and "straggler"
    QString note;
    bool straggler = false;
    bool selected = false;
    bool dropTarget = false;
};

class ChipItem : public QGraphicsItem {
public:
    ChipItem(int gpu, int expert, int slot, const QRectF& rect, QGraphicsItem* parent);
    [[nodiscard]] int type() const override { return kChipItemType; }
    [[nodiscard]] QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
    void setFill(const QColor& c);
    void setExpert(int expert);

    int gpu;
    int expert;
    int slot;
    QRectF rect;
    QColor fill{0x9a, 0xa8, 0xb8};
    QColor textColor = Qt::white;
    CachedText text;
    bool replica = false;  // the expert has more than one slot in the shown layer
    double load = 0;
};

class BoxItem : public QGraphicsItem {
public:
    enum Kind { Switch, Nic, Cpu, Leaf, Spine, Frame };
    BoxItem(Kind kind, int node, const QRectF& rect, const QString& label);
    [[nodiscard]] int type() const override { return kBoxItemType; }
    [[nodiscard]] QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

    Kind kind;
    int node;  // topology node index (-1 for frames)
    QRectF rect;
    CachedText label;
    QColor fill;
    QColor border;
    QColor accent;  // utilisation tint strip (invalid = none)
};

class LinkItem : public QGraphicsPathItem {
public:
    enum Kind { GpuNvlink, SwitchStub, Network, LeafSpine };
    LinkItem(Kind kind, int nodeA, int nodeB, const QPainterPath& path);
    [[nodiscard]] int type() const override { return kLinkItemType; }
    void setUtilisation(double util, const QColor& colour, bool idle);
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

    Kind kind;
    bool idle = true;
    int nodeA;  // GpuNvlink: the GPU node; SwitchStub: the switch node; else the link's ends
    int nodeB;
};

// Fonts in scene units, shared by all items.
const QFont& canvasFont(int pixelSize, bool bold = false);

}  // namespace moex::views
