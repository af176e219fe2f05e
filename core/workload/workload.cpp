#include "workload/workload.h"

namespace moex {

std::string_view toString(Phase p)
{
    return p == Phase::decode ? "decode" : "prefill";
}

std::string_view toString(RoutingKind k)
{
    switch (k) {
    case RoutingKind::synthetic: return "synthetic";
    case RoutingKind::trace: return "trace";
    case RoutingKind::counts: return "counts";
    }
    return "synthetic";
}

}  // namespace moex
