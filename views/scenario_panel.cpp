// ScenarioPanel: one form row per scenario knob; each committed edit becomes one dotted override
// (the keys of core/scenario: scenario_checks.cpp and topology_yaml.cpp).
#include "views/scenario_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSpinBox>
#include <QVBoxLayout>

#include <QEvent>
#include <QHash>

#include <functional>

namespace moex::views {

namespace {

// The override key a control edits, on the control (highlightKeys finds them by it).
constexpr const char* kKeyProperty = "moexOverrideKey";
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

void setCombo(QComboBox* box, const QString& value)
{
    int i = box->findData(value);
    if (i < 0)
        i = box->findText(value);
    if (i < 0) {
        box->addItem(value, value);
        i = box->count() - 1;
    }
    box->setCurrentIndex(i);
}
}  // namespace

struct ScenarioPanel::Impl {
    enum class Message { none, error, note, busy };
    ScenarioPanel* q;
    bool updating = false;
    QLabel* error = nullptr;  // the message strip
    Message message = Message::none;
    QHash<QString, std::function<void(const QString&)>> setters;  // showValue, by key
    QLabel* modelInfo = nullptr;
    QComboBox* model = nullptr;
    QComboBox* topology = nullptr;
    QSpinBox* racks = nullptr;
    QSpinBox* nodes = nullptr;
    QLabel* topoInfo = nullptr;
    QLabel* engineNote = nullptr;  // where the local engine runs instead (setEngineNote)
    QList<QLabel*> highlighted;    // labels of the keys a tour step set (highlightKeys)
    QStringList highlightedKeys;
    QComboBox* phase = nullptr;
    QSpinBox* tokens = nullptr;
    QSpinBox* context = nullptr;
    QDoubleSpinBox* contextCv = nullptr;
    QComboBox* routing = nullptr;
    QDoubleSpinBox* skew = nullptr;
    QSpinBox* seed = nullptr;
    QComboBox* strategy = nullptr;
    QSpinBox* redundant = nullptr;
    QComboBox* weights = nullptr;
    QComboBox* dispatch = nullptr;
    QComboBox* combine = nullptr;
    QComboBox* overlap = nullptr;
    QComboBox* a2aKernel = nullptr;
    QDoubleSpinBox* defaultSpeed = nullptr;
    QSpinBox* gpu = nullptr;
    QDoubleSpinBox* gpuSpeed = nullptr;
    GpuSpeeds speeds;

