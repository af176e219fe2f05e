// Leave-one-publication-out error of `moex-cli bench fidelity` (issue 20 item 5): for each
// publication, every calibration value chosen on it is chosen again without it — refitted on the
// points of the other publications it was also chosen on, or, where none is left, set back to
// the value it had before any measurement (the Calibration struct's own default) — and that
// publication's points are predicted with the result. The values and the points each was chosen on
// are the list in fidelity_lopo.cpp (docs/CALIBRATION.md, "Leave one publication out").
#pragma once

#include "sim/fidelity.h"

#include <string>
#include <vector>

namespace moex {

struct LopoFold {
    std::string publication;   // the publication left out (a FidelityPoint source up to " (")
    int points = 0;            // its points
    double in_sample = 0;      // worst |error| of its points with the default calibrations
    double left_out = 0;       // worst |error| of its points with the values chosen without it
    std::string refit;         // what was chosen again, e.g. "hopper nvlink_efficiency 0.80 (prior)"
};

// The publication a point belongs to: its source up to the first " (".
std::string publicationOf(const FidelityPoint& p);

// One fold per publication of `points` (the bench's points with the default calibrations), in
// their order of first appearance.
std::vector<LopoFold> leaveOnePublicationOut(const std::vector<FidelityPoint>& points, const std::string& modelsDir,
                                             int endToEndSteps = 5);

}  // namespace moex
