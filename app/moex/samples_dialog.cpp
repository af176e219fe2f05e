#include "samples_dialog.h"

#include "samples_catalog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace moex::app {

namespace {

constexpr int kPathRole = Qt::UserRole + 1;
constexpr int kIsTourRole = Qt::UserRole + 2;

void addHeader(QListWidget* list, const QString& text)
{
    auto* item = new QListWidgetItem(text, list);
    QFont f = item->font();
    f.setBold(true);
    f.setPointSizeF(f.pointSizeF() * 1.1);
    item->setFont(f);
    item->setFlags(Qt::NoItemFlags);
}

}  // namespace

SamplesDialog::SamplesDialog(const QString& samplesDir, QWidget* parent) : QDialog(parent), m_list(new QListWidget)
{
    setWindowTitle(tr("New from sample"));
    resize(860, 560);
    auto* intro = new QLabel(tr("Pick a sample scenario to explore, or a guided tour that walks through several."));
    intro->setWordWrap(true);
    m_list->setAlternatingRowColors(true);
    m_list->setWordWrap(true);
    m_list->setSpacing(2);

    addHeader(m_list, tr("Guided tours"));
    for (const auto& t : session::listTours(samplesDir + QStringLiteral("/tours"))) {
        auto* item = new QListWidgetItem(QStringLiteral("%1\n    %2").arg(t.name, t.summary), m_list);
        item->setData(kPathRole, t.path);
        item->setData(kIsTourRole, true);
        item->setToolTip(t.path);
    }
    addHeader(m_list, tr("Scenarios"));
    bool first = true;
    for (const auto& s : session::listSamples(samplesDir + QStringLiteral("/scenarios"))) {
        auto* item = new QListWidgetItem(QStringLiteral("%1\n    %2").arg(s.name, s.summary), m_list);
        item->setData(kPathRole, s.path);
        item->setData(kIsTourRole, false);
        item->setToolTip(s.path);
        if (first)
            m_list->setCurrentItem(item);
        first = false;
    }

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &SamplesDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QListWidget::itemDoubleClicked, this, [this] { accept(); });

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(m_list, 1);
    layout->addWidget(buttons);
}

void SamplesDialog::accept()
{
    const QListWidgetItem* item = m_list->currentItem();
    if (!item || !(item->flags() & Qt::ItemIsEnabled))
        return;
    const QString path = item->data(kPathRole).toString();
    if (item->data(kIsTourRole).toBool())
        m_tour = path;
    else
        m_scenario = path;
    QDialog::accept();
}

}  // namespace moex::app
