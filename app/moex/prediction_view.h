// Predicted vs measured, live: with the local engine as the source, each measured step next to the
// simulator's prediction of it on host-cpu (run/host_prediction.h), per phase and per layer, with
// the calibration that made the prediction.
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "run/host_prediction.h"
#endif

class QLabel;
class QTableWidget;

namespace moex::app {

class PredictionView : public QWidget {
    Q_OBJECT
public:
    explicit PredictionView(QWidget* parent = nullptr);

    // `calibration`: its name, and whether it was measured on this machine; `note`: what else to
    // read the table with ("" when nothing), e.g. timeSharingNote's.
    void setRows(const std::vector<PredictionRow>& rows, const QString& calibration, bool measured,
                 const QString& note = {});
    void showMessage(const QString& text);
    [[nodiscard]] QTableWidget* table() const { return m_table; }

private:
    QLabel* m_status;
    QTableWidget* m_table;
};

}  // namespace moex::app
