// The ThreadSanitizer pass's canary (built only by the tsan preset): a real race in code shaped
// like moex's must still be reported with tests/tsan.supp in force. A worker thread posts a call
// back to the UI thread's mailbox (as CompareRunner's and ScenarioDocument's jobs do) and then, the
// bug, keeps writing a plain member that the UI thread's call reads without a lock. The CTest entry
// passes only when TSan's report names this file; a suppression that hid moex code would fail it.
#include "mailbox.h"

#include <QCoreApplication>
#include <QThread>

#include <cstdio>

namespace {

struct Progress {
    int steps = 0;  // written by the worker, read by the UI: unguarded on purpose
};

}  // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    Progress progress;
    QThread worker;
    worker.start();
    moex::session::Mailbox ui;
    auto* onWorker = new moex::session::Mailbox;
    onWorker->moveToThread(&worker);
    QObject::connect(&worker, &QThread::finished, onWorker, &QObject::deleteLater);
    onWorker->post([&progress, &ui] {
        ui.post([&progress] {
            std::printf("steps seen by the UI: %d\n", progress.steps);
            qApp->quit();
        });
        for (int i = 1; i <= 100000; ++i)
            progress.steps = i;  // after the post: unordered with the UI's read
    });
    const int rc = QCoreApplication::exec();
    worker.quit();
    worker.wait();
    return rc;
}
