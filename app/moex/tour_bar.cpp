#include "tour_bar.h"

#include "mailbox.h"
#include "views/elided_label.h"

#include <QEvent>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QPointer>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#ifdef __linux__
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace moex::app {

namespace {

// Nice 10 for the calling thread (Linux: a thread's own nice value): about a tenth of a core's
// share against busy normal threads. Not SCHED_IDLE (QThread::IdlePriority): under a machine kept
// busy (a build, a test run) that starved the figures for minutes, and a screenshot or a test
// waiting on them timed out with "…" in the caption.
void lowerThisThread()
{
#ifdef __linux__
    // Best effort: where it fails the figures still come, at normal priority.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
#endif
}

}  // namespace

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
    // Never the window's minimum width; its height is the longest step's (updateCaptionHeight), so
    // that the bar keeps its height from step to step.
    m_caption->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    m_caption->setMinimumWidth(1);
    // m_title is an ElidedLabel: it never sets the window's minimum width.
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_pool.setMaxThreadCount(1);
    // The figures are a nicety: their thread runs at a lower priority (lowerThisThread), so that
    // computing them hardly slows the window or a placement.
    auto* close = new QToolButton;
    close->setText(QStringLiteral("\u2715"));
    close->setToolTip(tr("End the tour"));
    close->setAutoRaise(true);

    // Previous and Next stay where they were whatever the step: their texts never change and the
    // counter's width is fixed (updateSizes, again when the font changes).
    m_counter->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    // The title shares its row with the buttons; the caption has the bar's whole width below them,
    // so that a narrow window still reads it in a few lines.
    auto* top = new QHBoxLayout;
    top->addWidget(m_title, 1);
    top->addWidget(m_counter);
    top->addWidget(m_prev);
    top->addWidget(m_next);
    top->addWidget(close);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 4, 6, 4);
    layout->setSpacing(2);
    layout->addLayout(top);
    layout->addWidget(m_caption);
    updateSizes();

    connect(m_prev, &QPushButton::clicked, this, &TourBar::previous);
    connect(m_next, &QPushButton::clicked, this, &TourBar::next);
    connect(close, &QToolButton::clicked, this, [this] {
        stop();
        emit closed();
    });
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
    emit activeChanged(active());
    if (m_tour.steps.empty())
        return;
    updateCaptionHeight();
    QPointer<TourBar> self(this);
    const CancelToken token = m_cancel.token();
    session::startJob(m_pool, [self, tour, token] {
        lowerThisThread();
        std::vector<session::TourStepFigures> figures;
        try {
            figures = session::tourFigures(tour, token);
        } catch (const Cancelled&) {
            return;
        }
        if (TourBar* bar = self.data())  // alive: its destructor waits for this job
            bar->m_mailbox.post([self, token, figures = std::move(figures)]() mutable {
                // One read of the guard: every self-> would read it again, and GCC then warns
                // that the pointer it dereferences may be null.
                TourBar* const alive = self.data();
                if (!alive || token.requested())
                    return;
                alive->m_figures = std::move(figures);  // the mailbox runs each message once
                alive->updateCaptionHeight();
                alive->showCaption();
                emit alive->figuresReady();
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
    emit activeChanged(false);
}

QString TourBar::captionText() const { return m_caption->text(); }

int TourBar::captionHeightFor(int width) const
{
    // Every step's caption as shown now, and with each figure still to come as six characters
    // (the bar must not grow a line when the figures arrive).
    static const QRegularExpression field(QStringLiteral("\\{[^{}]*\\}"));
    const QFontMetrics fm(font());  // the caption's, which it takes from the bar
    const int lines = 2;
    int height = 0;
    for (std::size_t i = 0; i < m_tour.steps.size(); ++i) {
        const QString& caption = m_tour.steps[i].caption;
        for (const QString& text : {session::fillCaption(caption, static_cast<int>(i), m_figures),
                                    QString(caption).replace(field, QStringLiteral("000.00"))})
            height = std::max(height, fm.boundingRect(QRect(0, 0, std::max(width, 1), 1 << 20),
                                                      Qt::AlignLeft | Qt::TextWordWrap, text).height());
    }
    return std::max(height, lines * fm.lineSpacing()) + 4;
}

void TourBar::updateSizes()
{
    m_counter->setFixedWidth(fontMetrics().horizontalAdvance(QStringLiteral("88 / 88")) + 6);
    updateCaptionHeight();
}

void TourBar::updateCaptionHeight()
{
    const QMargins m = layout()->contentsMargins();
    const int h = captionHeightFor(width() - m.left() - m.right());
    if (m_caption->minimumHeight() != h || m_caption->maximumHeight() != h)
        m_caption->setFixedHeight(h);
}

void TourBar::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    updateCaptionHeight();
}

void TourBar::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange)  // presentation mode
        updateSizes();
}

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
