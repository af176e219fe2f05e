#include "samples_catalog.h"

#include "common/diagnostics.h"
#include "qt_text.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTextStream>

#include <yaml-cpp/yaml.h>

namespace moex::session {

namespace {

Location at(const std::string& file, const YAML::Node& n)
{
    const YAML::Mark m = n.Mark();
    return {file, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
}

std::string scalar(const std::string& file, const YAML::Node& map, const char* key, bool required)
{
    const YAML::Node n = map[key];
    if (!n) {
        if (required)
            throw InputError(at(file, map), std::string("missing '") + key + "'");
        return {};
    }
    if (!n.IsScalar())
        throw InputError(at(file, n), std::string("'") + key + "' must be text");
    return n.Scalar();
}

}  // namespace

QString firstCommentLine(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    QTextStream in(&f);
    for (int i = 0; i < 5 && !in.atEnd(); ++i) {
        const QString line = in.readLine().trimmed();
        if (line.startsWith(QLatin1Char('#')))
            return line.mid(1).trimmed();
        if (!line.isEmpty())
            break;
    }
    return {};
}

std::vector<SampleInfo> listSamples(const QString& scenariosDir)
{
    std::vector<SampleInfo> out;
    const QDir dir(scenariosDir);
    const auto files = dir.entryInfoList({QStringLiteral("*.yaml"), QStringLiteral("*.yml")}, QDir::Files, QDir::Name);
    for (const QFileInfo& fi : files)
        out.push_back({fi.absoluteFilePath(), fi.completeBaseName(), firstCommentLine(fi.absoluteFilePath())});
    return out;
}

std::vector<SampleInfo> listTours(const QString& toursDir)
{
    std::vector<SampleInfo> out = listSamples(toursDir);
    for (auto& s : out) {
        try {
            const Tour t = loadTour(s.path);
            if (!t.title.isEmpty())
                s.summary = t.title;
        } catch (const std::exception&) {
        }
    }
    return out;
}

Tour loadTour(const QString& path)
{
    const std::string file = ss(path);
    YAML::Node root;
    try {
        root = YAML::LoadFile(file);
    } catch (const YAML::BadFile&) {
        throw InputError(Location{file, 0, 0}, "cannot read the tour file");
    } catch (const YAML::Exception& e) {
        throw InputError(Location{file, e.mark.line + 1, e.mark.column + 1}, e.msg);
    }
    if (!root.IsMap())
        throw InputError(at(file, root), "a tour is a mapping with 'title' and 'steps'");
    Tour t;
    t.file = QFileInfo(path).absoluteFilePath();
    t.title = qs(scalar(file, root, "title", true));
    const YAML::Node steps = root["steps"];
    if (!steps || !steps.IsSequence() || steps.size() == 0)
        throw InputError(at(file, steps ? steps : root), "'steps' must be a non-empty list");
    const QDir base = QFileInfo(path).absoluteDir();
    for (const auto& n : steps) {
        if (!n.IsMap())
            throw InputError(at(file, n), "each step is a mapping with 'scenario' and 'caption'");
        TourStep s;
        const QString scen = qs(scalar(file, n, "scenario", true));
        s.scenario = QFileInfo(base, scen).absoluteFilePath();
        if (!QFileInfo::exists(s.scenario))
            throw InputError(at(file, n["scenario"]), "no scenario file " + ss(s.scenario));
        s.caption = qs(scalar(file, n, "caption", true));
        s.title = qs(scalar(file, n, "title", false));
        if (const YAML::Node set = n["set"]) {
            if (!set.IsMap())
                throw InputError(at(file, set), "'set' must map KEY: VALUE (as moex-cli --set KEY=VALUE)");
            for (auto it = set.begin(); it != set.end(); ++it) {
                if (!it->second.IsScalar())
                    throw InputError(at(file, it->second), "override values must be scalars");
                s.overrides.emplace_back(it->first.Scalar(), it->second.Scalar());
            }
        }
        t.steps.push_back(std::move(s));
    }
    return t;
}

}  // namespace moex::session
