#include "views/heatmap_widget.h"

#include <QSignalSpy>
#include <QTest>

using moex::views::ColorMap;
using moex::views::HeatmapWidget;

class TestHeatmap : public QObject {
    Q_OBJECT
private:
    static QColor pixelAt(HeatmapWidget& w, int row, int col)
    {
        const QImage img = w.grab().toImage();
        return img.pixelColor(w.cellRect(row, col).center().toPoint());
    }

private slots:
    void knownValuesGiveKnownPixels()
    {
        HeatmapWidget w;
        w.resize(400, 300);
        // 2 x 3, range 0..10: 0 -> first viridis stop, 10 -> last, 5 -> the middle stop.
        w.setMatrix(2, 3, {0, 5, 10, 10, 0, 5});
        w.setColorMap(ColorMap::viridis());
        w.setRange(0, 10);
        QCOMPARE(w.colorOf(0), QColor(0x44, 0x01, 0x54));
        QCOMPARE(w.colorOf(10), QColor(0xfd, 0xe7, 0x25));
        QCOMPARE(pixelAt(w, 0, 0), QColor(0x44, 0x01, 0x54));
        QCOMPARE(pixelAt(w, 0, 1), QColor(0x21, 0x90, 0x8c));
        QCOMPARE(pixelAt(w, 0, 2), QColor(0xfd, 0xe7, 0x25));
        QCOMPARE(pixelAt(w, 1, 0), QColor(0xfd, 0xe7, 0x25));
        QCOMPARE(pixelAt(w, 1, 1), QColor(0x44, 0x01, 0x54));
        // Default range is the data's min..max; a utilisation map: 2.5 of 0..10 -> a quarter.
        w.clearRange();
        w.setColorMap(ColorMap::utilisation());
        w.setMatrix(1, 2, {0, 10});
        QCOMPARE(pixelAt(w, 0, 0), QColor(0x1a, 0x98, 0x50));
        QCOMPARE(pixelAt(w, 0, 1), QColor(0xd7, 0x30, 0x27));
        QCOMPARE(w.colorOf(2.5), QColor(0x87, 0xb4, 0x48));
    }

    // A larger font (presentation mode) gets larger title and axis-title bands: the title's line
    // ends above the cells and above the unit over the colour bar (with a fixed 20-pixel band the
    // two were drawn into each other), and the row title keeps its line left of the labels.
    void titlesMakeRoomForTheirFont()
    {
        for (const int points : {9, 14, 22}) {
            HeatmapWidget w;
            QFont f = w.font();
            f.setPointSize(points);
            w.setFont(f);
            w.resize(700, 500);
            w.setMatrix(4, 6, std::vector<double>(24, 1.0));
            w.setTitle(QStringLiteral("Expert load (token-expert pairs per step)"));
            w.setAxisTitles(QStringLiteral("MoE layer"), QStringLiteral("expert"));
            w.setUnit(QStringLiteral("pairs"));
            QFont bold = f;
            bold.setBold(true);
            const int titleBottom = 6 + QFontMetrics(bold).height();  // kMargin + the title's line
            // The unit's line starts 2 px above the cells' top, right of them: the title ends there.
            const double cellsTop = w.cellRect(0, 0).top();
            QVERIFY2(cellsTop - 2 >= titleBottom,
                     qPrintable(QStringLiteral("%1 pt: cells from %2, title to %3").arg(points).arg(cellsTop).arg(titleBottom)));
            const double cellsLeft = w.cellRect(0, 0).left();
            QVERIFY(cellsLeft >= 6 + QFontMetrics(f).height());  // the row title's line, rotated
        }
    }

    // The colour legend's unit ("pairs") sits above the top value's label, never on it (it was
    // drawn half a line into "4062"), and a larger font widens the legend instead of cutting its
    // labels: every label inside the widget, the values' widest form whole.
    void legendLabelsNeverMeet()
    {
        for (const int points : {9, 14, 22}) {
            for (const QSize size : {QSize(320, 260), QSize(700, 500)}) {
                HeatmapWidget w;
                QFont f = w.font();
                f.setPointSize(points);
                w.setFont(f);
                w.resize(size);
                w.setMatrix(58, 256, std::vector<double>(58 * 256, 4062.0));
                w.setTitle(QStringLiteral("Expert load (token-expert pairs per step)"));
                w.setUnit(QStringLiteral("pairs"));
                const auto l = w.legendLayout();
                const QString where = QStringLiteral("%1 pt, %2x%3").arg(points).arg(size.width()).arg(size.height());
                QVERIFY2(!l.unit.isEmpty() && l.unit.bottom() <= l.ticks[2].top(), qPrintable(where));
                QVERIFY2(l.ticks[2].bottom() <= l.ticks[1].top() && l.ticks[1].bottom() <= l.ticks[0].top(), qPrintable(where));
                const QFontMetrics fm(f);
                for (const auto& r : l.ticks) {
                    QVERIFY2(r.right() <= w.width() && r.width() >= fm.horizontalAdvance(QStringLiteral("14.5k")), qPrintable(where));
                }
                QVERIFY2(l.unit.right() <= w.width() && l.unit.width() >= fm.horizontalAdvance(QStringLiteral("pairs")), qPrintable(where));
                QVERIFY2(l.bar.left() >= w.cellRect(0, 255).right(), qPrintable(where));
            }
        }
    }

