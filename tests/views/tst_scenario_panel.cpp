#include "views/scenario_panel.h"

#include "views_fixture.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

using namespace moex::views;
using namespace moex::views::test;

class TestScenarioPanel : public QObject {
    Q_OBJECT
private:
    // The spin box whose emitted key is `key` (found by changing each and watching the signal).
    template <class Box>
    static Box* boxFor(ScenarioPanel& panel, const QString& key)
    {
        QSignalSpy spy(&panel, &ScenarioPanel::overrideRequested);
        for (Box* b : panel.findChildren<Box*>()) {
            spy.clear();
            const auto old = b->value();
            b->setValue(b->value() == b->maximum() ? b->minimum() : b->value() + b->singleStep());
            const bool hit = !spy.isEmpty() && spy.last().at(0).toString() == key;
            b->setValue(old);
            if (hit)
                return b;
        }
        return nullptr;
    }

private slots:
    void setScenarioDoesNotEmit()
    {
        const Sample s = loadSample(samplePath("deepseek-r1-decode-nvl72-slow-gpus.yaml"), false);
        ScenarioPanel panel;
        panel.setModelChoices({QStringLiteral("DeepSeek-R1")},
                              {QStringLiteral(MOEX_SOURCE_DIR "/samples/models/deepseek-r1.yaml")});
        QSignalSpy spy(&panel, &ScenarioPanel::overrideRequested);
        panel.setScenario(s.scenario);
        const Sample h = loadSample(samplePath("deepseek-r1-decode-hgx-h200x8.yaml"), false);
        panel.setScenario(h.scenario);
        QCOMPARE(spy.count(), 0);
    }

    // Skew and seed shape the synthetic generator: off for a scenario that replays a file (a change
    // would be refused as a key the kind ignores), on again for a synthetic one.
    void skewAndSeedOnlyForTheGenerator()
    {
        Sample s = loadSample(samplePath("mixtral-8x7b-decode-hgx-h100.yaml"), false);
        ScenarioPanel panel;
        panel.setScenario(s.scenario);
        QDoubleSpinBox* skew = boxFor<QDoubleSpinBox>(panel, QStringLiteral("workload.routing.skew"));
        QSpinBox* seed = boxFor<QSpinBox>(panel, QStringLiteral("workload.routing.seed"));
        QVERIFY(skew && seed);
        QVERIFY(skew->isEnabled() && seed->isEnabled());
        s.scenario.workload.routing.kind = moex::RoutingKind::trace;
        panel.setScenario(s.scenario);
        QVERIFY(!skew->isEnabled() && !seed->isEnabled());
        QVERIFY(skew->toolTip().contains(QStringLiteral("replays its file")));
        s.scenario.workload.routing.kind = moex::RoutingKind::synthetic;
        panel.setScenario(s.scenario);
        QVERIFY(skew->isEnabled() && seed->isEnabled() && skew->toolTip().isEmpty());
    }

