// The what-if compare view: A and B side by side — canvas thumbnails, headline totals, the
// term-by-term table (CompareModel: A, B, B/A, B-A, better/worse coloured) and the explanation.
#pragma once

#include <QFrame>
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

// A canvas thumbnail: the pixmap scaled to the widget's current size whenever it paints (a label
// holding a pre-scaled copy kept the size it had when the result came, before the table beside it
// settled, and drew the topology at a fraction of its box).
class Thumbnail : public QFrame {
public:
    explicit Thumbnail(QWidget* parent = nullptr);
    void setPixmap(const QPixmap& pm);
    // Where the pixmap is drawn: as large as the box allows, centred; empty without a pixmap.
    [[nodiscard]] QRect drawnRect() const;
    [[nodiscard]] QSize sizeHint() const override { return {320, 200}; }
    [[nodiscard]] QSize minimumSizeHint() const override { return {160, 100}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QPixmap m_pm;
};

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
    [[nodiscard]] Thumbnail* thumbnail(int side) const { return side == 0 ? m_thumbA : m_thumbB; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void arrange();
    session::CompareModel* m_model;
    QTableView* m_table;
    Thumbnail* m_thumbA;
    Thumbnail* m_thumbB;
    QLabel* m_titleA;
    QLabel* m_titleB;
    QLabel* m_totalsA;
    QLabel* m_totalsB;
    QLabel* m_explanation;
    QLabel* m_status;
    QLayout* m_sidesBox = nullptr;  // status, titles, thumbnails, totals
    QLayout* m_tableBox = nullptr;  // the table and the explanation
    int m_rowsHeight = 140;         // the table's rows, header and frame: its height without a scroll bar
    bool m_hasResult = false;
};

}  // namespace moex::app
