// onThreads: the engine's ranks and expert workers, each on its own std::thread, with their
// failures carried back to the caller (internal to core/engine).
#pragma once

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moex::engine {

// Runs f(0) .. f(n - 1) on n threads. An exception escaping a std::thread ends the process, so the
// first one thrown is carried out and rethrown here once every thread has finished.
template <typename F>
void onThreads(int n, F&& f, bool callerTakesFirst = false)
{
    // With callerTakesFirst, index 0 runs on the calling thread (a rank's first expert worker:
    // no thread started for it, as before).
    std::exception_ptr first;
    std::mutex lock;
    auto guarded = [&](int i) {
        try {
            f(i);
        } catch (...) {
            const std::lock_guard<std::mutex> hold(lock);
            if (!first)
                first = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    bool started = true;
    try {
        for (int i = callerTakesFirst ? 1 : 0; i < n; ++i)
            pool.emplace_back(guarded, i);
    } catch (...) {  // a thread that could not start (EAGAIN under memory pressure): join the others, then fail
        started = false;
        const std::lock_guard<std::mutex> hold(lock);
        if (!first)
            first = std::current_exception();
    }
    if (callerTakesFirst && n > 0 && started)
        guarded(0);
    for (auto& t : pool)
        t.join();
    if (first)
        std::rethrow_exception(first);
}

}  // namespace moex::engine