    void emitOverride(const QString& key, const QString& value)
    {
        if (!updating)
            emit q->overrideRequested(key, value);
    }
    void setMessage(Message kind, const QString& text)
    {
        static const char* const styles[] = {
            "QLabel { color: #707070; background: transparent; border: 1px solid transparent; padding: 3px; }",
            "QLabel { color: #b00020; background: #fdecee; border: 1px solid #f0b8c0; border-radius: 3px; padding: 3px; }",
            "QLabel { color: #0b4f8a; background: #e8f1fb; border: 1px solid #b8d4f0; border-radius: 3px; padding: 3px; }",
            "QLabel { color: #555555; background: #f1f1f1; border: 1px solid #dddddd; border-radius: 3px; padding: 3px; }"};
        message = text.isEmpty() ? Message::none : kind;
        error->setStyleSheet(QString::fromLatin1(styles[static_cast<int>(message)]));
        if (message == Message::none) {  // the reserved strip says how the panel works
            error->setText(ScenarioPanel::tr("Every change re-simulates; Edit \u25b8 Undo restores it exactly."));
            error->setToolTip(QString());
            fullMessage.clear();
            modelInfo->setEnabled(true);
            topoInfo->setEnabled(true);
            return;
        }
        // The strip holds three lines; the whole message is in the tooltip (and the status bar).
        const QFontMetrics fm(error->font());
        QString shown = text;
        const int width = std::max(120, error->width() - 10);
        if (fm.boundingRect(QRect(0, 0, width, 10000), Qt::TextWordWrap, text).height() > 3 * fm.lineSpacing()) {
            while (shown.size() > 8
                   && fm.boundingRect(QRect(0, 0, width, 10000), Qt::TextWordWrap, shown + QStringLiteral("\u2026")).height()
                          > 3 * fm.lineSpacing())
                shown.chop(std::max<qsizetype>(1, shown.size() / 16));
            shown += QStringLiteral("\u2026");
        }
        error->setText(shown);
        error->setToolTip(text);
        fullMessage = text;
        const bool busy = message == Message::busy;
        modelInfo->setEnabled(!busy);
        topoInfo->setEnabled(!busy);
    }
    QString fullMessage;
    // The message strip holds three lines, the model's info three (a hybrid stack adds its
    // layer kinds) and the topology's two, whatever they say, so that a message or a longer text
    // never moves the controls.
    void reserveHeights()
    {
        error->setFixedHeight(3 * error->fontMetrics().lineSpacing() + 10);
        modelInfo->setFixedHeight(3 * modelInfo->fontMetrics().lineSpacing() + 2);
        topoInfo->setFixedHeight(2 * topoInfo->fontMetrics().lineSpacing() + 2);
    }
    // Combo boxes as narrow as eight characters allow (long model names elide): the panel's
    // minimum width stays what a small screen can give it.
    static QComboBox* narrowCombo()
    {
        auto* box = new QComboBox;
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(8);
        return box;
    }
    QComboBox* combo(const QString& key, const QStringList& values)
    {
        auto* box = narrowCombo();
        box->setProperty(kKeyProperty, key);
        for (const QString& v : values)
            box->addItem(v, v);
        QObject::connect(box, &QComboBox::currentIndexChanged, q, [this, box, key] {
            emitOverride(key, box->currentData().toString());
        });
        return box;
    }
    QSpinBox* spin(const QString& key, int lo, int hi, int step = 1)
    {
        auto* box = new QSpinBox;
        box->setProperty(kKeyProperty, key);
        box->setRange(lo, hi);
        box->setSingleStep(step);
        box->setKeyboardTracking(false);  // one override per committed value, not per keystroke
        QObject::connect(box, &QSpinBox::valueChanged, q, [this, key](int v) { emitOverride(key, QString::number(v)); });
        return box;
    }
    QDoubleSpinBox* dspin(const QString& key, double lo, double hi, double step, int decimals)
    {
        auto* box = new QDoubleSpinBox;
        box->setProperty(kKeyProperty, key);
        box->setRange(lo, hi);
        box->setSingleStep(step);
        box->setDecimals(decimals);
        box->setKeyboardTracking(false);
        if (!key.isEmpty())
            QObject::connect(box, &QDoubleSpinBox::valueChanged, q,
                             [this, key](double v) { emitOverride(key, QString::number(v)); });
        return box;
    }
};

ScenarioPanel::ScenarioPanel(QWidget* parent) : QWidget(parent), d(std::make_unique<Impl>())
{
    d->q = this;
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);
    d->error = new QLabel;
    d->error->setObjectName(QStringLiteral("panelMessage"));
    d->error->setWordWrap(true);
    d->error->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    d->error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    d->error->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    d->error->setMinimumWidth(1);
    outer->addWidget(d->error);

    auto group = [&](const QString& title) {
        auto* box = new QGroupBox(title);
        auto* form = new QFormLayout(box);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        form->setLabelAlignment(Qt::AlignRight);
        outer->addWidget(box);
        return form;
    };

    // A line of facts under a group's fields: the form's full width, two lines reserved, so that a
    // longer text never changes the panel's layout (the full text is its tooltip).
    auto infoLabel = [] {
        auto* label = new QLabel;
        label->setWordWrap(true);
        label->setAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
        label->setStyleSheet(QStringLiteral("QLabel { color: #505050; }"));
        return label;
    };

    QFormLayout* f = group(tr("Model"));
    d->model = Impl::narrowCombo();
    connect(d->model, &QComboBox::activated, this, [this] {
        const QString path = d->model->currentData().toString();
        if (!path.isEmpty())
            d->emitOverride(QStringLiteral("model"), path);
    });
    f->addRow(tr("Model"), d->model);
    d->modelInfo = infoLabel();
    f->addRow(d->modelInfo);

