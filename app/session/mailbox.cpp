#include "mailbox.h"

#include <QCoreApplication>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace moex::session {

namespace {

// Every job start uses this one channel: the job's wrapper cannot read a captured channel before
// it has acquired one.
char jobStart = 0;

}  // namespace

// Edges through Qt's queues, stated to TSan (a no-op without it).
void handoffRelease([[maybe_unused]] const void* channel)
{
#if defined(__SANITIZE_THREAD__)
    __tsan_release(const_cast<void*>(channel));
#endif
}

void handoffAcquire([[maybe_unused]] const void* channel)
{
#if defined(__SANITIZE_THREAD__)
    __tsan_acquire(const_cast<void*>(channel));
#endif
}

Mailbox::~Mailbox()
{
    std::lock_guard lock(m_mutex);
    m_calls.clear();
}

void Mailbox::post(std::function<void()> call)
{
    bool wake = false;
    {
        std::lock_guard lock(m_mutex);
        m_calls.push_back(std::move(call));
        wake = !m_drainPending;
        m_drainPending = true;
    }
    if (wake) {
        handoffRelease(this);  // the mailbox itself (made on another thread, perhaps) before its first drain
        QMetaObject::invokeMethod(this, &Mailbox::drain, Qt::QueuedConnection);
    }
}

void Mailbox::drain()
{
    handoffAcquire(this);
    std::deque<std::function<void()>> calls;
    {
        std::lock_guard lock(m_mutex);
        calls.swap(m_calls);
        m_drainPending = false;
    }
    for (auto& call : calls)
        call();
}

Mailbox& applicationMailbox()
{
    static auto* mailbox = new Mailbox(QCoreApplication::instance());  // deleted with the application
    return *mailbox;
}

void startJob(QThreadPool& pool, std::function<void()> job)
{
    std::function<void()> handed = [&pool, job = std::move(job)]() mutable {
        handoffAcquire(&jobStart);
        job();
        job = nullptr;  // its captures are destroyed before the release, not later by Qt
        handoffRelease(&pool);
    };
    handoffRelease(&jobStart);
    pool.start(std::move(handed));  // moves the pointer to the captures: nothing is written after the release
}

void waitForJobs(QThreadPool& pool)
{
    pool.waitForDone();
    handoffAcquire(&pool);
}

}  // namespace moex::session
