// Synthetic routing throughput at the DeepSeek-R1 / GB200 NVL72 decode shape.
//   bench_routing [steps=20] [tokens_per_gpu=128]
// Prints the median time of one full step (58 MoE layers x 72 source GPUs x 256 experts,
// tokens_per_gpu * 8 pairs per GPU) on one core, and as its ceiling the time to merely generate
// the same number of random 64-bit words (one per pair): the sampler cannot beat that, so
// "ratio" = step time / ceiling says how close to the floor it runs. `#wrong` counts rows that
// break an invariant (sum != tokens * top_k, or one expert over tokens per source).
// Times are thread CPU time (CLOCK_THREAD_CPUTIME_ID), so a busy machine inflates them less than
// wall time would; wall time is printed beside them.
#include "workload/synthetic_routing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double cpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

long wrongRows(const moex::RoutingSample& s)
{
    long wrong = 0;
    for (int l = 0; l < s.numLayers(); ++l)
        for (int g = 0; g < s.num_gpus; ++g) {
            long sum = 0;
            bool over = false;
            for (int c : s.row(l, g)) {
                sum += c;
                over = over || c > s.tokens_per_gpu || c < 0;
            }
            wrong += (over || sum != static_cast<long>(s.tokens_per_gpu) * s.top_k) ? 1 : 0;
        }
    return wrong;
}

struct Case {
    const char* name;
    double skew;
    int coactivationGroups;
    double drift;
    int expertGroups;
};

}  // namespace

int main(int argc, char** argv)
{
    const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
    const int tokens = argc > 2 ? std::max(1, std::atoi(argv[2])) : 128;

    moex::ModelSpec model;  // DeepSeek-R1: 58 MoE layers, 256 routed experts, top-8, 8 groups / 4
    model.name = "deepseek-r1";
    for (int l = 3; l < 61; ++l)
        model.moe_layers.push_back(l);
    model.routed_experts = 256;
    model.experts_per_token = 8;
    const int gpus = 72;

    // Ceiling: one xoshiro draw per pair, summed so it is not optimised away.
    const long pairsPerStep = static_cast<long>(model.numMoeLayers()) * gpus * tokens * model.experts_per_token;
    std::vector<double> rngMs;
    std::uint64_t sink = 0;
    moex::detail::Rng rng(1);
    for (int s = 0; s < steps; ++s) {
        const double t0 = cpuMs();
        for (long i = 0; i < pairsPerStep; ++i)
            sink += rng.next() >> 56;
        rngMs.push_back(cpuMs() - t0);
    }
    const double ceiling = median(rngMs);
    std::printf("shape: %d layers x %d GPUs x %d experts, %d tokens/GPU x top-%d = %d pairs/GPU (%ld pairs/step)\n",
                model.numMoeLayers(), gpus, model.routed_experts, tokens, model.experts_per_token,
                tokens * model.experts_per_token, pairsPerStep);
    std::printf("ceiling: %.2f ms/step to generate %ld random words (checksum %llu)\n", ceiling, pairsPerStep,
                static_cast<unsigned long long>(sink % 1000));
    std::printf("%-36s %8s %8s %8s %7s %7s\n", "case", "ms/step", "wall_ms", "first_ms", "ratio", "#wrong");

    const Case cases[] = {
        {"zipf 1.1, no groups", 1.1, 0, 0.0, 1},
        {"zipf 1.1, group-limited 8/4", 1.1, 0, 0.0, 8},
        {"zipf 1.1, 16 co-groups, drift .01", 1.1, 16, 0.01, 1},
        {"full: 8/4, 16 co-groups, drift .01", 1.1, 16, 0.01, 8},
    };
    for (const Case& c : cases) {
        model.expert_groups = c.expertGroups;
        model.groups_per_token = c.expertGroups > 1 ? 4 : 1;
        moex::Workload work;
        work.tokens_per_gpu = tokens;
        work.routing.skew = c.skew;
        work.routing.hot_experts = 0.05;
        work.routing.coactivation_groups = c.coactivationGroups;
        work.routing.drift = c.drift;
        work.routing.seed = 7;
        moex::SyntheticRouting gen(model, work, gpus);
        moex::RoutingSample sample;
        double t0 = cpuMs();
        gen.next(sample);  // first call sizes the sample
        const double first = cpuMs() - t0;
        long wrong = wrongRows(sample);
        std::vector<double> ms;
        std::vector<double> wall;
        for (int s = 0; s < steps; ++s) {
            const auto w0 = Clock::now();
            t0 = cpuMs();
            gen.next(sample);
            ms.push_back(cpuMs() - t0);
            wall.push_back(msSince(w0));
            wrong += wrongRows(sample);
        }
        const double med = median(ms);
        std::printf("%-36s %8.2f %8.2f %8.2f %7.2f %7ld\n", c.name, med, median(wall), first, med / ceiling, wrong);
    }
    return 0;
}
