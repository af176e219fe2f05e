// The guided-tour bar above the canvas: the tour's title, the step's caption, previous / next.
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "samples_catalog.h"
#endif

class QLabel;
class QPushButton;

namespace moex::app {

class TourBar : public QWidget {
    Q_OBJECT
public:
    explicit TourBar(QWidget* parent = nullptr);

    void start(const session::Tour& tour);  // shows step 0 (emits stepRequested)
    void stop();
    [[nodiscard]] bool active() const { return !m_tour.steps.empty(); }
    [[nodiscard]] int currentStep() const { return m_step; }
    [[nodiscard]] const session::Tour& tour() const { return m_tour; }
    void next();
    void previous();

signals:
    void stepRequested(const moex::session::TourStep& step);
    void closed();

private:
    void show(int step);
    session::Tour m_tour;
    int m_step = -1;
    QLabel* m_title;
    QLabel* m_caption;
    QLabel* m_counter;
    QPushButton* m_prev;
    QPushButton* m_next;
};

}  // namespace moex::app
