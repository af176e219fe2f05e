// The guided-tour bar above the canvas: the tour's title, the step's caption, previous / next.
// Captions quote figures computed when the tour starts (tour_figures.h), on the bar's own
// background thread; until they arrive the figures show as "…". The bar spans the window (a tool
// bar row of its own): the title shares a row with Previous / Next, which keep their places; the
// caption wraps in the whole width below, as tall as the tour's longest caption needs, and never
// sets the window's minimum width.
#pragma once

#include <QWidget>

#include <QThreadPool>

#ifndef Q_MOC_RUN
#include "common/cancel.h"
#include "mailbox.h"
#include "samples_catalog.h"
#include "tour_figures.h"
#endif

class QLabel;
class QPushButton;

namespace moex::app {

class TourBar : public QWidget {
    Q_OBJECT
public:
    explicit TourBar(QWidget* parent = nullptr);
    ~TourBar() override;

    void start(const session::Tour& tour);  // shows step 0 (emits stepRequested)
    void stop();
    [[nodiscard]] bool active() const { return !m_tour.steps.empty(); }
    [[nodiscard]] int currentStep() const { return m_step; }
    [[nodiscard]] const session::Tour& tour() const { return m_tour; }
    void next();
    void previous();
    [[nodiscard]] QString captionText() const;  // the caption as shown, figures filled
    [[nodiscard]] bool hasFigures() const { return !m_figures.empty(); }
    // The caption's height at a width: the longest step's caption, figures filled or still to come.
    [[nodiscard]] int captionHeightFor(int width) const;

signals:
    void stepRequested(const moex::session::TourStep& step);
    void closed();
    void figuresReady();
    void activeChanged(bool active);  // the host shows the bar while a tour runs

protected:
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void show(int step);
    void showCaption();
    void updateSizes();  // the counter's width and the caption's height, for the bar's font
    void updateCaptionHeight();
    session::Tour m_tour;
    std::vector<session::TourStepFigures> m_figures;
    CancelSource m_cancel;
    session::Mailbox m_mailbox;  // the figures back to this thread
    QThreadPool m_pool;
    int m_step = -1;
    QLabel* m_title;
    QLabel* m_caption;
    QLabel* m_counter;
    QPushButton* m_prev;
    QPushButton* m_next;
};

}  // namespace moex::app
