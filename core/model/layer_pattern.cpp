#include "model/layer_pattern.h"

#include <charconv>

namespace moex {

namespace {

std::optional<MixerKind> mixerOf(char c)
{
    switch (c) {
    case 'A': return MixerKind::attention;
    case 'S': return MixerKind::sliding;
    case 'L': return MixerKind::linear;
    case 'M': return MixerKind::mamba;
    case '-': return MixerKind::none;
    default: return std::nullopt;
    }
}

std::optional<FfnKind> ffnOf(char c)
{
    switch (c) {
    case 'E': return FfnKind::moe;
    case 'D': return FfnKind::dense;
    case '-': return FfnKind::none;
    default: return std::nullopt;
    }
}

char letter(MixerKind k)
{
    constexpr char letters[] = {'A', 'S', 'L', 'M', '-'};
    return letters[static_cast<int>(k)];
}

char letter(FfnKind k)
{
    constexpr char letters[] = {'D', 'E', '-'};
    return letters[static_cast<int>(k)];
}

bool isSeparator(char c)
{
    return c == ' ' || c == ',' || c == '\t';
}

}  // namespace

std::optional<std::vector<LayerKind>> parseLayerPattern(std::string_view text, int numLayers, std::string& error)
{
    constexpr std::size_t kMaxRepeat = 1 << 16;
    std::vector<LayerKind> out;
    std::size_t i = 0;
    int token = 0;
    while (i < text.size()) {
        if (isSeparator(text[i])) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && !isSeparator(text[end]))
            ++end;
        const std::string_view t = text.substr(i, end - i);
        ++token;
        const std::string where = "token " + std::to_string(token) + " '" + std::string(t) + "'";
        auto mixer = t.size() >= 2 ? mixerOf(t[0]) : std::nullopt;
        auto ffn = t.size() >= 2 ? ffnOf(t[1]) : std::nullopt;
        if (!mixer || !ffn) {
            error = where + " is not a mixer letter (A, S, L, M, -) followed by an FFN letter (E, D, -)";
            return std::nullopt;
        }
        std::size_t count = 1;
        if (t.size() > 2) {
            if (t[2] != '*' || t.size() == 3) {
                error = where + ": after the two letters only '*N' (a repeat count) may follow";
                return std::nullopt;
            }
            const auto digits = t.substr(3);
            const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
            if (ec != std::errc() || p != digits.data() + digits.size() || count < 1 || count > kMaxRepeat) {
                error = where + ": the repeat count must be a whole number from 1 to " + std::to_string(kMaxRepeat);
                return std::nullopt;
            }
        }
        if (out.size() + count > static_cast<std::size_t>(std::max(0, numLayers))) {
            error = where + " takes the pattern past num_layers = " + std::to_string(numLayers);
            return std::nullopt;
        }
        out.insert(out.end(), count, LayerKind{*mixer, *ffn});
        i = end;
    }
    if (out.empty()) {
        error = "the pattern names no layer";
        return std::nullopt;
    }
    const std::size_t n = static_cast<std::size_t>(numLayers);
    if (out.size() != n) {
        if (n % out.size() != 0) {
            error = "the pattern gives " + std::to_string(out.size()) + " layers, which neither is num_layers = "
                + std::to_string(numLayers) + " nor divides it (a shorter pattern repeats)";
            return std::nullopt;
        }
        const std::size_t period = out.size();
        out.reserve(n);
        for (std::size_t k = period; k < n; ++k)
            out.push_back(out[k - period]);
    }
    return out;
}

std::string formatLayerPattern(const std::vector<LayerKind>& layers)
{
    const std::size_t n = layers.size();
    std::size_t period = n;
    for (std::size_t p = 1; p < n; ++p) {
        if (n % p != 0)
            continue;
        bool repeats = true;
        for (std::size_t k = p; k < n && repeats; ++k)
            repeats = layers[k] == layers[k - p];
        if (repeats) {
            period = p;
            break;
        }
    }
    std::string out;
    for (std::size_t k = 0; k < period;) {
        std::size_t run = 1;
        while (k + run < period && layers[k + run] == layers[k])
            ++run;
        if (!out.empty())
            out += ' ';
        out += letter(layers[k].mixer);
        out += letter(layers[k].ffn);
        if (run > 1)
            out += '*' + std::to_string(run);
        k += run;
    }
    return out;
}

}  // namespace moex
