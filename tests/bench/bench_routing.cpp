// Synthetic routing throughput at the DeepSeek-R1 / GB200 NVL72 decode shape, both samplers.
//   bench_routing [steps=20] [tokens_per_gpu=128]
// Prints the median time of one full step (58 MoE layers x 72 source GPUs x 256 experts,
// tokens_per_gpu * 8 pairs per GPU, min(tokens, 32) sub-batches as simulate runs it) for the pairs
// sampler (one core), the counts sampler on one core and on the machine's threads (wall), and as
// ceilings the time to merely generate one random 64-bit word per pair (the pairs sampler's floor)
// and one per expert cell (the counts sampler's: it draws about one per cell). "ratio" = step
// time / its ceiling. `#wrong` counts rows that break an invariant (sum != tokens * top_k, or one
// expert over tokens per source). One-core times are thread CPU time (CLOCK_THREAD_CPUTIME_ID),
// so a busy machine inflates them less than wall time would.
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

    // Ceilings: one xoshiro draw per pair, and per expert cell, summed so they are not optimised away.
    const long pairsPerStep = static_cast<long>(model.numMoeLayers()) * gpus * tokens * model.experts_per_token;
    const long cellsPerStep = static_cast<long>(model.numMoeLayers()) * gpus * model.routed_experts;
    std::uint64_t sink = 0;
    moex::detail::Rng rng(1);
    const auto words = [&](long n) {
        std::vector<double> ms;
        for (int s = 0; s < steps; ++s) {
            const double t0 = cpuMs();
            for (long i = 0; i < n; ++i)
                sink += rng.next() >> 56;
            ms.push_back(cpuMs() - t0);
        }
        return median(ms);
    };
    const double pairCeiling = words(pairsPerStep);
    const double cellCeiling = words(cellsPerStep);
    std::printf("shape: %d layers x %d GPUs x %d experts, %d tokens/GPU x top-%d = %d pairs/GPU (%ld pairs, %ld cells/step)\n",
                model.numMoeLayers(), gpus, model.routed_experts, tokens, model.experts_per_token,
                tokens * model.experts_per_token, pairsPerStep, cellsPerStep);
    std::printf("ceilings: %.2f ms/step for one random word per pair, %.3f ms per cell (checksum %llu); %d threads\n",
                pairCeiling, cellCeiling, static_cast<unsigned long long>(sink % 1000), moex::WorkerPool::hardwareThreads());
    std::printf("%-36s %-14s %8s %8s %7s %7s\n", "case", "sampler", "ms/step", "first_ms", "ratio", "#wrong");

    const Case cases[] = {
        {"zipf 1.1, no groups", 1.1, 0, 0.0, 1},
        {"zipf 1.1, group-limited 8/4", 1.1, 0, 0.0, 8},
        {"zipf 1.1, 16 co-groups, drift .01", 1.1, 16, 0.01, 1},
        {"full: 8/4, 16 co-groups, drift .01", 1.1, 16, 0.01, 8},
        {"samples: skew .4, hot .03, 8/4", 0.4, 16, 0.01, 8},
    };
    struct Run {
        const char* name;
        moex::RoutingSampler sampler;
        int threads;  // 0: the machine's (wall time), else thread CPU time
    };
    const Run runs[] = {{"pairs, 1 core", moex::RoutingSampler::pairs, 1},
                        {"counts, 1 core", moex::RoutingSampler::counts, 1},
                        {"counts, all", moex::RoutingSampler::counts, 0}};
    for (const Case& c : cases) {
        model.expert_groups = c.expertGroups;
        model.groups_per_token = c.expertGroups > 1 ? 4 : 1;
        moex::Workload work;
        work.tokens_per_gpu = tokens;
        work.routing.skew = c.skew;
        work.routing.hot_experts = c.skew < 1.0 ? 0.03 : 0.05;
        work.routing.coactivation_groups = c.coactivationGroups;
        work.routing.drift = c.drift;
        work.routing.seed = 7;
        for (const Run& run : runs) {
            moex::SyntheticRoutingOptions options;
            options.group_subbatches = std::min(tokens, 32);
            options.sampler = run.sampler;
            options.threads = run.threads;
            moex::SyntheticRouting gen(model, work, gpus, options);
            moex::RoutingSample sample;
            const bool wall = run.threads == 0;
            const auto clock = [&] { return wall ? msSince(Clock::time_point{}) : cpuMs(); };
            double t0 = clock();
            gen.next(sample);  // first call sizes the sample
            const double first = clock() - t0;
            long wrong = wrongRows(sample);
            std::vector<double> ms;
            const int n = run.sampler == moex::RoutingSampler::pairs ? std::max(3, steps / 4) : steps;
            for (int s = 0; s < n; ++s) {
                t0 = clock();
                gen.next(sample);
                ms.push_back(clock() - t0);
                wrong += wrongRows(sample);
            }
            const double med = median(ms);
            const double ceiling = run.sampler == moex::RoutingSampler::pairs ? pairCeiling : cellCeiling;
            std::printf("%-36s %-14s %8.2f %8.2f %7.2f %7ld\n", c.name, run.name, med, first, med / ceiling, wrong);
        }
    }
    return 0;
}
