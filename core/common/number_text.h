// shortestNumber: a double as the shortest text that reads back to the same double, for the YAML
// and text files moex writes (calibrations, scenarios, placements, topologies). Integers read as
// integers ("10", "900", not "1e+01"), and an exponent always follows a decimal point ("1.5e-07",
// "1.0e+21"), which every YAML reader takes for a number (YAML 1.1 readers such as PyYAML read
// "1e+01" as a string).
#pragma once

#include <string>

namespace moex {

std::string shortestNumber(double v);

}  // namespace moex
