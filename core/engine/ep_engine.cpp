#include "engine/ep_engine.h"
#include "engine/on_threads.h"

#include "engine/checkpoint.h"
#include "engine/ep_telemetry.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace moex::engine {

namespace {

using Clock = std::chrono::steady_clock;

double usSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// One expert slot a rank holds in one layer.
struct Slot {
    int expert = 0;
    FfnWeights weights;
};

struct RankLayer {
    std::vector<Slot> slots;
    FfnWeights shared;
    RouterWeights router;
};

// What a rank sends to one destination in one layer: per row, which of its tokens (the row is that
// token's hidden state, read from the sender's buffer by index as DeepEP's dispatch kernel reads it),
// which of the token's k choices it is, and which local slot of the destination runs it.
struct SendList {
    std::vector<int> token;   // local token index on the source
    std::vector<int> choice;  // 0..k-1
    std::vector<int> slot;    // local slot on the destination
};

}  // namespace

struct EpEngine::Impl {
    ModelSpec model;
    LayerShape shape;
    Placement placement;
    EngineConfig config;
    int ranks = 0;
    std::vector<int> ordinals;  // MoE ordinal of each configured layer
    // [rank][configured layer or 0 when shared]
    std::vector<std::vector<RankLayer>> weights;

    // Per step scratch, [rank] or [src][dst].
    std::vector<std::vector<float>> x;            // rank's hidden states, n_r x H
    std::vector<std::vector<int>> ids;            // n_r x k
    std::vector<std::vector<float>> gate;         // n_r x k
    std::vector<std::vector<SendList>> send;      // [src][dst]
    // [dst] rows from all sources grouped by local slot (slot 0's rows first), within a slot in
    // source order, then in the source's order: each slot's rows are one contiguous block, the
    // layout DeepEP's low-latency dispatch hands a grouped GEMM.
    std::vector<std::vector<float>> recv;
    std::vector<std::vector<std::size_t>> slotBegin;   // [dst] first row of each local slot, and the end
    std::vector<std::vector<std::vector<int>>> recvRow;  // [dst][src] the receive row of each row src sent
    std::vector<std::vector<float>> result;       // [dst] expert output per received row, same rows
    std::vector<std::vector<float>> output;       // [rank] n_r x H
    // [rank][worker]: a worker's FFN buffers (activations, packed tokens), kept between steps as a
    // serving engine keeps its workspace (fresh pages cost 5-10% of a prefill FFN).
    struct WorkerBuffers {
        std::vector<float> ffn;
    };
    std::vector<std::vector<WorkerBuffers>> workerBuffers;
    std::vector<std::vector<std::size_t>> slotCursor;  // [dst] scratch: next row of each local slot
    std::vector<std::vector<float>> sharedScratch;  // [rank] the shared experts' FFN buffers
    std::vector<std::vector<PhaseTimes>> times;   // [configured layer][rank]
    std::vector<std::vector<std::vector<std::int64_t>>> rankExpertLoad;  // [rank][configured layer][expert]
    std::vector<double> trafficRows;              // [src * ranks + dst] rows over the step's layers
    std::vector<double> tokenChecksum;            // [global token] over layers

    [[nodiscard]] std::int64_t tokenBegin(int r) const
    {
        const std::int64_t base = config.tokens / ranks, extra = config.tokens % ranks;
        return r * base + std::min<std::int64_t>(r, extra);
    }
    [[nodiscard]] int tokensOf(int r) const { return static_cast<int>(tokenBegin(r + 1) - tokenBegin(r)); }

    const RankLayer& rankLayer(int r, int li) const
    {
        return weights[static_cast<std::size_t>(r)][config.shared_weights ? 0 : static_cast<std::size_t>(li)];
    }

    // The rank whose replica of `expert` runs choice k of global token t sent from rank `src`.
    // [configured layer][expert] -> (rank, local slot) of each rank's first copy, in rank order.
    std::vector<std::vector<std::vector<std::pair<int, int>>>> replicaTable;

    void buildReplicaTable()
    {
        replicaTable.assign(ordinals.size(), std::vector<std::vector<std::pair<int, int>>>(static_cast<std::size_t>(shape.experts)));
        for (std::size_t li = 0; li < ordinals.size(); ++li) {
            const auto& layer = placement.layers[static_cast<std::size_t>(ordinals[li])];
            for (int g = 0; g < ranks; ++g) {
                const auto& s = layer.gpu_slots[static_cast<std::size_t>(g)];
                for (int j = 0; j < static_cast<int>(s.size()); ++j) {
                    auto& reps = replicaTable[li][s[static_cast<std::size_t>(j)].index()];
                    if (reps.empty() || reps.back().first != g)
                        reps.emplace_back(g, j);
                }
            }
        }
    }

