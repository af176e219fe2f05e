// CompareRunner: simulates A and B for a few steps each on a pool thread (never the UI thread) and
// hands back the comparison; a newer request supersedes an older one still running.
#pragma once

#include <QObject>
#include <QString>

#ifndef Q_MOC_RUN
#include "comparison.h"
#endif

#include <atomic>
#include <memory>

namespace moex::session {

struct ComparisonResult {
    RunSummary a;
    RunSummary b;
    std::vector<CompareTerm> terms;
    std::string explanation;
};

// Synchronous: both runs and the terms. Throws like the simulator.
ComparisonResult compareScenarios(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb,
                                  int steps);

class CompareRunner : public QObject {
    Q_OBJECT
public:
    explicit CompareRunner(QObject* parent = nullptr);
    ~CompareRunner() override;

    void request(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb, int steps = 6);
    [[nodiscard]] std::shared_ptr<const ComparisonResult> result() const { return m_result; }
    [[nodiscard]] bool busy() const { return m_busy; }

signals:
    void ready();                          // result() holds the newest comparison
    void failed(const QString& message);

private:
    struct Jobs;
    std::shared_ptr<Jobs> m_jobs;
    std::shared_ptr<const ComparisonResult> m_result;
    bool m_busy = false;
};

}  // namespace moex::session
