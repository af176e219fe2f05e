// The matrices behind the heatmaps, from StepMetrics: expert load (MoE layer x expert), GPU x GPU
// traffic, and per-GPU latency over the last N steps (a rolling history).
#pragma once

#include "metrics/step_metrics.h"

#include <deque>
#include <vector>

namespace moex::session {

struct Matrix {
    int rows = 0;
    int cols = 0;
    std::vector<double> values;  // row-major
    [[nodiscard]] double at(int r, int c) const { return values[static_cast<std::size_t>(r * cols + c)]; }
};

Matrix expertLoadMatrix(const StepMetrics& m);  // token-expert pairs, [MoE layer][expert]
Matrix trafficMatrix(const StepMetrics& m);     // MB, [source GPU][destination GPU]

class LatencyHistory {
public:
    explicit LatencyHistory(int capacity = 60) : m_capacity(capacity) {}
    void add(const StepMetrics& m);  // a different GPU count starts over
    void clear();
    [[nodiscard]] int size() const { return static_cast<int>(m_rows.size()); }
    [[nodiscard]] int capacity() const { return m_capacity; }
    // [step (oldest first)][GPU] busy time in ms, and the step numbers of the rows.
    [[nodiscard]] Matrix matrix() const;
    [[nodiscard]] std::vector<int> steps() const;

private:
    int m_capacity;
    int m_gpus = 0;
    std::deque<std::vector<double>> m_rows;
    std::deque<int> m_steps;
};

}  // namespace moex::session