    // The rank and slot whose replica of `expert` runs choice k of global token t sent from `src`.
    [[nodiscard]] std::pair<int, int> target(std::size_t li, int expert, int src, std::int64_t t, int k) const
    {
        const auto& reps = replicaTable[li][static_cast<std::size_t>(expert)];
        for (const auto& rs : reps)
            if (rs.first == src)
                return rs;
        return reps[static_cast<std::size_t>((t + k) % static_cast<std::int64_t>(reps.size()))];
    }

    void buildRank(int r)
    {
        auto& mine = weights[static_cast<std::size_t>(r)];
        const std::size_t built = config.shared_weights ? 1 : ordinals.size();
        mine.resize(built);
        for (std::size_t li = 0; li < built; ++li) {
            const int ordinal = ordinals[li];
            const int decoder = model.moe_layers[static_cast<std::size_t>(ordinal)];
            RankLayer& rl = mine[li];
            const auto& held = placement.layers[static_cast<std::size_t>(ordinal)].gpu_slots[static_cast<std::size_t>(r)];
            rl.slots.resize(held.size());
            // The rank's share of this machine's cores builds (or reads) its experts side by side.
            const Checkpoint* ckpt = config.checkpoint.get();
            const int workers = expertWorkers(ranks, held.size());
            onThreads(workers, [&](int w) {
                for (std::size_t j = static_cast<std::size_t>(w); j < held.size(); j += static_cast<std::size_t>(workers)) {
                    const int e = held[j].value;
                    rl.slots[j] = {e, ckpt ? ckpt->expert(shape, decoder, e) : makeExpertWeights(shape, config.seed, decoder, e)};
                }
            });
            if (shape.shared_inter > 0)
                rl.shared = ckpt ? ckpt->shared(shape, decoder) : makeSharedWeights(shape, config.seed, decoder);
            rl.router = ckpt ? ckpt->router(shape, decoder) : makeRouterWeights(shape, config.seed, decoder);
        }
    }

    // A rank that fails (std::bad_alloc in a buffer, a kernel's exception) must not leave the
    // others waiting at a barrier or end the process (an exception leaving a std::thread calls
    // std::terminate). It records the error, sets `failed` and arrives at the barrier the others
    // wait at next (unless it failed after the step's last one). The barrier's completion copies
    // `failed` into `stop` while every rank waits, so all ranks read the same `stop` after that
    // barrier (a rank reading `failed` itself could see another rank's failure of the next phase,
    // leave, and strand that rank at the next barrier), and return together. step() rethrows.
    std::atomic<bool> failed{false};
    bool stop = false;  // written only by the barrier's completion
    std::exception_ptr failure;
    std::mutex failureLock;
    struct StopOnFailure {
        Impl* impl;
        void operator()() noexcept { impl->stop = impl->failed.load(); }
    };
    using Barrier = std::barrier<StopOnFailure>;

    // One barrier of the step: false when a rank has failed (return at once).
    bool pass(Barrier& sync, int& arrived)
    {
        sync.arrive_and_wait();
        ++arrived;
        return !stop;
    }

    void runRank(int r, int step, Barrier& sync)
    {
        int arrived = 0;
        try {
            runRankUnchecked(r, step, sync, arrived);
        } catch (...) {
            {
                const std::lock_guard<std::mutex> hold(failureLock);
                if (!failure)
                    failure = std::current_exception();
            }
            failed.store(true);
            if (arrived < kBarriersPerLayer * static_cast<int>(ordinals.size()))
                sync.arrive_and_wait();
        }
    }

    static constexpr int kBarriersPerLayer = 4;  // input ready, counts known, experts done, buffers free

