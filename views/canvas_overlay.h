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
};

class CanvasLegend : public QWidget {
    Q_OBJECT
public:
    explicit CanvasLegend(QWidget* parent);
    void setHeading(const QString& heading);
    void setScales(std::vector<LegendScale> scales);
    // Presentation mode: everything drawn `scale` times larger (1 = normal).
    void setScale(double scale);
    [[nodiscard]] double scale() const { return m_scale; }
    [[nodiscard]] QSize sizeHint() const override;
    [[nodiscard]] QSize naturalSize() const;  // at scale 1

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QString m_heading;
    std::vector<LegendScale> m_scales;
    double m_scale = 1.0;
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

}  // namespace moex::views
