#include "tour_bar.h"

#include "mailbox.h"
#include "views/elided_label.h"

#include <QFontMetrics>
#include <QHBoxLayout>
#include <QPointer>
#include <QThread>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace moex::app {

TourBar::TourBar(QWidget* parent)
    : QWidget(parent),
      m_title(new views::ElidedLabel(QString())),
      m_caption(new QLabel),
      m_counter(new QLabel),
      m_prev(new QPushButton(tr("\u25c0 Previous"))),
      m_next(new QPushButton(tr("Next \u25b6")))
{
    setObjectName(QStringLiteral("tourBar"));
    setAttribute(Qt::WA_StyledBackground, true);
    QFont f = m_title->font();
    f.setBold(true);
    m_title->setFont(f);
    m_caption->setWordWrap(true);
    m_caption->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_caption->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    // Never the window's minimum width; three lines reserved so the bar keeps its height.
    m_caption->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    m_caption->setMinimumWidth(1);
    m_caption->setFixedHeight(3 * m_caption->fontMetrics().lineSpacing() + 4);
    // m_title is an ElidedLabel: it never sets the window's minimum width.
    m_pool.setMaxThreadCount(1);
    // The figures are a nicety: they take the CPU only when nothing else wants it (SCHED_IDLE on
    // Linux), so that computing them never slows the window or a placement.
    m_pool.setThreadPriority(QThread::IdlePriority);
    auto* close = new QToolButton;
    close->setText(QStringLiteral("\u2715"));
    close->setToolTip(tr("End the tour"));
    close->setAutoRaise(true);

    auto* text = new QVBoxLayout;
    text->addWidget(m_title);
    text->addWidget(m_caption);
    // Fixed widths: Previous and Next stay where they were whatever the step.
    m_counter->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_counter->setFixedWidth(m_counter->fontMetrics().horizontalAdvance(QStringLiteral("88 / 88")) + 6);
    const int buttonWidth = std::max(m_prev->sizeHint().width(), m_next->sizeHint().width());
    m_prev->setFixedWidth(buttonWidth);
    m_next->setFixedWidth(buttonWidth);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_counter);
    buttons->addWidget(m_prev);
    buttons->addWidget(m_next);
    buttons->addWidget(close);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(10, 6, 6, 6);
    layout->addLayout(text, 1);
    layout->addLayout(buttons);

    connect(m_prev, &QPushButton::clicked, this, &TourBar::previous);
    connect(m_next, &QPushButton::clicked, this, &TourBar::next);
    connect(close, &QToolButton::clicked, this, [this] {
        stop();
        emit closed();
    });
    hide();
}

TourBar::~TourBar()
{
    m_cancel.cancel();
    session::waitForJobs(m_pool);
}

void TourBar::start(const session::Tour& tour)
{
    m_cancel.cancel();
    m_cancel = CancelSource();
    m_tour = tour;
    m_figures.clear();
    setVisible(!m_tour.steps.empty());
    if (m_tour.steps.empty())
        return;
    QPointer<TourBar> self(this);
    const CancelToken token = m_cancel.token();
    session::startJob(m_pool, [self, tour, token] {
        std::vector<session::TourStepFigures> figures;
        try {
            figures = session::tourFigures(tour, token);
        } catch (const Cancelled&) {
            return;
        }
        if (TourBar* bar = self.data())  // alive: its destructor waits for this job
            bar->m_mailbox.post([self, token, figures = std::move(figures)] {
                if (!self || token.requested())
                    return;
                self->m_figures = figures;
                self->showCaption();
                emit self->figuresReady();
            });
    });
    show(0);
}

void TourBar::stop()
{
    m_cancel.cancel();
    m_tour = {};
    m_figures.clear();
    m_step = -1;
    hide();
}

QString TourBar::captionText() const { return m_caption->text(); }

void TourBar::showCaption()
{
    if (m_step < 0 || m_step >= static_cast<int>(m_tour.steps.size()))
        return;
    const QString text = session::fillCaption(m_tour.steps[static_cast<std::size_t>(m_step)].caption, m_step, m_figures);
    m_caption->setText(text);
    m_caption->setToolTip(text);
}

void TourBar::next()
{
    if (m_step + 1 < static_cast<int>(m_tour.steps.size()))
        show(m_step + 1);
}

void TourBar::previous()
{
    if (m_step > 0)
        show(m_step - 1);
}

void TourBar::show(int step)
{
    m_step = step;
    const session::TourStep& s = m_tour.steps[static_cast<std::size_t>(step)];
    // The step first: where the bar is narrow the tour's name is what the ellipsis takes.
    const QString title = s.title.isEmpty() ? m_tour.title : s.title + QStringLiteral(" \u2014 ") + m_tour.title;
    m_title->setText(title);
    m_title->setToolTip(title);
    showCaption();
    m_counter->setText(tr("%1 / %2").arg(step + 1).arg(m_tour.steps.size()));
    m_prev->setEnabled(step > 0);
    m_next->setEnabled(step + 1 < static_cast<int>(m_tour.steps.size()));
    emit stepRequested(s);
}

}  // namespace moex::app