    void runRankUnchecked(int r, int step, Barrier& sync, int& arrived)
    {
        const int H = shape.hidden, K = shape.topk;
        const auto Hs = static_cast<std::size_t>(H);
        const int n = tokensOf(r);
        const std::int64_t t0 = tokenBegin(r);
        for (std::size_t li = 0; li < ordinals.size(); ++li) {
            const int ordinal = ordinals[li];
            const RankLayer& w = rankLayer(r, static_cast<int>(li));
            PhaseTimes& pt = times[li][static_cast<std::size_t>(r)];
            // The layer's input (no attention runs between MoE layers): made before the clock starts.
            auto& xr = x[static_cast<std::size_t>(r)];
            xr.resize(static_cast<std::size_t>(n) * Hs);
            for (int t = 0; t < n; ++t)
                makeTokenHidden(config.seed, step * 4096 + ordinal, t0 + t, H, xr.data() + static_cast<std::size_t>(t) * Hs);
            // Every rank's input is ready: the layer's clock starts on all ranks together, as the
            // previous layer's combine lines them up in a server. Without this the first barrier
            // (counts) would charge the dispatch with another rank's input making.
            if (!pass(sync, arrived))
                return;
            const auto layerStart = Clock::now();

            // Router.
            auto phase = layerStart;
            auto& id = ids[static_cast<std::size_t>(r)];
            auto& gw = gate[static_cast<std::size_t>(r)];
            id.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(K));
            gw.resize(id.size());
            if (forced) {
                const int* given = (*forced)[li].data() + static_cast<std::size_t>(t0) * static_cast<std::size_t>(K);
                std::copy_n(given, id.size(), id.begin());
                routeForced(shape, w.router, xr.data(), n, given, gw.data());
            } else {
                route(shape, w.router, xr.data(), n, id.data(), gw.data());
            }
            pt.router = usSince(phase);

            // Dispatch: each destination's list of rows (token, choice, slot), counts exchanged,
            // then every rank pulls the rows sent to it straight from the sources' hidden states
            // into its receive buffer, each row to its slot's block (one copy per row).
            phase = Clock::now();
            auto& out = send[static_cast<std::size_t>(r)];
            for (auto& s : out) {
                s.token.clear();
                s.choice.clear();
                s.slot.clear();
            }
            for (int t = 0; t < n; ++t)
                for (int k = 0; k < K; ++k) {
                    const int e = id[static_cast<std::size_t>(t * K + k)];
                    const auto [dst, slot] = target(li, e, r, t0 + t, k);
                    SendList& s = out[static_cast<std::size_t>(dst)];
                    s.token.push_back(t);
                    s.choice.push_back(k);
                    s.slot.push_back(slot);
                }
            for (int d = 0; d < ranks; ++d)
                trafficRows[static_cast<std::size_t>(r * ranks + d)] += static_cast<double>(out[static_cast<std::size_t>(d)].token.size());
            auto& load = rankExpertLoad[static_cast<std::size_t>(r)][li];
            for (int v : id)
                ++load[static_cast<std::size_t>(v)];
            if (!pass(sync, arrived))  // every source's lists (their sizes are the counts) known everywhere
                return;
            const auto pullStart = Clock::now();
            const std::size_t numSlots = w.slots.size();
            auto& begin = slotBegin[static_cast<std::size_t>(r)];
            auto& cursor = slotCursor[static_cast<std::size_t>(r)];
            begin.assign(numSlots + 1, 0);
            for (int s = 0; s < ranks; ++s)
                for (int j : send[static_cast<std::size_t>(s)][static_cast<std::size_t>(r)].slot)
                    ++begin[static_cast<std::size_t>(j) + 1];
            for (std::size_t j = 0; j < numSlots; ++j)
                begin[j + 1] += begin[j];
            const std::size_t rows = begin[numSlots];
            cursor.assign(begin.begin(), begin.end() - 1);
            auto& rv = recv[static_cast<std::size_t>(r)];
            rv.resize(rows * Hs);
            auto& where = recvRow[static_cast<std::size_t>(r)];
            for (int s = 0; s < ranks; ++s) {
                const SendList& from = send[static_cast<std::size_t>(s)][static_cast<std::size_t>(r)];
                const float* xs = x[static_cast<std::size_t>(s)].data();
                auto& at = where[static_cast<std::size_t>(s)];
                at.resize(from.token.size());
                for (std::size_t q = 0; q < from.token.size(); ++q) {
                    const std::size_t row = cursor[static_cast<std::size_t>(from.slot[q])]++;
                    at[q] = static_cast<int>(row);
                    std::copy_n(xs + static_cast<std::size_t>(from.token[q]) * Hs, Hs, rv.begin() + static_cast<std::ptrdiff_t>(row * Hs));
                }
            }
            pt.pull = usSince(pullStart);
            pt.dispatch = usSince(phase);
            pt.pairs = static_cast<std::int64_t>(rows);

            // Experts: each local slot runs over its block of received rows, its results to the
            // same rows of the result buffer.
            phase = Clock::now();
            auto& res = result[static_cast<std::size_t>(r)];
            res.resize(rows * Hs);
            // The rank's share of the cores takes its slots in turn (each slot's rows to one worker).
            const int workers = expertWorkers(ranks, numSlots);
            auto& buffers = workerBuffers[static_cast<std::size_t>(r)];
            if (buffers.size() < static_cast<std::size_t>(workers))
                buffers.resize(static_cast<std::size_t>(workers));
            auto runSlots = [&](int worker) {
                if (config.before_experts)
                    config.before_experts(r, worker);
                auto& local = buffers[static_cast<std::size_t>(worker)].ffn;
                for (std::size_t j = static_cast<std::size_t>(worker); j < numSlots; j += static_cast<std::size_t>(workers)) {
                    const std::size_t first = begin[j], count = begin[j + 1] - begin[j];
                    if (count == 0)
                        continue;
                    ffnForward(shape, shape.inter, w.slots[j].weights, rv.data() + first * Hs, static_cast<int>(count),
                               res.data() + first * Hs, local);
                }
            };
            if (workers == 1) {
                runSlots(0);
            } else {
                onThreads(workers, runSlots, true);  // a worker's exception is rethrown here, after every join
            }
            auto& o = output[static_cast<std::size_t>(r)];
            o.assign(static_cast<std::size_t>(n) * Hs, 0.0f);
            if (shape.shared_inter > 0 && n > 0) {
                LayerShape sharedShape = shape;
                sharedShape.openblas_from_tokens = 0;  // a rank's own tokens: the engine's kernels (above)
                ffnForward(sharedShape, shape.shared_inter, w.shared, xr.data(), n, o.data(), sharedScratch[static_cast<std::size_t>(r)]);
            }
            pt.expert = usSince(phase);

            // Combine: wait for every rank's experts, pull this rank's results, sum per token.
            phase = Clock::now();
            if (!pass(sync, arrived))
                return;
            pt.wait = usSince(phase);
            phase = Clock::now();
            // The results are read where the experts' ranks left them (each rank's result buffer,
            // rows in receive order), as DeepEP's intranode combine reads its peers' buffers: no
            // copy into a buffer of this rank's own. The sum per token runs in top-k order, so the
            // output is the same for any number of ranks.
            auto& picked = pickedRows[static_cast<std::size_t>(r)];
            picked.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(K));
            for (int d = 0; d < ranks; ++d) {
                const SendList& sent = send[static_cast<std::size_t>(r)][static_cast<std::size_t>(d)];
                const auto& at = recvRow[static_cast<std::size_t>(d)][static_cast<std::size_t>(r)];
                const float* from = result[static_cast<std::size_t>(d)].data();
                for (std::size_t q = 0; q < sent.token.size(); ++q)
                    picked[static_cast<std::size_t>(sent.token[q] * K + sent.choice[q])] =
                        from + static_cast<std::size_t>(at[q]) * Hs;
            }
            for (int t = 0; t < n; ++t) {
                float* ot = o.data() + static_cast<std::size_t>(t) * Hs;
                for (int k = 0; k < K; ++k) {
                    const float wk = gw[static_cast<std::size_t>(t * K + k)];
                    const float* rk = picked[static_cast<std::size_t>(t * K + k)];
                    for (std::size_t i = 0; i < Hs; ++i)
                        ot[i] += wk * rk[i];
                }
            }
            pt.combine = usSince(phase);
            if (!pass(sync, arrived))  // every rank done with this layer's buffers
                return;
            pt.layer = usSince(layerStart);
            // The checksum is telemetry, not the layer: outside the clock (output[r] is this rank's own).
            for (int t = 0; t < n; ++t) {
                const float* ot = o.data() + static_cast<std::size_t>(t) * Hs;
                double c = 0;
                for (std::size_t i = 0; i < Hs; ++i)
                    c += static_cast<double>(ot[i]) * static_cast<double>(1 + i % 13);
                tokenChecksum[static_cast<std::size_t>(t0 + t)] += c;
            }
        }
    }

    std::vector<std::vector<const float*>> pickedRows;  // [rank] n_r x k: each (token, choice)'s result row
    const std::vector<std::vector<int>>* forced = nullptr;  // this step's given experts, or null
};

