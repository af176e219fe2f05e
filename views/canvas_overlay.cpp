#include "views/canvas_overlay.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

namespace moex::views {

namespace {
constexpr int kPad = 8;
constexpr int kBarW = 130;
constexpr int kBarH = 9;
constexpr int kRowH = 34;
constexpr int kMarkersH = 34;
}  // namespace

QString formatQuantity(double v)
{
    const double a = std::abs(v);
    if (a >= 1e9)
        return QString::number(v / 1e9, 'f', 1) + QStringLiteral("G");
    if (a >= 1e6)
        return QString::number(v / 1e6, 'f', 1) + QStringLiteral("M");
    if (a >= 1e4)
        return QString::number(v / 1e3, 'f', 1) + QStringLiteral("k");
    if (a >= 100 || std::floor(v) == v)
        return QString::number(v, 'f', 0);
    return QString::number(v, 'f', 1);
}

QString formatRange(double lo, double hi)
{
    const double big = std::max(std::abs(lo), std::abs(hi));
    if (big < 1e4 && std::floor(lo) == lo && std::floor(hi) == hi)
        return formatQuantity(lo) + QStringLiteral(" – ") + formatQuantity(hi);
    // Both ends in one unit (k, M, G as formatQuantity's) with the same decimals, as many more
    // (up to 3) as two different values need ("22.8 – 22.8", "15.4k – 15.4k").
    const double scale = big >= 1e9 ? 1e9 : big >= 1e6 ? 1e6 : big >= 1e4 ? 1e3 : 1.0;
    const QString suffix = big >= 1e9 ? QStringLiteral("G") : big >= 1e6 ? QStringLiteral("M") : big >= 1e4 ? QStringLiteral("k") : QString();
    int decimals = big >= 100 && big < 1e4 ? 0 : 1;
    while (decimals < 3 && lo != hi && QString::number(lo / scale, 'f', decimals) == QString::number(hi / scale, 'f', decimals))
        ++decimals;
    const auto one = [&](double v) {
        return scale > 1 && std::abs(v) < 1e4 ? formatQuantity(v) : QString::number(v / scale, 'f', decimals) + suffix;
    };
    return one(lo) + QStringLiteral(" – ") + one(hi);
}

CanvasLegend::CanvasLegend(QWidget* parent) : QWidget(parent)
{
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setAttribute(Qt::WA_NoSystemBackground);
}

QString CanvasLegend::titleText(const LegendScale& s)
{
    return s.title + (s.unit.isEmpty() ? QString() : QStringLiteral(" (") + s.unit + QLatin1Char(')'));
}

QString CanvasLegend::rangeText(const LegendScale& s)
{
    if (!s.valid)
        return tr("no data");
    return formatRange(s.lo, s.hi);
}

QString CanvasLegend::plainText() const
{
    QString text = m_heading;
    for (const LegendScale& s : m_scales)
        text += QLatin1Char('\n') + titleText(s) + QStringLiteral(": ") + rangeText(s)
                + (s.valid && !s.note.isEmpty() ? QStringLiteral(" (") + s.note + QLatin1Char(')') : QString());
    return text;
}

void CanvasLegend::setUnitNoun(const QString& noun)
{
    if (noun == m_unitNoun)
        return;
    m_unitNoun = noun;
    update();
}

void CanvasLegend::setHeading(const QString& heading)
{
    m_heading = heading;
    resize(sizeHint());
    update();
}

void CanvasLegend::setScales(std::vector<LegendScale> scales)
{
    m_scales = std::move(scales);
    resize(sizeHint());
    update();
}

void CanvasLegend::setScale(double scale)
{
    m_scale = std::clamp(scale, 0.5, 4.0);
    if (std::abs(m_scale - scale) < 1e-9 && size() == sizeHint())
        return;
    resize(sizeHint());
    update();
}

QSize CanvasLegend::naturalSize() const
{
    const int w = kBarW + 2 * kPad + 118;
    const int lines = static_cast<int>(m_heading.count(QLatin1Char('\n'))) + 1;
    return {w, kPad * 2 + 16 * lines + 4 + static_cast<int>(m_scales.size()) * kRowH + kMarkersH};
}

QSize CanvasLegend::sizeHint() const
{
    const QSize n = naturalSize();
    return {static_cast<int>(std::ceil(n.width() * m_scale)), static_cast<int>(std::ceil(n.height() * m_scale))};
}

void CanvasLegend::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.scale(m_scale, m_scale);  // laid out at scale 1, drawn at the presentation scale
    const QSize logical(static_cast<int>(width() / m_scale), static_cast<int>(height() / m_scale));
    p.setPen(QColor(0xc8, 0xcd, 0xd4));
    p.setBrush(QColor(255, 255, 255, 235));
    p.drawRoundedRect(QRectF(QPoint(0, 0), logical).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5);
    QFont f = font();
    f.setPixelSize(11);
    QFont bold = f;
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(QColor(0x22, 0x2a, 0x33));
    const QFontMetrics fm(bold);
    int y = kPad;
    for (const QString& line : m_heading.split(QLatin1Char('\n'))) {
        p.drawText(QRect(kPad, y, logical.width() - 2 * kPad, 16), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(line, Qt::ElideRight, logical.width() - 2 * kPad));
        y += 16;
        p.setFont(f);
    }
    y += 4;
    for (const LegendScale& s : m_scales) {
        p.setFont(f);
        p.setPen(QColor(0x33, 0x3a, 0x44));
        p.drawText(QRect(kPad, y, logical.width() - 2 * kPad, 13), Qt::AlignLeft | Qt::AlignVCenter,
                   titleText(s) + (s.valid && !s.note.isEmpty() ? QStringLiteral(", ") + s.note : QString()));
        const QRectF bar(kPad, y + 15, kBarW, kBarH);
        QLinearGradient g(bar.topLeft(), bar.topRight());
        const auto& stops = s.map.stops();
        for (std::size_t i = 0; i < stops.size(); ++i)
            g.setColorAt(stops.size() > 1 ? double(i) / double(stops.size() - 1) : 0.0, stops[i]);
        p.setPen(QColor(0x99, 0x99, 0x99));
        p.setBrush(s.valid ? QBrush(g) : QBrush(QColor(0xdd, 0xdd, 0xdd)));
        p.drawRect(bar);
        if (s.valid && s.mapHi > s.hi && s.hi > s.lo) {  // the part of the map no value reaches, paler
            const double used = (s.hi - s.lo) / (s.mapHi - s.lo);
            p.setPen(Qt::NoPen);
            p.setBrush(QColor(255, 255, 255, 190));
            p.drawRect(QRectF(bar.left() + used * bar.width(), bar.top(), bar.width() * (1 - used), bar.height()));
            p.setPen(QColor(0x33, 0x3a, 0x44));
            p.drawLine(QPointF(bar.left() + used * bar.width(), bar.top() - 2), QPointF(bar.left() + used * bar.width(), bar.bottom() + 2));
        }
        p.setPen(QColor(0x33, 0x3a, 0x44));
        const QString range = rangeText(s);
        p.drawText(QRectF(bar.right() + 6, bar.top() - 3, logical.width() - bar.right() - 6 - kPad, kBarH + 6),
                   Qt::AlignLeft | Qt::AlignVCenter, range);
        y += kRowH;
    }
    // Marker key: straggler outline, selection, replica notch.
    p.setFont(f);
    const QColor text(0x33, 0x3a, 0x44);
    // A GPU swatch with a coloured outline, and its label.
    auto outlinedKey = [&](const QRectF& r, const QColor& outline, qreal labelWidth, const QString& label) {
        p.setBrush(QColor(0xee, 0xf0, 0xf3));
        p.setPen(QPen(outline, 2));
        p.drawRoundedRect(r, 2, 2);
        p.setPen(text);
        p.drawText(QRectF(r.right() + 5, r.top() - 2, labelWidth, 14), Qt::AlignLeft | Qt::AlignVCenter, label);
    };
    outlinedKey(QRectF(kPad, y + 2, 16, 10), QColor(0xd0, 0x10, 0x10), logical.width() - 2 * kPad - 21,
                tr("straggler \u2691: the busiest %1 of the step").arg(m_unitNoun));
    const QRectF b(kPad + 120, y + 18, 16, 10);
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(0x3b, 0x52, 0x8b));
    p.drawRoundedRect(b, 2, 2);
    QPolygonF tri;
    tri << QPointF(b.right() - 6, b.top()) << b.topRight() << QPointF(b.right(), b.top() + 6);
    p.setBrush(Qt::white);
    p.drawPolygon(tri);
    p.setPen(text);
    p.drawText(QRectF(b.right() + 5, b.top() - 2, 70, 14), Qt::AlignLeft | Qt::AlignVCenter, tr("replica"));
    outlinedKey(QRectF(kPad, y + 18, 16, 10), QColor(0x1e, 0x64, 0xd8), 90, tr("selected %1").arg(m_unitNoun));
}

