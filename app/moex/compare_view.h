// The what-if compare view: A and B side by side — canvas thumbnails, headline totals, the
// term-by-term table (CompareModel: A, B, B/A, B-A, better/worse coloured) and the explanation.
#pragma once

#include <QPixmap>
#include <QWidget>

#ifndef Q_MOC_RUN
#include "compare_runner.h"
#endif

class QLabel;
class QTableView;

namespace moex::session {
class CompareModel;
}

namespace moex::app {

class CompareView : public QWidget {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);

    void setNames(const QString& a, const QString& b);
    void setResult(const session::ComparisonResult& r);
    void setThumbnails(const QPixmap& a, const QPixmap& b);
    void setBusy(bool busy);
    void showMessage(const QString& text);  // e.g. "Duplicate as B to compare" or an error
    void clear();                           // no B: no result, no thumbnails

    [[nodiscard]] session::CompareModel* model() const { return m_model; }
    [[nodiscard]] QTableView* table() const { return m_table; }
    [[nodiscard]] bool hasResult() const { return m_hasResult; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void rescaleThumbnails();
    session::CompareModel* m_model;
    QTableView* m_table;
    QLabel* m_thumbA;
    QLabel* m_thumbB;
    QLabel* m_titleA;
    QLabel* m_titleB;
    QLabel* m_totalsA;
    QLabel* m_totalsB;
    QLabel* m_explanation;
    QLabel* m_status;
    QPixmap m_pixA, m_pixB;
    bool m_hasResult = false;
};

}  // namespace moex::app
