// moex --screenshot: the PNG exists, has the requested size, is not blank and shows the expert
// load on its colour map (both ends of viridis, pixel by pixel); bad flags exit 2;
// with no display `moex SCENARIO` prints the headless summary.
#include <QColor>
#include <QImage>
#include <QElapsedTimer>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <cstdlib>

namespace {

const QString kMoex = QStringLiteral(MOEX_BINARY);

QString sample(const char* name)
{
    return QStringLiteral(MOEX_SOURCE_DIR "/samples/scenarios/") + QLatin1String(name);
}

struct Result {
    int code = -1;
    QString out;
    QString err;
};

Result run(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(kMoex, args);
    if (!p.waitForFinished(240000)) {
        p.kill();
        return {};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

int distinctColours(const QImage& img)
{
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
        for (int x = 0; x < img.width(); x += 3)
            colours.insert(img.pixel(x, y));
    return static_cast<int>(colours.size());
}

// Pixels within `tolerance` of `c` in every channel.
int pixelsNear(const QImage& img, QColor c, int tolerance = 8)
{
    int n = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor p = img.pixelColor(x, y);
            n += std::abs(p.red() - c.red()) <= tolerance && std::abs(p.green() - c.green()) <= tolerance
                 && std::abs(p.blue() - c.blue()) <= tolerance;
        }
    return n;
}

}  // namespace

class TestScreenshot : public QObject {
    Q_OBJECT
private slots:
    void wholeWindowAtRequestedSize()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("main.png"));
        const Result r = run({QStringLiteral("--screenshot"), out, sample("mixtral-8x7b-decode-hgx-h100.yaml"),
                              QStringLiteral("--size"), QStringLiteral("1280x800")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QImage img(out);
        QVERIFY(!img.isNull());
        QCOMPARE(img.size(), QSize(1280, 800));
        QVERIFY2(distinctColours(img) > 100, qPrintable(QString::number(distinctColours(img))));
    }

    void partsRender()
    {
        QTemporaryDir dir;
        for (const char* view : {"topology", "heatmaps", "compare"}) {
            const QString out = dir.filePath(QLatin1String(view) + QStringLiteral(".png"));
            const Result r = run({QStringLiteral("--screenshot"), out, QStringLiteral("--view"), QLatin1String(view),
                                  sample("mixtral-8x7b-decode-hgx-h100.yaml"), QStringLiteral("--size=900x600")});
            QVERIFY2(r.code == 0, qPrintable(QLatin1String(view) + QStringLiteral(": ") + r.err));
            QImage img(out);
            QCOMPARE(img.size(), QSize(900, 600));
            QVERIFY2(distinctColours(img) > 50, view);
            if (QLatin1String(view) == QLatin1String("compare"))
                continue;
            // Expert load is drawn on viridis from the least to the most loaded expert (the
            // topology's expert cells, the heatmap's cells): both ends of the map are on screen,
            // matplotlib's #440154 and #fde725.
            QVERIFY2(pixelsNear(img, QColor(0x44, 0x01, 0x54)) >= 9, view);
            QVERIFY2(pixelsNear(img, QColor(0xfd, 0xe7, 0x25)) >= 9, view);
        }
    }

    void badFlagsExitTwo()
    {
        for (const QStringList& args : {QStringList{QStringLiteral("--screenshot")},
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--view"), QStringLiteral("sideways")},
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--size"), QStringLiteral("big")},
                                        QStringList{QStringLiteral("--frobnicate")},
                                        QStringList{QStringLiteral("--presentation")},
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--gpu"), QStringLiteral("-1")},
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--gpu"), QStringLiteral("999")},
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--tour"), QStringLiteral("/nonexistent/tour.yaml")},
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--tour-step"), QStringLiteral("zero")},
                                        // --tour-step without --tour, and a scenario beside --tour: they were ignored
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--tour-step"), QStringLiteral("2")},
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"), QStringLiteral("--tour"),
                                                    QStringLiteral("t.yaml"), QStringLiteral("s.yaml")},
                                        // in the format but out of range (it said "must be WIDTHxHEIGHT")
                                        QStringList{QStringLiteral("--screenshot"), QStringLiteral("x.png"),
                                                    QStringLiteral("--size"), QStringLiteral("0x0")}}) {
            const Result r = run(args);
            QCOMPARE(r.code, 2);
            // A line says what is wrong (Qt may print its platform notes before it, usage after).
            QVERIFY2(r.err.startsWith(QStringLiteral("moex: ")) || r.err.contains(QStringLiteral("\nmoex: ")),
                     qPrintable(r.err));
        }
    }

