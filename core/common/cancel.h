// Cancellation of long, pure computations (placement search, load estimates) that a newer request
// makes pointless: the requester holds a CancelSource, the computation a CancelToken that it checks
// at its natural boundaries (a layer, a routing step) and that throws Cancelled once cancelled.
// A default token is never cancelled, so every caller that does not care passes nothing.
//
//   CancelSource source;                       // the requester (e.g. the GUI's placement jobs)
//   run(..., source.token());                  // on a worker thread
//   source.cancel();                           // later: the worker throws Cancelled at its next check
#pragma once

#include <atomic>
#include <exception>
#include <memory>

namespace moex {

// Not an error: the computation was abandoned on request. Callers that cancel catch it first.
class Cancelled : public std::exception {
public:
    [[nodiscard]] const char* what() const noexcept override { return "cancelled"; }
};

class CancelToken {
public:
    CancelToken() = default;
    [[nodiscard]] bool requested() const { return m_flag && m_flag->load(std::memory_order_relaxed); }
    void check() const
    {
        if (requested())
            throw Cancelled();
    }

private:
    friend class CancelSource;
    explicit CancelToken(std::shared_ptr<const std::atomic<bool>> flag) : m_flag(std::move(flag)) {}
    std::shared_ptr<const std::atomic<bool>> m_flag;
};

class CancelSource {
public:
    CancelSource() : m_flag(std::make_shared<std::atomic<bool>>(false)) {}
    [[nodiscard]] CancelToken token() const { return CancelToken(m_flag); }
    void cancel() { m_flag->store(true, std::memory_order_relaxed); }
    [[nodiscard]] bool cancelled() const { return m_flag->load(std::memory_order_relaxed); }

private:
    std::shared_ptr<std::atomic<bool>> m_flag;
};

}  // namespace moex
