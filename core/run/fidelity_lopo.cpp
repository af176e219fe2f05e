#include "run/fidelity_lopo.h"

#include "run/fidelity_e2e.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace moex {

namespace {

// A calibration value the defaults chose on measurements, and the points it was chosen on
// (docs/CALIBRATION.md): by name prefix and suffix.
struct Chosen {
    const char* label;
    GpuArch arch;
    double Calibration::*field;
    double lo, hi;                      // the range a refit searches
    std::vector<std::string> publications;
    std::vector<std::pair<std::string, std::string>> points;  // (prefix, suffix) of the points it was chosen on
    bool also_blackwell = false;        // Blackwell takes Hopper's value (no measurement of its own)
};

const std::vector<Chosen>& chosenValues()
{
    static const std::vector<Chosen> values = {
        {"hopper nvlink_efficiency", GpuArch::hopper, &Calibration::nvlink_efficiency, 0.3, 1.0,
         {"DeepEP docs/legacy.md", "NVIDIA/nccl-tests#212"},
         {{"deepep-intranode-", ""}, {"nccl-alltoall-h100-busbw", ""}}},
        {"ll_message_us", GpuArch::hopper, &Calibration::ll_message_us, 0.0, 0.2, {"DeepEP docs/legacy.md"},
         {{"deepep-ll-", "-dispatch"}}, true},
        {"ll_overlap_efficiency", GpuArch::hopper, &Calibration::ll_overlap_efficiency, 0.0, 1.0, {"LMSYS blog 2025-05-05"},
         {{"sglang-h100-decode-overlap-gain-256", ""}}, true},
        {"blackwell nvlink_efficiency", GpuArch::blackwell, &Calibration::nvlink_efficiency, 0.3, 1.0,
         {"TensorRT-LLM tech blog 18"}, {{"gb200-a2a-ep8-2048-", ""}, {"gb200-a2a-ep64-2048-", ""}}},
        {"blackwell dispatch_floor_us", GpuArch::blackwell, &Calibration::dispatch_floor_us, 0.0, 100.0,
         {"TensorRT-LLM tech blog 18"}, {{"gb200-a2a-ep8-32-dispatch-floor", ""}}},
        {"blackwell combine_floor_us", GpuArch::blackwell, &Calibration::combine_floor_us, 0.0, 100.0,
         {"TensorRT-LLM tech blog 18"}, {{"gb200-a2a-ep8-32-combine-floor", ""}}},
    };
    return values;
}

bool matches(const FidelityPoint& p, const std::pair<std::string, std::string>& pattern)
{
    const auto& [prefix, suffix] = pattern;
    return p.name.compare(0, prefix.size(), prefix) == 0 && p.name.size() >= suffix.size()
           && p.name.compare(p.name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The x in [lo, hi] where `f` is least (f unimodal there), by golden-section search.
template <typename F>
double goldenSectionMin(F f, double lo, double hi, int iterations = 16)
{
    const double g = (std::sqrt(5.0) - 1) / 2;
    double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
    double f1 = f(x1), f2 = f(x2);
    for (int i = 0; i < iterations; ++i) {
        if (f1 <= f2) {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = f(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = f(x2);
        }
    }
    return (lo + hi) / 2;
}

void setValue(FidelityCalibrations& cals, const Chosen& c, double v)
{
    (c.arch == GpuArch::blackwell ? cals.blackwell : cals.hopper).*c.field = v;
    if (c.also_blackwell)
        cals.blackwell.*c.field = v;
}

}  // namespace

std::string publicationOf(const FidelityPoint& p)
{
    return p.source.substr(0, p.source.find(" ("));
}

std::vector<LopoFold> leaveOnePublicationOut(const std::vector<FidelityPoint>& points, const std::string& modelsDir,
                                             int endToEndSteps)
{
    std::vector<std::string> publications;
    for (const FidelityPoint& p : points)
        if (std::find(publications.begin(), publications.end(), publicationOf(p)) == publications.end())
            publications.push_back(publicationOf(p));
    const Calibration prior;  // the struct's defaults: the values before any measurement

    std::vector<LopoFold> folds;
    for (const std::string& left : publications) {
        LopoFold fold;
        fold.publication = left;
        FidelityCalibrations cals;
        std::ostringstream refit;
        for (const Chosen& c : chosenValues()) {
            if (std::find(c.publications.begin(), c.publications.end(), left) == c.publications.end())
                continue;
            // The points of the other publications it was chosen on.
            std::vector<std::string> names;
            bool e2e = false;  // whether predicting them needs the end-to-end runs
            for (const FidelityPoint& p : points)
                if (publicationOf(p) != left && std::find(c.publications.begin(), c.publications.end(), publicationOf(p)) != c.publications.end()
                    && std::any_of(c.points.begin(), c.points.end(), [&](const auto& pattern) { return matches(p, pattern); })) {
                    names.push_back(p.name);
                    e2e = e2e || p.kind == "end-to-end";
                }
            double value = prior.*c.field;
            if (!names.empty()) {
                // Least squares of the relative errors over those points.
                auto cost = [&](double v) {
                    FidelityCalibrations trial = cals;
                    setValue(trial, c, v);
                    std::vector<FidelityPoint> all = runFidelity(trial);
                    if (e2e)
                        for (auto& p : runEndToEndFidelity(modelsDir, endToEndSteps, trial))
                            all.push_back(std::move(p));
                    double sum = 0;
                    for (const FidelityPoint& p : all)
                        if (std::find(names.begin(), names.end(), p.name) != names.end())
                            sum += p.error() * p.error();
                    return sum;
                };
                value = goldenSectionMin(cost, c.lo, c.hi);
            }
            setValue(cals, c, value);
            std::ostringstream v;
            v.precision(3);
            v << value;
            refit << (refit.tellp() > 0 ? "; " : "") << c.label << " " << v.str()
                  << (names.empty() ? std::string(" (prior)")
                                    : " (refit on " + std::to_string(names.size()) + (names.size() == 1 ? " point)" : " points)"));
        }
        std::vector<FidelityPoint> again = runFidelity(cals);
        for (auto& p : runEndToEndFidelity(modelsDir, endToEndSteps, cals))
            again.push_back(std::move(p));
        for (const FidelityPoint& p : points) {
            if (publicationOf(p) != left)
                continue;
            ++fold.points;
            fold.in_sample = std::max(fold.in_sample, std::abs(p.error()));
            for (const FidelityPoint& q : again)
                if (q.name == p.name)
                    fold.left_out = std::max(fold.left_out, std::abs(q.error()));
        }
        fold.refit = refit.str().empty() ? "nothing (no value was chosen on it)" : refit.str();
        folds.push_back(std::move(fold));
    }
    return folds;
}

}  // namespace moex
