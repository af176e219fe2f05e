// CompareModel: the what-if table (term, A, B, B/A, B-A) for a comparison of two scenarios.
// BetterRole on the B/A and B-A cells: +1 when B is better in that term, -1 worse, 0 same/neutral.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#ifndef Q_MOC_RUN
#include "comparison.h"
#endif

#include <vector>

namespace moex::session {

class CompareModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { TermColumn, AColumn, BColumn, RatioColumn, DeltaColumn, ColumnCount };
    static constexpr int BetterRole = Qt::UserRole + 1;
    static constexpr int RawValueRole = Qt::UserRole + 2;  // the number behind a cell (double)

    explicit CompareModel(QObject* parent = nullptr);

    void setTerms(std::vector<CompareTerm> terms);
    void clear();
    [[nodiscard]] const std::vector<CompareTerm>& terms() const { return m_terms; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // "12.34 ms", "1,234 tok/s": a term's value as the table shows it.
    static QString formatValue(const CompareTerm& t, double v);

private:
    std::vector<CompareTerm> m_terms;
};

}  // namespace moex::session
