#include "views/color_map.h"

#include <QTest>

using moex::views::ColorMap;

class TestColorMap : public QObject {
    Q_OBJECT
private slots:
    void exactStops_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<QColor>("lo");
        QTest::addColumn<QColor>("hi");
        QTest::addRow("viridis") << 0 << QColor(0x44, 0x01, 0x54) << QColor(0xfd, 0xe7, 0x25);
        QTest::addRow("utilisation") << 1 << QColor(0x1a, 0x98, 0x50) << QColor(0xd7, 0x30, 0x27);
        QTest::addRow("diverging") << 2 << QColor(0x21, 0x66, 0xac) << QColor(0xb2, 0x18, 0x2b);
    }
    void exactStops()
    {
        QFETCH(int, which);
        QFETCH(QColor, lo);
        QFETCH(QColor, hi);
        const ColorMap m = which == 0 ? ColorMap::viridis() : which == 1 ? ColorMap::utilisation() : ColorMap::diverging();
        QCOMPARE(m.at(0.0), lo);
        QCOMPARE(m.at(1.0), hi);
        // Clamping, NaN included.
        QCOMPARE(m.at(-3.0), lo);
        QCOMPARE(m.at(7.0), hi);
        QCOMPARE(m.at(std::numeric_limits<double>::quiet_NaN()), lo);
        QCOMPARE(m.map(-10, 0, 100), lo);
        QCOMPARE(m.map(1000, 0, 100), hi);
    }
    void viridisHasRealStops()
    {
        const ColorMap m = ColorMap::viridis();
        QCOMPARE(static_cast<int>(m.stops().size()), 9);
        QCOMPARE(m.at(0.5), QColor(0x21, 0x90, 0x8c));  // the middle stop of matplotlib's viridis
        QCOMPARE(m.at(0.125), QColor(0x47, 0x2d, 0x7b));
    }
    void interpolatesLinearlyBetweenStops()
    {
        const ColorMap u = ColorMap::utilisation();  // 3 stops: the midpoint is the yellow stop
        QCOMPARE(u.at(0.5), QColor(0xf4, 0xd0, 0x3f));
        // Halfway between green and yellow, rounded per channel.
        QCOMPARE(u.at(0.25), QColor(0x87, 0xb4, 0x48));
        const ColorMap dv = ColorMap::diverging();
        QCOMPARE(dv.map(0, -1, 1), QColor(0xf7, 0xf7, 0xf7));
        // viridis between stop 0 and 1 at a quarter: 0x44 + (0x47 - 0x44) / 4 ...
        const QColor q = ColorMap::viridis().at(0.125 / 4);
        QCOMPARE(q, QColor(0x45, 0x0c, 0x5e));
    }
    void degenerateRange()
    {
        const ColorMap m = ColorMap::viridis();
        QCOMPARE(m.map(5, 5, 5), m.at(0));
        QCOMPARE(m.map(50, 0, 100), m.at(0.5));
    }
};

QTEST_APPLESS_MAIN(TestColorMap)
#include "tst_color_map.moc"
