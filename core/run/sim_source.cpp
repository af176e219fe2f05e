// MetricsSource "sim": moex::Simulator over the scenario's RoutingSource.
#include "run/metrics_source.h"

#include "sim/scenario_run.h"
#include "sim/simulator.h"

#include <optional>
#include <stdexcept>

namespace moex {

namespace {

class SimSource final : public MetricsSource {
public:
    explicit SimSource(SourceOptions options) : m_options(std::move(options)) {}

    std::string name() const override { return "sim"; }
    std::string detail() const override { return "calibration " + m_calibration; }
    std::string calibration() const override { return m_calibration; }

    void configure(const Scenario& scenario, const Placement& placement) override
    {
        const Calibration cal = m_options.calibration ? *m_options.calibration
                                                      : resolveCalibration(scenario, m_options.calibration_file);
        std::shared_ptr<RoutingSource> routing = m_options.routing;
        const bool own = !routing;
        if (own && m_routing && m_routingScenario && sameRouting(*m_routingScenario, scenario))
            routing = m_routing;  // an edit that keeps the routing (placement, precision...): its steps are kept too
        else if (own)
            routing = makeRoutingSource(scenario, m_options.seed);
        auto sim = std::make_unique<Simulator>(scenario, placement, cal);
        // The routing is rewound only once the simulator took the configuration: a refused one
        // leaves the source as it was.
        startRunWindow(*routing);  // the steps after those the placement was fitted to
        if (!own)
            m_routingScenario.reset();
        else if (routing != m_routing)
            m_routingScenario = scenario;
        m_routing = std::move(routing);
        m_sim = std::move(sim);
        m_calibration = cal.name;
        m_sample = RoutingSample{};
        m_hasSample = false;
        m_step = 0;
    }

    bool configured() const override { return m_sim != nullptr; }

    void setPlacement(const Placement& placement, const GpuSpeeds& speeds) override
    {
        if (!m_sim)
            throw std::logic_error("the simulator has no scenario yet");
        m_sim->setSpeeds(speeds);
        m_sim->setPlacement(placement);
    }

    void reset() override
    {
        if (m_routing)
            startRunWindow(*m_routing);
        m_hasSample = false;
        m_step = 0;
    }

    void next(StepMetrics& out) override
    {
        if (!m_sim)
            throw std::logic_error("the simulator has no scenario yet");
        m_routing->next(m_sample);
        m_hasSample = true;
        m_sim->step(m_sample, out);
        out.step = m_step++;
    }

    void repeat(StepMetrics& out) override
    {
        if (!m_hasSample) {
            next(out);
            return;
        }
        m_sim->step(m_sample, out);
        out.step = m_step - 1;
    }

private:
    SourceOptions m_options;
    std::shared_ptr<RoutingSource> m_routing;
    std::optional<Scenario> m_routingScenario;  // what m_routing was made for (options.routing aside)
    std::unique_ptr<Simulator> m_sim;
    std::string m_calibration;
    RoutingSample m_sample;
    bool m_hasSample = false;
    int m_step = 0;
};

}  // namespace

std::unique_ptr<MetricsSource> makeSimSource(const SourceOptions& options)
{
    return std::make_unique<SimSource>(options);
}

}  // namespace moex