    f = group(tr("Topology"));
    QStringList topoNames;
    for (const std::string& n : builtinTopologyNames())
        topoNames << QString::fromStdString(n);
    d->topology = d->combo(QStringLiteral("topology.builtin"), topoNames);
    f->addRow(tr("Built-in"), d->topology);
    d->racks = d->spin(QStringLiteral("topology.racks"), 1, 16);
    f->addRow(tr("Racks (NVL72)"), d->racks);
    d->nodes = d->spin(QStringLiteral("topology.nodes"), 1, 128);
    f->addRow(tr("Nodes (HGX)"), d->nodes);
    d->topoInfo = infoLabel();
    f->addRow(d->topoInfo);
    d->engineNote = infoLabel();
    d->engineNote->setObjectName(QStringLiteral("engineNote"));
    d->engineNote->setStyleSheet(QStringLiteral("QLabel { color: #1e4f9c; }"));
    d->engineNote->hide();
    f->addRow(d->engineNote);

    f = group(tr("Workload"));
    d->phase = d->combo(QStringLiteral("workload.phase"), {QStringLiteral("decode"), QStringLiteral("prefill")});
    f->addRow(tr("Phase"), d->phase);
    d->tokens = d->spin(QStringLiteral("workload.tokens_per_gpu"), 1, kMaxTokensPerGpu, 16);
    f->addRow(tr("Tokens per GPU"), d->tokens);
    d->context = d->spin(QStringLiteral("workload.context_tokens"), 1, 16 << 20, 1024);
    f->addRow(tr("Context tokens"), d->context);
    d->contextCv = d->dspin(QStringLiteral("workload.context_cv"), 0.0, 10.0, 0.1, 2);
    d->contextCv->setToolTip(tr("Spread of the sequences' context lengths (standard deviation / mean). Ranks whose "
                                "decode batches hold more context finish attention later; every layer waits for "
                                "the last. 0: all equal"));
    f->addRow(tr("Context spread (cv)"), d->contextCv);
    d->routing = d->combo(QStringLiteral("workload.routing.kind"),
                          {QStringLiteral("synthetic"), QStringLiteral("trace"), QStringLiteral("counts")});
    f->addRow(tr("Routing"), d->routing);
    d->skew = d->dspin(QStringLiteral("workload.routing.skew"), 0.0, 5.0, 0.1, 2);
    f->addRow(tr("Skew (Zipf)"), d->skew);
    d->seed = d->spin(QStringLiteral("workload.routing.seed"), 0, 1 << 30);
    f->addRow(tr("Seed"), d->seed);

    f = group(tr("Placement"));
    d->strategy = d->combo(QStringLiteral("placement.strategy"),
                           {QStringLiteral("contiguous"), QStringLiteral("round-robin"), QStringLiteral("eplb"),
                            QStringLiteral("eplb-exact"), QStringLiteral("gem"), QStringLiteral("search")});
    f->addRow(tr("Strategy"), d->strategy);
    d->redundant = d->spin(QStringLiteral("placement.redundant_slots"), 0, 1 << 16);
    f->addRow(tr("Redundant slots"), d->redundant);

    f = group(tr("Precision"));
    d->weights = d->combo(QStringLiteral("precision.weights"),
                          {QStringLiteral("bf16"), QStringLiteral("fp16"), QStringLiteral("fp8"), QStringLiteral("nvfp4"),
                           QStringLiteral("mxfp4"), QStringLiteral("int4")});
    f->addRow(tr("Weights"), d->weights);
    d->dispatch = d->combo(QStringLiteral("precision.dispatch"),
                           {QStringLiteral("bf16"), QStringLiteral("fp8"), QStringLiteral("nvfp4")});
    f->addRow(tr("Dispatch"), d->dispatch);
    d->combine = d->combo(QStringLiteral("precision.combine"), {QStringLiteral("bf16"), QStringLiteral("fp8")});
    f->addRow(tr("Combine"), d->combine);
    d->overlap = d->combo(QStringLiteral("overlap"), {QStringLiteral("none"), QStringLiteral("two-batch")});
    f->addRow(tr("Overlap"), d->overlap);
    d->a2aKernel = d->combo(QStringLiteral("a2a_kernel"), {QStringLiteral("deepep"), QStringLiteral("one-sided")});
    d->a2aKernel->setToolTip(tr("Decode's dispatch/combine kernels: DeepEP low-latency sends one message per "
                                "(token, expert); one-sided NVLink kernels (TensorRT-LLM) one per (token, GPU)"));
    f->addRow(tr("A2A kernel"), d->a2aKernel);

