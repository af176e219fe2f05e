#include "views/canvas_items.h"

#include <QPainter>
#include <QPen>
#include <QStringList>
#include <QStyleOptionGraphicsItem>

#include <map>

namespace moex::views {

namespace {
// Text below this on-screen pixel size is not drawn (unreadable, and the most expensive part).
constexpr double kMinTextPixels = 4.5;

double lod(const QPainter* p) { return QStyleOptionGraphicsItem::levelOfDetailFromTransform(p->worldTransform()); }

// Axis-aligned boxes: antialiasing only when zoomed in far enough for rounded corners to show;
// at fit zoom an aliased fill looks the same and costs a fraction (most of a repaint is fills).
void fillBox(QPainter* p, const QRectF& r, double radius, double scale)
{
    if (scale * radius < 2.5) {
        p->setRenderHint(QPainter::Antialiasing, false);
        p->drawRect(r);
        p->setRenderHint(QPainter::Antialiasing, true);
    } else {
        p->drawRoundedRect(r, radius, radius);
    }
}

QColor readableOn(const QColor& bg)
{
    const double y = 0.299 * bg.redF() + 0.587 * bg.greenF() + 0.114 * bg.blueF();
    return y > 0.55 ? QColor(0x20, 0x20, 0x20) : QColor(Qt::white);
}
}  // namespace

const QFont& canvasFont(int pixelSize, bool bold)
{
    static std::map<int, QFont> fonts;
    const int key = pixelSize * 2 + (bold ? 1 : 0);
    auto it = fonts.find(key);
    if (it == fonts.end()) {
        QFont f;
        f.setPixelSize(pixelSize);
        f.setBold(bold);
        f.setHintingPreference(QFont::PreferNoHinting);
        it = fonts.emplace(key, f).first;
    }
    return it->second;
}

// --- CachedText ---------------------------------------------------------------------------------

void CachedText::set(const QString& text, const QFont& font)
{
    if (text == m_text && font == m_font)
        return;
    m_text = text;
    m_font = font;
    m_static.setText(text);
    m_static.setTextFormat(Qt::PlainText);
    m_static.setPerformanceHint(QStaticText::AggressiveCaching);
    m_static.prepare(QTransform(), font);
    m_size = m_static.size();
}

void CachedText::draw(QPainter* p, const QRectF& r, Qt::Alignment align) const
{
    if (m_text.isEmpty())
        return;
    double x = r.left();
    if (align & Qt::AlignHCenter)
        x = r.center().x() - m_size.width() / 2;
    else if (align & Qt::AlignRight)
        x = r.right() - m_size.width();
    double y = r.top();
    if (align & Qt::AlignVCenter)
        y = r.center().y() - m_size.height() / 2;
    else if (align & Qt::AlignBottom)
        y = r.bottom() - m_size.height();
    p->setFont(m_font);
    p->drawStaticText(QPointF(x, y), m_static);
}

// --- GpuItem ------------------------------------------------------------------------------------

GpuItem::GpuItem(int g, const QRectF& r) : gpu(g), rect(r)
{
    setZValue(2);
    setAcceptedMouseButtons(Qt::NoButton);
}

QRectF GpuItem::boundingRect() const { return rect.adjusted(-2, -2, 2, 2); }

void GpuItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*)
{
    QPen pen(QColor(0x7a, 0x84, 0x90), 0.8);
    if (straggler)
        pen = QPen(QColor(0xd0, 0x10, 0x10), 2.4);
    if (selected)
        pen = QPen(QColor(0x1e, 0x64, 0xd8), 2.4);
    if (dropTarget)
        pen = QPen(QColor(0x10, 0x90, 0x40), 2.4, Qt::DashLine);
    p->setPen(pen);
    p->setBrush(fill);
    const double scale = lod(p);
    fillBox(p, rect, 3, scale);
    if (straggler && selected) {  // keep the straggler visible under the selection
        p->setPen(QPen(QColor(0xd0, 0x10, 0x10), 1.2));
        p->setBrush(Qt::NoBrush);
        p->drawRoundedRect(rect.adjusted(2, 2, -2, -2), 2, 2);
    }
    if (scale * 8 < kMinTextPixels)
        return;
    const QRectF header(rect.left() + 3, rect.top() + 1, rect.width() - 6, 10);
    p->setPen(QColor(0x22, 0x2a, 0x33));
    label.draw(p, header, Qt::AlignLeft | Qt::AlignVCenter);
    if (!right.text().isEmpty()) {
        p->setPen(QColor(0xb0, 0x10, 0x10));
        right.draw(p, header, Qt::AlignRight | Qt::AlignVCenter);
    }
}

void GpuItem::setLabel(const QString& text) { label.set(text, canvasFont(8, true)); }

void GpuItem::setNote(const QString& n, bool strag)
{
    note = n;
    straggler = strag;
    // The header holds "GPU 17" and, right-aligned, the speed and "straggler"; narrow GPUs (few
    // chips) get the short forms so that the two never overlap.
    const double room = rect.width() - 6 - label.width() - 6;
    QStringList candidates;
    if (straggler) {
        candidates << (note.isEmpty() ? QStringLiteral("straggler") : note + QStringLiteral(" straggler"))
                   << (note.isEmpty() ? QStringLiteral("⚑ slowest") : note + QStringLiteral(" ⚑")) << QStringLiteral("⚑");
    } else {
        candidates << note;
    }
    for (const QString& c : candidates) {
        right.set(c, canvasFont(8, true));
        if (right.width() <= room)
            break;
    }
}

// --- ChipItem -----------------------------------------------------------------------------------

