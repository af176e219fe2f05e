// Handing work from one thread to another in a way ThreadSanitizer can check.
//
// Debian's Qt is not built with -fsanitize=thread, so the synchronisation inside libQt6Core (the
// posted-event queue, QThreadPool's queue, a contended QMutex) is invisible to TSan: data passed
// through a queued functor or a pool job would look like a race. moex's hand-offs therefore go
// through synchronisation TSan sees:
//  - Mailbox: calls for one thread, queued under a std::mutex; Qt's event only says "drain" (a
//    member-function call carrying no data).
//  - startJob / waitForJobs: QThreadPool jobs with the start and the end stated to TSan.
// Without TSan the annotations compile to nothing. tests/tsan.supp lists the Qt-internal accesses
// that remain; tst_tsan_canary shows that a real race in moex code is still reported.
#pragma once

#include <QObject>
#include <QThreadPool>

#include <deque>
#include <functional>
#include <mutex>

namespace moex::session {

class Mailbox : public QObject {
    Q_OBJECT
public:
    explicit Mailbox(QObject* parent = nullptr) : QObject(parent) {}
    // Drops the calls still queued, under the lock (the last post may have come from another thread).
    ~Mailbox() override;

    // From any thread: `call` runs on the mailbox's thread, after the calls posted before it. Calls
    // still queued when the mailbox is destroyed are dropped; the owner keeps it alive while
    // another thread may post (e.g. by waiting for its jobs).
    void post(std::function<void()> call);

private:
    void drain();

    std::mutex m_mutex;
    std::deque<std::function<void()>> m_calls;  // m_mutex
    bool m_drainPending = false;                // m_mutex: one drain event in flight at a time
};

// A mailbox of the application's thread that lives as long as the application: for jobs that may
// outlive the object that started them. Create it from the application's thread.
Mailbox& applicationMailbox();

// One hand-off through Qt that no mailbox carries (e.g. a thread's last act before it quits): what
// the releasing thread did before handoffRelease(channel) happens-before what the acquiring thread
// does after handoffAcquire(channel), on the same address.
void handoffRelease(const void* channel);
void handoffAcquire(const void* channel);

// Starts `job` on `pool`: what the caller did before (the job's captures among it) happens-before
// the job, and the job's end is released for waitForJobs.
void startJob(QThreadPool& pool, std::function<void()> job);
// Waits for every job of `pool`: what they did happens-before what the caller does next.
void waitForJobs(QThreadPool& pool);

}  // namespace moex::session
