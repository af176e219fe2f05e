#include "compare_runner.h"

#include "qt_text.h"

#include <QPointer>
#include <QRunnable>
#include <QThread>
#include <QThreadPool>

namespace moex::session {

ComparisonResult compareScenarios(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb,
                                  int steps)
{
    ComparisonResult r;
    r.a = summarize(a, pa, steps);
    r.b = summarize(b, pb, steps);
    r.terms = compareTerms(r.a, r.b);
    r.explanation = explainComparison(r.a, r.b, r.terms);
    return r;
}

struct CompareRunner::Jobs {
    std::atomic<quint64> generation{0};
    std::atomic<int> running{0};
};

CompareRunner::CompareRunner(QObject* parent) : QObject(parent), m_jobs(std::make_shared<Jobs>()) {}

CompareRunner::~CompareRunner()
{
    ++m_jobs->generation;  // results of running jobs are dropped
    while (m_jobs->running.load() > 0)
        QThread::msleep(2);
}

void CompareRunner::request(const Scenario& a, const Placement& pa, const Scenario& b, const Placement& pb, int steps)
{
    auto jobs = m_jobs;
    const quint64 gen = ++jobs->generation;
    m_busy = true;
    QPointer<CompareRunner> self(this);
    ++jobs->running;
    QThreadPool::globalInstance()->start([self, jobs, gen, a, pa, b, pb, steps] {
        std::shared_ptr<const ComparisonResult> result;
        QString error;
        try {
            result = std::make_shared<const ComparisonResult>(compareScenarios(a, pa, b, pb, steps));
        } catch (const std::exception& e) {
            error = errorText(e);
        }
        if (jobs->generation.load() != gen) {
            --jobs->running;
            return;
        }
        QMetaObject::invokeMethod(
            self.data(),
            [self, jobs, gen, result, error] {
                CompareRunner* r = self.data();
                if (r == nullptr || jobs->generation.load() != gen)
                    return;
                r->m_busy = false;
                if (result) {
                    r->m_result = result;
                    emit r->ready();
                } else {
                    emit r->failed(error);
                }
            },
            Qt::QueuedConnection);
        --jobs->running;
    });
}

}  // namespace moex::session
