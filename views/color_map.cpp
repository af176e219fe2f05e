// Colour maps as lists of stops with linear RGB interpolation between them.
#include "views/color_map.h"

#include <algorithm>
#include <cmath>

namespace moex::views {

ColorMap ColorMap::viridis()
{
    // matplotlib's viridis sampled at 9 evenly spaced points (R viridisLite::viridis(9)).
    ColorMap m;
    m.m_stops = {QColor(0x44, 0x01, 0x54), QColor(0x47, 0x2d, 0x7b), QColor(0x3b, 0x52, 0x8b),
                 QColor(0x2c, 0x72, 0x8e), QColor(0x21, 0x90, 0x8c), QColor(0x27, 0xad, 0x81),
                 QColor(0x5d, 0xc8, 0x63), QColor(0xaa, 0xdc, 0x32), QColor(0xfd, 0xe7, 0x25)};
    return m;
}

ColorMap ColorMap::utilisation()
{
    ColorMap m;
    m.m_stops = {QColor(0x1a, 0x98, 0x50), QColor(0xf4, 0xd0, 0x3f), QColor(0xd7, 0x30, 0x27)};
    return m;
}

ColorMap ColorMap::diverging()
{
    ColorMap m;
    m.m_stops = {QColor(0x21, 0x66, 0xac), QColor(0xf7, 0xf7, 0xf7), QColor(0xb2, 0x18, 0x2b)};
    return m;
}

QColor ColorMap::at(double t) const
{
    if (m_stops.empty())
        return {};
    if (!(t >= 0.0))  // also catches NaN
        t = 0.0;
    t = std::min(t, 1.0);
    const double pos = t * static_cast<double>(m_stops.size() - 1);
    const auto i = std::min(static_cast<std::size_t>(pos), m_stops.size() - 1);
    if (i + 1 >= m_stops.size())
        return m_stops.back();
    const double f = pos - static_cast<double>(i);
    const QColor& a = m_stops[i];
    const QColor& b = m_stops[i + 1];
    auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
    return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
}

QColor ColorMap::map(double value, double lo, double hi) const
{
    if (!(hi > lo))
        return at(0.0);  // empty or constant range: everything is the low end
    return at((value - lo) / (hi - lo));
}

}  // namespace moex::views
