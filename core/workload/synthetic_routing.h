// SyntheticRouting: a seeded generator of realistic per-step routing counts (RoutingSample).
//
//   SyntheticRouting gen(model, workload, 72);  RoutingSample s;  gen.next(s);  gen.next(s);  ...
//
// What it models, per MoE layer (each layer has its own random expert order, so hot experts differ
// between layers):
//  * Zipf popularity: the expert of rank r gets weight (r+1)^-skew (skew 0 = uniform).
//  * Consistent experts: the top `hot_experts` fraction of ranks. Their share is steady in every
//    batch (no co-activation modulation, no drift), so they are hot in almost every step when
//    skew > 0. The other ("temporal") experts fluctuate with the batch.
//  * Temporal co-activation groups: the temporal experts are split into `coactivation_groups`
//    groups of experts one context activates together. Each source GPU's batch favours a few
//    groups (`active_groups`, drawn in proportion to group popularity, persisting over steps and
//    swapped with probability `group_switch` per step): a `group_share` of the temporal experts'
//    mass follows those groups. Averaged over batches the popularity is unchanged.
//  * Drift: each step the log-popularity of every temporal expert takes a Gaussian step of std
//    `drift` (a multiplicative random walk; 0 = stationary).
//  * Group-limited routing (DeepSeek-style, expert_groups > 1 and groups_per_token < expert_groups):
//    approximated at the count level. The tokens of a source are split into `group_subbatches`
//    sub-batches; each sub-batch picks groups_per_token groups (without replacement, in proportion
//    to their mass for that source) and all of its pairs go to experts of those groups. With one
//    sub-batch (the default) a source's whole batch shares one group choice: the upper bound of the
//    concentration; real batches mix contexts, so more sub-batches spread a source over more groups.
// Two samplers draw the counts of this model (SyntheticRoutingOptions::sampler; docs/MODEL.md):
// the counts sampler (the default: about one random word per expert, layers in parallel; see
// RoutingSampler) and the pairs sampler, the reference, described here.
// Counts: top-k picks distinct experts, so an expert gets at most one pair per token of a
// (sub-)batch (the cap). The few "heavy" experts whose share could bring them near the cap are
// drawn first, by conditional binomials clipped at the cap (the excess goes to the experts after
// them). The other pairs are split over the few mixture components of the distribution (steady
// part per routing group, co-activation part per active group) by conditional binomials, then
// drawn from precomputed alias tables, two per 64-bit random word; no per-token simulation. A
// pair landing on a full expert is redrawn: the excess goes to the experts with room in
// proportion to their weight.

#pragma once

#include "common/worker_pool.h"
#include "model/model_spec.h"
#include "workload/routing_sample.h"
#include "workload/workload.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace moex {

