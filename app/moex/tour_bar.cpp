#include "tour_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>

namespace moex::app {

TourBar::TourBar(QWidget* parent)
    : QWidget(parent),
      m_title(new QLabel),
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
    auto* close = new QToolButton;
    close->setText(QStringLiteral("\u2715"));
    close->setToolTip(tr("End the tour"));
    close->setAutoRaise(true);

    auto* text = new QVBoxLayout;
    text->addWidget(m_title);
    text->addWidget(m_caption);
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

void TourBar::start(const session::Tour& tour)
{
    m_tour = tour;
    setVisible(!m_tour.steps.empty());
    if (!m_tour.steps.empty())
        show(0);
}

void TourBar::stop()
{
    m_tour = {};
    m_step = -1;
    hide();
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
    m_title->setText(s.title.isEmpty() ? m_tour.title : m_tour.title + QStringLiteral(" \u2014 ") + s.title);
    m_caption->setText(s.caption);
    m_counter->setText(tr("%1 / %2").arg(step + 1).arg(m_tour.steps.size()));
    m_prev->setEnabled(step > 0);
    m_next->setEnabled(step + 1 < static_cast<int>(m_tour.steps.size()));
    emit stepRequested(s);
}

}  // namespace moex::app
