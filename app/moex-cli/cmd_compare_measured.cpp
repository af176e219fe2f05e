// moex-cli compare --measured RUN.json [--calibration BEFORE [--calibration AFTER]] [--json OUT|-]
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
#include "workload/routing_sample.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <limits>
#include <type_traits>

namespace moex::cli {

namespace {

[[noreturn]] void badRun(const std::string& file, const std::string& message)
{
    throw InputError(Location{file, 0, 0}, message);
}

// An integer of type T, refused unless the JSON holds an integer T can hold: nlohmann's get<int>()
// would wrap 4294967297 to 1 and truncate 1.5 to 1.
template <typename T>
T integerOf(const nlohmann::json& v, const std::string& file, const std::string& what)
{
    if (!v.is_number_integer())
        badRun(file, what + " must be an integer, not " + v.dump());
    const bool fits = v.is_number_unsigned()
                          ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                          : v.get<std::int64_t>() >= static_cast<std::int64_t>(std::numeric_limits<T>::min())
                                && v.get<std::int64_t>() <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
    if (!fits)
        badRun(file, what + " = " + v.dump() + " is out of range");
    return v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>()) : static_cast<T>(v.get<std::int64_t>());
}

template <typename T>
struct IsIntegerVector : std::false_type {};
template <typename T>
struct IsIntegerVector<std::vector<T>> : std::is_integral<T> {};

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& file, const std::string& where)
{
    const auto it = j.find(key);
    if (it == j.end())
        badRun(file, where + " has no '" + key + "': not a `moex-cli run --json` file of this version");
    const std::string what = where + "'s '" + key + "'";
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return integerOf<T>(*it, file, what);
    } else if constexpr (IsIntegerVector<T>::value) {
        if (!it->is_array())
            badRun(file, what + " must be a list of integers");
        T out;
        for (std::size_t i = 0; i < it->size(); ++i)
            out.push_back(integerOf<typename T::value_type>((*it)[i], file, what + "[" + std::to_string(i) + "]"));
        return out;
    } else {
        try {
            return it->get<T>();
        } catch (const nlohmann::json::exception&) {
            badRun(file, what + " has the wrong type");
        }
    }
}

