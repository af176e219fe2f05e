// Placement strategies at the DeepSeek-R1 shape: EPLB runtime and the balance of each strategy.
//   bench_place [runs=20] [zipf_s=1.0] [seed=1]
// Load: 58 MoE layers x 256 experts, token counts drawn Zipf(s) over a per-layer random order of
// the experts (seeded), 1e6 routed tokens per layer.
// Systems: GB200 NVL72 (72 GPUs, one NVLink domain, 288 slots) and 8 x HGX-H200 (64 GPUs in 8
// domains, 320 slots: 288 is not a multiple of 64, so the next multiple above it).
// runtime  = median of `runs` calls of rebalanceExperts over all 58 layers, thread CPU time (wall
//            beside it). Its ceiling: one std::sort of R floats per layer, the least any sort-based
//            packing does; "ratio" = runtime / ceiling.
// balance  = mean over layers of max/mean GPU load, each replica taking an even share of its
//            expert's tokens, as serving systems split them (1.000 = perfect).
// #wrong   = layers breaking an invariant: an expert without a slot, or a GPU whose slot count
//            differs from R/G (contiguous and round-robin may leave GPUs uneven when R % G != 0).
// coloc    = GPUs holding two replicas of one expert (deepseek-ai/EPLB#22), summed over layers.
#include "placement/balance.h"
#include "placement/eplb.h"
#include "placement/strategies.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <numeric>
#include <random>
#include <vector>

namespace {

using Matrix = std::vector<std::vector<double>>;
using Clock = std::chrono::steady_clock;

double cpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

Matrix zipfLoad(int layers, int experts, double s, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    double harmonic = 0;
    for (int i = 1; i <= experts; ++i)
        harmonic += 1.0 / std::pow(i, s);
    Matrix w(static_cast<std::size_t>(layers), std::vector<double>(static_cast<std::size_t>(experts)));
    for (auto& row : w) {
        std::vector<int> order(static_cast<std::size_t>(experts));
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        for (int i = 0; i < experts; ++i)
            row[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] =
                std::round(1e6 / harmonic / std::pow(i + 1, s));
    }
    return w;
}

int wrongLayers(const moex::Placement& p, int experts, int slots)
{
    int wrong = 0;
    for (const auto& layer : p.layers) {
        bool bad = layer.numSlots() != slots;
        for (int c : layer.replicaCounts(experts))
            bad = bad || c == 0;
        for (const auto& g : layer.gpu_slots)
            bad = bad || static_cast<int>(g.size()) * layer.numGpus() != slots;
        wrong += bad ? 1 : 0;
    }
    return wrong;
}

struct System {
    const char* name;
    int gpus;
    int nodes;
    int slots;
};

}  // namespace

int main(int argc, char** argv)
{
    const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
    const double s = argc > 2 ? std::atof(argv[2]) : 1.0;
    const auto seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1ULL;
    constexpr int kLayers = 58, kExperts = 256, kGroups = 8;
    const Matrix load = zipfLoad(kLayers, kExperts, s, seed);
    double hottest = 0;
    for (const auto& row : load)
        hottest = std::max(hottest, *std::max_element(row.begin(), row.end()) / (1e6 / kExperts));
    std::printf("DeepSeek-R1 shape: %d MoE layers x %d experts (%d groups), Zipf s=%.2f, seed %llu, "
                "hottest expert %.1fx the mean\n\n",
                kLayers, kExperts, kGroups, s, static_cast<unsigned long long>(seed), hottest);

    const System systems[] = {{"GB200 NVL72", 72, 1, 288}, {"8 x HGX-H200", 64, 8, 320}};
    for (const System& sys : systems) {
        // EPLB runtime against its sort ceiling.
        std::vector<double> cpu, wall, ceiling;
        moex::EplbResult r;
        for (int i = 0; i < runs; ++i) {
            const auto t0 = Clock::now();
            const double c0 = cpuMs();
            r = moex::rebalanceExperts(load, sys.slots, kGroups, sys.nodes, sys.gpus);
            cpu.push_back(cpuMs() - c0);
            wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());

            const double s0 = cpuMs();
            std::vector<float> keys(static_cast<std::size_t>(sys.slots));
            for (const auto& row : load) {
                for (int k = 0; k < sys.slots; ++k)
                    keys[static_cast<std::size_t>(k)] = static_cast<float>(row[static_cast<std::size_t>(k % kExperts)]) / static_cast<float>(k + 1);
                std::sort(keys.begin(), keys.end(), std::greater<>());
            }
            ceiling.push_back(cpuMs() - s0);
        }
        std::printf("%s: %d GPUs in %d NVLink domain%s, %d slots (%d per GPU), EPLB %s policy\n", sys.name, sys.gpus,
                    sys.nodes, sys.nodes == 1 ? "" : "s", sys.slots, sys.slots / sys.gpus, r.hierarchical ? "hierarchical" : "global");
        std::printf("  eplb runtime  %.3f ms cpu (%.3f ms wall), median of %d; ceiling (one sort per layer) "
                    "%.3f ms; ratio %.1f\n",
                    median(cpu), median(wall), runs, median(ceiling), median(cpu) / std::max(1e-6, median(ceiling)));

        std::printf("  %-12s %8s %7s %6s\n", "strategy", "balance", "#wrong", "coloc");
        for (const char* name : {"contiguous", "round-robin", "eplb"}) {
            moex::PlacementRequest rq;
            rq.strategy = name;
            rq.num_experts = kExperts;
            rq.num_gpus = sys.gpus;
            rq.num_nodes = sys.nodes;
            rq.num_groups = kGroups;
            rq.num_slots = sys.slots;
            rq.load = load;
            const moex::Placement p = moex::makePlacement(rq);
            std::printf("  %-12s %8.3f %7d %6zu\n", name, moex::maxMeanGpuLoad(p, load),
                        wrongLayers(p, kExperts, sys.slots), moex::findColocatedReplicas(p).size());
        }
        std::printf("\n");
    }
    return 0;
}
