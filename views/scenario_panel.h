// ScenarioPanel: the scenario's knobs — model, topology (with its parameters: nodes, racks, GPU),
// workload (phase, tokens per GPU, context length and spread, routing kind, skew, seed), placement strategy
// and redundant slots, precision (weights, dispatch, combine), overlap, per-GPU speed. It shows a
// Scenario and reports each change as a dotted KEY=VALUE override (the same keys as
// `moex-cli --set`, e.g. "workload.tokens_per_gpu" = "256", "gpus.speed.gpu17" = "0.85"); the
// application applies it and calls setScenario again (or showError when it was refused).
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "scenario/scenario.h"
#endif

#include <memory>

namespace moex::views {

class ScenarioPanel : public QWidget {
    Q_OBJECT
public:
    explicit ScenarioPanel(QWidget* parent = nullptr);
    ~ScenarioPanel() override;

    // Models offered in the model box: display name -> model file path (samples/models/*.yaml).
    void setModelChoices(const QStringList& names, const QStringList& paths);
    void setScenario(const Scenario& scenario);  // never emits overrideRequested
    // Shows `value` in the control of `key` (a change still being placed) without emitting; false
    // for a key the panel has no control for.
    bool showValue(const QString& key, const QString& value);
    // The message area: a fixed-height strip above the form, so that a message never moves the
    // controls under the mouse. One message at a time: an error (located, from the last change),
    // a note (a companion change that was made), or, while busy, what is being placed (the
    // numbers below are greyed until the new scenario arrives).
    void showError(const QString& text);
    void showNote(const QString& text);
    void setBusy(bool busy, const QString& text = {});
    // Under the topology: where the local engine runs the scenario instead of the drawn system
    // ("" hides it). The panel's controls stay the scenario's, which the model simulates.
    void setEngineNote(const QString& text);
    // Marks the labels of the controls that edit `keys` (a tour step's `set`), unmarking the last
    // ones; returns the first such control (for scrolling it into view), null when none.
    QWidget* highlightKeys(const QStringList& keys);
    [[nodiscard]] QStringList highlightedKeys() const;
    [[nodiscard]] QString engineNote() const;
    void clearError();
    [[nodiscard]] QString errorText() const;
    [[nodiscard]] QString messageText() const;  // whatever the strip shows ("" = nothing)
    [[nodiscard]] bool isBusy() const;
    // Never shorter than its rows at their natural height: in a scroll area it scrolls instead of
    // squeezing the spin boxes (they would then grow back under the mouse on the next relayout).
    [[nodiscard]] QSize minimumSizeHint() const override;

    // Every override key the panel can emit (gpus.speed.gpuN for the GPU chosen in the GPU box).
    [[nodiscard]] QStringList keys() const;

protected:
    void changeEvent(QEvent* event) override;  // a new font (presentation mode): the reserved heights follow

signals:
    void overrideRequested(const QString& key, const QString& value);

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

}  // namespace moex::views
