// WorkerPool: a fixed set of threads that run the tasks of one call in parallel, the caller
// included, and return when all are done. For short, regular fan-outs (the routing generator's
// layers every step): threads are made once, woken per call, and idle between calls.
//
//   WorkerPool pool(4);                       // the caller and 3 threads
//   pool.run(layers, [&](int task, int worker) { ... });   // worker in [0, pool.size())
//
// Tasks are handed out in order from a shared counter, so which worker runs a task varies; results
// must not depend on it (give each task its own state, each worker its own scratch). The first
// exception a task throws is rethrown by run() after every task has finished or been skipped.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

namespace moex {

class WorkerPool {
public:
    // `threads` participants in all (at least 1: the caller alone runs every task).
    explicit WorkerPool(int threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    [[nodiscard]] int size() const { return static_cast<int>(m_threads.size()) + 1; }
    // fn(int task, int worker). No allocation: fn is called through a pointer to it.
    template <class Fn>
    void run(int tasks, Fn&& fn)
    {
        using F = std::remove_reference_t<Fn>;
        runTasks(tasks, [](void* f, int task, int worker) { (*static_cast<F*>(f))(task, worker); },
                 const_cast<void*>(static_cast<const void*>(&fn)));
    }

    // This machine's hardware threads (at least 1).
    [[nodiscard]] static int hardwareThreads();

private:
    using Call = void (*)(void* fn, int task, int worker);
    void runTasks(int tasks, Call call, void* fn);
    void workerLoop(int worker);
    void drain(int worker);

    std::vector<std::thread> m_threads;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_done;
    std::uint64_t m_generation = 0;  // bumped per run(); workers wait for a new one
    bool m_stop = false;
    int m_busy = 0;                  // workers still in the current run
    // The current run (valid while m_busy > 0 or the caller is in run()).
    Call m_call = nullptr;
    void* m_fn = nullptr;
    int m_tasks = 0;
    int m_next = 0;  // next task to hand out (under m_mutex)
    std::exception_ptr m_error;
};

}  // namespace moex
