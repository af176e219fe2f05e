// The samples gallery and guided tours: samples/scenarios/*.yaml with the one-line comment each
// file opens with, and samples/tours/*.yaml (scenario + overrides + caption per step).
#pragma once

#include "common/diagnostics.h"

#include <QString>
#include <QStringList>

#include <string>
#include <utility>
#include <vector>

namespace moex::session {

struct SampleInfo {
    QString path;     // absolute
    QString name;     // file name without .yaml
    QString summary;  // the first comment line, without '#'
};

// Sorted by name; empty when the folder does not exist.
std::vector<SampleInfo> listSamples(const QString& scenariosDir);
// The first "# ..." line of a file ("" when it has none).
QString firstCommentLine(const QString& path);

struct TourStep {
    QString scenario;  // absolute path
    std::vector<std::pair<std::string, std::string>> overrides;
    std::vector<Location> overrideAt;  // where in the tour file each override's value is
    QString title;
    QString caption;
};

struct Tour {
    QString file;
    QString title;
    std::vector<TourStep> steps;
};

// Reads a tour file:
//   title: TEXT
//   steps:
//     - {scenario: PATH (relative to the tour file), set: {KEY: VALUE, ...}, title: TEXT, caption: TEXT}
// Throws moex::InputError located at the offending line. With `checkSets`, each step's scenario is
// read with its `set` applied, and what is wrong with a setting is an error at the tour's line for
// it (not at "--set KEY=VALUE", which a tour's author never wrote).
Tour loadTour(const QString& path, bool checkSets = true);
std::vector<SampleInfo> listTours(const QString& toursDir);

}  // namespace moex::session