CanvasGpuDetail::CanvasGpuDetail(QWidget* parent) : QWidget(parent)
{
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setAttribute(Qt::WA_NoSystemBackground);
    hide();
}

void CanvasGpuDetail::setContent(const QString& title, std::vector<GpuDetailRow> rows, double loadHi, bool hasLoads)
{
    m_title = title;
    m_hidden = 0;
    if (static_cast<int>(rows.size()) > kMaxRows) {
        std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.load > b.load; });
        m_hidden = static_cast<int>(rows.size()) - kMaxRows;
        rows.resize(kMaxRows);
    }
    m_rows = std::move(rows);
    m_hi = loadHi > 0 ? loadHi : 1;
    m_hasLoads = hasLoads;
    resize(sizeHint());
    update();
}

QString CanvasGpuDetail::plainText() const
{
    if (isHidden())
        return {};
    QString out = m_title;
    for (const GpuDetailRow& r : m_rows)
        out += QStringLiteral("\nexpert %1%2: %3").arg(r.expert).arg(r.replica ? QStringLiteral(" (replica)") : QString())
                   .arg(m_hasLoads ? formatQuantity(r.load) : QStringLiteral("\u2013"));
    if (m_hidden > 0)
        out += tr("\n+%1 more").arg(m_hidden);
    return out;
}

