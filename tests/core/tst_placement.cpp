// Placement basics: the contiguous layout serving systems use by default, and the structural checks.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "placement/placement.h"
#endif

#include <QtTest>

using namespace moex;

class TestPlacement : public QObject {
    Q_OBJECT
private slots:
    void contiguous_data();
    void contiguous();
    void checksFindProblems();
};

void TestPlacement::contiguous_data()
{
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("gpus");
    QTest::addColumn<int>("redundant");
    QTest::addRow("deepseek nvl72") << 256 << 72 << 32;
    QTest::addRow("deepseek ep64") << 256 << 64 << 32;
    QTest::addRow("mixtral ep8") << 8 << 8 << 0;
    QTest::addRow("uneven") << 10 << 4 << 0;
}

void TestPlacement::contiguous()
{
    QFETCH(int, experts);
    QFETCH(int, gpus);
    QFETCH(int, redundant);
    const Placement p = contiguousPlacement(experts, gpus, 3, redundant);
    QCOMPARE(p.numLayers(), 3);
    QCOMPARE(p.numGpus(), gpus);
    QCOMPARE(p.layers[0].numSlots(), experts + redundant);
    QVERIFY(checkPlacement(p, experts, gpus).empty());
    const auto phy = p.layers[0].phy2log();
    for (int s = 0; s < experts + redundant; ++s)
        QCOMPARE(phy[static_cast<std::size_t>(s)], s % experts);  // physical slot s holds expert s mod E
    const int perGpu = (experts + redundant + gpus - 1) / gpus;
    QCOMPARE(p.maxSlotsPerGpu(), perGpu);
    const auto counts = p.layers[0].replicaCounts(experts);
    QCOMPARE(std::accumulate(counts.begin(), counts.end(), 0), experts + redundant);
}

void TestPlacement::checksFindProblems()
{
    Placement p = contiguousPlacement(8, 4, 2);
    p.layers[1].gpu_slots[3] = {ExpertId(6), ExpertId(9)};  // expert 7 gone, 9 does not exist
    const auto problems = checkPlacement(p, 8, 4);
    QCOMPARE(problems.size(), std::size_t(2));
    QVERIFY(QString::fromStdString(problems[0]).contains(QStringLiteral("names expert 9")));
    QVERIFY(QString::fromStdString(problems[1]).contains(QStringLiteral("1 expert has no slot: 7")));
    QVERIFY(!checkPlacement(p, 8, 5).empty());  // wrong GPU count

    Placement shares = contiguousPlacement(4, 2, 1, 2);  // experts 0 and 1 replicated
    shares.layers[0].shares = {{0.5, 0.5, 1.0}, {1.0, 0.5, 0.5}};
    QVERIFY(checkPlacement(shares, 4, 2).empty());
    shares.layers[0].shares[0][0] = 0.7;
    QCOMPARE(checkPlacement(shares, 4, 2).size(), std::size_t(1));
}

QTEST_APPLESS_MAIN(TestPlacement)
#include "tst_placement.moc"
