// HeatmapWidget: the matrix becomes a QImage with one pixel per cell (rebuilt only when the data,
// range, map or order change) that paintEvent scales into the plot area without smoothing.
#include "views/heatmap_widget.h"

#include <QMouseEvent>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace moex::views {

namespace {
constexpr int kMargin = 6;
constexpr int kLegendWidth = 74;   // bar + tick labels, at least (legendWidth(): at the widget's font)
constexpr int kLegendBar = 12;
constexpr int kTitleHeight = 20;  // at least: more where the font is larger (presentation mode)
constexpr int kAxisTitle = 16;

QString formatValue(double v)
{
    const double a = std::abs(v);
    if (a == 0)
        return QStringLiteral("0");
    if (a >= 1e9)
        return QString::number(v / 1e9, 'f', 2) + QStringLiteral("G");
    if (a >= 1e6)
        return QString::number(v / 1e6, 'f', 2) + QStringLiteral("M");
    if (a >= 1e4)
        return QString::number(v / 1e3, 'f', 1) + QStringLiteral("k");
    if (a >= 100 || std::floor(v) == v)
        return QString::number(v, 'f', 0);
    if (a >= 1)
        return QString::number(v, 'f', 2);
    return QString::number(v, 'g', 3);
}
}  // namespace

HeatmapWidget::HeatmapWidget(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void HeatmapWidget::setMatrix(int rows, int cols, std::vector<double> values, QStringList rowLabels,
                              QStringList colLabels)
{
    rows = std::max(rows, 0);
    cols = std::max(cols, 0);
    values.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols), 0.0);
    m_rows = rows;
    m_cols = cols;
    m_values = std::move(values);
    m_rowLabels = std::move(rowLabels);
    m_colLabels = std::move(colLabels);
    m_hoverRow = m_hoverCol = -1;
    m_measured = false;
    updateRange();
    rebuildImage();
}

void HeatmapWidget::measureLabels() const
{
    if (m_measured && m_measuredFont == font())
        return;
    m_measured = true;
    m_measuredFont = font();
    const QFontMetrics fm(font());
    m_rowLabelW = 0;
    m_colLabelW = 0;
    for (int r = 0; r < std::min(m_rows, 512); ++r)
        m_rowLabelW = std::max(m_rowLabelW, fm.horizontalAdvance(rowLabel(r)));
    for (int c = 0; c < std::min(m_cols, 512); ++c)
        m_colLabelW = std::max(m_colLabelW, fm.horizontalAdvance(colLabel(c)));
}

void HeatmapWidget::setTitle(const QString& title)
{
    m_title = title;
    update();
}

void HeatmapWidget::setAxisTitles(const QString& rows, const QString& cols)
{
    m_rowTitle = rows;
    m_colTitle = cols;
    update();
}

void HeatmapWidget::setUnit(const QString& unit)
{
    m_unit = unit;
    update();
}

void HeatmapWidget::setColorMap(const ColorMap& map)
{
    m_map = map;
    rebuildImage();
}

void HeatmapWidget::setRange(double lo, double hi)
{
    m_fixedRange = true;
    m_lo = lo;
    m_hi = hi;
    rebuildImage();
}

void HeatmapWidget::clearRange()
{
    m_fixedRange = false;
    updateRange();
    rebuildImage();
}

void HeatmapWidget::setSortColumns(bool sorted)
{
    m_sorted = sorted;
    rebuildImage();
}

void HeatmapWidget::setHighlight(int row, int col)
{
    m_hlRow = row;
    m_hlCol = col;
    update();
}

int HeatmapWidget::rows() const { return m_rows; }
int HeatmapWidget::cols() const { return m_cols; }

double HeatmapWidget::value(int row, int col) const
{
    if (row < 0 || col < 0 || row >= m_rows || col >= m_cols)
        return 0.0;
    return m_values[static_cast<std::size_t>(row) * static_cast<std::size_t>(m_cols) + static_cast<std::size_t>(col)];
}

QColor HeatmapWidget::colorOf(double value) const { return m_map.map(value, m_lo, m_hi); }

int HeatmapWidget::displayColumn(int col) const
{
    if (col < 0 || col >= static_cast<int>(m_rank.size()))
        return col;
    return m_rank[static_cast<std::size_t>(col)];
}

void HeatmapWidget::updateRange()
{
    if (m_fixedRange)
        return;
    if (m_values.empty()) {
        m_lo = 0;
        m_hi = 1;
        return;
    }
    const auto [mn, mx] = std::minmax_element(m_values.begin(), m_values.end());
    m_lo = *mn;
    m_hi = *mx;
}