QSize CanvasGpuDetail::sizeHint() const
{
    const QFontMetrics fm(font());
    QFont bold = font();
    bold.setBold(true);
    const int line = fm.lineSpacing() + 4;
    const int rows = static_cast<int>(m_rows.size()) + (m_hidden > 0 ? 1 : 0);
    const int w = std::max(QFontMetrics(bold).horizontalAdvance(m_title) + 2 * kPad + 4,
                           kPad * 2 + fm.height() + 6 + fm.horizontalAdvance(QStringLiteral("expert 000 (replica)")) + 12
                               + fm.horizontalAdvance(QStringLiteral("00.0k")) + 8 + 60);
    return {w, kPad * 2 + line * (rows + 1)};
}

void CanvasGpuDetail::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QColor(0xc8, 0xcd, 0xd4));
    p.setBrush(QColor(255, 255, 255, 240));
    p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5);
    const QFontMetrics fm(font());
    const int line = fm.lineSpacing() + 4;
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(QColor(0x22, 0x2a, 0x33));
    int y = kPad;
    p.drawText(QRect(kPad, y, width() - 2 * kPad, line), Qt::AlignLeft | Qt::AlignVCenter, m_title);
    p.setFont(font());
    const int swatch = fm.height();
    const int nameW = fm.horizontalAdvance(QStringLiteral("expert 000 (replica)"));
    const int valueW = fm.horizontalAdvance(QStringLiteral("00.0k"));
    for (const GpuDetailRow& r : m_rows) {
        y += line;
        const int x0 = kPad;
        p.setPen(Qt::NoPen);
        p.setBrush(r.color);
        p.drawRoundedRect(QRectF(x0, y + (line - swatch) / 2.0, swatch, swatch), 2, 2);
        p.setPen(QColor(0x22, 0x2a, 0x33));
        const int xName = x0 + swatch + 6;
        p.drawText(QRect(xName, y, nameW + 6, line), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("expert %1").arg(r.expert) + (r.replica ? tr(" (replica)") : QString()));
        const int xValue = xName + nameW + 12;
        p.drawText(QRect(xValue, y, valueW, line), Qt::AlignRight | Qt::AlignVCenter,
                   m_hasLoads ? formatQuantity(r.load) : QStringLiteral("\u2013"));
        const int xBar = xValue + valueW + 8;
        const int barW = std::max(10, width() - xBar - kPad);
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(0xe3, 0xe7, 0xec));
        p.drawRect(QRectF(xBar, y + line / 2.0 - 3, barW, 6));
        if (m_hasLoads) {
            p.setBrush(QColor(0x3b, 0x52, 0x8b));
            p.drawRect(QRectF(xBar, y + line / 2.0 - 3, barW * std::clamp(r.load / m_hi, 0.0, 1.0), 6));
        }
    }
    if (m_hidden > 0) {
        y += line;
        p.setPen(QColor(0x55, 0x5d, 0x66));
        p.drawText(QRect(kPad, y, width() - 2 * kPad, line), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("+%1 more (the most loaded are shown)").arg(m_hidden));
    }
}

CanvasFeedback::CanvasFeedback(QWidget* parent) : QLabel(parent)
{
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setStyleSheet(QStringLiteral("QLabel { background: rgba(30, 36, 44, 225); color: white; border-radius: 6px;"
                                 " padding: 6px 12px; font-weight: bold; }"));
    setAlignment(Qt::AlignCenter);
    hide();
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &QWidget::hide);
}

void CanvasFeedback::showMessage(const QString& text, int ms)
{
    setText(text);
    adjustSize();
    if (auto* pw = parentWidget())
        move((pw->width() - width()) / 2, 12);
    show();
    raise();
    m_timer.start(ms);
}

}  // namespace moex::views
