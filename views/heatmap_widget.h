// HeatmapWidget: one reusable heatmap — a rows x cols matrix drawn through a ColorMap, with axis
// labels, a colour legend (min .. max with ticks), the hovered cell's value as a tooltip and in
// hoverText(), click to select a row/column (emits cellClicked), optional column sort by value.
// Used for expert load (layer x expert), GPU x GPU traffic, and per-GPU latency over steps.
#pragma once

#include "color_map.h"

#include <QImage>
#include <QPainter>
#include <QWidget>

#include <vector>

namespace moex::views {

class HeatmapWidget : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapWidget(QWidget* parent = nullptr);

    // values: row-major, rows * cols. Labels may be empty (indices are shown then).
    void setMatrix(int rows, int cols, std::vector<double> values, QStringList rowLabels = {},
                   QStringList colLabels = {});
    void setTitle(const QString& title);
    void setAxisTitles(const QString& rows, const QString& cols);
    void setUnit(const QString& unit);                 // shown in the legend and tooltips
    void setColorMap(const ColorMap& map);
    // Fixed value range for the colours; by default the range is the matrix's min..max.
    void setRange(double lo, double hi);
    void clearRange();
    // Sort columns by their column sum, descending (e.g. experts by load).
    void setSortColumns(bool sorted);
    // Highlight a row and/or a column (-1: none), e.g. the selected GPU.
    void setHighlight(int row, int col);

    [[nodiscard]] int rows() const;
    [[nodiscard]] int cols() const;
    [[nodiscard]] double value(int row, int col) const;
    // The rectangle of a cell in widget coordinates (after sorting), for tests and tooltips.
    [[nodiscard]] QRectF cellRect(int row, int col) const;
    [[nodiscard]] QColor colorOf(double value) const;
    // "row r, col c: value unit" for the hovered cell (empty when none).
    [[nodiscard]] QString hoverText() const;
    [[nodiscard]] QString cellText(int row, int col) const;
    // Display position of a data column (the identity unless sorted).
    [[nodiscard]] int displayColumn(int col) const;
    // The title as painted at the widget's width: ends in "…" where the whole one does not fit.
    [[nodiscard]] QString shownTitle() const;
    // Where the colour legend paints: its bar, the min / mid / max labels, the unit above (empty
    // without one). For tests: no two of the labels overlap, at any font.
    struct LegendLayout {
        QRectF bar;
        QRectF ticks[3];  // min, mid, max
        QRectF unit;
    };
    [[nodiscard]] LegendLayout legendLayout() const;

signals:
    void cellClicked(int row, int col);  // data indices (not display order)
    void cellHovered(int row, int col, double value);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

private:
    void rebuildImage();
    void updateRange();
    [[nodiscard]] QRectF plotRect() const;
    [[nodiscard]] bool cellAt(QPointF pos, int& row, int& col) const;
    [[nodiscard]] QString rowLabel(int row) const;
    [[nodiscard]] QString colLabel(int col) const;
    [[nodiscard]] int rowLabelWidth() const;
    [[nodiscard]] int colLabelHeight() const;
    [[nodiscard]] int titleHeight() const;      // the title's band: its bold line and a margin
    [[nodiscard]] int axisTitleHeight() const;  // an axis title's line
    [[nodiscard]] bool colLabelsVertical() const;
    void paintAxes(QPainter& p, const QRectF& plot) const;
    void paintLegend(QPainter& p) const;
    [[nodiscard]] int legendWidth() const;

    int m_rows = 0;
    int m_cols = 0;
    std::vector<double> m_values;
    QStringList m_rowLabels;
    QStringList m_colLabels;
    QString m_title;
    QString m_rowTitle;
    QString m_colTitle;
    QString m_unit;
    ColorMap m_map = ColorMap::viridis();
    bool m_fixedRange = false;
    double m_lo = 0;
    double m_hi = 1;
    bool m_sorted = false;
    std::vector<int> m_order;  // display column -> data column
    std::vector<int> m_rank;   // data column -> display column
    int m_hlRow = -1;
    int m_hlCol = -1;
    int m_hoverRow = -1;
    int m_hoverCol = -1;
    QImage m_image;  // one pixel per cell, display order
    // Widest row / column label in pixels, measured once per matrix and font.
    mutable int m_rowLabelW = 0;
    mutable int m_colLabelW = 0;
    mutable QFont m_measuredFont;
    mutable bool m_measured = false;
    void measureLabels() const;
};

}  // namespace moex::views