    // A narrow heatmap (a small window, presentation mode) ends its title in "…" within its width
    // instead of cutting it mid-word at the edge; a wide one shows it whole.
    void longTitlesEndInAnEllipsis()
    {
        const QString title = QStringLiteral("Expert load (token-expert pairs per step)");
        for (const int width : {240, 900}) {
            HeatmapWidget w;
            QFont f = w.font();
            f.setPointSize(14);
            w.setFont(f);
            w.resize(width, 300);
            w.setTitle(title);
            QFont bold = f;
            bold.setBold(true);
            const QFontMetrics fm(bold);
            const QString shown = w.shownTitle();
            QVERIFY2(fm.horizontalAdvance(shown) <= width - 12, qPrintable(shown));
            if (fm.horizontalAdvance(title) <= width - 12) {
                QCOMPARE(shown, title);
            } else {
                QVERIFY2(shown.endsWith(QStringLiteral("\u2026")) && shown.size() > 4, qPrintable(shown));
                QVERIFY(title.startsWith(shown.chopped(1)));
            }
        }
    }

    void largeMatrices()
    {
        HeatmapWidget w;
        w.resize(900, 500);
        std::vector<double> v(58 * 256);
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<double>(i % 256);
        w.setMatrix(58, 256, v);
        QCOMPARE(w.rows(), 58);
        QCOMPARE(w.cols(), 256);
        QCOMPARE(w.value(3, 200), 200.0);
        const QRectF r = w.cellRect(57, 255);
        QVERIFY(r.width() > 0 && r.height() > 0);
        QVERIFY(QRectF(w.rect()).contains(r));
        QCOMPARE(pixelAt(w, 10, 255), QColor(0xfd, 0xe7, 0x25));
    }

    void hoverShowsValueWithUnit()
    {
        HeatmapWidget w;
        w.resize(400, 300);
        w.setAxisTitles(QStringLiteral("GPU"), QStringLiteral("expert"));
        w.setUnit(QStringLiteral("pairs"));
        w.setMatrix(2, 2, {1, 2, 3, 42});
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy hovered(&w, &HeatmapWidget::cellHovered);
        QTest::mouseMove(&w, w.cellRect(1, 1).center().toPoint());
        QCOMPARE(hovered.count(), 1);
        QCOMPARE(hovered.at(0).at(0).toInt(), 1);
        QCOMPARE(hovered.at(0).at(1).toInt(), 1);
        QCOMPARE(hovered.at(0).at(2).toDouble(), 42.0);
        QCOMPARE(w.hoverText(), QStringLiteral("GPU 1, expert 1: 42 pairs"));
        QCOMPARE(w.cellText(0, 1), QStringLiteral("GPU 0, expert 1: 2 pairs"));
    }

    void clickReportsDataIndicesWhenSorted()
    {
        HeatmapWidget w;
        w.resize(400, 300);
        // Column sums: 1, 30, 5 -> display order 1, 2, 0.
        w.setMatrix(2, 3, {1, 10, 2, 0, 20, 3});
        w.setSortColumns(true);
        QCOMPARE(w.displayColumn(1), 0);
        QCOMPARE(w.displayColumn(2), 1);
        QCOMPARE(w.displayColumn(0), 2);
        // Display column 0 shows data column 1 (the biggest): its cell is the leftmost.
        QVERIFY(w.cellRect(0, 1).left() < w.cellRect(0, 2).left());
        QVERIFY(w.cellRect(0, 2).left() < w.cellRect(0, 0).left());
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy clicked(&w, &HeatmapWidget::cellClicked);
        QTest::mouseClick(&w, Qt::LeftButton, {}, w.cellRect(1, 0).center().toPoint());
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.at(0).at(0).toInt(), 1);
        QCOMPARE(clicked.at(0).at(1).toInt(), 0);
        // The leftmost displayed cell is data column 1.
        const QRectF plotLeft = w.cellRect(0, 1);
        QTest::mouseClick(&w, Qt::LeftButton, {}, plotLeft.center().toPoint());
        QCOMPARE(clicked.at(1).at(1).toInt(), 1);
        // Sorting changes display only: the pixel of data column 1 is still its value's colour.
        QCOMPARE(pixelAt(w, 1, 1), w.colorOf(20));
        w.setSortColumns(false);
        QCOMPARE(w.displayColumn(0), 0);
    }

    void highlightOutlinesRowAndColumn()
    {
        HeatmapWidget w;
        w.resize(400, 300);
        w.setMatrix(4, 4, std::vector<double>(16, 0.0));  // all one colour
        w.setRange(0, 1);
        const QRectF cell = w.cellRect(2, 1);
        const QPoint edge(static_cast<int>(cell.center().x()), static_cast<int>(cell.top()));
        const QColor before = w.grab().toImage().pixelColor(edge);
        w.setHighlight(2, -1);
        const QColor after = w.grab().toImage().pixelColor(edge);
        QVERIFY2(before != after, "the highlighted row has an outline");
        // A row that is not highlighted keeps the fill colour at the same spot.
        const QRectF other = w.cellRect(0, 1);
        QCOMPARE(w.grab().toImage().pixelColor(other.center().toPoint()), w.colorOf(0));
        w.setHighlight(-1, 3);
        const QRectF c3 = w.cellRect(0, 3);
        // The 2-pixel outline is centred on the column's left edge, which need not fall on a pixel:
        // one of the pixels around it carries the outline.
        const QImage image = w.grab().toImage();
        const int edgeX = static_cast<int>(std::lround(c3.left()));
        const int y = static_cast<int>(c3.center().y());
        bool outlined = false;
        for (int x = edgeX - 1; x <= edgeX + 1; ++x)
            outlined = outlined || image.pixelColor(x, y) != w.colorOf(0);
        QVERIFY2(outlined, qPrintable(QStringLiteral("column edge at x = %1").arg(c3.left())));
        // and the column's middle keeps the fill colour
        QCOMPARE(image.pixelColor(c3.center().toPoint()), w.colorOf(0));
    }
};

QTEST_MAIN(TestHeatmap)
#include "tst_heatmap.moc"
