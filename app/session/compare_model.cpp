#include "compare_model.h"

#include "qt_text.h"

#include <QLocale>

#include <cmath>

namespace moex::session {

namespace {

QString number(double v)
{
    const QLocale c = QLocale::c();
    QString s = std::abs(v) >= 100 ? c.toString(v, 'f', 0) : c.toString(v, 'f', 2);
    return s;
}

QString grouped(double v)
{
    QLocale en(QLocale::English);
    return std::abs(v) >= 10000 ? en.toString(std::llround(v)) : number(v);
}

}  // namespace

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareModel::setTerms(std::vector<CompareTerm> terms)
{
    beginResetModel();
    m_terms = std::move(terms);
    endResetModel();
}

void CompareModel::clear()
{
    setTerms({});
}

int CompareModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_terms.size());
}

int CompareModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString CompareModel::formatValue(const CompareTerm& t, double v)
{
    if (t.unit == "us")
        return number(v / 1000.0) + QStringLiteral(" ms");
    const QString n = grouped(v);
    return t.unit.empty() ? n : n + QLatin1Char(' ') + qs(t.unit);
}

QVariant CompareModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    const CompareTerm& t = m_terms[static_cast<std::size_t>(index.row())];
    const int col = index.column();
    if (role == Qt::DisplayRole) {
        switch (col) {
        case TermColumn: return qs(t.label);
        case AColumn: return formatValue(t, t.a);
        case BColumn: return formatValue(t, t.b);
        case RatioColumn: return t.ratio() ? QLocale::c().toString(*t.ratio(), 'f', 2) + QLatin1Char('x') : QStringLiteral("–");
        case DeltaColumn: {
            const QString v = formatValue(t, t.delta());
            return t.delta() > 0 ? QLatin1Char('+') + v : v;
        }
        default: return {};
        }
    }
    if (role == RawValueRole) {
        switch (col) {
        case AColumn: return t.a;
        case BColumn: return t.b;
        case RatioColumn: return t.ratio() ? QVariant(*t.ratio()) : QVariant();
        case DeltaColumn: return t.delta();
        default: return {};
        }
    }
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(col == TermColumn ? Qt::Alignment(Qt::AlignLeft | Qt::AlignVCenter)
                                                     : Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    if (role == BetterRole && (col == RatioColumn || col == DeltaColumn)) {
        const double rel = t.a != 0 ? t.delta() / std::abs(t.a) : (t.delta() != 0 ? 1.0 : 0.0);
        if (std::abs(rel) < 0.005)
            return 0;
        const bool higher = rel > 0;
        return higher == t.higher_is_better ? 1 : -1;
    }
    if (role == Qt::ToolTipRole)
        return QStringLiteral("%1 (%2)").arg(qs(t.label), qs(t.key));
    return {};
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Vertical)
        return section + 1;
    switch (section) {
    case TermColumn: return tr("Term");
    case AColumn: return tr("A");
    case BColumn: return tr("B");
    case RatioColumn: return tr("B/A");
    case DeltaColumn: return tr("B\u2212A");
    default: return {};
    }
}

}  // namespace moex::session
