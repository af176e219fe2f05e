// moex-cli validate FILE... : every problem of every file, located; exit 2 when any is invalid.
#include "cli_args.h"
#include "commands.h"
#include "file_kind.h"
#include "format.h"

#include "model/hf_import.h"
#include "model/model_yaml.h"
#include "run/metrics_source.h"
#include "scenario/scenario_checks.h"
#include "scenario/scenario_yaml.h"
#include "sim/scenario_run.h"
#include "topology/topology_yaml.h"

#include <iostream>

namespace moex::cli {

int cmdValidate(const Argv& argv)
{
    Args args("validate", argv, {{"set", true, true}, {"quiet", false, false, 'q'}});
    args.requirePositionals(1, 100000, "moex-cli validate FILE... [--set KEY=VALUE]...");
    const Overrides overrides = args.overrides();
    int invalid = 0;
    for (const auto& path : args.positionals()) {
        try {
            const InputFile file = readInputFile(path);
            const FileKind kind = file.kind;
            refuseOverrides(kind, path, !overrides.empty());
            std::string what;
            switch (kind) {
            case FileKind::scenario: {
                const Scenario s = loadScenarioText(file.text, path, overrides);
                // What simulate would refuse before its first step: the placement's shape, the
                // calibration file, a replayed routing file (read against the model).
                checkPlacementShape(s);
                (void)resolveCalibration(s);
                if (s.workload.routing.kind != RoutingKind::synthetic)
                    (void)makeRoutingSource(s);
                if (s.engine.backend != Backend::sim)
                    checkEngineSettings(s);
                what = s.model.name + " on " + (s.topology.builtin.empty() ? s.topology.name : s.topology.builtin) + ", "
                    + countOf(s.topology.numGpus(), "GPU") + ", " + countOf(s.slotsPerGpu(), "expert slot")
                    + " per GPU, weights " + humanBytes(weightBytesPerGpu(s, s.slotsPerGpu()))
                    + " per GPU";
                break;
            }
            case FileKind::model: {
                const ModelSpec m = loadModelText(file.text, path);
                what = m.name + ", " + humanCount(static_cast<double>(m.totalParams())) + " parameters";
                break;
            }
            case FileKind::topology: {
                const Topology t = loadTopologyText(file.text, path);
                what = t.name + ", " + countOf(t.numGpus(), "GPU") + ", " + countOf(t.numDomains(), "NVLink domain");
                break;
            }
            case FileKind::hf_config: {
                const ModelSpec m = importHfConfig(file.text, path);
                what = m.name + " (Hugging Face config)";
                break;
            }
            }
            if (!args.has("quiet"))
                std::cout << path << ": ok (" << toString(kind) << ": " << what << ")\n";
        } catch (const InputError& e) {
            std::cerr << e.diagnostics().format();
            ++invalid;
        }
    }
    if (invalid > 0) {
        std::cerr << invalid << " of " << countOf(static_cast<long long>(args.positionals().size()), "file") << " invalid\n";
        return 2;
    }
    return 0;
}

}  // namespace moex::cli