namespace detail {

struct RandomTables;

// One step of splitmix64: advances `x` and returns a well-mixed 64-bit value (seeds, sub-seeds).
std::uint64_t splitmix64(std::uint64_t& x);

// A counter-based stream of random words: out[i] is splitmix64's output at state seed + (first + i +
// 1) * 0x9e3779b97f4a7c15, i.e. what n calls of splitmix64 return from x = seed + first * that
// constant. The words do not depend on one another, so the counts sampler draws a source's words
// at once (xoshiro's are a serial chain): 8 at a time in AVX-512 where `vector` (where
// counterWordsHasAvx512), the same words.
void counterWords(std::uint64_t seed, std::uint64_t first, int n, std::uint64_t* out, bool vector);
bool counterWordsHasAvx512();

// xoshiro256**: fast and statistically sound; seeded through splitmix64 so any seed is fine.
class Rng {
public:
    explicit Rng(std::uint64_t seed = 0);
    std::uint64_t next()
    {
        const std::uint64_t result = rotl(m_s[1] * 5, 7) * 9;
        const std::uint64_t t = m_s[1] << 17;
        m_s[2] ^= m_s[0];
        m_s[3] ^= m_s[1];
        m_s[1] ^= m_s[2];
        m_s[0] ^= m_s[3];
        m_s[2] ^= t;
        m_s[3] = rotl(m_s[3], 45);
        return result;
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
    double normal();                      // standard normal (Box-Muller; the second value is kept for the next call)
    std::uint32_t below(std::uint32_t n)  // [0, n)
    {
        return static_cast<std::uint32_t>(((next() >> 32) * n) >> 32);
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t m_s[4] = {};
    double m_spare = 0.0;
    bool m_hasSpare = false;
};

// Binomial(n, p): inversion (BINV) for small means, a rounded normal approximation for large ones.
int binomial(Rng& rng, int n, double p);

// Poisson(mean) from 32 random bits, without a transcendental call: for means below 16 by
// inversion (24-bit uniform) against a precomputed table of CDFs on a grid of means 1/16 apart (the
// mean is rounded to a neighbouring grid point at random, in proportion, so the expectation holds
// to 1/4096 of a pair); from 16 on, the normal approximation with its Cornish-Fisher skew term, the
// normal quantile read from a table. Built once per process, shared by every thread.
int poisson(double mean, std::uint32_t random);
// The first two moments of min(X, t) for X ~ Binomial(n, p), and P(X < t).
void clippedBinomial(int n, double p, int t, double& m1, double& m2, double& below);
// clippedBinomial of `count` experts: (m1, m2, below)[i] of (n, p, t)[i]. `vector`: 8 at a time in
// AVX-512 (where clippedBinomialHasAvx512), the same bits.
void clippedBinomialMany(const int* n, const double* p, const int* t, int count, double* m1, double* m2, double* below,
                         bool vector);
bool clippedBinomialHasAvx512();
// base^exponent for exponent >= 0 by repeated squaring: (1 - p)^n of a binomial's few pairs
// without exp and log (about log2(n) multiplications).
inline double powerBySquaring(double base, int exponent)
{
    double power = 1.0;
    for (;; base *= base) {
        if (exponent & 1)
            power *= base;
        if ((exponent >>= 1) == 0)
            return power;
    }
}
// The race of 8 routing groups (the counts sampler's group choice of a sub-batch): the mask of the
// `count` smallest keys exponential[v_q] * inverse[q] + offset[q], v_q the q-th 16 bits of r0
// (q < 4) or r1 (low bits first), ties to the lower index. `vector`: in AVX2 (where race8HasAvx2),
// the same masks as the scalar loop.
std::uint64_t race8(const float* exponential, std::uint64_t r0, std::uint64_t r1, const float* inverse,
                    const float* offset, int count, bool vector);
// race8 of `n` sub-batches, the words of sub-batch b at words[2b] and words[2b + 1], into masks[b]:
// the same masks as n calls of race8.
void race8Many(const float* exponential, const std::uint64_t* words, int n, const float* inverse, const float* offset,
               int count, bool vector, std::uint64_t* masks);
bool race8HasAvx2();
// The counts sampler's Poisson draws of n experts in a row: out[i] = min(poisson(scale * mu[i],
// bits[i]), cap), and 0 where skip[i] >= 0 (the clipped experts, drawn apart); returns the sum.
// `vector`: 16 at a time in AVX-512 (where poissonRowHasAvx512), the same counts.
int poissonRow(const double* mu, double scale, const std::uint32_t* bits, const double* skip, int n, int cap,
               std::uint16_t* out, bool vector);
bool poissonRowHasAvx512();
// The standard normal quantile of 12 random bits (4096 equiprobable cells; |z| <= 3.5).
double normalQuantile(std::uint32_t random12);

// Walker/Vose alias table: O(n) to build, O(1) per draw from 32 random bits.
class AliasTable {
public:
    // Weights must be >= 0; a zero sum gives the uniform table. Reuses its storage.
    void build(std::span<const double> weights);
    [[nodiscard]] int sample(std::uint32_t v) const
    {
        // v * n: the high word is the bucket, the low word a uniform fraction within it (resolution
        // n / 2^32). Branch-free, as the accept/alias choice is a coin flip no predictor can learn.
        // Buckets that always accept have alias == themselves.
        const std::uint64_t m = std::uint64_t{v} * m_n;
        const auto i = static_cast<std::int32_t>(m >> 32);
        const Entry e = m_entries[static_cast<std::size_t>(i)];
        const std::int32_t reject = -static_cast<std::int32_t>(static_cast<std::uint32_t>(m) >= e.threshold);
        return i ^ ((i ^ e.alias) & reject);
    }
    [[nodiscard]] int size() const { return static_cast<int>(m_n); }

    struct Entry {
        std::uint32_t threshold;  // keep the bucket when the fraction is below
        std::int32_t alias;
    };
    [[nodiscard]] Entry entry(int i) const { return m_entries[static_cast<std::size_t>(i)]; }

private:
    std::uint64_t m_n = 0;
    std::vector<Entry> m_entries;
    std::vector<double> m_scaled;  // scratch
    std::vector<std::int32_t> m_small, m_large;
};

}  // namespace detail

// How counts are drawn (the model behind them is the same):
//  * counts: per source, the sub-batches' routing-group choices give each group its expected pairs
//    and its token cap; each expert's count is then one Poisson draw around its expected pairs,
//    clipped at the cap, and the row is brought to its exact total by removing uniformly random
//    pairs or adding pairs in proportion to the expected ones (Poissonisation: exact for a
//    multinomial). About one random word per expert instead of one per pair; layers in parallel.
//  * pairs: every token-expert pair drawn from alias tables, one sub-batch after the other. The
//    reference the counts sampler is tested against (tests/core/tst_routing_statistics).
enum class RoutingSampler { counts, pairs };

// Knobs of the synthetic model that a scenario does not set; the defaults are documented above.
struct SyntheticRoutingOptions {
    int active_groups = 2;      // co-activation groups favoured by one source's batch
    double group_share = 0.5;   // share of the temporal experts' mass that follows the active groups
    double group_switch = 0.2;  // per step, probability that a source swaps one of its active groups
    int group_subbatches = 1;   // group-limited routing: independent group choices per source batch
    RoutingSampler sampler = RoutingSampler::counts;
    int threads = 0;            // counts sampler: layers in parallel on this many threads; 0 = the machine's, at most 8
    std::uint64_t stream = 0;   // != 0: the same model (experts' ranks, co-activation groups), another random stream
    // false: the scalar code only, where the CPU has AVX2 or AVX-512 kernels. The counts are the
    // same on every path (tst_routing_statistics vectorKernelsDoNotChangeTheCounts): a scenario's
    // steps do not depend on the CPU that draws them.
    bool vector_kernels = true;
};

class SyntheticRouting {
public:
    // Throws InputError when the shapes or the routing parameters are out of range.
    SyntheticRouting(const ModelSpec& model, const Workload& workload, int numGpus,
                     SyntheticRoutingOptions options = {});

