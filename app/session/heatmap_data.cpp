#include "heatmap_data.h"

#include "metrics/gpu_busy.h"

namespace moex::session {

Matrix expertLoadMatrix(const StepMetrics& m)
{
    Matrix out;
    out.rows = static_cast<int>(m.layers.size());
    out.cols = m.layers.empty() ? 0 : static_cast<int>(m.layers.front().expert_load.size());
    out.values.reserve(static_cast<std::size_t>(out.rows * out.cols));
    for (const auto& l : m.layers)
        for (int e = 0; e < out.cols; ++e)
            out.values.push_back(e < static_cast<int>(l.expert_load.size())
                                     ? static_cast<double>(l.expert_load[static_cast<std::size_t>(e)])
                                     : 0.0);
    return out;
}

Matrix trafficMatrix(const StepMetrics& m)
{
    Matrix out;
    const int g = m.num_gpus;
    if (g <= 0 || m.traffic.size() != static_cast<std::size_t>(g) * static_cast<std::size_t>(g))
        return out;
    out.rows = out.cols = g;
    out.values.reserve(m.traffic.size());
    for (double b : m.traffic)
        out.values.push_back(b / 1e6);
    return out;
}

void LatencyHistory::add(const StepMetrics& m)
{
    const int g = static_cast<int>(m.gpus.size());
    if (g != m_gpus) {
        clear();
        m_gpus = g;
    }
    if (!m_steps.empty() && m.step == m_steps.back()) {
        m_rows.pop_back();  // the same step re-simulated after an edit replaces its row
        m_steps.pop_back();
    } else if (!m_steps.empty() && m.step < m_steps.back()) {
        clear();  // a reset: the history starts again
    }
    m_gpus = g;
    std::vector<double> row;
    row.reserve(static_cast<std::size_t>(g));
    for (std::size_t i = 0; i < m.gpus.size(); ++i)
        row.push_back(gpuBusyUs(m, i) / 1000.0);
    m_rows.push_back(std::move(row));
    m_steps.push_back(m.step);
    while (static_cast<int>(m_rows.size()) > m_capacity) {
        m_rows.pop_front();
        m_steps.pop_front();
    }
}

void LatencyHistory::clear()
{
    m_rows.clear();
    m_steps.clear();
}

Matrix LatencyHistory::matrix() const
{
    Matrix out;
    out.rows = static_cast<int>(m_rows.size());
    out.cols = m_gpus;
    for (const auto& r : m_rows)
        out.values.insert(out.values.end(), r.begin(), r.end());
    return out;
}

std::vector<int> LatencyHistory::steps() const
{
    return {m_steps.begin(), m_steps.end()};
}

}  // namespace moex::session
