// WorkerPool: every task runs exactly once per call, on workers in [0, size()), the caller
// included; calls follow one another; a task's exception reaches the caller after the others ended.
#include "common/worker_pool.h"

#include <QtTest>

#include <atomic>
#include <set>
#include <stdexcept>
#include <vector>

using moex::WorkerPool;

class TestWorkerPool : public QObject {
    Q_OBJECT
private slots:
    void everyTaskOnce_data();
    void everyTaskOnce();
    void exceptionReachesTheCaller();
    void singleThreadRunsOnTheCaller();
};

void TestWorkerPool::everyTaskOnce_data()
{
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("tasks");
    for (int threads : {1, 2, 5})
        for (int tasks : {0, 1, 3, 58, 1000})
            QTest::addRow("%d threads, %d tasks", threads, tasks) << threads << tasks;
}

void TestWorkerPool::everyTaskOnce()
{
    QFETCH(int, threads);
    QFETCH(int, tasks);
    WorkerPool pool(threads);
    QCOMPARE(pool.size(), threads);
    for (int call = 0; call < 20; ++call) {  // many calls in a row on the same threads
        std::vector<std::atomic<int>> ran(static_cast<std::size_t>(tasks));
        std::atomic<int> badWorker{0};
        pool.run(tasks, [&](int task, int worker) {
            ran[static_cast<std::size_t>(task)].fetch_add(1);
            if (worker < 0 || worker >= threads)
                badWorker.fetch_add(1);
        });
        for (int t = 0; t < tasks; ++t)
            QCOMPARE(ran[static_cast<std::size_t>(t)].load(), 1);
        QCOMPARE(badWorker.load(), 0);
    }
}

void TestWorkerPool::exceptionReachesTheCaller()
{
    WorkerPool pool(3);
    std::atomic<int> started{0};
    bool caught = false;
    try {
        pool.run(50, [&](int task, int) {
            started.fetch_add(1);
            if (task == 7)
                throw std::runtime_error("task 7 failed");
        });
    } catch (const std::runtime_error& e) {
        caught = QString::fromLatin1(e.what()) == QStringLiteral("task 7 failed");
    }
    QVERIFY(caught);
    QVERIFY(started.load() >= 8 && started.load() <= 50);
    // The pool still works after a failed call.
    std::atomic<int> n{0};
    pool.run(10, [&](int, int) { n.fetch_add(1); });
    QCOMPARE(n.load(), 10);
}

void TestWorkerPool::singleThreadRunsOnTheCaller()
{
    WorkerPool pool(1);
    std::set<int> workers;
    std::vector<int> order;
    pool.run(5, [&](int task, int worker) {
        workers.insert(worker);
        order.push_back(task);
    });
    QCOMPARE(workers, std::set<int>{0});
    QCOMPARE(order, (std::vector<int>{0, 1, 2, 3, 4}));
    QVERIFY(WorkerPool::hardwareThreads() >= 1);
}

QTEST_GUILESS_MAIN(TestWorkerPool)
#include "tst_worker_pool.moc"