    void tokensPerGpuEmitsItsKey()
    {
        const Sample s = loadSample(samplePath("deepseek-r1-decode-nvl72.yaml"), false);
        ScenarioPanel panel;
        panel.setScenario(s.scenario);
        QSpinBox* tokens = boxFor<QSpinBox>(panel, QStringLiteral("workload.tokens_per_gpu"));
        QVERIFY(tokens);
        QCOMPARE(tokens->value(), 128);
        QSignalSpy spy(&panel, &ScenarioPanel::overrideRequested);
        tokens->setValue(256);
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("workload.tokens_per_gpu"));
        QCOMPARE(spy.at(0).at(1).toString(), QStringLiteral("256"));
    }

    void gpuSpeedEmitsPerGpuKey()
    {
        const Sample s = loadSample(samplePath("deepseek-r1-decode-nvl72-slow-gpus.yaml"), false);
        ScenarioPanel panel;
        panel.setScenario(s.scenario);
        QSpinBox* gpu = nullptr;
        for (QSpinBox* b : panel.findChildren<QSpinBox*>())
            if (b->prefix() == QStringLiteral("GPU "))
                gpu = b;
        QVERIFY(gpu);
        QSignalSpy spy(&panel, &ScenarioPanel::overrideRequested);
        gpu->setValue(17);  // shows GPU 17's speed, emits nothing
        QCOMPARE(spy.count(), 0);
        QDoubleSpinBox* speed = nullptr;
        for (QDoubleSpinBox* b : panel.findChildren<QDoubleSpinBox*>())
            if (b->prefix() == QStringLiteral("×"))
                speed = b;
        QVERIFY(speed);
        QCOMPARE(speed->value(), 0.80);
        speed->setValue(0.9);
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("gpus.speed.gpu17"));
        QCOMPARE(spy.at(0).at(1).toString(), QStringLiteral("0.9"));
    }

    void showErrorShowsAMessage()
    {
        ScenarioPanel panel;
        panel.showError(QStringLiteral("scenario.yaml:3:5: error: bad"));
        panel.show();
        QCOMPARE(panel.errorText(), QStringLiteral("scenario.yaml:3:5: error: bad"));
        panel.clearError();
        QVERIFY(panel.errorText().isEmpty());
    }

    // Every key the panel emits, with the values its widgets offer, loads.
    void everyEmittedOverrideLoads_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addRow("nvl72") << QString::fromStdString(samplePath("deepseek-r1-decode-nvl72.yaml"));
        QTest::addRow("hgx") << QString::fromStdString(samplePath("deepseek-r1-decode-hgx-h200x8.yaml"));
    }
    void everyEmittedOverrideLoads()
    {
        QFETCH(QString, file);
        const Sample s = loadSample(file.toStdString(), false);
        ScenarioPanel panel;
        panel.setModelChoices({QStringLiteral("DeepSeek-R1"), QStringLiteral("Kimi K2")},
                              {QStringLiteral(MOEX_SOURCE_DIR "/samples/models/deepseek-r1.yaml"),
                               QStringLiteral(MOEX_SOURCE_DIR "/samples/models/kimi-k2-thinking.yaml")});
        panel.setScenario(s.scenario);
        QList<std::pair<QString, QString>> emitted;
        connect(&panel, &ScenarioPanel::overrideRequested, this,
                [&](const QString& k, const QString& v) { emitted.append({k, v}); });
        // Each combo: every entry; each spin box: one step.
        for (QComboBox* c : panel.findChildren<QComboBox*>()) {
            const int old = c->currentIndex();
            for (int i = 0; i < c->count(); ++i) {
                c->setCurrentIndex(i);
                emit c->activated(i);
            }
            c->setCurrentIndex(old);
        }
        for (QSpinBox* b : panel.findChildren<QSpinBox*>())
            if (b->isEnabled())
                b->setValue(b->value() + 1);
        for (QDoubleSpinBox* b : panel.findChildren<QDoubleSpinBox*>())  // one step, away from the bound
            b->setValue(b->value() - 0.05 >= b->minimum() ? b->value() - 0.05 : b->value() + 0.05);
        QSet<QString> keys;
        for (const auto& [k, v] : emitted)
            keys.insert(k);
        for (const QString& k : panel.keys())
            if (!k.startsWith(QStringLiteral("topology.")) || k == QStringLiteral("topology.builtin"))
                QVERIFY2(keys.contains(k) || k.startsWith(QStringLiteral("gpus.speed.gpu")),
                         qPrintable(QStringLiteral("never emitted: ") + k));
        QVERIFY(std::any_of(keys.begin(), keys.end(), [](const QString& k) {
            return k.startsWith(QStringLiteral("gpus.speed.gpu")) && k != QStringLiteral("gpus.speed.default");
        }));
        int checked = 0;
        for (const auto& [k, v] : emitted) {
            // Values that need more than the key (a routing file for traces, slots for the
            // explicit strategy, a family change) are refused by the core with a located error,
            // which the application shows: a wrong key would be refused for every value.
            try {
                moex::loadScenarioFile(file.toStdString(), {{k.toStdString(), v.toStdString()}});
                ++checked;
            } catch (const moex::InputError& e) {
                const QString msg = QString::fromStdString(e.what());
                const bool expected = (k == QStringLiteral("workload.routing.kind") && v != QStringLiteral("synthetic"))
                                      || k == QStringLiteral("topology.builtin")
                                      || (k == QStringLiteral("precision.weights") && msg.contains(QStringLiteral("fit")))
                                      || (k == QStringLiteral("workload.phase") && msg.contains(QStringLiteral("fit")));
                QVERIFY2(expected, qPrintable(k + QLatin1Char('=') + v + QStringLiteral(": ") + msg));
            }
        }
        QVERIFY(checked >= 15);
    }
};

QTEST_MAIN(TestScenarioPanel)
#include "tst_scenario_panel.moc"
