#include "samples_catalog.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "common/yaml_reader.h"
#include "qt_text.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QTextStream>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

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
            const Tour t = loadTour(s.path, false);
            if (!t.title.isEmpty())
                s.summary = t.title;
        } catch (const std::exception&) {
        }
    }
    return out;
}

namespace {

// A key given twice in one mapping of a tour: yaml-cpp keeps one of the two values in silence.
void refuseRepeatedKeys(const std::string& file, const YAML::Node& map, const char* what)
{
    std::map<std::string, YAML::Node> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
        const auto [first, fresh] = seen.emplace(key, it->first);
        if (!fresh)
            throw InputError(at(file, it->first), "key '" + key + "' given twice in " + what + " (first at line "
                                                      + std::to_string(first->second.Mark().line + 1) + "); give it once");
    }
}

// Keys of a tour and of its steps: any other is a typo the tour would ignore in silence.
void refuseUnknownKeys(const std::string& file, const YAML::Node& map, const std::vector<std::string>& known, const char* what)
{
    refuseRepeatedKeys(file, map, what);
    for (auto it = map.begin(); it != map.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
        if (std::find(known.begin(), known.end(), key) != known.end())
            continue;
        std::string message = "unknown key '" + key + "' in " + what;
        if (const std::string hint = didYouMean(key, known); !hint.empty())
            message += "; did you mean '" + hint + "'?";
        throw InputError(at(file, it->first), message + " (a tour has title and steps; a step scenario, title, caption, set)");
    }
}

// A caption's placeholders (fillCaption, tour_figures.cpp): {NAME} or {NAME@STEP} with NAME one of
// the figures, and {loss@A,B} / {recovered@A,B}, steps 1..count. A wrong one showed as "…".
void checkCaption(const std::string& file, const YAML::Node& node, const QString& caption, int count)
{
    static const QStringList figures = {QStringLiteral("step_ms"), QStringLiteral("ktok_s"), QStringLiteral("imbalance"),
                                        QStringLiteral("comm_ms"), QStringLiteral("moe_ms")};
    static const QStringList pairs = {QStringLiteral("loss"), QStringLiteral("recovered")};
    static const QRegularExpression open(QStringLiteral("\\{[A-Za-z_]"));
    auto it = open.globalMatch(caption);
    while (it.hasNext()) {
        const qsizetype start = it.next().capturedStart();
        const qsizetype close = caption.indexOf(QLatin1Char('}'), start);
        const QString body = close < 0 ? QString() : caption.mid(start + 1, close - start - 1);
        const auto bad = [&](const std::string& why) {
            throw InputError(at(file, node), "caption placeholder '" + ss(close < 0 ? caption.mid(start, 20) : caption.mid(start, close - start + 1))
                                                 + "': " + why);
        };
        if (close < 0)
            bad("no closing '}'");
        const QString name = body.section(QLatin1Char('@'), 0, 0);
        const QStringList steps = body.contains(QLatin1Char('@')) ? body.section(QLatin1Char('@'), 1).split(QLatin1Char(',')) : QStringList();
        if (!figures.contains(name) && !pairs.contains(name))
            bad("not a figure (" + ss((figures + pairs).join(QStringLiteral(", "))) + ")");
        if (pairs.contains(name) && steps.size() != 2)
            bad("needs two steps, {" + ss(name) + "@A,B}");
        if (figures.contains(name) && steps.size() > 1)
            bad("takes one step at most, {" + ss(name) + "@N}");
        for (const QString& step : steps) {
            bool ok = false;
            const int n = step.toInt(&ok);
            if (!ok || n < 1 || n > count)
                bad("step '" + ss(step) + "' is not a step of this tour (1.." + std::to_string(count) + ")");
        }
    }
}