    // Fills `out` with the next step; allocates only when `out` has another shape.
    void next(RoutingSample& out);
    // Back to step 0: the same sequence as a freshly constructed generator.
    void reset();

    [[nodiscard]] int numLayers() const { return m_numLayers; }
    [[nodiscard]] int numExperts() const { return m_numExperts; }
    [[nodiscard]] int numGpus() const { return m_numGpus; }
    [[nodiscard]] int topK() const { return m_topK; }
    [[nodiscard]] int tokensPerGpu() const { return m_tokensPerGpu; }
    [[nodiscard]] std::int64_t step() const { return m_step; }  // steps generated so far
    [[nodiscard]] const SyntheticRoutingOptions& options() const { return m_options; }

    // The model behind the counts (of the step generated last; step 0 before the first next()).
    // Expected share of pairs per expert averaged over batches (sums to 1), before group limiting
    // and before the one-pair-per-token cap.
    [[nodiscard]] std::span<const double> popularity(int layer) const;
    // Co-activation group of each expert; -1 for consistent experts (and when there are no groups).
    [[nodiscard]] std::span<const int> coactivationGroup(int layer) const;
    [[nodiscard]] int numCoactivationGroups() const { return m_numCoGroups; }
    [[nodiscard]] int activeGroupsPerBatch() const { return m_activeGroups; }
    [[nodiscard]] bool isConsistent(int layer, int expert) const;
    [[nodiscard]] int numConsistent() const { return m_numConsistent; }
    // Group-limited routing as applied: 1 routing group when it is off; groups are contiguous ids.
    [[nodiscard]] int routingGroups() const { return m_routingGroups; }
    [[nodiscard]] int routingGroupsPerToken() const { return m_groupsPerToken; }

private:
    // Layer and CountScratch start on their own cache line (64 bytes on x86-64). The workers draw
    // neighbouring layers at once, and a Layer is 448 bytes: unaligned, one layer's Rng (written
    // per source) shared a line with the previous layer's temporalMass and `active` (read per
    // source), and the two threads spent some 10% more CPU a step than one thread
    // (docs/PERFORMANCE.md, "Two workers, one cache line").
    struct alignas(64) Layer {
        detail::Rng rng;
        std::vector<double> logPop;                   // per expert
        std::vector<double> pop;                      // normalised popularity b
        std::vector<double> steady;                   // steady weights b': b less what follows the active groups
        std::vector<std::uint8_t> consistent;         // per expert
        std::vector<int> heavy;                       // experts that may reach the cap, by steady weight, descending
        std::vector<int> coGroup;                     // per expert, -1 = none
        std::vector<int> coMembers;                   // experts ordered by co-group, then id (so by routing group)
        std::vector<int> coSubOffset;                 // (co-group, routing group) -> start in coMembers; +1 end
        std::vector<double> coSubMass;                // (co-group, routing group) -> mass in b, heavy experts excluded
        std::vector<double> coSubMassAll;             // the same, heavy experts included
        std::vector<double> coMass;                   // per co-group, mass in b
        std::vector<detail::AliasTable> coSubTables;  // per (co-group, routing group), over b, heavy excluded
        std::vector<detail::AliasTable> rgTables;     // per routing group, over b', heavy excluded
        std::vector<double> rgMass;                   // per routing group, mass of b', heavy excluded
        std::vector<double> rgMassAll;                // the same, heavy experts included
        double temporalMass = 0.0;
        std::vector<int> active;  // numGpus x active_groups co-groups favoured by each source
        bool tablesValid = false;
    };
    // One mixture component of a source's distribution: a table, the experts it indexes, its mass.
    struct Component {
        const detail::AliasTable* table = nullptr;
        const int* ids = nullptr;
        int base = -1;  // >= 0: ids are base, base + 1, ...
        double mass = 0.0;
        int pairs = 0;
    };

