#include "compare_view.h"

#include "compare_model.h"
#include "qt_text.h"

#include <QBrush>
#include <QColor>
#include <QGridLayout>
#include <QHeaderView>
#include <QIdentityProxyModel>
#include <QLabel>
#include <QLocale>
#include <QPainter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace moex::app {

namespace {

// Colours the B/A and B-A cells: green where B is better, red where worse.
class BetterColours : public QIdentityProxyModel {
public:
    using QIdentityProxyModel::QIdentityProxyModel;
    QVariant data(const QModelIndex& index, int role) const override
    {
        if (role == Qt::ForegroundRole) {
            const int better = QIdentityProxyModel::data(index, session::CompareModel::BetterRole).toInt();
            if (better > 0)
                return QBrush(QColor(0x1b, 0x7f, 0x3b));
            if (better < 0)
                return QBrush(QColor(0xb3, 0x26, 0x1e));
        }
        return QIdentityProxyModel::data(index, role);
    }
};

QString totals(const StepTotals& t)
{
    const QLocale en(QLocale::English);
    return QObject::tr("<b>%1 ms</b> per step &middot; <b>%2</b> tok/s<br>%3 tok/s per GPU &middot; %4 tok/s per kW"
                       "<br>imbalance %5")
        .arg(QLocale::c().toString(t.step_time_us / 1000.0, 'f', 2), en.toString(std::llround(t.tokens_per_s)),
             en.toString(std::llround(t.tokens_per_s_per_gpu)), en.toString(std::llround(t.tokens_per_s_per_kw)),
             QLocale::c().toString(t.imbalance, 'f', 3));
}

}  // namespace

Thumbnail::Thumbnail(QWidget* parent) : QFrame(parent)
{
    setFrameShape(QFrame::StyledPanel);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void Thumbnail::setPixmap(const QPixmap& pm)
{
    m_pm = pm;
    update();
}

QRect Thumbnail::drawnRect() const
{
    if (m_pm.isNull())
        return {};
    const QRect box = contentsRect().adjusted(4, 4, -4, -4);
    QRect r(QPoint(0, 0), m_pm.size().scaled(box.size(), Qt::KeepAspectRatio));
    r.moveCenter(box.center());
    return r;
}

void Thumbnail::paintEvent(QPaintEvent* event)
{
    QFrame::paintEvent(event);
    if (m_pm.isNull())
        return;
    QPainter p(this);
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.drawPixmap(drawnRect(), m_pm);
}

CompareView::CompareView(QWidget* parent)
    : QWidget(parent),
      m_model(new session::CompareModel(this)),
      m_table(new QTableView),
      m_thumbA(new Thumbnail),
      m_thumbB(new Thumbnail),
      m_titleA(new QLabel),
      m_titleB(new QLabel),
      m_totalsA(new QLabel),
      m_totalsB(new QLabel),
      m_explanation(new QLabel),
      m_status(new QLabel)
{
    auto* proxy = new BetterColours(this);
    proxy->setSourceModel(m_model);
    m_table->setModel(proxy);
    m_table->verticalHeader()->hide();
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);

    for (QLabel* l : {m_totalsA, m_totalsB, m_explanation, m_status})
        l->setWordWrap(true);
    for (QLabel* l : {m_titleA, m_titleB}) {
        QFont f = l->font();
        f.setBold(true);
        l->setFont(f);
    }
    m_explanation->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->setObjectName(QStringLiteral("compareStatus"));

    auto* sides = new QGridLayout;
    sides->addWidget(m_titleA, 0, 0);
    sides->addWidget(m_titleB, 0, 1);
    sides->addWidget(m_thumbA, 1, 0);
    sides->addWidget(m_thumbB, 1, 1);
    sides->addWidget(m_totalsA, 2, 0);
    sides->addWidget(m_totalsB, 2, 1);
    sides->setRowStretch(1, 1);

    auto* right = new QVBoxLayout;
    right->addWidget(m_table, 10);
    right->addWidget(m_explanation);
    right->addStretch(1);
    m_table->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);

    auto* top = new QBoxLayout(QBoxLayout::LeftToRight, this);
    top->setObjectName(QStringLiteral("compareLayout"));
    auto* leftBox = new QVBoxLayout;
    leftBox->addWidget(m_status);
    leftBox->addLayout(sides, 1);
    top->addLayout(leftBox, 5);
    top->addLayout(right, 6);
    m_sidesBox = leftBox;
    m_tableBox = right;
    setNames(tr("A"), tr("B"));
    showMessage(tr("Edit \u25b8 Duplicate as B makes a copy of this scenario; change anything in B and the "
                   "difference shows here, term by term."));
}

void CompareView::setNames(const QString& a, const QString& b)
{
    m_titleA->setText(tr("A: %1").arg(a));
    m_titleB->setText(tr("B: %1").arg(b));
}

void CompareView::setResult(const session::ComparisonResult& r)
{
    m_model->setTerms(r.terms);
    // The table as tall as its rows (no empty grid below them), the explanation right under it.
    const int rowsHeight = m_table->verticalHeader()->defaultSectionSize() * m_model->rowCount()
                           + m_table->horizontalHeader()->sizeHint().height() + 2 * m_table->frameWidth() + 4;
    m_table->setMaximumHeight(rowsHeight);
    m_rowsHeight = rowsHeight;
    arrange();
    m_totalsA->setText(totals(r.a.mean));
    m_totalsB->setText(totals(r.b.mean));
    m_explanation->setText(session::qs(r.explanation).trimmed());
    m_hasResult = true;
    m_status->setText(tr("Mean of %1 simulated steps each.").arg(r.a.steps));
}

void CompareView::setThumbnails(const QPixmap& a, const QPixmap& b)
{
    m_thumbA->setPixmap(a);
    m_thumbB->setPixmap(b);
}

void CompareView::arrange()
{
    // Wide and short (a dock): thumbnails left of the table, 5 : 6. Tall (a tab, a screenshot): the
    // table on top, as tall as its rows, and the thumbnails side by side below it in all the
    // height that is left (not a gap under the explanation).
    auto* box = qobject_cast<QBoxLayout*>(layout());
    if (!box)
        return;
    const bool tall = height() > 560;
    const auto dir = tall ? QBoxLayout::BottomToTop : QBoxLayout::LeftToRight;
    if (box->direction() != dir)
        box->setDirection(dir);
    box->setStretchFactor(m_sidesBox, tall ? 1 : 5);
    box->setStretchFactor(m_tableBox, tall ? 0 : 6);
    // Every row shown where half the height holds them; a dock scrolls below 140 pixels.
    m_table->setMinimumHeight(std::min(m_rowsHeight, tall ? height() / 2 : 140));
}

void CompareView::resizeEvent(QResizeEvent* event)
{
    arrange();
    QWidget::resizeEvent(event);
}

void CompareView::setBusy(bool busy)
{
    if (busy)
        m_status->setText(tr("Simulating A and B\u2026"));
}

void CompareView::clear()
{
    m_model->clear();
    m_totalsA->clear();
    m_totalsB->clear();
    m_explanation->clear();
    setThumbnails(QPixmap(), QPixmap());
    m_hasResult = false;
    m_status->setText(tr("Edit \u25b8 Duplicate as B to compare a what-if with this scenario."));
}

void CompareView::showMessage(const QString& text)
{
    m_status->setText(text);
}

}  // namespace moex::app