// The overrides of `step` that `where` names: one "--set KEY=VALUE", or several joined by spaces
// (a placement's shape is blamed on every flag that changed it). Empty when it names others.
std::vector<std::size_t> namedSets(const TourStep& step, const std::string& where)
{
    std::vector<std::size_t> named;
    std::string rest = where;
    while (!rest.empty()) {
        bool found = false;
        for (std::size_t i = 0; i < step.overrides.size() && !found; ++i) {
            const std::string flag = "--set " + step.overrides[i].first + "=" + step.overrides[i].second;
            if (rest.starts_with(flag) && (rest.size() == flag.size() || rest[flag.size()] == ' ')) {
                named.push_back(i);
                rest.erase(0, std::min(rest.size(), flag.size() + 1));
                found = true;
            }
        }
        if (!found)
            return {};
    }
    return named;
}

// The step's scenario read with its `set` applied, and the placement's shape checked (what the
// step would refuse before its first step; the placement itself is not made). An error a setting
// caused is moved from "--set KEY=VALUE" to the tour's line for that setting.
void checkStepSets(const TourStep& step)
{
    try {
        checkPlacementShape(loadScenarioFile(ss(step.scenario), step.overrides));
    } catch (const InputError& e) {
        Diagnostics moved;
        for (const Diagnostic& d : e.diagnostics().items()) {
            const std::vector<std::size_t> named = d.where.line == 0 ? namedSets(step, d.where.file) : std::vector<std::size_t>{};
            if (named.empty()) {
                moved.error(d.where, d.message);
                continue;
            }
            std::string sets;
            for (const std::size_t i : named)
                sets += (sets.empty() ? "set " : ", ") + step.overrides[i].first + ": " + step.overrides[i].second;
            std::string message = d.message;
            if (const auto flag = message.rfind(" with that flag)"); flag != std::string::npos)
                message.replace(flag, 16, " with that setting)");
            moved.error(step.overrideAt[named.front()], sets + ": " + message);
        }
        throw InputError(moved);
    }
}

}  // namespace

Tour loadTour(const QString& path, bool checkSets)
{
    const std::string file = ss(path);
    // Through moex's YAML reader, as every scenario: its size bounds (yaml-cpp's time grows with
    // the text) and a second document refused. The file is read past the bound only to name it.
    Diagnostics diags;
    const auto parsed = parseYaml(readFile(file, kMaxYamlBytes + 1), file, diags);
    if (!parsed)
        throw InputError(diags);
    const YAML::Node root = *parsed;
    if (!root.IsMap())
        throw InputError(at(file, root), "a tour is a mapping with 'title' and 'steps'");
    refuseUnknownKeys(file, root, {"title", "steps"}, "the tour");
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
        refuseUnknownKeys(file, n, {"scenario", "title", "caption", "set"}, "a step");
        TourStep s;
        const QString scen = qs(scalar(file, n, "scenario", true));
        s.scenario = QFileInfo(base, scen).absoluteFilePath();
        if (!QFileInfo::exists(s.scenario))
            throw InputError(at(file, n["scenario"]), "no scenario file " + ss(s.scenario));
        if (QFileInfo(s.scenario).isDir())
            throw InputError(at(file, n["scenario"]), "scenario '" + ss(scen) + "' is a directory, not a file");
        s.caption = qs(scalar(file, n, "caption", true));
        checkCaption(file, n["caption"], s.caption, static_cast<int>(steps.size()));
        s.title = qs(scalar(file, n, "title", false));
        if (const YAML::Node set = n["set"]) {
            if (!set.IsMap())
                throw InputError(at(file, set), "'set' must map KEY: VALUE (as moex-cli --set KEY=VALUE)");
            refuseRepeatedKeys(file, set, "a step's set");
            for (auto it = set.begin(); it != set.end(); ++it) {
                if (!it->second.IsScalar())
                    throw InputError(at(file, it->second), "override values must be scalars");
                s.overrides.emplace_back(it->first.Scalar(), it->second.Scalar());
                s.overrideAt.push_back(at(file, it->second));
            }
        }
        if (checkSets && !s.overrides.empty())
            checkStepSets(s);
        t.steps.push_back(std::move(s));
    }
    return t;
}

}  // namespace moex::session
