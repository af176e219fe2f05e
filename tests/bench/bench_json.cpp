// parseJsonInput (every JSON moex reads from outside: config.json, statistics, traces, run files,
// safetensors headers) against nlohmann::json::parse of the same text, which checks neither depth
// nor repeated keys: the price of the checks, and how it grows with the input.
//   bench_json [runs=5] [max_mb=16]
// Inputs: (a) an array of small objects, as a run file's per-step records or a trace's layers (one
// object per ~40 bytes, all siblings); (b) an object of arrays of numbers, as a statistics file
// (few objects, many numbers); (c) keys written with escapes, their offsets recorded. Sizes 1 MB,
// 4 MB, ... up to max_mb. Each line: the median wall time
// of `runs` parses for both readers and their ratio (parseJsonInput / plain). A ratio that grows
// with the size is a parse that is not linear.
#include "common/json_input.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

std::string objectsArray(std::size_t bytes)
{
    std::string s = "[";
    for (int i = 0; s.size() < bytes; ++i) {
        if (i > 0)
            s += ",\n";
        s += "{\"layer\": " + std::to_string(i % 61) + ", \"ms\": " + std::to_string(i % 997) + ".25, \"ok\": true}";
    }
    return s + "]\n";
}

// (c) an object of keys written with escapes ("\u0061" for "a"), parsed with key offsets recorded
// (as config.json and meta_info.json are): each key's place is found by walking back over it.
std::string escapedKeysObject(std::size_t bytes)
{
    std::string s = "{\"extra\": {";
    for (int i = 0; s.size() < bytes; ++i)
        s += (i > 0 ? ", \"\\u0061" : "\"\\u0061") + std::to_string(i) + "\": " + std::to_string(i % 7);
    return s + "}}\n";
}

std::string numbersObject(std::size_t bytes)
{
    std::string s = "{";
    for (int layer = 0; s.size() < bytes; ++layer) {
        if (layer > 0)
            s += ",\n";
        s += "\"layer_" + std::to_string(layer) + "\": [";
        for (int e = 0; e < 256; ++e)
            s += (e > 0 ? ", " : "") + std::to_string((layer * 7919 + e * 104729) % 100000);
        s += "]";
    }
    return s + "}\n";
}

template <class F>
double medianMs(int runs, F&& parse)
{
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = Clock::now();
        parse();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return median(ms);
}

}  // namespace

int main(int argc, char** argv)
{
    const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    const int maxMb = argc > 2 ? std::max(1, std::atoi(argv[2])) : 16;
    std::printf("%-16s %8s %14s %14s %7s\n", "input", "MB", "checked ms", "plain ms", "ratio");
    for (const char* kind : {"objects array", "numbers object", "escaped keys"}) {
        for (int mb = 1; mb <= maxMb; mb *= 4) {
            const std::size_t bytes = static_cast<std::size_t>(mb) << 20;
            const std::string text = kind[0] == 'o' ? objectsArray(bytes) : kind[0] == 'n' ? numbersObject(bytes) : escapedKeysObject(bytes);
            std::size_t sink = 0;
            const double checked = medianMs(runs, [&] {
                if (kind[0] == 'e') {
                    moex::JsonKeyOffsets keys;
                    sink += moex::parseJsonInput(text, "bench.json", 0, "bench.json", keys).size() + keys.offsets.size();
                } else {
                    sink += moex::parseJsonInput(text, "bench.json").size();
                }
            });
            const double plain = medianMs(runs, [&] { sink += nlohmann::json::parse(text).size(); });
            std::printf("%-16s %8.1f %14.2f %14.2f %7.2f%s\n", kind, static_cast<double>(text.size()) / 1048576.0,
                        checked, plain, checked / plain, sink == 0 ? " (empty?)" : "");
        }
    }
    return 0;
}
