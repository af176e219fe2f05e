#include "compare_runner.h"

#include "mailbox.h"
#include "qt_text.h"

namespace moex::session {

ComparisonResult compareScenarios(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb,
                                  int steps, const std::function<bool()>& cancelled)
{
    ComparisonResult r;
    r.a = summarize(a, pa, steps, cancelled);
    r.b = summarize(b, pb, steps, cancelled);
    r.terms = compareTerms(r.a, r.b);
    r.explanation = explainComparison(r.a, r.b, r.terms);
    return r;
}

CompareRunner::CompareRunner(QObject* parent) : QObject(parent)
{
    m_pool.setMaxThreadCount(1);
    m_pool.setObjectName(QStringLiteral("moex-compare"));
}

CompareRunner::~CompareRunner()
{
    ++m_generation;  // the running request stops after its current step and delivers nothing
    m_pool.clear();
    waitForJobs(m_pool);
}

void CompareRunner::request(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb, int steps)
{
    const quint64 gen = ++m_generation;
    m_busy = true;
    m_pool.clear();  // superseded requests that have not started
    // The runner outlives its jobs (its destructor waits for them), so `this` is safe on the pool
    // thread; the queued delivery is dropped by Qt if the runner is gone by then.
    startJob(m_pool, [this, gen, a, pa, b, pb, steps] {
        const auto superseded = [this, gen] { return m_generation.load() != gen; };
        std::shared_ptr<const ComparisonResult> result;
        QString error;
        try {
            result = std::make_shared<const ComparisonResult>(compareScenarios(a, pa, b, pb, steps, superseded));
        } catch (const SummaryCancelled&) {
            ++m_cancelled;
            return;
        } catch (const std::exception& e) {
            error = errorText(e);
        }
        if (superseded())
            return;
        m_mailbox.post([this, gen, result, error] {
            if (m_generation.load() != gen)
                return;
            m_busy = false;
            if (result) {
                m_result = result;
                emit ready();
            } else {
                emit failed(error);
            }
        });
    });
}

}  // namespace moex::session