    f = group(tr("GPUs"));
    d->defaultSpeed = d->dspin(QStringLiteral("gpus.speed.default"), 0.01, 10.0, 0.05, 2);
    f->addRow(tr("Default speed"), d->defaultSpeed);
    auto* row = new QWidget;
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    d->gpu = new QSpinBox;
    d->gpu->setPrefix(tr("GPU "));
    d->gpuSpeed = d->dspin(QString(), 0.01, 10.0, 0.05, 2);
    d->gpuSpeed->setPrefix(QStringLiteral("×"));
    h->addWidget(d->gpu);
    h->addWidget(d->gpuSpeed);
    f->addRow(tr("Speed of"), row);
    connect(d->gpu, &QSpinBox::valueChanged, this, [this](int g) {
        const bool was = d->updating;
        d->updating = true;
        d->gpuSpeed->setValue(d->speeds.of(g));
        d->updating = was;
    });
    connect(d->gpuSpeed, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        d->emitOverride(QStringLiteral("gpus.speed.gpu%1").arg(d->gpu->value()), QString::number(v));
    });
    outer->addStretch(1);

    auto comboSetter = [](QComboBox* box) { return [box](const QString& v) { setCombo(box, v); }; };
    auto spinSetter = [](QSpinBox* box) { return [box](const QString& v) { box->setValue(v.toInt()); }; };
    d->setters = {
        {QStringLiteral("topology.builtin"), comboSetter(d->topology)},
        {QStringLiteral("topology.racks"), spinSetter(d->racks)},
        {QStringLiteral("topology.nodes"), spinSetter(d->nodes)},
        {QStringLiteral("workload.phase"), comboSetter(d->phase)},
        {QStringLiteral("workload.tokens_per_gpu"), spinSetter(d->tokens)},
        {QStringLiteral("workload.context_tokens"), spinSetter(d->context)},
        {QStringLiteral("workload.context_cv"), [this](const QString& v) { d->contextCv->setValue(v.toDouble()); }},
        {QStringLiteral("workload.routing.kind"), comboSetter(d->routing)},
        {QStringLiteral("workload.routing.skew"), [this](const QString& v) { d->skew->setValue(v.toDouble()); }},
        {QStringLiteral("workload.routing.seed"), spinSetter(d->seed)},
        {QStringLiteral("placement.strategy"), comboSetter(d->strategy)},
        {QStringLiteral("placement.redundant_slots"), spinSetter(d->redundant)},
        {QStringLiteral("precision.weights"), comboSetter(d->weights)},
        {QStringLiteral("precision.dispatch"), comboSetter(d->dispatch)},
        {QStringLiteral("precision.combine"), comboSetter(d->combine)},
        {QStringLiteral("overlap"), comboSetter(d->overlap)},
        {QStringLiteral("a2a_kernel"), comboSetter(d->a2aKernel)},
        {QStringLiteral("gpus.speed.default"), [this](const QString& v) { d->defaultSpeed->setValue(v.toDouble()); }},
        {QStringLiteral("model"), [this](const QString& v) {
             const int i = d->model->findData(v);
             if (i >= 0)
                 d->model->setCurrentIndex(i);
         }},
    };
    d->reserveHeights();
    d->setMessage(Impl::Message::none, QString());
}

void ScenarioPanel::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) {
        d->reserveHeights();
        d->setMessage(d->message, d->fullMessage);  // re-elided for the new font
    }
}

bool ScenarioPanel::showValue(const QString& key, const QString& value)
{
    const bool was = d->updating;
    d->updating = true;
    bool known = true;
    if (key.startsWith(QStringLiteral("gpus.speed.gpu"))) {
        bool ok = false;
        const int gpu = key.mid(14).toInt(&ok);
        if (ok && gpu >= d->gpu->minimum() && gpu <= d->gpu->maximum()) {
            d->gpu->setValue(gpu);
            d->gpuSpeed->setValue(value.toDouble());
        } else {
            known = false;
        }
    } else if (auto it = d->setters.constFind(key); it != d->setters.constEnd()) {
        (*it)(value);
    } else {
        known = false;
    }
    d->updating = was;
    return known;
}

