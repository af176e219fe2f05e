// A one-line label that never sets its parent's minimum width: when it has less room than its
// text, the text ends in "…" (the whole text is the tooltip). For hints and captions in bars that
// must fit a small screen.
#pragma once

#include <QLabel>
#include <QPainter>
#include <QStyle>

namespace moex::views {

class ElidedLabel : public QLabel {
public:
    explicit ElidedLabel(const QString& text, QWidget* parent = nullptr) : QLabel(text, parent)
    {
        setToolTip(text);
        setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    }
    [[nodiscard]] QSize minimumSizeHint() const override { return {0, QLabel::minimumSizeHint().height()}; }

protected:
    void paintEvent(QPaintEvent*) override
    {
        QPainter p(this);
        const QRect r = contentsRect();
        const QString shown = fontMetrics().elidedText(text(), Qt::ElideRight, r.width());
        style()->drawItemText(&p, r, static_cast<int>(alignment()), palette(), isEnabled(), shown, foregroundRole());
    }
};

}  // namespace moex::views