EpEngine::EpEngine(const ModelSpec& model, DType weights, const Placement& placement, const EngineConfig& config)
    : m(std::make_unique<Impl>())
{
    m->model = model;
    m->shape = layerShape(model, weights);
    // OpenBLAS gives a token a result that depends on the rest of its batch (its kernels block
    // and order the sums by the batch's size), where the engine's kernels do not. An expert gets
    // the same batch on any number of ranks only when it has one copy: auto keeps the engine's
    // kernels where the placement replicates any expert, and shared experts (each rank's own
    // tokens) always run on them, so that N ranks give one rank's output.
    m->shape.openblas_from_tokens = openblas::fromTokens(config.gemm, activeKernel(), m->shape.format);
    if (config.gemm == openblas::GemmChoice::automatic)
        for (const auto& layer : placement.layers)
            for (int copies : layer.replicaCounts(model.routed_experts))
                if (copies > 1)
                    m->shape.openblas_from_tokens = 0;
    m->placement = placement;
    m->config = config;
    m->ranks = placement.numGpus();
    const int R = m->ranks;
    if (R <= 0)
        throw std::invalid_argument("the engine needs at least one rank");
    if (placement.num_experts != model.routed_experts || placement.numLayers() != model.numMoeLayers())
        throw std::invalid_argument("the engine's placement does not match the model's MoE layers and experts");
    if (config.tokens <= 0)
        throw std::invalid_argument("the engine needs at least one token per step");
    if (config.layers.empty())
        throw std::invalid_argument("the engine has no MoE layer to run");
    for (int d : config.layers) {
        const auto it = std::find(model.moe_layers.begin(), model.moe_layers.end(), d);
        if (it == model.moe_layers.end())
            throw std::invalid_argument("decoder layer " + std::to_string(d) + " is not an MoE layer of " + model.name);
        m->ordinals.push_back(static_cast<int>(it - model.moe_layers.begin()));
    }
    for (int o : m->ordinals) {
        const auto& layer = placement.layers[static_cast<std::size_t>(o)];
        if (layer.numGpus() != R)
            throw std::invalid_argument("the engine's placement has layers with different GPU counts");
        for (int e = 0; e < model.routed_experts; ++e)
            if (layer.replicaCounts(model.routed_experts)[static_cast<std::size_t>(e)] == 0)
                throw std::invalid_argument("expert " + std::to_string(e) + " has no slot in MoE layer " + std::to_string(o));
    }
    // Shared weights: every layer runs the first listed layer's experts, so it also takes that layer's
    // layout (slot j of a rank then holds the same expert in every layer).
    if (config.shared_weights)
        for (int o : m->ordinals)
            m->placement.layers[static_cast<std::size_t>(o)] = placement.layers[static_cast<std::size_t>(m->ordinals.front())];
    m->buildReplicaTable();
    // Every tensor the ranks will read is checked in one thread first, so that a bad checkpoint
    // fails with the same message every time and before a byte is allocated.
    if (config.checkpoint)
        (void)weightBytesNeeded(model, weights, m->placement, config);
    m->weights.resize(static_cast<std::size_t>(R));
    onThreads(R, [this](int r) { m->buildRank(r); });
    m->config.checkpoint.reset();  // every weight is read: the shards need not stay mapped
    const auto Rs = static_cast<std::size_t>(R);
    m->x.resize(Rs);
    m->ids.resize(Rs);
    m->gate.resize(Rs);
    m->send.assign(Rs, std::vector<SendList>(Rs));
    m->recv.resize(Rs);
    m->slotBegin.resize(Rs);
    m->slotCursor.resize(Rs);
    m->recvRow.assign(Rs, std::vector<std::vector<int>>(Rs));
    m->result.resize(Rs);
    m->output.resize(Rs);
    m->workerBuffers.resize(Rs);
    m->sharedScratch.resize(Rs);
    m->pickedRows.resize(Rs);
}

