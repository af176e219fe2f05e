// What the moex-cli integration tests share: run the real executable (MOEX_CLI_PATH) and collect its
// exit code and output, and the path of a sample scenario.
#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace moex::test {

struct CliResult {
    int exitCode = -1;  // -1: did not finish in time (killed); -2: crashed
    QString out;
    QString err;
};

inline CliResult runCli(const QStringList& args, const QString& workdir = QString(), int timeoutMs = 300000,
                        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    QProcess p;
    if (!workdir.isEmpty())
        p.setWorkingDirectory(workdir);
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(MOEX_CLI_PATH), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

// samples/scenarios/NAME.yaml of the source tree.
inline QString sampleScenario(const QString& name)
{
    return QStringLiteral(MOEX_SOURCE_DIR "/samples/scenarios/") + name + QStringLiteral(".yaml");
}

}  // namespace moex::test
