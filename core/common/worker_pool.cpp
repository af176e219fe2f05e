#include "common/worker_pool.h"

#include <algorithm>

namespace moex {

WorkerPool::WorkerPool(int threads)
{
    const int extra = std::max(0, threads - 1);
    m_threads.reserve(static_cast<std::size_t>(extra));
    for (int w = 1; w <= extra; ++w)
        m_threads.emplace_back([this, w] { workerLoop(w); });
}

WorkerPool::~WorkerPool()
{
    {
        const std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    for (std::thread& t : m_threads)
        t.join();
}

int WorkerPool::hardwareThreads()
{
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void WorkerPool::drain(int worker)
{
    // Tasks are coarse (a layer: tens of microseconds and more), so one lock per task is cheap.
    for (;;) {
        int task = 0;
        {
            const std::lock_guard lock(m_mutex);
            if (m_next >= m_tasks)
                return;
            task = m_next++;
            if (m_error)
                continue;  // skip the rest after a failure
        }
        try {
            m_call(m_fn, task, worker);
        } catch (...) {
            const std::lock_guard lock(m_mutex);
            if (!m_error)
                m_error = std::current_exception();
        }
    }
}

void WorkerPool::workerLoop(int worker)
{
    std::uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
            if (m_stop)
                return;
            seen = m_generation;
        }
        drain(worker);
        {
            const std::lock_guard lock(m_mutex);
            --m_busy;
        }
        m_done.notify_one();
    }
}

void WorkerPool::runTasks(int tasks, Call call, void* fn)
{
    if (tasks <= 0)
        return;
    if (m_threads.empty() || tasks == 1) {
        for (int t = 0; t < tasks; ++t)
            call(fn, t, 0);
        return;
    }
    {
        const std::lock_guard lock(m_mutex);
        m_call = call;
        m_fn = fn;
        m_tasks = tasks;
        m_next = 0;
        m_error = nullptr;
        m_busy = static_cast<int>(m_threads.size());
        ++m_generation;
    }
    m_wake.notify_all();
    drain(0);
    std::exception_ptr error;
    {
        std::unique_lock lock(m_mutex);
        m_done.wait(lock, [&] { return m_busy == 0; });
        m_call = nullptr;
        m_fn = nullptr;
        error = m_error;
        m_error = nullptr;
    }
    if (error)
        std::rethrow_exception(error);
}

}  // namespace moex