EpEngine::~EpEngine() = default;

std::vector<double> EpEngine::lastExchangeUs() const
{
    std::vector<double> us(static_cast<std::size_t>(m->ranks), 0.0);
    for (const auto& layer : m->times)
        for (std::size_t r = 0; r < layer.size() && r < us.size(); ++r)
            us[r] += layer[r].pull + layer[r].combine;
    return us;
}

int EpEngine::ranks() const
{
    return m->ranks;
}

const LayerShape& EpEngine::shape() const
{
    return m->shape;
}

std::size_t EpEngine::weightBytes() const
{
    std::size_t total = 0;
    for (const auto& rank : m->weights)
        for (const auto& rl : rank) {
            for (const auto& s : rl.slots)
                total += s.weights.bytes();
            total += rl.shared.bytes() + (rl.router.weight.size() + rl.router.bias.size() + rl.router.correction.size()) * sizeof(float);
        }
    return total;
}

double EpEngine::step(int step, StepMetrics& out, const std::vector<std::vector<int>>& forcedIds,
                      std::vector<float>* lastOutput)
{
    const auto need = static_cast<std::size_t>(m->config.tokens) * static_cast<std::size_t>(m->shape.topk);
    if (forcedIds.size() != m->ordinals.size())
        throw std::invalid_argument("forced routing: " + std::to_string(forcedIds.size()) + " layers given, "
                                    + std::to_string(m->ordinals.size()) + " run");
    for (const auto& ids : forcedIds) {
        if (ids.size() != need)
            throw std::invalid_argument("forced routing: " + std::to_string(ids.size()) + " choices, " + std::to_string(need)
                                        + " needed (tokens x top-k)");
        for (int v : ids)
            if (v < 0 || v >= m->shape.experts)
                throw std::invalid_argument("forced routing: expert " + std::to_string(v) + " out of range");
    }
    m->forced = &forcedIds;
    struct Reset {
        Impl* impl;
        ~Reset() { impl->forced = nullptr; }
    } reset{m.get()};
    return this->step(step, out, lastOutput);
}