void HeatmapWidget::rebuildImage()
{
    m_order.resize(static_cast<std::size_t>(m_cols));
    std::iota(m_order.begin(), m_order.end(), 0);
    if (m_sorted) {
        std::vector<double> sums(static_cast<std::size_t>(m_cols), 0.0);
        for (int r = 0; r < m_rows; ++r)
            for (int c = 0; c < m_cols; ++c)
                sums[static_cast<std::size_t>(c)] += value(r, c);
        std::stable_sort(m_order.begin(), m_order.end(), [&](int a, int b) {
            return sums[static_cast<std::size_t>(a)] > sums[static_cast<std::size_t>(b)];
        });
    }
    m_rank.assign(static_cast<std::size_t>(m_cols), 0);
    for (int d = 0; d < m_cols; ++d)
        m_rank[static_cast<std::size_t>(m_order[static_cast<std::size_t>(d)])] = d;

    if (m_rows == 0 || m_cols == 0) {
        m_image = QImage();
    } else {
        m_image = QImage(m_cols, m_rows, QImage::Format_RGB32);
        for (int r = 0; r < m_rows; ++r) {
            auto* line = reinterpret_cast<QRgb*>(m_image.scanLine(r));
            for (int d = 0; d < m_cols; ++d)
                line[d] = colorOf(value(r, m_order[static_cast<std::size_t>(d)])).rgb();
        }
    }
    update();
}

QString HeatmapWidget::rowLabel(int row) const
{
    return row < m_rowLabels.size() ? m_rowLabels[row] : QString::number(row);
}

QString HeatmapWidget::colLabel(int col) const
{
    return col < m_colLabels.size() ? m_colLabels[col] : QString::number(col);
}

int HeatmapWidget::rowLabelWidth() const
{
    measureLabels();
    return std::min(m_rowLabelW, 110) + 4;
}

bool HeatmapWidget::colLabelsVertical() const
{
    if (m_cols == 0)
        return false;
    measureLabels();
    const int w = m_colLabelW;
    const double cellW = double(width() - rowLabelWidth() - legendWidth() - axisTitleHeight() - 3 * kMargin) / m_cols;
    return w + 4 > cellW;
}

int HeatmapWidget::colLabelHeight() const
{
    const QFontMetrics fm(font());
    if (!colLabelsVertical())
        return fm.height() + 2;
    return std::min(m_colLabelW, 90) + 4;
}

int HeatmapWidget::titleHeight() const
{
    QFont bold = font();
    bold.setBold(true);
    return std::max(kTitleHeight, QFontMetrics(bold).height() + 4);
}

QString HeatmapWidget::shownTitle() const
{
    // A title wider than the widget (a narrow dock, presentation mode) ends in "…", never cut.
    QFont bold = font();
    bold.setBold(true);
    return QFontMetrics(bold).elidedText(m_title, Qt::ElideRight, width() - 2 * kMargin);
}

int HeatmapWidget::axisTitleHeight() const { return std::max(kAxisTitle, fontMetrics().height() + 2); }

QRectF HeatmapWidget::plotRect() const
{
    const double left = kMargin + axisTitleHeight() + rowLabelWidth();
    const double top = kMargin + (m_title.isEmpty() ? 0 : titleHeight());
    const double right = width() - kMargin - legendWidth();
    double bottom = height() - kMargin - colLabelHeight() - (m_colTitle.isEmpty() ? 0 : axisTitleHeight());
    // Rows at most 48 px tall, the plot at least 120 px, which its colour bar and row title need
    // (the engine's one layer filled the dock as one row of 400 px bars; now one of 120).
    constexpr double kMaxRowHeight = 48, kMinPlotHeight = 120;
    if (m_rows > 0)
        bottom = std::min(bottom, top + std::max(kMinPlotHeight, kMaxRowHeight * m_rows));
    return QRectF(QPointF(left, top), QPointF(std::max(left + 1, right), std::max(top + 1, bottom)));
}

QRectF HeatmapWidget::cellRect(int row, int col) const
{
    if (row < 0 || col < 0 || row >= m_rows || col >= m_cols)
        return {};
    const QRectF plot = plotRect();
    const double cw = plot.width() / m_cols;
    const double ch = plot.height() / m_rows;
    return QRectF(plot.left() + displayColumn(col) * cw, plot.top() + row * ch, cw, ch);
}

bool HeatmapWidget::cellAt(QPointF pos, int& row, int& col) const
{
    const QRectF plot = plotRect();
    if (m_rows == 0 || m_cols == 0 || !plot.contains(pos))
        return false;
    row = std::clamp(static_cast<int>((pos.y() - plot.top()) / plot.height() * m_rows), 0, m_rows - 1);
    const int d = std::clamp(static_cast<int>((pos.x() - plot.left()) / plot.width() * m_cols), 0, m_cols - 1);
    col = m_order[static_cast<std::size_t>(d)];
    return true;
}

