// ScenarioPanel: the scenario's knobs — model, topology (with its parameters: nodes, racks, GPU),
// workload (phase, tokens per GPU, context length, routing kind, skew, seed), placement strategy
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
    void showError(const QString& text);         // located error from applying the last change
    void clearError();
    [[nodiscard]] QString errorText() const;
    // Every override key the panel can emit (gpus.speed.gpuN for the GPU chosen in the GPU box).
    [[nodiscard]] QStringList keys() const;

signals:
    void overrideRequested(const QString& key, const QString& value);

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

}  // namespace moex::views
