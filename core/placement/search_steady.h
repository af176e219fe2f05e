// Internal to search.cpp: lowers what per-step noise in the load costs a layer.
//
// A static layout balances the mean load, but each step routes its own tokens: experts that rise
// and fall together (one routing group chosen by a whole batch, a co-activation group favoured by
// several sources) make a GPU holding several of them the slowest of many steps, however well the
// means are balanced. Given the loads of the steps the mean came from, steadySwaps trades slots
// between GPUs to lower a smooth measure of each step's high GPU loads while the balance of the mean
// load stays within a bound.
//
// The measure (steadyObjective): the sum over steps and GPUs of (GPU load / speed, over the step's
// mean GPU load) to the 16th power. Close to the largest load of each step, but a GPU that is one
// of several near the top still counts, so a swap that lowers it is seen as a gain (with the
// largest alone, two GPUs at the top make every single swap look useless), and the GPUs just below
// the top, which other steps may push over it, are lowered too.
#pragma once

#include "placement/search_layer.h"

#include <vector>

namespace moex::search_internal {

struct SteadyResult {
    int swaps = 0;
    double before = 0;  // steadyObjective before and after
    double after = 0;
};

// The measure above for layout l; stepLoad[s][e] is expert e's load in step s; slots carry their
// expert's load split evenly over its replicas, or by the layout's shares when it has them.
double steadyObjective(const Layout& l, const std::vector<std::vector<double>>& stepLoad,
                       const std::vector<double>& speed);

// Each round makes the single swap, of a slot on one of the 8 GPUs with the largest terms with a
// slot of any other GPU, that lowers steadyObjective most (a share moves with its slot); never
// puts an expert twice on one GPU and never raises a GPU's mean load (even shares, no speed: how
// balance() judges) above balanceBound x the mean. Stops when no swap lowers it or after
// maxRounds. Deterministic. Preconditions (makePlacement checks them for a request): `l` holds
// gpus x perGpu slots and every expert of meanLoad at least once, every expert id is below
// meanLoad.size(), each step has meanLoad.size() non-negative loads, speed has l.gpus positive
// entries. A step whose total load is 0 counts for nothing.
SteadyResult steadySwaps(Layout& l, const std::vector<std::vector<double>>& stepLoad,
                         const std::vector<double>& meanLoad, const std::vector<double>& speed,
                         double balanceBound, int maxRounds);

}  // namespace moex::search_internal
