#include "tour_figures.h"

#include "document_changes.h"
#include "qt_text.h"
#include "run_summary.h"

#include <QRegularExpression>

#include <cmath>
#include <exception>

namespace moex::session {

std::vector<TourStepFigures> tourFigures(const Tour& tour, const CancelToken& cancel)
{
    std::vector<TourStepFigures> out;
    for (const TourStep& step : tour.steps) {
        cancel.check();
        TourStepFigures f;
        try {
            const PreparedChange placed = prepareLoad(ss(step.scenario), step.overrides, cancel);
            const RunSummary r = summarize(placed.state.scenario, placed.state.placement);
            f.ok = true;
            f.step_ms = r.mean.step_time_us / 1000.0;
            f.ktok_s = r.mean.tokens_per_s / 1000.0;
            f.imbalance = r.mean.imbalance;
            f.comm_ms = (r.mean.dispatch_us + r.mean.combine_us) / 1000.0;
            f.moe_ms = r.mean.moe_time_us / 1000.0;
        } catch (const Cancelled&) {
            throw;
        } catch (const std::exception& e) {
            f.error = e.what();
        }
        out.push_back(std::move(f));
    }
    return out;
}

namespace {

const TourStepFigures* figuresOf(const std::vector<TourStepFigures>& figures, int index)
{
    if (index < 0 || index >= static_cast<int>(figures.size()) || !figures[static_cast<std::size_t>(index)].ok)
        return nullptr;
    return &figures[static_cast<std::size_t>(index)];
}

QString number(double v, int decimals) { return QString::number(v, 'f', decimals); }

}  // namespace

QString fillCaption(const QString& caption, int step, const std::vector<TourStepFigures>& figures)
{
    static const QRegularExpression placeholder(
        QStringLiteral("\\{(step_ms|ktok_s|imbalance|comm_ms|moe_ms|loss|recovered)(?:@(\\d+)(?:,(\\d+))?)?\\}"));
    const QString unknown = QStringLiteral("\u2026");
    QString out;
    qsizetype at = 0;
    auto it = placeholder.globalMatch(caption);
    while (it.hasNext()) {
        const QRegularExpressionMatch m = it.next();
        out += caption.mid(at, m.capturedStart() - at);
        at = m.capturedEnd();
        const QString name = m.captured(1);
        const bool pair = name == QLatin1String("loss") || name == QLatin1String("recovered");
        if (pair && m.captured(3).isEmpty()) {
            out += m.captured(0);  // needs two steps: left as written
            continue;
        }
        const int first = m.captured(2).isEmpty() ? step : m.captured(2).toInt() - 1;
        const TourStepFigures* f = figuresOf(figures, first);
        if (pair) {
            const TourStepFigures* b = figuresOf(figures, m.captured(3).toInt() - 1);
            const TourStepFigures* self = figuresOf(figures, step);
            if (!f || !b || (name == QLatin1String("recovered") && !self)) {
                out += unknown;
            } else if (name == QLatin1String("loss")) {
                out += number(b->step_ms - f->step_ms, 2);
            } else {
                const double loss = b->step_ms - f->step_ms;
                out += std::abs(loss) < 1e-9 ? unknown
                                             : number(100.0 * (b->step_ms - self->step_ms) / loss, 0) + QLatin1Char('%');
            }
            continue;
        }
        if (!f) {
            out += unknown;
        } else if (name == QLatin1String("step_ms")) {
            out += number(f->step_ms, 2);
        } else if (name == QLatin1String("ktok_s")) {
            out += number(f->ktok_s, 0);
        } else if (name == QLatin1String("imbalance")) {
            out += number(f->imbalance, 2);
        } else if (name == QLatin1String("comm_ms")) {
            out += number(f->comm_ms, 2);
        } else {
            out += number(f->moe_ms, 2);
        }
    }
    out += caption.mid(at);
    return out;
}

}  // namespace moex::session
