// Located diagnostics and the YAML schema reader every loader builds on.
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#endif

#include <QtTest>

using namespace moex;

class TestDiagnostics : public QObject {
    Q_OBJECT
private slots:
    void formatting();
    void didYouMean_data();
    void didYouMean();
    void readerCollectsEveryError();
    void numbers_data();
    void numbers();
};

void TestDiagnostics::formatting()
{
    QCOMPARE(Diagnostic({{"a.yaml", 3, 7}, "bad"}).format(), std::string("a.yaml:3:7: error: bad"));
    QCOMPARE(Diagnostic({{"a.yaml", 0, 0}, "bad"}).format(), std::string("a.yaml: error: bad"));
    // Bytes quoted from a binary file reach the terminal as \xNN, never raw (a NUL, an escape, a
    // stray UTF-8 byte); text in UTF-8 stays as written.
    const std::string quoted = std::string("escape '") + '\0' + "\x1b[2J\xff\xc3' in 1 \xc2\xb5s \xe2\x86\x92 x";
    QCOMPARE(Diagnostic({{"f\x01.pt", 1, 7}, quoted}).format(),
             std::string("f\\x01.pt:1:7: error: escape '\\x00\\x1b[2J\\xff\\xc3' in 1 \xc2\xb5s \xe2\x86\x92 x"));
    Diagnostics d;
    for (std::size_t i = 0; i < Diagnostics::kMaxErrors + 10; ++i)
        d.error({"f", 1, 1}, "x");
    QCOMPARE(d.size(), Diagnostics::kMaxErrors);
    QVERIFY(QString::fromStdString(d.format()).contains(QStringLiteral("further errors omitted")));
}

void TestDiagnostics::didYouMean_data()
{
    QTest::addColumn<QString>("word");
    QTest::addColumn<QString>("expected");
    QTest::addRow("transposed") << QStringLiteral("worklaod") << QStringLiteral("workload");
    QTest::addRow("missing letter") << QStringLiteral("topolgy") << QStringLiteral("topology");
    QTest::addRow("case") << QStringLiteral("Placement") << QStringLiteral("placement");
    QTest::addRow("nothing close") << QStringLiteral("zebra") << QString();
}

void TestDiagnostics::didYouMean()
{
    QFETCH(QString, word);
    QFETCH(QString, expected);
    const std::vector<std::string> keys = {"name", "model", "topology", "workload", "placement"};
    QCOMPARE(QString::fromStdString(moex::didYouMean(word.toStdString(), keys)), expected);
}

void TestDiagnostics::readerCollectsEveryError()
{
    Diagnostics diags;
    const auto node = parseYaml("a: 1\nb: x\nc: -3\nd: [1, y]\nzz: 0\n", "t.yaml", diags);
    QVERIFY(node);
    YamlReader r("t.yaml", diags);
    QVERIFY(r.expectMap(*node, "test", {"a", "b", "c", "d", "z"}));
    QCOMPARE(r.getInt(*node, "a", true, 0, 10), std::optional<std::int64_t>(1));
    QVERIFY(!r.getInt(*node, "b", true, 0, 10));
    QVERIFY(!r.getInt(*node, "c", true, 0, 10));
    QVERIFY(!r.getIntList(*node, "d", true, 0, 10));
    QVERIFY(!r.getInt(*node, "missing", true, 0, 10));
    QCOMPARE(diags.size(), std::size_t(5));
    QCOMPARE(diags.items()[0].where.line, 5);  // unknown key zz
    QVERIFY(diags.items()[0].message.find("did you mean 'z'") != std::string::npos);
    QCOMPARE(diags.items()[1].where.line, 2);
    QCOMPARE(diags.items()[1].where.column, 4);
    QCOMPARE(diags.items()[3].where.line, 4);
    QCOMPARE(diags.items()[3].where.column, 8);
    QVERIFY(diags.items()[4].message.find("missing required key 'missing'") != std::string::npos);

    Diagnostics syntax;
    QVERIFY(!parseYaml("a: [1, 2\nb: 3\n", "s.yaml", syntax));
    QCOMPARE(syntax.size(), std::size_t(1));
    QVERIFY(syntax.items()[0].where.line > 0);
}

void TestDiagnostics::numbers_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("ok");
    QTest::addColumn<double>("value");
    QTest::addRow("plain") << QStringLiteral("1.5") << true << 1.5;
    QTest::addRow("exponent") << QStringLiteral("2e3") << true << 2000.0;
    QTest::addRow("plus") << QStringLiteral("+4") << true << 4.0;
    QTest::addRow("nan") << QStringLiteral(".nan") << false << 0.0;
    QTest::addRow("inf") << QStringLiteral(".inf") << false << 0.0;
    QTest::addRow("word") << QStringLiteral("fast") << false << 0.0;
    QTest::addRow("trailing") << QStringLiteral("1.5x") << false << 0.0;
    QTest::addRow("too big") << QStringLiteral("1e300") << false << 0.0;
}

void TestDiagnostics::numbers()
{
    QFETCH(QString, text);
    QFETCH(bool, ok);
    QFETCH(double, value);
    Diagnostics diags;
    const auto node = parseYaml("v: " + text.toStdString() + "\n", "n.yaml", diags);
    QVERIFY(node);
    YamlReader r("n.yaml", diags);
    const auto v = r.getDouble(*node, "v", true, -1e9, 1e9);
    QCOMPARE(v.has_value(), ok);
    if (ok)
        QCOMPARE(*v, value);
    else
        QCOMPARE(diags.size(), std::size_t(1));
}

QTEST_APPLESS_MAIN(TestDiagnostics)
#include "tst_diagnostics.moc"
