// ColorMap: value in [lo, hi] -> colour, perceptually uniform (viridis for loads, a diverging
// map for deltas, a green-yellow-red utilisation map). Pure function of its stops; tested by exact
// colours at known values.
#pragma once

#include <QColor>

#include <vector>

namespace moex::views {

class ColorMap {
public:
    static ColorMap viridis();
    static ColorMap utilisation();  // green -> yellow -> red
    static ColorMap diverging();    // blue -> white -> red, centred at the middle of the range

    // t in [0, 1], clamped; linear interpolation in RGB between stops.
    [[nodiscard]] QColor at(double t) const;
    [[nodiscard]] QColor map(double value, double lo, double hi) const;
    [[nodiscard]] const std::vector<QColor>& stops() const { return m_stops; }

private:
    std::vector<QColor> m_stops;
};

}  // namespace moex::views