ScenarioPanel::~ScenarioPanel() = default;

void ScenarioPanel::setModelChoices(const QStringList& names, const QStringList& paths)
{
    const bool was = d->updating;
    d->updating = true;
    d->model->clear();
    for (int i = 0; i < names.size(); ++i)
        d->model->addItem(names[i], i < paths.size() ? paths[i] : QString());
    d->updating = was;
}

void ScenarioPanel::setScenario(const Scenario& s)
{
    const bool was = d->updating;
    d->updating = true;
    // Model: select the entry whose path is the scenario's model file, else show its name.
    const QString modelPath = QString::fromStdString(s.model_source.path);
    int mi = modelPath.isEmpty() ? -1 : d->model->findData(modelPath);
    if (mi < 0)
        mi = d->model->findText(QString::fromStdString(s.model.name));
    if (mi < 0) {
        d->model->addItem(QString::fromStdString(s.model.name), modelPath);
        mi = d->model->count() - 1;
    }
    d->model->setCurrentIndex(mi);
    QString info = tr("%1 routed experts, top-%2, %3 MoE layers, %4 weights")
                       .arg(s.model.routed_experts)
                       .arg(s.model.experts_per_token)
                       .arg(s.model.numMoeLayers())
                       .arg(qs(toString(s.model.weight_dtype)));
    if (!s.model.layer_kinds.empty()) {  // a hybrid stack: say what mixes the tokens
        QStringList kinds;
        for (MixerKind k : {MixerKind::attention, MixerKind::sliding, MixerKind::linear, MixerKind::mamba})
            if (const int n = s.model.countMixer(k); n > 0)
                kinds << tr("%1 %2").arg(n).arg(qs(toString(k)));
        info += QStringLiteral("; ") + kinds.join(QStringLiteral(", "));
    }
    d->modelInfo->setText(info);

    const bool builtin = s.topology_source.kind == SourceRef::Kind::builtin;
    const QString key = QString::fromStdString(builtin ? s.topology_params.builtin : s.topology.builtin);
    if (!key.isEmpty())
        setCombo(d->topology, key);
    d->topology->setEnabled(builtin);
    const bool nvl = key.contains(QStringLiteral("nvl72"));
    d->racks->setValue(s.topology_params.racks);
    d->nodes->setValue(s.topology_params.nodes);
    d->racks->setEnabled(builtin && nvl);
    d->nodes->setEnabled(builtin && !nvl);
    const int domains = s.topology.numDomains();
    d->topoInfo->setText(tr("%1: %2 GPUs (%3), %4")
                             .arg(QString::fromStdString(s.topology.name))
                             .arg(s.topology.numGpus())
                             .arg(QString::fromStdString(s.topology.gpu.name))
                             .arg(domains == 1 ? tr("one NVLink domain") : tr("%1 NVLink domains").arg(domains)));

    setCombo(d->phase, qs(toString(s.workload.phase)));
    d->tokens->setValue(s.workload.tokens_per_gpu);
    d->context->setValue(s.workload.context_tokens);
    d->contextCv->setValue(s.workload.context_cv);
    setCombo(d->routing, qs(toString(s.workload.routing.kind)));
    d->skew->setValue(s.workload.routing.skew);
    d->seed->setValue(static_cast<int>(std::min<std::uint64_t>(s.workload.routing.seed, 1u << 30)));
    // Skew and seed shape the synthetic generator; a replayed trace or counts file has neither
    // (a change would be refused as a key the kind ignores).
    const bool generated = s.workload.routing.kind == RoutingKind::synthetic;
    const QString replayed = generated ? QString() : tr("The routing replays its file: skew and seed shape the synthetic generator only");
    for (QWidget* w : {static_cast<QWidget*>(d->skew), static_cast<QWidget*>(d->seed)}) {
        w->setEnabled(generated);
        w->setToolTip(replayed);
    }

    setCombo(d->strategy, QString::fromStdString(s.placement.strategy));
    d->redundant->setValue(s.placement.redundant_slots);

    setCombo(d->weights, qs(toString(s.precision.weights)));
    setCombo(d->dispatch, qs(toString(s.precision.dispatch)));
    setCombo(d->combine, qs(toString(s.precision.combine)));
    setCombo(d->overlap, s.overlap == Overlap::two_batch ? QStringLiteral("two-batch") : QStringLiteral("none"));
    setCombo(d->a2aKernel, qs(toString(s.a2a_kernel)));

    d->speeds = s.speeds;
    d->defaultSpeed->setValue(s.speeds.default_speed);
    d->gpu->setRange(0, std::max(0, s.topology.numGpus() - 1));
    d->gpuSpeed->setValue(s.speeds.of(d->gpu->value()));
    d->modelInfo->setToolTip(d->modelInfo->text());
    d->topoInfo->setToolTip(d->topoInfo->text());
    d->updating = was;
}