double EpEngine::step(int step, StepMetrics& out, std::vector<float>* lastOutput)
{
    Impl& e = *m;
    const int R = e.ranks, E = e.shape.experts;
    const std::size_t L = e.ordinals.size();
    e.times.assign(L, std::vector<PhaseTimes>(static_cast<std::size_t>(R)));
    e.tokenChecksum.assign(static_cast<std::size_t>(e.config.tokens), 0.0);
    e.trafficRows.assign(static_cast<std::size_t>(R) * static_cast<std::size_t>(R), 0.0);
    e.rankExpertLoad.assign(static_cast<std::size_t>(R),
                            std::vector<std::vector<std::int64_t>>(L, std::vector<std::int64_t>(static_cast<std::size_t>(E), 0)));
    const auto wall = Clock::now();
    {
        e.stop = false;
        Impl::Barrier sync(R, Impl::StopOnFailure{&e});
        std::vector<std::thread> threads;
        threads.reserve(static_cast<std::size_t>(R));
        try {
            for (int r = 0; r < R; ++r)
                threads.emplace_back([&e, r, step, &sync] { e.runRank(r, step, sync); });
        } catch (...) {
            // A rank that could not start: the started ones stop at their first barrier, which the
            // missing ranks leave (arrive_and_drop from here, after `failed` is set).
            {
                const std::lock_guard<std::mutex> hold(e.failureLock);
                if (!e.failure)
                    e.failure = std::current_exception();
            }
            e.failed.store(true);
            for (std::size_t missing = threads.size(); missing < static_cast<std::size_t>(R); ++missing)
                sync.arrive_and_drop();
        }
        for (auto& t : threads)
            t.join();
    }
    if (e.failed.load()) {
        e.failed.store(false);
        std::exception_ptr failure = std::exchange(e.failure, nullptr);
        std::rethrow_exception(failure);
    }
    const double wallUs = usSince(wall);

    EngineStepRecord rec;
    rec.step = step;
    rec.experts = E;
    rec.tokens = e.config.tokens;
    for (int r = 0; r < R; ++r)
        rec.rankTokens.push_back(e.tokensOf(r));
    for (int ordinal : e.ordinals)
        rec.decoderLayers.push_back(e.model.moe_layers[static_cast<std::size_t>(ordinal)]);
    rec.times = &e.times;
    rec.expertLoad = &e.rankExpertLoad;
    rec.trafficRows = &e.trafficRows;
    rec.rowBytes = static_cast<double>(e.shape.hidden) * sizeof(float);
    rec.wallUs = wallUs;
    out = engineStepMetrics(rec);

    if (lastOutput) {
        lastOutput->clear();
        for (int r = 0; r < R; ++r)
            lastOutput->insert(lastOutput->end(), e.output[static_cast<std::size_t>(r)].begin(), e.output[static_cast<std::size_t>(r)].end());
    }
    double checksum = 0;
    for (double c : e.tokenChecksum)
        checksum += c;
    return checksum;
}

}  // namespace moex::engine
