// The guided-tour bar above the canvas: the tour's title, the step's caption, previous / next.
// Captions quote figures computed when the tour starts (tour_figures.h), on the bar's own
// background thread; until they arrive the figures show as "…". The bar never sets the window's
// minimum width (its caption wraps into three reserved lines) and its buttons keep their places.
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

signals:
    void stepRequested(const moex::session::TourStep& step);
    void closed();
    void figuresReady();

private:
    void show(int step);
    void showCaption();
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