void ScenarioPanel::showError(const QString& text) { d->setMessage(Impl::Message::error, text); }

void ScenarioPanel::showNote(const QString& text) { d->setMessage(Impl::Message::note, text); }

QWidget* ScenarioPanel::highlightKeys(const QStringList& keys)
{
    for (QLabel* label : std::as_const(d->highlighted))
        label->setStyleSheet({});
    d->highlighted.clear();
    d->highlightedKeys.clear();
    QWidget* first = nullptr;
    for (QWidget* w : findChildren<QWidget*>()) {
        const QString key = w->property(kKeyProperty).toString();
        if (key.isEmpty() || !keys.contains(key))
            continue;
        auto* form = w->parentWidget() ? qobject_cast<QFormLayout*>(w->parentWidget()->layout()) : nullptr;
        auto* label = form ? qobject_cast<QLabel*>(form->labelForField(w)) : nullptr;
        if (!label)
            continue;
        label->setStyleSheet(QStringLiteral("QLabel { background: #ffe680; font-weight: bold; border-radius: 3px; }"));
        d->highlighted << label;
        d->highlightedKeys << key;
        if (!first)
            first = w;
    }
    return first;
}

QStringList ScenarioPanel::highlightedKeys() const { return d->highlightedKeys; }

void ScenarioPanel::setEngineNote(const QString& text)
{
    d->engineNote->setText(text);
    d->engineNote->setVisible(!text.isEmpty());
}

QString ScenarioPanel::engineNote() const { return d->engineNote->isHidden() ? QString() : d->engineNote->text(); }

void ScenarioPanel::setBusy(bool busy, const QString& text)
{
    if (busy)
        d->setMessage(Impl::Message::busy, text.isEmpty() ? tr("Placing\u2026") : text);
    else if (d->message == Impl::Message::busy)
        d->setMessage(Impl::Message::none, QString());
}

QSize ScenarioPanel::minimumSizeHint() const
{
    const QSize m = QWidget::minimumSizeHint();
    return {m.width(), std::max(m.height(), sizeHint().height())};
}

bool ScenarioPanel::isBusy() const { return d->message == Impl::Message::busy; }

void ScenarioPanel::clearError()
{
    if (d->message == Impl::Message::error)
        d->setMessage(Impl::Message::none, QString());
}

QString ScenarioPanel::errorText() const { return d->message == Impl::Message::error ? d->fullMessage : QString(); }

QString ScenarioPanel::messageText() const { return d->fullMessage; }

QStringList ScenarioPanel::keys() const
{
    return {QStringLiteral("model"),
            QStringLiteral("topology.builtin"),
            QStringLiteral("topology.racks"),
            QStringLiteral("topology.nodes"),
            QStringLiteral("workload.phase"),
            QStringLiteral("workload.tokens_per_gpu"),
            QStringLiteral("workload.context_tokens"),
            QStringLiteral("workload.context_cv"),
            QStringLiteral("workload.routing.kind"),
            QStringLiteral("workload.routing.skew"),
            QStringLiteral("workload.routing.seed"),
            QStringLiteral("placement.strategy"),
            QStringLiteral("placement.redundant_slots"),
            QStringLiteral("precision.weights"),
            QStringLiteral("precision.dispatch"),
            QStringLiteral("precision.combine"),
            QStringLiteral("overlap"),
            QStringLiteral("a2a_kernel"),
            QStringLiteral("gpus.speed.default"),
            QStringLiteral("gpus.speed.gpu%1").arg(d->gpu->value())};
}

}  // namespace moex::views