    void screenshotNeverReplacesAnInput()
    {
        // `moex --screenshot SCENARIO` (the output name left out) wrote a PNG over the scenario;
        // /dev/full was replaced by a PNG. The output must be a .png that is not an input.
        QTemporaryDir dir;
        const QString scenario = dir.filePath(QStringLiteral("s.yaml"));
        QVERIFY(QFile::copy(QStringLiteral(MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml"), scenario));
        QFile in(scenario);
        QVERIFY(in.open(QIODevice::ReadOnly));
        const QByteArray before = in.readAll();
        in.close();
        const QString png = dir.filePath(QStringLiteral("s.png"));
        QVERIFY(QFile::link(scenario, png));  // a .png that is the scenario by another name
        for (const QString& out : {scenario, png, QStringLiteral("/dev/full")}) {
            const Result r = run({QStringLiteral("--screenshot"), out, scenario});
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains(QStringLiteral("must name a .png file")) || r.err.contains(QStringLiteral("is the input file")),
                     qPrintable(r.err));
        }
        QVERIFY(in.open(QIODevice::ReadOnly));
        QCOMPARE(in.readAll(), before);
    }

    void tourStepThatFailsExitsTwo()
    {
        // A tour whose second step cannot load: exit 2 at once with the step's error (it waited two
        // minutes and exited 0 on an empty window).
        QTemporaryDir dir;
        const QString tour = dir.filePath(QStringLiteral("t.yaml"));
        QFile f(tour);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("title: t\nsteps:\n"
                "  - scenario: " MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml\n    title: one\n    caption: one\n"
                "  - scenario: " MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml\n"
                "    set: {placement.strategy: bogus}\n    title: two\n    caption: two\n");
        f.close();
        QElapsedTimer t;
        t.start();
        const Result r = run({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png")), QStringLiteral("--tour"), tour,
                              QStringLiteral("--tour-step"), QStringLiteral("2")});
        QCOMPARE(r.code, 2);
        // Caught when the tour starts, at the tour's line for the setting (line 7, its value).
        QVERIFY2(r.err.contains(QStringLiteral("t.yaml:7:")) && r.err.contains(QStringLiteral("set placement.strategy: bogus:")),
                 qPrintable(r.err));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
        QVERIFY2(t.elapsed() < 100000, "it waited out the two-minute deadline");

        // A step without settings is read when it plays: a scenario that fails then is the step's
        // own error, exit 2 at once.
        QFile sf(dir.filePath(QStringLiteral("s.yaml")));
        QVERIFY(sf.open(QIODevice::WriteOnly));
        sf.write("name: broken\nmodel: nowhere.yaml\n");
        sf.close();
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("title: t\nsteps:\n"
                "  - scenario: " MOEX_SOURCE_DIR "/samples/scenarios/mixtral-8x7b-decode-hgx-h100.yaml\n    caption: one\n"
                "  - scenario: s.yaml\n    caption: two\n");
        f.close();
        const Result late = run({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png")), QStringLiteral("--tour"), tour,
                                 QStringLiteral("--tour-step"), QStringLiteral("2")});
        QCOMPARE(late.code, 2);
        QVERIFY2(late.err.contains(QStringLiteral("a step's scenario failed to load")) && late.err.contains(QStringLiteral("s.yaml")),
                 qPrintable(late.err));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
    }

    void badScenarioFailsClearly()
    {
        QTemporaryDir dir;
        const Result r = run({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png")),
                              dir.filePath(QStringLiteral("missing.yaml"))});
        QCOMPARE(r.code, 2);  // bad input, as moex-cli
        QVERIFY2(r.err.contains(QStringLiteral("missing.yaml")), qPrintable(r.err));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
    }

    void headlessSummaryWithoutDisplay()
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        const Result r = run({sample("mixtral-8x7b-decode-hgx-h100.yaml")}, env);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        for (const char* word : {"step time", "tokens/s", "per kW", "imbalance", "dispatch", "combine",
                                 "expert compute", "attention", "memory", "straggler"})
            QVERIFY2(r.out.contains(QLatin1String(word)), word);
        QVERIFY(r.err.contains(QStringLiteral("no display")));

        // Bad input there: exit 2 with the file, line and key, nothing on stdout.
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("bad.yaml"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("name: x\nmodel: ../nowhere.yaml\n");
        f.close();
        const Result e = run({bad}, env);
        QCOMPARE(e.code, 2);
        QVERIFY2(e.err.contains(bad + QStringLiteral(":2:")), qPrintable(e.err));
        QVERIFY(e.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestScreenshot)
#include "tst_screenshot.moc"
