// The slow, pure half of a ScenarioDocument change: a scenario re-read with one KEY=VALUE
// override, or a file read, and its placement resolved. No Qt objects and no document are touched,
// so it runs on a background thread (ScenarioDocument::requestOverride / requestLoad) as well as
// on the caller's (applyOverride / load); the document adopts the result in one piece.
#pragma once

#include "placement/placement.h"
#include "placement_edits.h"
#include "scenario/scenario.h"
#include "scenario/scenario_yaml.h"

#include "common/cancel.h"

#include <cstdint>
#include <string>

namespace moex::session {

// Everything an undo step needs to put a document back exactly.
struct DocumentState {
    Scenario scenario;          // placement.explicit_slots holds hand edits once there are any
    Placement placement;        // what the simulator runs
    PlacementSpec base_spec;    // the placement spec before hand edits (strategy, slots)
    bool placement_edited = false;
    std::uint64_t scenario_revision = 0;  // changes when a rebuild is needed (not for placement/speed edits)
};

struct PreparedChange {
    DocumentState state;  // scenario_revision unset: the document numbers it when it adopts it
    MemoryRule memory;
    std::string note;     // a companion change that was made for the edit to apply ("" = none)
};

// `current` with key=value applied as moex-cli --set does (the scenario's YAML regenerated and
// re-validated; messages name the change). A hand-edited placement is kept when it still fits the
// new shape (and the key is not a placement key); otherwise the strategy places again. When the
// new topology is refused only because of what the old one allowed — redundant slots the new GPU
// count does not divide, per-GPU speeds of GPUs it does not have — the companion change is made
// and said in `note`. Throws InputError (located), Cancelled.
PreparedChange prepareOverride(const DocumentState& current, const std::string& key, const std::string& value,
                               const CancelToken& cancel = {});

// A scenario file with overrides, placed. Throws InputError, Cancelled.
PreparedChange prepareLoad(const std::string& path, const Overrides& overrides, const CancelToken& cancel = {});

// A parsed scenario, placed (`s` as loaded: its spec is the base spec).
PreparedChange prepareScenario(Scenario s, const CancelToken& cancel = {});

}  // namespace moex::session

#include <QMetaType>
Q_DECLARE_METATYPE(moex::session::DocumentState)
