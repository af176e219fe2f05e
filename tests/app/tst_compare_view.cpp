// The compare view's arrangement as a user sees it: every row of the table, and the canvas
// thumbnails filling their boxes, in the tall tab and in the wide dock, whichever order the result
// and the thumbnails arrive in (the thumbnails were once scaled to the box they had when they came,
// before the table settled, and drawn at a third of their width).
#include "compare_view.h"

#include <QApplication>
#include <QImage>
#include <QPixmap>
#include <QScrollBar>
#include <QTableView>
#include <QtTest>

using namespace moex;
using moex::app::CompareView;

namespace {

session::ComparisonResult result(int rows)
{
    session::ComparisonResult r;
    for (int i = 0; i < rows; ++i) {
        CompareTerm t;
        t.key = "term_" + std::to_string(i);
        t.label = "term " + std::to_string(i);
        t.a = 10.0 + i;
        t.b = 12.0 + i;
        t.unit = "us";
        r.terms.push_back(t);
    }
    r.a.steps = r.b.steps = 10;
    r.explanation = "B is slower.";
    return r;
}

// A wide drawing, as a multi-node topology is: pure red, so its painted extent can be measured.
QPixmap drawing()
{
    QPixmap pm(1400, 420);
    pm.fill(Qt::red);
    return pm;
}

// The painted red of a thumbnail: its bounding box in the widget's pixels.
QRect paintedRed(QWidget* w)
{
    const QImage img = w->grab().toImage();
    int left = img.width(), right = -1, top = img.height(), bottom = -1;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor c = img.pixelColor(x, y);
            if (c.red() > 200 && c.green() < 60 && c.blue() < 60) {
                left = std::min(left, x);
                right = std::max(right, x);
                top = std::min(top, y);
                bottom = std::max(bottom, y);
            }
        }
    return right < 0 ? QRect() : QRect(QPoint(left, top), QPoint(right, bottom));
}

void settle(QWidget& w)
{
    for (int i = 0; i < 5; ++i)
        QApplication::processEvents();
    w.update();
    QApplication::processEvents();
}

}  // namespace

class TestCompareView : public QObject {
    Q_OBJECT
private slots:
    void tallTabShowsEveryRowAndFullThumbnails_data()
    {
        QTest::addColumn<bool>("hidden");
        QTest::addColumn<bool>("thumbnailsFirst");
        // A tab not shown yet gets its result, then the user opens it (the window's Compare tab).
        QTest::newRow("while hidden, then shown") << true << false;
        QTest::newRow("shown: result, then thumbnails") << false << false;
        QTest::newRow("shown: thumbnails, then result") << false << true;
    }
    void tallTabShowsEveryRowAndFullThumbnails()
    {
        QFETCH(bool, hidden);
        QFETCH(bool, thumbnailsFirst);
        CompareView v;
        if (!hidden) {
            v.resize(1400, 900);
            v.show();
            QVERIFY(QTest::qWaitForWindowExposed(&v));
        }
        if (thumbnailsFirst)
            v.setThumbnails(drawing(), drawing());
        v.setResult(result(15));
        if (!thumbnailsFirst)
            v.setThumbnails(drawing(), drawing());
        if (hidden) {
            v.resize(1400, 900);
            v.show();
            QVERIFY(QTest::qWaitForWindowExposed(&v));
        }
        settle(v);

        // Every row without scrolling, the thumbnails below the table.
        QTableView* table = v.table();
        QVERIFY(!table->verticalScrollBar()->isVisible());
        QCOMPARE(table->height(), table->maximumHeight());
        for (int side : {0, 1}) {
            QWidget* thumb = v.thumbnail(side);
            QVERIFY(thumb->geometry().top() > table->geometry().bottom());
            // The rest of the height goes to the thumbnails, not to a gap under the explanation:
            // between the table and a thumbnail only the explanation, the status and the title.
            const int between = thumb->geometry().top() - table->geometry().bottom();
            QVERIFY2(between < 130, qPrintable(QStringLiteral("%1 pixels between the table and the thumbnail").arg(between)));
            // The drawing as wide as its box allows (less the frame and a 4-pixel margin a side).
            const QRect red = paintedRed(thumb);
            QVERIFY(!red.isEmpty());
            QVERIFY2(red.width() >= thumb->width() - 20,
                     qPrintable(QStringLiteral("painted %1 of %2").arg(red.width()).arg(thumb->width())));
        }
    }

    void wideDockPutsThumbnailsBesideTheTable()
    {
        CompareView v;
        v.resize(1500, 320);
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.setResult(result(15));
        v.setThumbnails(drawing(), drawing());
        settle(v);
        QWidget* a = v.thumbnail(0);
        QWidget* b = v.thumbnail(1);
        QVERIFY(b->geometry().right() < v.table()->geometry().left());
        QVERIFY(a->geometry().right() < b->geometry().left());
        // The table scrolls rather than push the dock taller than it is.
        QVERIFY(v.table()->height() <= v.height());
        for (QWidget* thumb : {a, b}) {
            const QRect red = paintedRed(thumb);
            QVERIFY(!red.isEmpty());
            // Limited by one side of its box: the width or the height.
            QVERIFY2(red.width() >= thumb->width() - 20 || red.height() >= thumb->height() - 20,
                     qPrintable(QStringLiteral("painted %1x%2 in %3x%4")
                                    .arg(red.width()).arg(red.height()).arg(thumb->width()).arg(thumb->height())));
        }
        // Without B the thumbnails are empty.
        v.clear();
        settle(v);
        QVERIFY(paintedRed(a).isEmpty());
    }
};

QTEST_MAIN(TestCompareView)
#include "tst_compare_view.moc"