QString HeatmapWidget::cellText(int row, int col) const
{
    QString text = (m_rowTitle.isEmpty() ? QStringLiteral("row") : m_rowTitle) + QLatin1Char(' ') + rowLabel(row)
                   + QStringLiteral(", ") + (m_colTitle.isEmpty() ? QStringLiteral("col") : m_colTitle)
                   + QLatin1Char(' ') + colLabel(col) + QStringLiteral(": ") + formatValue(value(row, col));
    if (!m_unit.isEmpty())
        text += QLatin1Char(' ') + m_unit;
    return text;
}

QString HeatmapWidget::hoverText() const
{
    if (m_hoverRow < 0 || m_hoverCol < 0)
        return {};
    return cellText(m_hoverRow, m_hoverCol);
}

void HeatmapWidget::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    const QRectF plot = plotRect();
    if (!m_title.isEmpty()) {
        QFont f = font();
        f.setBold(true);
        p.setFont(f);
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRectF(kMargin, kMargin, width() - 2 * kMargin, titleHeight()), Qt::AlignLeft | Qt::AlignVCenter,
                   shownTitle());
        p.setFont(font());
    }
    if (m_image.isNull()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(plot, Qt::AlignCenter, tr("no data"));
        return;
    }
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.drawImage(plot, m_image);
    paintAxes(p, plot);
    paintLegend(p);

    p.setBrush(Qt::NoBrush);
    QPen hl(palette().color(QPalette::Text), 2);
    p.setPen(hl);
    if (m_hlRow >= 0 && m_hlRow < m_rows)
        p.drawRect(QRectF(plot.left(), cellRect(m_hlRow, 0).top(), plot.width(), plot.height() / m_rows));
    if (m_hlCol >= 0 && m_hlCol < m_cols)
        p.drawRect(QRectF(cellRect(0, m_hlCol).left(), plot.top(), plot.width() / m_cols, plot.height()));
    if (m_hoverRow >= 0 && m_hoverCol >= 0) {
        p.setPen(QPen(Qt::white, 1));
        p.drawRect(cellRect(m_hoverRow, m_hoverCol));
    }
}

void HeatmapWidget::paintAxes(QPainter& p, const QRectF& plot) const
{
    const QFontMetrics fm(font());
    p.setPen(palette().color(QPalette::Text));
    // Rows: label every k-th row so that labels never overlap.
    const double ch = plot.height() / m_rows;
    const int rowStep = std::max(1, static_cast<int>(std::ceil((fm.height() + 1) / ch)));
    const double lw = rowLabelWidth();
    for (int r = 0; r < m_rows; r += rowStep)
        p.drawText(QRectF(plot.left() - lw - 2, plot.top() + (r + 0.5) * ch - fm.height() / 2.0, lw, fm.height()),
                   Qt::AlignRight | Qt::AlignVCenter, fm.elidedText(rowLabel(r), Qt::ElideRight, static_cast<int>(lw) + 2));
    // Columns (display order), horizontal when they fit, else vertical and thinned.
    const double cw = plot.width() / m_cols;
    const bool vertical = colLabelsVertical();
    const int lh = colLabelHeight();
    if (!vertical) {
        for (int d = 0; d < m_cols; ++d)
            p.drawText(QRectF(plot.left() + d * cw, plot.bottom() + 2, cw, fm.height()), Qt::AlignCenter,
                       colLabel(m_order[static_cast<std::size_t>(d)]));
    } else {
        const int colStep = std::max(1, static_cast<int>(std::ceil((fm.height() + 1) / cw)));
        for (int d = 0; d < m_cols; d += colStep) {
            p.save();
            p.translate(plot.left() + (d + 0.5) * cw, plot.bottom() + 3);
            p.rotate(-90);
            // A little slack: elidedText() at exactly the text's advance may elide it.
            p.drawText(QRectF(-lh, -fm.height() / 2.0, lh - 1, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                       fm.elidedText(colLabel(m_order[static_cast<std::size_t>(d)]), Qt::ElideRight, lh));
            p.restore();
        }
    }
    // Axis titles.
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    const QFontMetrics boldMetrics(bold);
    if (!m_colTitle.isEmpty())
        p.drawText(QRectF(plot.left(), plot.bottom() + lh, plot.width(), axisTitleHeight()), Qt::AlignCenter,
                   boldMetrics.elidedText(m_colTitle + (m_sorted ? tr(" (sorted by total, descending)") : QString()),
                                          Qt::ElideRight, static_cast<int>(plot.width())));
    if (!m_rowTitle.isEmpty()) {
        p.save();
        p.translate(kMargin, plot.center().y());
        p.rotate(-90);
        p.drawText(QRectF(-plot.height() / 2, 0, plot.height(), axisTitleHeight()), Qt::AlignCenter,
                   boldMetrics.elidedText(m_rowTitle, Qt::ElideRight, static_cast<int>(plot.height())));
        p.restore();
    }
    p.setFont(font());
    p.setPen(palette().color(QPalette::Mid));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);
}

