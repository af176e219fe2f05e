// "New from sample…": the samples gallery, one line per sample (its opening comment), and the
// guided tours.
#pragma once

#include <QDialog>

class QListWidget;

namespace moex::app {

class SamplesDialog : public QDialog {
    Q_OBJECT
public:
    explicit SamplesDialog(const QString& samplesDir, QWidget* parent = nullptr);
    [[nodiscard]] QString chosenScenario() const { return m_scenario; }
    [[nodiscard]] QString chosenTour() const { return m_tour; }
    [[nodiscard]] QListWidget* list() const { return m_list; }

private:
    void accept() override;
    QListWidget* m_list;
    QString m_scenario;
    QString m_tour;
};

}  // namespace moex::app
