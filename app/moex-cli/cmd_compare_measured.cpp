// moex-cli compare --measured RUN.json [--calibration F] [--json OUT|-]
// Predicted vs measured for a `moex-cli run --json` of the CPU engine: the scenario it ran (its
// file and --set overrides, its engine settings) simulated on host-cpu with the calibration, for
// the expert loads the engine measured (run/host_prediction.h), per phase and per layer.
#include "cli_args.h"
#include "common/json_input.h"
#include "commands.h"
#include "format.h"
#include "sim_run.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "run/host_prediction.h"
#include "scenario/scenario_yaml.h"
#include "sim/calibration.h"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>

namespace moex::cli {

namespace {

[[noreturn]] void badRun(const std::string& file, const std::string& message)
{
    throw InputError(Location{file, 0, 0}, message);
}

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& file, const std::string& where)
{
    const auto it = j.find(key);
    if (it == j.end())
        badRun(file, where + " has no '" + key + "': not a `moex-cli run --json` file of this version");
    try {
        return it->get<T>();
    } catch (const nlohmann::json::exception&) {
        badRun(file, where + "'s '" + key + "' has the wrong type");
    }
}

}  // namespace

int compareMeasured(const std::string& runFile, const std::string& calibrationFile, const std::optional<std::string>& jsonOut)
{
    nlohmann::json j;
    try {
        j = parseJsonInput(readFile(runFile, 64u << 20), runFile, 0, "the run file");
    } catch (const nlohmann::json::parse_error& e) {
        badRun(runFile, std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object() || !j.value("measured", false))
        badRun(runFile, "not a measured run: `moex-cli run --json` writes \"measured\": true");
    const auto run = field<nlohmann::json>(j, "run", runFile, "the file");
    Overrides sets;
    for (const auto& kv : field<std::vector<std::string>>(run, "set", runFile, "\"run\"")) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos)
            badRun(runFile, "\"run\".set entry '" + kv + "' is not KEY=VALUE");
        sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    Scenario s = loadScenarioFile(field<std::string>(run, "scenario_file", runFile, "\"run\""), sets);
    s.engine.ranks = field<int>(run, "ranks", runFile, "\"run\"");
    s.engine.layers = field<std::vector<int>>(run, "layers", runFile, "\"run\"");

    // The measured step as the prediction needs it: ranks with their tokens, layers with loads.
    StepMetrics measured;
    const auto gpus = field<nlohmann::json>(j, "gpus", runFile, "the file");
    measured.num_gpus = static_cast<int>(gpus.size());
    for (const auto& g : gpus) {
        GpuMetrics gm;
        gm.tokens = field<std::int64_t>(g, "tokens", runFile, "a \"gpus\" entry");
        measured.gpus.push_back(gm);
    }
    for (const auto& l : field<nlohmann::json>(j, "layers", runFile, "the file")) {
        LayerMetrics lm;
        lm.layer = field<int>(l, "layer", runFile, "a \"layers\" entry");
        lm.expert_load = field<std::vector<std::int64_t>>(l, "expert_load", runFile, "a \"layers\" entry");
        measured.layers.push_back(lm);
    }
    std::vector<LayerMetrics> means;
    for (const auto& l : field<nlohmann::json>(j, "layers_mean", runFile, "the file")) {
        LayerMetrics lm;
        lm.layer = field<int>(l, "layer", runFile, "a \"layers_mean\" entry");
        lm.time_us = field<double>(l, "time_us", runFile, "a \"layers_mean\" entry");
        lm.dispatch_us = field<double>(l, "dispatch_us", runFile, "a \"layers_mean\" entry");
        lm.compute_us = field<double>(l, "compute_us", runFile, "a \"layers_mean\" entry");
        lm.combine_us = field<double>(l, "combine_us", runFile, "a \"layers_mean\" entry");
        means.push_back(lm);
    }
    const Calibration base = defaultCalibration(GpuArch::cpu);
    const Calibration cal = calibrationFile.empty() ? base : loadCalibrationFile(calibrationFile, base);
    StepMetrics predicted;
    try {
        predicted = predictEngineStep(s, measured, cal);
    } catch (const std::invalid_argument& e) {
        badRun(runFile, e.what());
    }
    const std::vector<PredictionRow> rows = predictionTable(means, predicted);

    if (jsonOut) {
        nlohmann::json out;
        out["scenario"] = s.name;
        out["calibration"] = cal.name;
        out["engine"] = j.value("engine", "");
        nlohmann::json list = nlohmann::json::array();
        for (const auto& r : rows)
            list.push_back({{"what", r.what}, {"measured_us", r.measured_us}, {"predicted_us", r.predicted_us}, {"error", r.error()}});
        out["rows"] = list;
        writeJson(*jsonOut, out.dump(1));
        if (*jsonOut == "-")
            return 0;
    }
    std::cout << "scenario     " << s.name << " (" << s.model.name << ")\n";
    std::cout << "measured     " << j.value("engine", std::string("cpu engine")) << '\n';
    std::cout << "predicted    simulator on host-cpu x" << measured.num_gpus << ", calibration " << cal.name
              << (calibrationFile.empty() ? " (not measured: run moex-cli calibrate --backend cpu -o FILE)" : "") << "\n\n";
    std::cout << std::left << std::setw(20) << "" << std::right << std::setw(14) << "measured ms" << std::setw(14)
              << "predicted ms" << std::setw(10) << "error" << '\n';
    for (const auto& r : rows)
        std::cout << std::left << std::setw(20) << r.what << std::right << std::setw(14) << fixed(r.measured_us / 1e3, 3)
                  << std::setw(14) << fixed(r.predicted_us / 1e3, 3) << std::setw(9) << fixed(r.error() * 100, 1) << "%\n";
    return 0;
}

}  // namespace moex::cli