    // Scratch of the counts sampler, one per worker thread.
    struct alignas(64) CountScratch {
        std::vector<double> mu;        // per expert: expected pairs for this source
        std::vector<int> cap;          // per routing group: tokens that chose it
        std::vector<int> subs;         // per routing group: sub-batches that chose it
        std::vector<int> capX;         // per expert: its group's cap
        std::vector<double> clipMean;  // per expert: mean pairs under sub-batch caps; < 0: not clipped
        std::vector<double> clipSd;    // and their standard deviation
        std::vector<int> heavy;        // experts a sub-batch cap clips (the first numHeavy)
        std::vector<int> heavyGroup;   // and the routing group of each
        std::vector<int> subTokens;    // per routing group: tokens of one of its sub-batches (capScale)
        std::vector<double> heavyRate, heavySubs, heavyMu, heavyNone;  // per heavy expert (capScaleOneToken)
        // per heavy expert (capScale): the clipped moments at the current scale, and the inputs and
        // results of those evaluated by clippedBinomialMany, packed
        std::vector<double> heavyM1, heavyM2, heavyBelow;
        std::vector<int> binomialN, binomialT, binomialAt;
        std::vector<double> binomialP, binomialM1, binomialM2, binomialBelow;
        std::vector<std::uint32_t> bits;  // per expert: the 32 random bits of its draw
        std::vector<int> light;           // the experts of a group drawn by Poisson (not clipped)
        int numHeavy = 0;
        std::vector<int> prefixPairs;  // per expert: pairs drawn up to and including it
        std::vector<double> prefixMu;  // per expert: expected pairs up to and including it
        std::vector<std::uint64_t> takenBits;  // one bit per pair drawn: removed already
        std::vector<double> groupW;    // per routing group: the source's mass
        std::vector<double> expected;  // per routing group: expected pairs
        std::vector<double> perMass;   // per routing group: sum of tokens / chosen mass over its sub-batches
        std::vector<int> maskSubs;     // per subset of routing groups (up to kMaskedGroups): sub-batches that chose it
        std::vector<int> maskTokens;   // and their tokens
        std::vector<int> masks;        // the subsets chosen (room for every subset)
        std::vector<std::uint64_t> words;      // a source's counter-based random words: its races', then its draws'
        std::vector<std::uint64_t> raceMasks;  // and the groups it chose
    };

