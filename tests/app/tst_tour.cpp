// The guided tours as a user takes them: the steps load in the background and their captions
// quote the computed figures; the bar never squeezes the panel, Previous / Next stay put, and the
// step's title leads the bar's title.
#include "main_window.h"
#include "samples_catalog.h"
#include "scenario_document.h"
#include "tour_bar.h"
#include "window_fixture.h"

#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>

using moex::app::MainWindow;
using namespace moex::app::test;

class TestTour : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { setUpWindowTests(m_config.path()); }
    void init() { clearWarnings(); }
    void cleanup() { QVERIFY2(noWarnings(), warningText().constData()); }

    void tourSteps()
    {
        MainWindow w(samples());
        w.setInteractive(false);
        w.show();
        const auto tours = moex::session::listTours(samples() + QStringLiteral("/tours"));
        QVERIFY(!tours.empty());
        QVERIFY(w.startTour(tours.front().path));
        QVERIFY(w.tourBar()->active());
        QCOMPARE(w.tourBar()->currentStep(), 0);
        QTRY_VERIFY(!w.documentA()->isBusy() && w.documentA()->hasScenario());
        const QString first = w.documentA()->displayName();
        // Steps load in the background: the window stays live while a step's placement runs.
        w.tourBar()->next();
        QCOMPARE(w.tourBar()->currentStep(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(w.documentA()->displayName() != first, 30000);
        // What the step sets is marked in the panel.
        QStringList set;
        for (const auto& [key, value] : w.tourBar()->tour().steps[1].overrides)
            set << QString::fromStdString(key);
        QVERIFY(!set.isEmpty());
        QCOMPARE(w.scenarioPanel()->highlightedKeys(), set);
        w.tourBar()->previous();
        QTRY_COMPARE_WITH_TIMEOUT(w.documentA()->displayName(), first, 30000);
        // The captions quote the steps' figures once computed: every {field} of the template filled.
        QTRY_VERIFY_WITH_TIMEOUT(w.tourBar()->hasFigures(), 60000);
        QVERIFY2(!w.tourBar()->captionText().contains(QLatin1Char('{'))
                     && !w.tourBar()->captionText().contains(QStringLiteral("\u2026")),
                 qPrintable(w.tourBar()->captionText()));
        QVERIFY(w.tourBar()->captionText().contains(QStringLiteral(" ms")));
    }

    // The tour bar never squeezes the panel (its caption does not set the window's minimum
    // width) and Previous / Next stay where they are from step to step.
    void tourBarKeepsThePanelAndItsButtons()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        QApplication::processEvents();
        auto* panelDock = w.findChild<QDockWidget*>(QStringLiteral("scenarioDock"));
        QVERIFY(panelDock);
        const int panelWidth = panelDock->width();
        const auto tours = moex::session::listTours(samples() + QStringLiteral("/tours"));
        QVERIFY(w.startTour(tours.front().path));
        QTRY_VERIFY_WITH_TIMEOUT(!w.documentA()->isBusy(), 30000);
        QList<QPushButton*> buttons = w.tourBar()->findChildren<QPushButton*>();
        QCOMPARE(buttons.size(), 2);
        QApplication::processEvents();
        const QPoint prevAt = buttons[0]->mapTo(&w, QPoint(0, 0));
        const QPoint nextAt = buttons[1]->mapTo(&w, QPoint(0, 0));
        for (int step = 1; step < static_cast<int>(w.tourBar()->tour().steps.size()); ++step) {
            w.tourBar()->next();
            QTRY_VERIFY_WITH_TIMEOUT(!w.documentA()->isBusy(), 30000);
            QApplication::processEvents();
            QCOMPARE(buttons[0]->mapTo(&w, QPoint(0, 0)), prevAt);
            QCOMPARE(buttons[1]->mapTo(&w, QPoint(0, 0)), nextAt);
            QCOMPARE(panelDock->width(), panelWidth);
            // The step's own title leads the bar's title (a narrow bar elides the tour's name
            // after it, not the step), and the whole title is its tooltip.
            const QString stepTitle = w.tourBar()->tour().steps[static_cast<std::size_t>(step)].title;
            const auto labels = w.tourBar()->findChildren<QLabel*>();
            QVERIFY2(std::any_of(labels.begin(), labels.end(),
                                 [&](const QLabel* l) { return l->text().startsWith(stepTitle) && l->toolTip() == l->text(); }),
                     qPrintable(stepTitle));
        }
        w.tourBar()->stop();
        QApplication::processEvents();
        QCOMPARE(panelDock->width(), panelWidth);
    }

    // In a 1024 x 700 window, normal and presentation fonts: the bar spans the window, its caption
    // has the bar's width and the height every step's caption needs (nothing cut, no step taller
    // than the bar), and Previous / Next show their whole text.
    void tourBarReadsInASmallWindow()
    {
        MainWindow w(samples());
        w.setInteractive(false);
        w.resize(1024, 700);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const auto tours = moex::session::listTours(samples() + QStringLiteral("/tours"));
        QVERIFY(w.startTour(tours.front().path));
        QTRY_VERIFY_WITH_TIMEOUT(!w.documentA()->isBusy(), 30000);
        moex::app::TourBar* bar = w.tourBar();
        QLabel* caption = nullptr;
        for (QLabel* l : bar->findChildren<QLabel*>())
            if (l->wordWrap())
                caption = l;
        QVERIFY(caption);
        for (const bool presentation : {false, true}) {
            w.setPresentationMode(presentation);
            QApplication::processEvents();
            QTRY_VERIFY(bar->isVisible() && bar->width() >= w.width() - 24);
            QVERIFY2(caption->width() >= w.width() * 9 / 10, qPrintable(QString::number(caption->width())));
            for (QPushButton* b : bar->findChildren<QPushButton*>())
                QVERIFY2(b->width() >= b->sizeHint().width(), qPrintable(b->text()));
            const int barHeight = bar->height();
            for (int step = 0; step < static_cast<int>(bar->tour().steps.size()); ++step) {
                while (bar->currentStep() < step)
                    bar->next();
                QApplication::processEvents();
                QCOMPARE(bar->height(), barHeight);
                QVERIFY2(caption->height() >= caption->heightForWidth(caption->width()),
                         qPrintable(QStringLiteral("step %1: %2 px for %3").arg(step + 1).arg(caption->height())
                                        .arg(caption->heightForWidth(caption->width()))));
            }
            while (bar->currentStep() > 0)
                bar->previous();
            QTRY_VERIFY_WITH_TIMEOUT(!w.documentA()->isBusy(), 30000);
        }
        w.setPresentationMode(false);
        bar->stop();
        QApplication::processEvents();
        QVERIFY(!bar->isVisible());
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestTour)
#include "tst_tour.moc"
