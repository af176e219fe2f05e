// The window as a new user edits it (issue 17): nothing slow runs on the UI thread (a panel change
// is placed in the background and the document changes only when it is ready), a newer edit
// supersedes an older one, spin-box steps are one undo entry, a refused change puts every control
// back to the scenario's value, companion changes are made and said, messages never move the
// controls, and what-ifs are never lost without asking.
#include "compare_view.h"
#include "window_fixture.h"
#include "main_window.h"
#include "scenario_document.h"
#include "screenshot.h"
#include "sim_runner.h"

#include "views/scenario_panel.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QDockWidget>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

using moex::app::MainWindow;

using namespace moex::app::test;
using moex::GpuId;

namespace {

// Mixtral as A, duplicated as B; every question the window asks lands in `asked`, answered `answer`.
bool openMixtralWithB(MainWindow& w, QStringList& asked, bool& answer)
{
    w.setConfirmHandler([&asked, &answer](const QString& q) {
        asked << q;
        return answer;
    });
    if (!w.openScenario(sample("mixtral-8x7b-decode-hgx-h100.yaml"), {}, false))
        return false;
    w.duplicateAsB();
    return w.documentB()->hasScenario();
}

}  // namespace

class TestWindowEdits : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8());
        moex::app::initResources();
    }

    // Switching the strategy to search (seconds of placement) returns at once: the document keeps
    // its scenario, the panel says what is being placed and greys the numbers, the UI thread keeps
    // turning; the result arrives as one undo step.
    void searchIsPlacedInTheBackground()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        auto* doc = w.documentA();
        QCOMPARE(QString::fromStdString(doc->scenario().placement.strategy), QStringLiteral("eplb"));
        auto* strategy = panelField<QComboBox>(w.scenarioPanel(), QStringLiteral("Strategy"));
        QVERIFY(strategy);
        QSignalSpy busy(doc, &moex::session::ScenarioDocument::busyChanged);
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("search")));
        // Not placed on this thread: the document is unchanged and says it is busy.
        QVERIFY(doc->isBusy());
        QCOMPARE(QString::fromStdString(doc->scenario().placement.strategy), QStringLiteral("eplb"));
        QVERIFY(w.scenarioPanel()->isBusy());
        QVERIFY2(w.scenarioPanel()->messageText().contains(QStringLiteral("placement.strategy = search")),
                 qPrintable(w.scenarioPanel()->messageText()));
        QCOMPARE(strategy->currentData().toString(), QStringLiteral("search"));  // what the user chose stays
        // The event loop runs while it places: a timer fires.
        int ticks = 0;
        QTimer tick;
        connect(&tick, &QTimer::timeout, [&] { ++ticks; });
        tick.start(10);
        QTRY_VERIFY_WITH_TIMEOUT(!doc->isBusy(), 60000);
        QVERIFY(ticks >= 3);
        QCOMPARE(QString::fromStdString(doc->scenario().placement.strategy), QStringLiteral("search"));
        QCOMPARE(busy.count(), 2);  // true, then false
        QVERIFY(!w.scenarioPanel()->isBusy());
        QCOMPARE(w.undoStack()->count(), 1);
        w.undoStack()->undo();
        QCOMPARE(QString::fromStdString(doc->scenario().placement.strategy), QStringLiteral("eplb"));
        QCOMPARE(strategy->currentData().toString(), QStringLiteral("eplb"));
        doc->setModified(false);
    }

    // Changes made while another is placed: the message says what is pending as it changes (a
    // change queued, a newer value of the key being placed), not what was pending when it began.
    void placingMessageFollowsTheQueue()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        auto* doc = w.documentA();
        auto* strategy = panelField<QComboBox>(w.scenarioPanel(), QStringLiteral("Strategy"));
        auto* seed = panelField<QSpinBox>(w.scenarioPanel(), QStringLiteral("Seed"));
        QVERIFY(strategy && seed);
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("gem")));
        QVERIFY(doc->isBusy());
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("search")));  // supersedes gem
        const QString first = w.scenarioPanel()->messageText();
        QVERIFY2(first.contains(QStringLiteral("placement.strategy = search")) && !first.contains(QStringLiteral("queued")),
                 qPrintable(first));
        seed->setValue(seed->value() + 1);
        QVERIFY2(w.scenarioPanel()->messageText().contains(QStringLiteral("(+1 queued)")),
                 qPrintable(w.scenarioPanel()->messageText()));
        seed->setValue(seed->value() + 1);  // merges into the queued seed: still one queued
        QVERIFY2(w.scenarioPanel()->messageText().contains(QStringLiteral("(+1 queued)")),
                 qPrintable(w.scenarioPanel()->messageText()));
        // Another strategy now waits behind the seed (each change is placed on top of the one before).
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("gem")));
        QVERIFY2(w.scenarioPanel()->messageText().contains(QStringLiteral("(+2 queued)")),
                 qPrintable(w.scenarioPanel()->messageText()));
        QTRY_VERIFY_WITH_TIMEOUT(!doc->isBusy(), 60000);
        QVERIFY(!w.scenarioPanel()->isBusy());
        QCOMPARE(QString::fromStdString(doc->scenario().placement.strategy), QStringLiteral("gem"));
        doc->setModified(false);
    }

    // Three spin-box steps while the first is still being placed: the newer supersede the older,
    // the document ends at the last value, and undo goes back past all three in one step.
    void spinStepsSupersedeAndMergeIntoOneUndo()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-hgx-h200x8.yaml"), {}, false));
        auto* doc = w.documentA();
        auto* seed = panelField<QSpinBox>(w.scenarioPanel(), QStringLiteral("Seed"));
        QVERIFY(seed);
        const int original = seed->value();
        QCOMPARE(static_cast<int>(doc->scenario().workload.routing.seed), original);
        seed->setFocus();
        QTest::keyClick(seed, Qt::Key_Up);
        QTest::keyClick(seed, Qt::Key_Up);
        QTest::keyClick(seed, Qt::Key_Up);
        QCOMPARE(seed->value(), original + 3);
        QTRY_VERIFY_WITH_TIMEOUT(!doc->isBusy(), 30000);
        QCOMPARE(static_cast<int>(doc->scenario().workload.routing.seed), original + 3);
        QCOMPARE(seed->value(), original + 3);
        QCOMPARE(w.undoStack()->count(), 1);
        w.undoStack()->undo();
        QCOMPARE(static_cast<int>(doc->scenario().workload.routing.seed), original);
        QCOMPARE(seed->value(), original);
        doc->setModified(false);
    }

    // A refused change (redundant slots that eplb cannot spread over 72 GPUs): the message names
    // it, every control shows the scenario's value again, nothing is pushed, and the controls did
    // not move when the message appeared.
    void refusedChangeRestoresTheControlsAndMovesNothing()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        auto* doc = w.documentA();
        auto* slotBox = panelField<QSpinBox>(w.scenarioPanel(), QStringLiteral("Redundant slots"));
        auto* seed = panelField<QSpinBox>(w.scenarioPanel(), QStringLiteral("Seed"));
        QVERIFY(slotBox && seed);
        QCOMPARE(slotBox->value(), 32);
        // The panel settles at its full height (it scrolls rather than squeezing its rows).
        QTRY_COMPARE(seed->height(), seed->sizeHint().height());
        const QPoint seedAt = seed->mapTo(&w, QPoint(0, 0));
        slotBox->setValue(33);
        QTRY_VERIFY_WITH_TIMEOUT(!doc->isBusy(), 30000);
        QVERIFY2(w.scenarioPanel()->errorText().contains(QStringLiteral("divide evenly")),
                 qPrintable(w.scenarioPanel()->errorText()));
        QCOMPARE(doc->scenario().placement.redundant_slots, 32);
        QCOMPARE(slotBox->value(), 32);  // the control shows the model, not the refused value
        QCOMPARE(w.undoStack()->count(), 0);
        QApplication::processEvents();
        QCOMPARE(seed->mapTo(&w, QPoint(0, 0)), seedAt);
        QVERIFY(seed->isVisible());
    }

    // Edits that need a companion change make it and say so: 8 HGX nodes with 32 redundant slots
    // (eplb needs them to divide over 64 GPUs), and the slow-GPU sample moved to one HGX node
    // (its per-GPU speeds beyond GPU 7 go).
    void companionChangesAreMadeAndSaid()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-hgx-h200x8.yaml"), {}, false));
        auto* doc = w.documentA();
        const int redundant = doc->scenario().placement.redundant_slots;
        const int gpusPerNode = doc->scenario().topology.numGpus() / doc->scenario().topology_params.nodes;
        QVERIFY(redundant > 0);
        int nodes = 1;  // a node count whose GPUs the slots do not divide
        while ((doc->scenario().model.routed_experts + redundant) % (nodes * gpusPerNode) == 0)
            ++nodes;
        doc->requestOverride(QStringLiteral("topology.nodes"), QString::number(nodes));
        QTRY_VERIFY_WITH_TIMEOUT(!doc->isBusy(), 30000);
        const int gpus = doc->scenario().topology.numGpus();
        const int experts = doc->scenario().model.routed_experts;
        QCOMPARE((experts + doc->scenario().placement.redundant_slots) % gpus, 0);
        QVERIFY2(w.scenarioPanel()->messageText().contains(QStringLiteral("redundant slots")),
                 qPrintable(w.scenarioPanel()->messageText() + doc->lastError()));

        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72-slow-gpus.yaml"), {}, false));
        QVERIFY(doc->scenario().speeds.per_gpu.count(17) == 1);
        doc->requestOverride(QStringLiteral("topology.builtin"), QStringLiteral("hgx-h200"));
        QTRY_VERIFY_WITH_TIMEOUT(!doc->isBusy(), 30000);
        QVERIFY2(QString::fromStdString(doc->scenario().topology.builtin).contains(QStringLiteral("hgx")),
                 qPrintable(doc->lastError()));
        for (const auto& [gpu, speed] : doc->scenario().speeds.per_gpu)
            QVERIFY(gpu < doc->scenario().topology.numGpus());
        QCOMPARE(doc->scenario().speeds.of(5), 0.85);  // kept: the new topology has GPU 5
        QVERIFY(w.scenarioPanel()->messageText().contains(QStringLiteral("speeds")));
        doc->setModified(false);
    }

    // A placement edit made while a panel change is being placed is not lost: the change is placed
    // again on top of it (here a GPU speed and the seed).
    void editDuringPlacementIsKept()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QVERIFY(w.openScenario(sample("deepseek-r1-decode-nvl72.yaml"), {}, false));
        auto* doc = w.documentA();
        doc->requestOverride(QStringLiteral("workload.routing.seed"), QStringLiteral("12345"));
        QVERIFY(doc->isBusy());
        QVERIFY(doc->setGpuSpeed(GpuId(3), 0.7).isEmpty());
        QTRY_VERIFY_WITH_TIMEOUT(!doc->isBusy(), 30000);
        QCOMPARE(static_cast<long long>(doc->scenario().workload.routing.seed), 12345LL);
        QCOMPARE(doc->scenario().speeds.of(3), 0.7);
        doc->setModified(false);
    }

    // What-ifs: B is unmodified right after Duplicate; a modified B is not replaced without asking
    // (Ctrl+D again, or a new A), and the answer is honoured; a new A closes B and says so.
    void whatIfsAreNotLostWithoutAsking()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QStringList asked;
        bool answer = false;
        QVERIFY(openMixtralWithB(w, asked, answer));
        QVERIFY(w.documentB()->hasScenario());
        QVERIFY(!w.documentB()->isModified());
        w.duplicateAsB();  // unmodified: no question
        QVERIFY(asked.isEmpty());
        QCOMPARE(w.document(), w.documentB());
        w.documentB()->requestOverride(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("32"));
        QTRY_VERIFY(!w.documentB()->isBusy());
        QVERIFY(w.documentB()->isModified());

        w.duplicateAsB();  // declined: B keeps its change
        QCOMPARE(asked.size(), 1);
        QCOMPARE(w.documentB()->scenario().workload.tokens_per_gpu, 32);
        QVERIFY(!w.openScenario(sample("gpt-oss-120b-decode-hgx-h200.yaml"), {}, false));  // declined too
        QCOMPARE(asked.size(), 2);
        QVERIFY(w.documentB()->hasScenario());
        QVERIFY(w.documentA()->displayName().contains(QStringLiteral("Mixtral"), Qt::CaseInsensitive)
                || w.documentA()->scenario().model.name.find("ixtral") != std::string::npos);

        answer = true;  // a new A, agreed: B is closed and the compare view emptied
        QVERIFY(w.openScenario(sample("gpt-oss-120b-decode-hgx-h200.yaml"), {}, false));
        QCOMPARE(asked.size(), 3);
        QVERIFY(!w.documentB()->hasScenario());
        QCOMPARE(w.document(), w.documentA());
        QVERIFY(!w.compareView()->hasResult());
        QVERIFY(w.compareDock()->isHidden());
    }

    // An edit of B made while a new A loads in the background (after B's loss was agreed to, or
    // when B was unmodified) is asked about when A arrives; declined, B keeps it.
    void editsOfBDuringABackgroundLoadAreAskedAbout()
    {
        MainWindow w(samples());
        QVERIFY(showForTest(w));
        QStringList asked;
        bool answer = false;
        QVERIFY(openMixtralWithB(w, asked, answer));
        w.openScenarioInBackground(sample("gpt-oss-120b-decode-hgx-h200.yaml"), {}, false);
        QVERIFY(asked.isEmpty());  // B unmodified: nothing to ask yet
        w.documentB()->requestOverride(QStringLiteral("workload.tokens_per_gpu"), QStringLiteral("32"));
        QTRY_VERIFY(!w.documentA()->isBusy() && !w.documentB()->isBusy());
        QCOMPARE(asked.size(), 1);
        QVERIFY(w.documentA()->scenario().model.name.find("gpt-oss") != std::string::npos);
        QVERIFY(w.documentB()->hasScenario());
        QCOMPARE(w.documentB()->scenario().workload.tokens_per_gpu, 32);

        // Agreed this time: B closes when A arrives.
        answer = true;
        w.openScenarioInBackground(sample("mixtral-8x7b-decode-hgx-h100.yaml"), {}, false);
        QCOMPARE(asked.size(), 2);  // B is modified: asked before the load
        QTRY_VERIFY(!w.documentA()->isBusy());
        QCOMPARE(asked.size(), 2);  // not again: B did not change since
        QVERIFY(!w.documentB()->hasScenario());
    }

private:
    QTemporaryDir m_config;
};

QTEST_MAIN(TestWindowEdits)
#include "tst_window_edits.moc"