std::string shortNumber(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

// What a run file must hold to be predicted: the ranks the model's experts allow, one "gpus"
// entry per rank, the run's layers (MoE layers of the model, each once) in "layers" and in the
// times, each expert's load, times that are durations. A file edited by hand or cut short is
// refused here, never predicted into a table that looks right.
void checkMeasuredRun(const Scenario& s, const StepMetrics& measured, const std::vector<LayerMetrics>& times,
                      const nlohmann::json& j, const std::string& file)
{
    constexpr std::int64_t kMaxRunTokens = 1 << 20;  // run --tokens and engine.tokens allow as many
    const int ranks = s.engine.ranks;
    if (ranks < 1 || ranks > s.model.routed_experts)
        badRun(file, "\"run\".ranks = " + std::to_string(ranks) + ": " + s.model.name + "'s "
                         + std::to_string(s.model.routed_experts) + " experts allow 1 to " + std::to_string(s.model.routed_experts));
    if (measured.num_gpus != ranks)
        badRun(file, "\"gpus\" has " + std::to_string(measured.num_gpus) + " entries for " + std::to_string(ranks) + " ranks");
    // A rank's tokens within what the simulator's routing sample holds per GPU (16-bit counts).
    constexpr std::int64_t kMaxRankTokens = std::numeric_limits<RoutingSample::Count>::max();
    for (std::size_t i = 0; i < measured.gpus.size(); ++i) {
        const std::int64_t t = measured.gpus[i].tokens;
        if (t < 0 || t > std::min(kMaxRunTokens, kMaxRankTokens))
            badRun(file, "\"gpus\" entry " + std::to_string(i) + " has " + std::to_string(t) + " tokens: the prediction takes 0 to "
                             + std::to_string(std::min(kMaxRunTokens, kMaxRankTokens)) + " a rank (run with more ranks or fewer tokens)");
    }
    std::vector<int> ran = s.engine.layers.empty() ? s.model.moe_layers : s.engine.layers;
    for (std::size_t i = 0; i < ran.size(); ++i) {
        if (std::find(s.model.moe_layers.begin(), s.model.moe_layers.end(), ran[i]) == s.model.moe_layers.end())
            badRun(file, "\"run\".layers: decoder layer " + std::to_string(ran[i]) + " is not an MoE layer of " + s.model.name);
        if (std::find(ran.begin(), ran.begin() + static_cast<std::ptrdiff_t>(i), ran[i]) != ran.begin() + static_cast<std::ptrdiff_t>(i))
            badRun(file, "\"run\".layers: decoder layer " + std::to_string(ran[i]) + " is listed twice");
    }
    const auto sameLayers = [&](const auto& rows, const char* key) {
        if (rows.size() != ran.size())
            badRun(file, std::string("\"") + key + "\" has " + std::to_string(rows.size()) + " layers, the run ran "
                             + std::to_string(ran.size()) + ": the file is cut short or edited");
        for (std::size_t i = 0; i < ran.size(); ++i)
            if (rows[i].decoder_layer != ran[i])
                badRun(file, std::string("\"") + key + "\" entry " + std::to_string(i) + " is layer " + std::to_string(rows[i].decoder_layer)
                                 + ", the run's is " + std::to_string(ran[i]));
    };
    sameLayers(measured.layers, "layers");
    sameLayers(times, j.contains("layers_median") ? "layers_median" : "layers_mean");
    for (const LayerMetrics& l : measured.layers) {
        if (static_cast<int>(l.expert_load.size()) != s.model.routed_experts)
            badRun(file, "layer " + std::to_string(l.decoder_layer) + "'s expert_load has " + std::to_string(l.expert_load.size())
                             + " entries for " + std::to_string(s.model.routed_experts) + " experts");
        for (const std::int64_t v : l.expert_load)
            if (v < 0 || v > kMaxRunTokens)
                badRun(file, "layer " + std::to_string(l.decoder_layer) + "'s expert_load holds " + std::to_string(v)
                                 + ": a count of token-expert pairs is 0 to the run's tokens");
    }
    // Each token chose top-k experts in every layer: a layer's pairs are the ranks' tokens x top-k
    // (an edited load or token count moved the prediction and was taken as measured).
    std::int64_t tokens = 0;
    for (const GpuMetrics& g : measured.gpus)
        tokens += g.tokens;
    const std::int64_t pairs = tokens * s.model.experts_per_token;
    for (const LayerMetrics& l : measured.layers) {
        std::int64_t sum = 0;
        for (const std::int64_t v : l.expert_load)
            sum += v;
        if (sum != pairs)
            badRun(file, "layer " + std::to_string(l.decoder_layer) + "'s expert_load sums to " + std::to_string(sum)
                             + " token-expert pairs, but the \"gpus\" entries' " + std::to_string(tokens) + " tokens x top-"
                             + std::to_string(s.model.experts_per_token) + " make " + std::to_string(pairs)
                             + ": the file was edited");
    }
    constexpr double kMaxUs = 3.6e9;  // an hour per layer: anything longer is not a measurement
    for (const LayerMetrics& l : times) {
        for (const double v : {l.time_us, l.dispatch_us, l.compute_us, l.combine_us})
            if (!std::isfinite(v) || v < 0 || v > kMaxUs)
                badRun(file, "layer " + std::to_string(l.decoder_layer) + " has a time of " + shortNumber(v)
                                 + " us: times are 0 to an hour");
        if (!(l.time_us > 0))
            badRun(file, "layer " + std::to_string(l.decoder_layer) + " has a time_us of 0: a layer that ran took time");
        for (const double v : {l.dispatch_us, l.compute_us, l.combine_us})
            if (v > l.time_us * 1.001 + 1.0)
                badRun(file, "layer " + std::to_string(l.decoder_layer) + " has a phase of " + shortNumber(v)
                                 + " us in a layer time_us of " + shortNumber(l.time_us) + ": a phase is part of its layer");
    }
    if (j.contains("steps")) {
        const nlohmann::json& steps = j["steps"];
        const bool whole = steps.is_number_unsigned() ? steps.get<std::uint64_t>() >= 1 && steps.get<std::uint64_t>() <= 1000000000u
                           : steps.is_number_integer() ? steps.get<std::int64_t>() >= 1 && steps.get<std::int64_t>() <= 1000000000
                                                       : false;
        if (!whole)
            badRun(file, "\"steps\" = " + steps.dump() + " must be a whole number of steps, 1 to 1,000,000,000");
    }
}

}  // namespace