    void initLayer(int index, Layer& layer) const;
    void rebuildModel(Layer& layer) const;
    void rebuildTables(Layer& layer);
    void drawActive(Layer& layer, int src, int slot) const;
    void advance(Layer& layer);
    void sourceGroupMass(const Layer& layer, const int* active, double perSlot, double* mass) const;
    void nextCounts(RoutingSample& out);
    void sampleSourceCounts(Layer& layer, int src, RoutingSample::Count* row, CountScratch& scratch) const;
    // Sub-batches of a source's batch (group-limited routing): group_subbatches, at most one a token.
    [[nodiscard]] int subBatchCount() const { return std::min(m_options.group_subbatches, std::max(m_tokensPerGpu, 1)); }
    void chooseGroupsCounts(detail::Rng& rng, const std::uint64_t* words, CountScratch& scratch) const;
    void addSubBatch(std::uint64_t mask, int tokens, CountScratch& scratch) const;
    static constexpr int kMaskedGroups = 10;  // up to this many routing groups, sub-batches are tallied per subset
    double capScale(CountScratch& scratch, int n, double start) const;
    double capScaleOneToken(CountScratch& scratch, int n, double start, double lightMu) const;
    void removePairs(RoutingSample::Count* row, int excess, int drawn, detail::Rng& rng, CountScratch& scratch) const;
    void addPairs(RoutingSample::Count* row, int missing, const int* cap, detail::Rng& rng, CountScratch& scratch) const;
    std::size_t withRoomByMean(const RoutingSample::Count* row, const int* cap, const double* mu, detail::Rng& rng) const;
    void sampleSource(Layer& layer, int src, RoutingSample::Count* row);
    std::uint64_t chooseRoutingGroups(const Layer& layer, const int* active, double perSlot, detail::Rng& rng);
    void splitPairs(int pairs, detail::Rng& rng);
    void collectHeavy(const Layer& layer, const int* active, double perSlot, std::uint64_t mask);
    int drawSplit(RoutingSample::Count* counts, int cap, detail::Rng& rng);
    int drawMixed(RoutingSample::Count* counts, int cap, int pairs, detail::Rng& rng);
    void fillBatch(RoutingSample::Count* counts, int cap, int pairs, std::uint64_t mask, detail::Rng& rng);
    int firstWithRoom(const RoutingSample::Count* counts, int cap, std::uint64_t mask, std::uint64_t r) const;

    SyntheticRoutingOptions m_options;
    RoutingSpec m_spec;
    int m_numLayers = 0;
    int m_numExperts = 0;
    int m_numGpus = 0;
    int m_topK = 0;
    int m_tokensPerGpu = 0;
    int m_numConsistent = 0;
    int m_numCoGroups = 0;
    int m_activeGroups = 0;
    int m_routingGroups = 1;   // groups of contiguous expert ids (DeepSeek n_group); 1 = no limit
    int m_groupsPerToken = 1;  // topk_group as applied
    int m_groupSize = 0;
    std::int64_t m_step = 0;
    std::vector<Layer> m_layers;
    std::unique_ptr<WorkerPool> m_pool;  // counts sampler with more than one thread
    bool m_raceAvx2 = false;             // the 8-group race in AVX2 (the same masks as the scalar one)
    bool m_drawAvx512 = false;           // the Poisson draws 16 at a time (the same counts as one by one)
    bool m_wordsAvx512 = false;          // a source's random words 8 at a time (the same words)
    bool m_clipAvx512 = false;           // capScale's clipped binomials 8 at a time (the same moments)
    std::vector<CountScratch> m_countScratch;  // per worker
    std::vector<int> m_identity;       // 0..E-1: the ids of the per-routing-group tables
    std::vector<std::uint8_t> m_flag;  // scratch, per expert

    // Per-source scratch, sized once.
    std::vector<RoutingSample::Count> m_subCounts;  // one sub-batch's counts; all zero between sub-batches
    bool m_outsideMask = false;             // fillBatch placed a pair outside the chosen groups
    std::vector<double> m_weightScratch;
    std::vector<double> m_groupWeight;  // per routing group, mass for this source
    std::vector<int> m_chosen;          // chosen routing groups
    std::vector<Component> m_components;
    std::vector<int> m_heavyIds;      // heavy experts in the chosen routing groups
    std::vector<double> m_heavyMass;  // and their mass for this source
    int m_maxHeavy = 0;
    int m_numHeavy = 0;
    detail::AliasTable m_componentTable;  // over the components' masses, for redraws
};

}  // namespace moex
