// Fixed overlays of the topology canvas, drawn over the viewport (not part of the scene, so they
// stay put while the drawing zooms and pans): the colour legends and a transient feedback line.
#pragma once

#include "views/color_map.h"

#include <QLabel>
#include <QTimer>
#include <QWidget>

namespace moex::views {

struct LegendScale {
    QString title;
    ColorMap map;
    double lo = 0;
    double hi = 1;
    QString unit;
    bool valid = false;
    // Where the map's hot end lies when it is beyond `hi` (the GPU tint's minimum span): the bar
    // is drawn full only up to hi, paler beyond. 0: at hi.
    double mapHi = 0;
    QString note;  // after the range: "max 23"
};

class CanvasLegend : public QWidget {
    Q_OBJECT
public:
    explicit CanvasLegend(QWidget* parent);
    void setHeading(const QString& heading);
    void setUnitNoun(const QString& noun);  // what the drawing's units are: "GPU", or the engine's "rank"
    void setScales(std::vector<LegendScale> scales);
    // Presentation mode: everything drawn `scale` times larger (1 = normal).
    void setScale(double scale);
    [[nodiscard]] double scale() const { return m_scale; }
    [[nodiscard]] QSize sizeHint() const override;
    [[nodiscard]] QSize naturalSize() const;  // at scale 1
    // What it shows as text: the heading, then per scale "title (unit): lo – hi".
    [[nodiscard]] QString plainText() const;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    static QString titleText(const LegendScale& s);
    static QString rangeText(const LegendScale& s);
    QString m_heading;
    std::vector<LegendScale> m_scales;
    double m_scale = 1.0;
    QString m_unitNoun = QStringLiteral("GPU");
};

// The selected GPU's experts at a readable size, whatever the zoom (a 72-GPU rack at "fit" draws
// its chips about 10 px wide): a swatch in the chip's colour, the expert, its load and a bar.
struct GpuDetailRow {
    QColor color;
    int expert = 0;
    bool replica = false;
    double load = 0;
};

class CanvasGpuDetail : public QWidget {
    Q_OBJECT
public:
    explicit CanvasGpuDetail(QWidget* parent);
    // rows: the GPU's experts in slot order; loadHi: the scale's top (the bars' full length).
    void setContent(const QString& title, std::vector<GpuDetailRow> rows, double loadHi, bool hasLoads);
    [[nodiscard]] QString plainText() const;  // title and one line per shown row
    [[nodiscard]] QSize sizeHint() const override;
    static constexpr int kMaxRows = 16;  // the most loaded first beyond this, "+N more"

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QString m_title;
    std::vector<GpuDetailRow> m_rows;  // as shown (at most kMaxRows)
    int m_hidden = 0;
    double m_hi = 1;
    bool m_hasLoads = false;
};

class CanvasFeedback : public QLabel {
    Q_OBJECT
public:
    explicit CanvasFeedback(QWidget* parent);
    void showMessage(const QString& text, int ms = 3000);

private:
    QTimer m_timer;
};

QString formatQuantity(double v);
// "lo – hi" in formatQuantity's form, with more decimals (up to 3) where two different values
// would read the same ("22.8 – 22.8").
QString formatRange(double lo, double hi);

}  // namespace moex::views
