// End-to-end points (issue 20 item 5, core/run/fidelity_e2e.cpp): published deployment
// throughputs and overlap gains, each a scenario run as `simulate` runs it. Checks the published
// figures, the directions the publications report between points, and the errors: within the 30%
// target except where the point names the term that bounds it, and never beyond 40%.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers
#include "run/fidelity_e2e.h"
#include "run/fidelity_lopo.h"
#endif

#include <QtTest>

#include <cmath>
#include <map>

using namespace moex;

class TestFidelityE2e : public QObject {
    Q_OBJECT
private slots:
    void pointsAsPublished();
    void leaveOnePublicationOut();
};

void TestFidelityE2e::pointsAsPublished()
{
    const auto points = runEndToEndFidelity(MOEX_SOURCE_DIR "/samples/models", 3);
    std::map<std::string, FidelityPoint> by;
    int checks = 0;
    for (const FidelityPoint& p : points) {
        QCOMPARE(p.kind, std::string("end-to-end"));
        QCOMPARE(p.unit, std::string(p.name.find("overlap-gain") != std::string::npos ? "x" : "tok/s/GPU"));
        QVERIFY(p.predicted > 0 && std::isfinite(p.predicted));
        checks += p.role == "check" ? 1 : 0;
        by[p.name] = p;
    }
    QCOMPARE(by.size(), std::size_t(9));
    // Only what ll_overlap_efficiency was chosen on is a fit point: the overlap gain at 256 tokens
    // per GPU and the throughput with overlap at that batch.
    QCOMPARE(checks, 7);
    QCOMPARE(by.at("sglang-h100-decode-overlap-gain-256").role, std::string("fit"));
    QCOMPARE(by.at("sglang-h100-decode-ep72-256").role, std::string("fit"));
    // Per node as published, per GPU here (8 per node).
    QCOMPARE(by.at("sglang-h100-decode-ep72-256").measured * 8, 22282.0);
    QCOMPARE(by.at("sglang-h100-prefill-ep32-1k").measured * 8, 57674.0);
    QCOMPARE(by.at("sglang-h100-prefill-ep32-2k").measured * 8, 54543.0);
    QCOMPARE(by.at("sglang-h100-prefill-ep32-4k").measured * 8, 50302.0);
    QCOMPARE(by.at("sglang-h100-prefill-ep32-4k-uniform").measured * 8, 59337.0);
    QCOMPARE(by.at("deepseek-h800-prefill-ep32-4k").measured * 8, 62713.0);
    QVERIFY(std::abs(by.at("sglang-h100-decode-ep72-256-no-overlap").measured * 8 * 1.255 - 22310.0) < 1e-6);

    // What the publication reports between its points, the model reproduces: overlap speeds decode
    // up, longer prompts slow prefill down, balanced routing speeds it up.
    auto pred = [&](const char* n) { return by.at(n).predicted; };
    QVERIFY(pred("sglang-h100-decode-ep72-256") > pred("sglang-h100-decode-ep72-256-no-overlap"));
    // Overlap pays at 256 tokens per GPU and costs at 32, where half batches run inefficiently.
    QVERIFY(pred("sglang-h100-decode-overlap-gain-256") > 1.0);
    QVERIFY(pred("sglang-h100-decode-overlap-gain-32") < 1.0);
    QVERIFY(std::abs(pred("sglang-h100-decode-overlap-gain-256") * pred("sglang-h100-decode-ep72-256-no-overlap")
                     - pred("sglang-h100-decode-ep72-256")) < 1e-6 * pred("sglang-h100-decode-ep72-256"));
    QVERIFY(pred("sglang-h100-prefill-ep32-1k") > pred("sglang-h100-prefill-ep32-2k"));
    QVERIFY(pred("sglang-h100-prefill-ep32-2k") > pred("sglang-h100-prefill-ep32-4k"));
    QVERIFY(pred("sglang-h100-prefill-ep32-4k-uniform") > pred("sglang-h100-prefill-ep32-4k"));

    for (const FidelityPoint& p : points) {
        const QString what = QStringLiteral("%1: measured %2, predicted %3 tok/s/GPU (%4%)")
                                 .arg(QString::fromStdString(p.name)).arg(p.measured).arg(p.predicted)
                                 .arg(100 * p.error(), 0, 'f', 1);
        QVERIFY2(std::abs(p.error()) <= 0.40, qPrintable(what));
        if (p.bound_by.empty())
            QVERIFY2(std::abs(p.error()) <= kEndToEndTarget, qPrintable(what));
        else
            QVERIFY2(std::abs(p.error()) > kEndToEndTarget, qPrintable(what + QStringLiteral(": names a bound but meets the target")));
    }
}

void TestFidelityE2e::leaveOnePublicationOut()
{
    // Three publications' points: DeepEP's intranode pair and NCCL's all-to-all share Hopper's
    // nvlink_efficiency; TensorRT-LLM's two small-batch points set Blackwell's floors alone.
    std::vector<FidelityPoint> points;
    for (FidelityPoint& p : runFidelity())
        if (p.name.rfind("deepep-intranode-", 0) == 0 || p.name.rfind("nccl-", 0) == 0 || p.name.find("-floor") != std::string::npos)
            points.push_back(std::move(p));
    QCOMPARE(points.size(), std::size_t(5));
    const auto folds = moex::leaveOnePublicationOut(points, MOEX_SOURCE_DIR "/samples/models", 1);
    QCOMPARE(folds.size(), std::size_t(3));
    QCOMPARE(folds[0].publication, std::string("DeepEP docs/legacy.md"));
    QCOMPARE(folds[1].publication, std::string("TensorRT-LLM tech blog 18"));
    QCOMPARE(folds[2].publication, std::string("NVIDIA/nccl-tests#212"));
    // Without DeepEP, nvlink_efficiency is refitted on NCCL's point alone (and ll_message_us, chosen
    // on DeepEP only, returns to 0); DeepEP's points are then predicted worse than with the default.
    QVERIFY2(QString::fromStdString(folds[0].refit).contains(QStringLiteral("hopper nvlink_efficiency"))
                 && QString::fromStdString(folds[0].refit).contains(QStringLiteral("refit on 1 point)"))
                 && QString::fromStdString(folds[0].refit).contains(QStringLiteral("ll_message_us 0 (prior)")),
             folds[0].refit.c_str());
    QCOMPARE(folds[0].points, 2);
    QVERIFY(folds[0].left_out > folds[0].in_sample);
    // Without TensorRT-LLM the floors return to the struct's 20 / 30 us: the measured 19 / 31 us
    // are then off by 1/19 and 1/31; in sample they are read off the measurement (0%).
    QCOMPARE(folds[1].points, 2);
    QVERIFY(folds[1].in_sample < 1e-9);
    QVERIFY2(std::abs(folds[1].left_out - 1.0 / 19.0) < 1e-6, qPrintable(QString::number(folds[1].left_out)));
    // Without NCCL, nvlink_efficiency comes from DeepEP's two intranode points alone.
    QVERIFY2(QString::fromStdString(folds[2].refit).contains(QStringLiteral("refit on 2 points")), folds[2].refit.c_str());
    QCOMPARE(folds[2].points, 1);
    QVERIFY(folds[2].left_out > folds[2].in_sample);
}

QTEST_MAIN(TestFidelityE2e)
#include "tst_fidelity_e2e.moc"
