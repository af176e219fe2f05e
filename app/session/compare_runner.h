// CompareRunner: simulates A and B for a few steps each on a thread of its own (never the UI
// thread) and hands back the comparison. A newer request supersedes the older ones: a request
// still queued is dropped, the one running stops after its current step, and neither delivers.
#pragma once

#include <QObject>
#include <QString>
#include <QThreadPool>

#ifndef Q_MOC_RUN
#include "comparison.h"
#include "mailbox.h"
#endif

#include <atomic>
#include <functional>
#include <memory>

namespace moex::session {

struct ComparisonResult {
    RunSummary a;
    RunSummary b;
    std::vector<CompareTerm> terms;
    std::string explanation;
};

// Synchronous: both runs and the terms. Throws like the simulator; SummaryCancelled when
// `cancelled` answers true (asked between steps).
ComparisonResult compareScenarios(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb,
                                  int steps, const std::function<bool()>& cancelled = {});

class CompareRunner : public QObject {
    Q_OBJECT
public:
    explicit CompareRunner(QObject* parent = nullptr);
    // Cancels the running request and waits for it to stop (one step at most).
    ~CompareRunner() override;

    void request(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb,
                 int steps = kSummarySteps);
    [[nodiscard]] std::shared_ptr<const ComparisonResult> result() const { return m_result; }
    [[nodiscard]] bool busy() const { return m_busy; }
    // Requests that stopped early because a newer one superseded them (tests, diagnostics).
    [[nodiscard]] int cancelledCount() const { return m_cancelled.load(); }

signals:
    void ready();                          // result() holds the newest comparison
    void failed(const QString& message);

private:
    std::atomic<quint64> m_generation{0};  // the newest request; older ones see it and stop
    std::atomic<int> m_cancelled{0};
    Mailbox m_mailbox;                     // results back to this thread
    QThreadPool m_pool;                    // one thread: requests run one at a time
    std::shared_ptr<const ComparisonResult> m_result;
    bool m_busy = false;
};

}  // namespace moex::session