int HeatmapWidget::legendWidth() const
{
    // The gap, the bar, the ticks and the widest label formatValue() writes in practice, so that
    // a larger font (presentation mode) widens the legend instead of cutting its labels.
    const QFontMetrics fm(font());
    return std::max(kLegendWidth, 10 + kLegendBar + 5 + fm.horizontalAdvance(QStringLiteral("-888.8k")) + 4);
}

HeatmapWidget::LegendLayout HeatmapWidget::legendLayout() const
{
    // The unit's line starts 2 px above the cells, the top value's line is centred on the bar's
    // top: the bar starts 1.5 lines below the cells' top so the two lines never meet.
    const QRectF plot = plotRect();
    const QFontMetrics fm(font());
    const double h = fm.height();
    LegendLayout l;
    l.bar = QRectF(plot.right() + 10, plot.top() + 1.5 * h, kLegendBar, std::max(20.0, plot.height() - 2 * h));
    const double labelWidth = legendWidth() - 10 - kLegendBar - 5;
    for (int i = 0; i < 3; ++i) {
        const double y = l.bar.bottom() - l.bar.height() * i / 2.0;
        l.ticks[i] = QRectF(l.bar.right() + 5, y - h / 2.0, labelWidth, h);
    }
    if (!m_unit.isEmpty())
        l.unit = QRectF(l.bar.left() - 8, plot.top() - 2, std::min<double>(fm.horizontalAdvance(m_unit), legendWidth() - 4), h);
    return l;
}

void HeatmapWidget::paintLegend(QPainter& p) const
{
    const QFontMetrics fm(font());
    const LegendLayout l = legendLayout();
    const QRectF& bar = l.bar;
    QLinearGradient g(bar.bottomLeft(), bar.topLeft());
    const auto& stops = m_map.stops();
    for (std::size_t i = 0; i < stops.size(); ++i)
        g.setColorAt(stops.size() > 1 ? double(i) / double(stops.size() - 1) : 0.0, stops[i]);
    p.fillRect(bar, g);
    p.setPen(palette().color(QPalette::Mid));
    p.drawRect(bar);
    p.setPen(palette().color(QPalette::Text));
    const double vals[3] = {m_lo, (m_lo + m_hi) / 2, m_hi};
    for (int i = 0; i < 3; ++i) {
        const double y = l.ticks[i].center().y();
        p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 3, y));
        p.drawText(l.ticks[i], Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(formatValue(vals[i]), Qt::ElideRight, static_cast<int>(l.ticks[i].width()) + 1));
    }
    if (!l.unit.isEmpty())
        p.drawText(l.unit, Qt::AlignLeft | Qt::AlignTop,
                   fm.elidedText(m_unit, Qt::ElideRight, static_cast<int>(l.unit.width()) + 1));
}

void HeatmapWidget::mouseMoveEvent(QMouseEvent* event)
{
    int r = -1;
    int c = -1;
    if (!cellAt(event->position(), r, c)) {
        if (m_hoverRow >= 0) {
            m_hoverRow = m_hoverCol = -1;
            QToolTip::hideText();
            update();
        }
        return;
    }
    if (r != m_hoverRow || c != m_hoverCol) {
        m_hoverRow = r;
        m_hoverCol = c;
        update();
        emit cellHovered(r, c, value(r, c));
    }
    QToolTip::showText(event->globalPosition().toPoint(), hoverText(), this);
}

void HeatmapWidget::mousePressEvent(QMouseEvent* event)
{
    int r = -1;
    int c = -1;
    if (event->button() == Qt::LeftButton && cellAt(event->position(), r, c))
        emit cellClicked(r, c);
}

void HeatmapWidget::leaveEvent(QEvent*)
{
    m_hoverRow = m_hoverCol = -1;
    update();
}

QSize HeatmapWidget::sizeHint() const { return {520, 320}; }
QSize HeatmapWidget::minimumSizeHint() const { return {200, 120}; }

}  // namespace moex::views