int compareMeasured(const std::string& runFile, const std::vector<std::string>& calibrationFiles, const std::optional<std::string>& jsonOut)
{
    const nlohmann::json j = parseJsonInput(readFile(runFile, 64u << 20), runFile, 0, "the run file");
    const auto flag = j.is_object() ? j.find("measured") : j.end();
    if (!j.is_object() || flag == j.end() || !flag->is_boolean() || !flag->get<bool>())
        badRun(runFile, "not a measured run: `moex-cli run --json` writes \"measured\": true");
    const auto run = field<nlohmann::json>(j, "run", runFile, "the file");
    Overrides sets;
    for (const auto& kv : field<std::vector<std::string>>(run, "set", runFile, "\"run\"")) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos)
            badRun(runFile, "\"run\".set entry '" + kv + "' is not KEY=VALUE");
        sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    Scenario s;
    try {
        s = loadScenarioFile(field<std::string>(run, "scenario_file", runFile, "\"run\""), sets);
    } catch (const InputError& e) {
        // The run's settings are the run file's "run".set, not flags of this command.
        Diagnostics moved;
        for (const Diagnostic& d : e.diagnostics().items()) {
            const bool fromSet = d.where.line == 0 && d.where.file.starts_with("--set ");
            moved.error(fromSet ? Location{runFile, 0, 0} : d.where,
                        fromSet ? "\"run\".set entry '" + d.where.file.substr(6) + "': " + d.message : d.message);
        }
        throw InputError(moved);
    }
    // The scenario is read again: what ran must still be what it says (an edited model file was
    // predicted as if it had run: "error 141073.7%").
    if (run.contains("model")) {
        const std::string ran = field<std::string>(run, "model", runFile, "\"run\"");
        if (ran != runModelIdentity(s))
            badRun(runFile, "the run was of " + ran + ", but its scenario " + s.file + " now reads " + runModelIdentity(s)
                                + ": the scenario or its model changed since the run; run it again");
    }
    if (jsonOut)
        refuseOutputOverInputs("compare", "--json", *jsonOut, s);
    s.engine.ranks = field<int>(run, "ranks", runFile, "\"run\"");
    s.engine.layers = field<std::vector<int>>(run, "layers", runFile, "\"run\"");

    // The measured step as the prediction needs it: ranks with their tokens, layers with loads.
    StepMetrics measured;
    for (const char* key : {"gpus", "layers", "layers_median", "layers_mean"})
        if (j.contains(key) && !j[key].is_array())
            badRun(runFile, std::string("\"") + key + "\" must be a list, not " + std::string(j[key].type_name()));
    if (j.contains("engine") && !j["engine"].is_string())
        badRun(runFile, "\"engine\" must be a string (what ran), not " + std::string(j["engine"].type_name()));
    if (run.contains("hardware_threads") && (!run["hardware_threads"].is_number_integer() || run["hardware_threads"].get<std::int64_t>() < 1))
        badRun(runFile, "\"run\".hardware_threads = " + run["hardware_threads"].dump() + " must be a whole number, at least 1");
    const auto gpus = field<nlohmann::json>(j, "gpus", runFile, "the file");
    measured.num_gpus = static_cast<int>(gpus.size());
    for (const auto& g : gpus) {
        GpuMetrics gm;
        gm.tokens = field<std::int64_t>(g, "tokens", runFile, "a \"gpus\" entry");
        measured.gpus.push_back(gm);
    }
    for (const auto& l : field<nlohmann::json>(j, "layers", runFile, "the file")) {
        LayerMetrics lm;
        lm.decoder_layer = field<int>(l, "layer", runFile, "a \"layers\" entry");
        lm.expert_load = field<std::vector<std::int64_t>>(l, "expert_load", runFile, "a \"layers\" entry");
        measured.layers.push_back(lm);
    }
    // The per-layer medians over the run's steps where the file has them (a preempted step on a
    // shared machine pulls the mean, and the calibration takes medians too); else the means.
    const bool medians = j.contains("layers_median");
    const char* const timesKey = medians ? "layers_median" : "layers_mean";
    const std::string entry = std::string("a \"") + timesKey + "\" entry";
    std::vector<LayerMetrics> means;
    for (const auto& l : field<nlohmann::json>(j, timesKey, runFile, "the file")) {
        LayerMetrics lm;
        lm.decoder_layer = field<int>(l, "layer", runFile, entry);
        lm.time_us = field<double>(l, "time_us", runFile, entry);
        lm.dispatch_us = field<double>(l, "dispatch_us", runFile, entry);
        lm.compute_us = field<double>(l, "compute_us", runFile, entry);
        lm.combine_us = field<double>(l, "combine_us", runFile, entry);
        means.push_back(lm);
    }
    checkMeasuredRun(s, measured, means, j, runFile);
    const Calibration base = defaultCalibration(GpuArch::cpu);
    std::vector<Calibration> cals;
    for (const auto& f : calibrationFiles) {
        cals.push_back(loadCalibrationFile(f, base));
        // A file without the CPU section or without this model's format's curve was predicted with
        // the built-in default's numbers under the file's name.
        const CpuCalibration cpu = loadCalibrationFile(f, Calibration{}).cpu;  // the file's own, no default beneath
        if (!cpu.valid())
            throw InputError(Location{f, 0, 0}, "has no measured cpu: section (cores, expert_us_per_mweight, router_gflops, "
                                                "copy_gbs): measure one with moex-cli calibrate --backend cpu -o FILE");
        if (!cpu.curveFor(s.precision.weights, s.model.hidden_size, s.model.moe_intermediate_size))
            throw InputError(Location{f, 0, 0}, "has no expert_us_per_mweight curve for " + std::string(toString(s.precision.weights))
                                                    + " weights, the run's: moex-cli calibrate --backend cpu measures every format");
    }
    if (cals.empty())
        cals.push_back(base);
    // One prediction per calibration; with two (taken right before and right after the run, as this
    // machine's bandwidth moves by tens of percent within minutes) the rows' prediction is their mean.
    std::vector<std::vector<PredictionRow>> each;
    for (const auto& cal : cals) {
        try {
            each.push_back(predictionTable(means, predictEngineStep(s, measured, cal)));
        } catch (const std::invalid_argument& e) {
            badRun(runFile, e.what());
        }
    }
    std::vector<PredictionRow> rows = each.front();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        double sum = 0;
        for (const auto& e : each)
            sum += e[i].predicted_us;
        rows[i].predicted_us = sum / static_cast<double>(each.size());
    }
    const Calibration& cal = cals.front();
    const bool bracketed = each.size() == 2;
    // Files from before the run recorded its hardware threads have no note.
    const int hardwareThreads = run.contains("hardware_threads") ? field<int>(run, "hardware_threads", runFile, "\"run\"") : 0;
    const std::string timeSharing = timeSharingNote(measured.num_gpus, hardwareThreads);

    if (jsonOut) {
        nlohmann::json out;
        out["scenario"] = s.name;
        out["calibration"] = cal.name;
        out["calibrations"] = static_cast<int>(calibrationFiles.size());
        out["engine"] = j.value("engine", "");
        out["measured_statistic"] = medians ? "median" : "mean";
        out["time_shared"] = !timeSharing.empty();
        nlohmann::json list = nlohmann::json::array();
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& r = rows[i];
            nlohmann::json row = {{"what", r.what}, {"measured_us", r.measured_us}, {"predicted_us", r.predicted_us}, {"error", r.error()}};
            if (bracketed) {
                row["predicted_us_before"] = each[0][i].predicted_us;
                row["predicted_us_after"] = each[1][i].predicted_us;
            }
            list.push_back(row);
        }
        out["rows"] = list;
        writeJson(*jsonOut, out.dump(1));
        if (*jsonOut == "-")
            return 0;
    }
    std::cout << "scenario     " << s.name << " (" << s.model.name << ")\n";
    std::cout << "measured     " << j.value("engine", std::string("cpu engine")) << "; per layer the "
              << (medians ? "median" : "mean") << " over " << j.value("steps", 0) << " steps\n";
    std::cout << "predicted    simulator on host-cpu x" << measured.num_gpus << ", calibration " << cal.name
              << (calibrationFiles.empty() ? " (not measured: run moex-cli calibrate --backend cpu -o FILE)" : "")
              << (bracketed ? "; the mean of the predictions from the calibrations before and after the run" : "") << "\n\n";
    std::cout << std::left << std::setw(20) << "" << std::right << std::setw(14) << "measured ms" << std::setw(14)
              << "predicted ms" << std::setw(10) << "error";
    if (bracketed)
        std::cout << std::setw(22) << "before / after ms";
    std::cout << '\n';
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        std::cout << std::left << std::setw(20) << r.what << std::right << std::setw(14) << fixed(r.measured_us / 1e3, 3)
                  << std::setw(14) << fixed(r.predicted_us / 1e3, 3) << std::setw(9) << fixed(r.error() * 100, 1) << "%";
        if (bracketed)
            std::cout << std::setw(12) << fixed(each[0][i].predicted_us / 1e3, 3) << " / " << fixed(each[1][i].predicted_us / 1e3, 3);
        std::cout << '\n';
    }
    if (!timeSharing.empty())
        std::cout << "\nnote: " << timeSharing << '\n';
    return 0;
}

}  // namespace moex::cli