ChipItem::ChipItem(int g, int e, int s, const QRectF& r, QGraphicsItem* parent)
    : QGraphicsItem(parent), gpu(g), expert(e), slot(s), rect(r)
{
    text.set(QString::number(e), canvasFont(9, true));
    setZValue(3);
    setAcceptedMouseButtons(Qt::NoButton);
}

QRectF ChipItem::boundingRect() const { return rect; }

void ChipItem::setFill(const QColor& c)
{
    if (c == fill)
        return;
    fill = c;
    textColor = readableOn(c);
    update();
}

void ChipItem::setExpert(int e)
{
    expert = e;
    text.set(QString::number(e), canvasFont(9, true));
    update();
}

void ChipItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*)
{
    const double scale = lod(p);
    p->setPen(Qt::NoPen);
    p->setBrush(fill);
    fillBox(p, rect, 2, scale);
    // Replicas: a white corner notch, a quarter of the chip's side at most, and the number moved
    // off it (on a rack's narrow chips it covered the last digit: "200" read "20b").
    const double notch = std::min(6.0, 0.25 * std::min(rect.width(), rect.height()));
    if (replica) {
        QPolygonF tri;
        tri << QPointF(rect.right() - notch, rect.top()) << rect.topRight() << QPointF(rect.right(), rect.top() + notch);
        p->setBrush(Qt::white);
        p->setPen(QPen(QColor(0x30, 0x30, 0x30), 0.4));
        p->drawPolygon(tri);
    }
    if (scale * 9 < kMinTextPixels)
        return;
    p->setPen(textColor);
    text.draw(p, replica ? rect.adjusted(0, 0, -0.6 * notch, 0) : rect, Qt::AlignCenter);
}

// --- BoxItem ------------------------------------------------------------------------------------

BoxItem::BoxItem(Kind k, int n, const QRectF& r, const QString& l) : kind(k), node(n), rect(r)
{
    const int px = kind == Frame ? 9 : (kind == Cpu ? 7 : 8);
    label.set(l, canvasFont(px, kind == Frame));
    setAcceptedMouseButtons(Qt::NoButton);
    switch (kind) {
    case Switch: fill = QColor(0x5b, 0x6b, 0x7d); border = QColor(0x3d, 0x4a, 0x58); setZValue(2); break;
    case Nic: fill = QColor(0xc9, 0xb0, 0x7a); border = QColor(0x8a, 0x74, 0x45); setZValue(2); break;
    case Cpu: fill = QColor(0xd9, 0xe4, 0xd2); border = QColor(0x8d, 0xa3, 0x82); setZValue(2); break;
    case Leaf:
    case Spine: fill = QColor(0x4a, 0x5a, 0x78); border = QColor(0x2c, 0x37, 0x4b); setZValue(2); break;
    case Frame: fill = QColor(0xf6, 0xf7, 0xf9); border = QColor(0xc8, 0xcd, 0xd4); setZValue(0); break;
    }
}

QRectF BoxItem::boundingRect() const { return rect.adjusted(-1, -1, 1, 1); }

void BoxItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*)
{
    const double scale = lod(p);
    p->setPen(QPen(border, kind == Frame ? 0.8 : 0.6));
    p->setBrush(fill);
    fillBox(p, rect, kind == Frame ? 0 : 2, scale);
    if (accent.isValid()) {
        p->setPen(Qt::NoPen);
        p->setBrush(accent);
        const double h = std::min(3.0, rect.height() / 4);
        p->drawRect(QRectF(rect.left() + 1, rect.bottom() - h - 0.5, rect.width() - 2, h));
    }
    if (label.text().isEmpty())
        return;
    const int px = kind == Frame ? 9 : (kind == Cpu ? 7 : 8);
    // Too small on screen, or a box lower than its text (the NVL72 switch chips' thin bands):
    // no label, the tooltip names it.
    if (scale * px < kMinTextPixels || (kind != Frame && rect.height() < px))
        return;
    if (kind == Frame) {
        p->setPen(QColor(0x50, 0x5a, 0x66));
        label.draw(p, rect.adjusted(3, 1, -3, -1), Qt::AlignLeft | Qt::AlignTop);
    } else {
        p->setPen(kind == Cpu || kind == Nic ? QColor(0x30, 0x30, 0x30) : QColor(Qt::white));
        label.draw(p, rect, Qt::AlignCenter);
    }
}

// --- LinkItem -----------------------------------------------------------------------------------

LinkItem::LinkItem(Kind k, int a, int b, const QPainterPath& path) : QGraphicsPathItem(path), kind(k), nodeA(a), nodeB(b)
{
    setZValue(1);
    setAcceptedMouseButtons(Qt::NoButton);
    setBrush(Qt::NoBrush);
    setUtilisation(0, QColor(0xb8, 0xbf, 0xc8), true);
}

void LinkItem::paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*)
{
    // Idle links are hairlines: aliased, they cost nothing and look the same.
    p->setRenderHint(QPainter::Antialiasing, !idle);
    p->setPen(pen());
    p->setBrush(Qt::NoBrush);
    p->drawPath(path());
    p->setRenderHint(QPainter::Antialiasing, true);
}

void LinkItem::setUtilisation(double util, const QColor& colour, bool isIdle)
{
    idle = isIdle;
    // GPU lanes run 2.4 units apart: thinner, so that neighbouring lanes stay apart.
    const double base = kind == GpuNvlink ? 0.6 : 0.8;
    const double gain = kind == GpuNvlink ? 1.5 : 2.2;
    QPen pen(idle ? QColor(0xc4, 0xca, 0xd2) : colour, idle ? 0 : base + gain * std::clamp(util, 0.0, 1.0));
    pen.setCapStyle(Qt::FlatCap);
    pen.setJoinStyle(Qt::MiterJoin);
    if (pen != this->pen())
        setPen(pen);
}

}  // namespace moex::views
