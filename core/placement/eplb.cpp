#include "placement/eplb.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace moex {

namespace {

struct Item {
    float w;
    int id;
};

// torch.sort(descending=True) on CPU: std::sort over (value, index) pairs compared by value only.
// Using the very same call keeps even the order of ties identical under libstdc++.
void sortDescending(std::vector<Item>& items)
{
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.w > b.w; });
}

// Heap entry; `later` orders a min-heap on (w, id): the smallest weight, then the lowest index,
// is what Python's min() over packs in index order returns.
struct Keyed {
    float w;
    int id;
};
// (Function objects rather than functions, so the heap algorithms inline them.)
struct LaterMin {
    bool operator()(const Keyed& a, const Keyed& b) const { return a.w > b.w || (a.w == b.w && a.id > b.id); }
};
// Max-heap on w, lowest index first among equals: torch.max(dim).indices returns the first maximum.
struct LaterMax {
    bool operator()(const Keyed& a, const Keyed& b) const { return a.w < b.w || (a.w == b.w && a.id > b.id); }
};
constexpr LaterMin laterMin;
constexpr LaterMax laterMax;

// Scratch buffers reused across layers so the hot loop does not allocate.
struct Scratch {
    std::vector<Item> items;
    std::vector<Keyed> heap;
    std::vector<float> packWeight;
    std::vector<int> packItems;
};

// balanced_packing for one row: n items into m packs of exactly n/m items each, heaviest first,
// each to the lightest pack that still has room.
void balancedPacking(const float* w, int n, int m, int* pack, int* rank, Scratch& s)
{
    const int perPack = n / m;
    if (perPack == 1) {
        for (int i = 0; i < n; ++i) {
            pack[i] = i;
            rank[i] = 0;
        }
        return;
    }
    s.items.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        s.items[static_cast<std::size_t>(i)] = {w[i], i};
    sortDescending(s.items);

    s.packWeight.assign(static_cast<std::size_t>(m), 0.0f);
    s.packItems.assign(static_cast<std::size_t>(m), 0);
    s.heap.clear();
    for (int p = 0; p < m; ++p)
        s.heap.push_back({0.0f, p});
    std::make_heap(s.heap.begin(), s.heap.end(), laterMin);
    for (const Item& it : s.items) {
        std::pop_heap(s.heap.begin(), s.heap.end(), laterMin);
        const int p = s.heap.back().id;
        s.heap.pop_back();
        auto& count = s.packItems[static_cast<std::size_t>(p)];
        auto& load = s.packWeight[static_cast<std::size_t>(p)];
        pack[it.id] = p;
        rank[it.id] = count++;
        load += it.w;  // float32 sum in item order, as the reference accumulates
        if (count < perPack) {  // a full pack leaves the candidates for good
            s.heap.push_back({load, p});
            std::push_heap(s.heap.begin(), s.heap.end(), laterMin);
        }
    }
}

// replicate_experts for one row: numLog experts to numPhy replicas; each extra replica goes to the
// expert with the highest load per replica. The first numLog slots hold experts 0..numLog-1.
void replicateExperts(const float* w, int numLog, int numPhy, int* phy2log, int* rank, int* cnt, Scratch& s)
{
    for (int i = 0; i < numLog; ++i) {
        phy2log[i] = i;
        rank[i] = 0;
        cnt[i] = 1;
    }
    if (numPhy == numLog)
        return;
    s.heap.clear();
    for (int i = 0; i < numLog; ++i)
        s.heap.push_back({w[i], i});
    std::make_heap(s.heap.begin(), s.heap.end(), laterMax);
    for (int i = numLog; i < numPhy; ++i) {
        std::pop_heap(s.heap.begin(), s.heap.end(), laterMax);
        const int e = s.heap.back().id;
        phy2log[i] = e;
        rank[i] = cnt[e]++;
        s.heap.back().w = w[e] / static_cast<float>(cnt[e]);  // float32 division, as weight / logcnt
        std::push_heap(s.heap.begin(), s.heap.end(), laterMax);
    }
}

struct Shape {
    int experts, groups, nodes, gpus, replicas;
};

// rebalance_experts_hierarchical for one layer. Outputs phy2log, phyrank (size R) and logcnt (size E).
class HierarchicalLayer {
public:
    explicit HierarchicalLayer(const Shape& sh) : m_sh(sh)
    {
        const auto E = static_cast<std::size_t>(sh.experts);
        const auto R = static_cast<std::size_t>(sh.replicas);
        const auto Gr = static_cast<std::size_t>(sh.groups);
        m_groupLoad.resize(Gr);
        m_groupPack.resize(Gr);
        m_groupRank.resize(Gr);
        m_log2mlog.resize(E);
        m_mlog2log.resize(E);
        m_mlogLoad.resize(E);
        m_mlogCnt.resize(E);
        m_phy2mlog.resize(R);
        m_phyRank.resize(R);
        m_phyLoad.resize(R);
        m_pack.resize(R);
        m_rankInPack.resize(R);
    }

    void run(const float* w, int* phy2log, int* phyrank, int* logcnt)
    {
        const int E = m_sh.experts, Gr = m_sh.groups, N = m_sh.nodes;
        const int groupSize = E / Gr, groupsPerNode = Gr / N, perGpu = m_sh.replicas / m_sh.gpus;
        const int expertsPerNode = E / N, slotsPerNode = m_sh.replicas / N, gpusPerNode = m_sh.gpus / N;

        // Step 1: pack expert groups onto nodes; mlog = expert index after reordering by node.
        for (int g = 0; g < Gr; ++g) {
            double sum = 0;
            for (int k = 0; k < groupSize; ++k)
                sum += w[g * groupSize + k];
            m_groupLoad[static_cast<std::size_t>(g)] = static_cast<float>(sum);
        }
        balancedPacking(m_groupLoad.data(), Gr, N, m_groupPack.data(), m_groupRank.data(), m_scratch);
        for (int g = 0; g < Gr; ++g) {
            const int base = (m_groupPack[static_cast<std::size_t>(g)] * groupsPerNode
                              + m_groupRank[static_cast<std::size_t>(g)]) * groupSize;
            for (int k = 0; k < groupSize; ++k) {
                m_log2mlog[static_cast<std::size_t>(g * groupSize + k)] = base + k;
                m_mlog2log[static_cast<std::size_t>(base + k)] = g * groupSize + k;
            }
        }
        for (int m = 0; m < E; ++m)
            m_mlogLoad[static_cast<std::size_t>(m)] = w[m_mlog2log[static_cast<std::size_t>(m)]];

        for (int node = 0; node < N; ++node) {
            const float* load = m_mlogLoad.data() + node * expertsPerNode;
            int* cnt = m_mlogCnt.data() + node * expertsPerNode;
            // Step 2: replicate inside the node.
            replicateExperts(load, expertsPerNode, slotsPerNode, m_phy2mlog.data(), m_phyRank.data(), cnt,
                             m_scratch);
            // Step 3: pack the node's replicas onto its GPUs, each replica carrying an even share.
            for (int p = 0; p < slotsPerNode; ++p) {
                const int m = m_phy2mlog[static_cast<std::size_t>(p)];
                m_phyLoad[static_cast<std::size_t>(p)] = load[m] / static_cast<float>(cnt[m]);
            }
            balancedPacking(m_phyLoad.data(), slotsPerNode, gpusPerNode, m_pack.data(), m_rankInPack.data(),
                            m_scratch);
            for (int p = 0; p < slotsPerNode; ++p) {
                const int slot = node * slotsPerNode + m_pack[static_cast<std::size_t>(p)] * perGpu
                                 + m_rankInPack[static_cast<std::size_t>(p)];
                const int mlog = node * expertsPerNode + m_phy2mlog[static_cast<std::size_t>(p)];
                phy2log[slot] = m_mlog2log[static_cast<std::size_t>(mlog)];
                phyrank[slot] = m_phyRank[static_cast<std::size_t>(p)];
            }
        }
        for (int e = 0; e < E; ++e)
            logcnt[e] = m_mlogCnt[static_cast<std::size_t>(m_log2mlog[static_cast<std::size_t>(e)])];
    }

private:
    Shape m_sh;
    Scratch m_scratch;
    std::vector<float> m_groupLoad, m_mlogLoad, m_phyLoad;
    std::vector<int> m_groupPack, m_groupRank, m_log2mlog, m_mlog2log, m_mlogCnt;
    std::vector<int> m_phy2mlog, m_phyRank, m_pack, m_rankInPack;
};

void require(bool ok, const std::string& message)
{
    if (!ok)
        throw std::invalid_argument("EPLB: " + message);
}

}  // namespace

EplbResult rebalanceExperts(const std::vector<std::vector<double>>& weight, int numReplicas, int numGroups,
                            int numNodes, int numGpus)
{
    require(!weight.empty(), "the load has no layers");
    const int E = static_cast<int>(weight.front().size());
    require(E > 0, "the load has no experts");
    for (std::size_t l = 0; l < weight.size(); ++l) {
        // Messages are built only on failure: this loop sees every load.
        if (static_cast<int>(weight[l].size()) != E)
            require(false, "layer " + std::to_string(l) + " has " + std::to_string(weight[l].size())
                               + " expert loads, layer 0 has " + std::to_string(E));
        for (std::size_t e = 0; e < weight[l].size(); ++e)
            if (!(std::isfinite(weight[l][e]) && weight[l][e] >= 0))
                require(false, "load of expert " + std::to_string(e) + " in layer " + std::to_string(l)
                                   + " must be a finite, non-negative number");
    }
    require(numGpus > 0, "the number of GPUs must be positive");
    require(numNodes > 0, "the number of nodes must be positive");
    require(numGroups > 0, "the number of expert groups must be positive");
    require(numReplicas >= E, std::to_string(numReplicas) + " slots cannot hold " + std::to_string(E)
                                  + " experts (every expert needs at least one slot)");
    require(numReplicas % numGpus == 0, std::to_string(numReplicas) + " slots do not divide evenly over "
                                            + std::to_string(numGpus) + " GPUs");
    require(numGpus % numNodes == 0, std::to_string(numGpus) + " GPUs do not divide evenly over "
                                         + std::to_string(numNodes) + " nodes");
    require(E % numGroups == 0, std::to_string(E) + " experts do not divide into " + std::to_string(numGroups)
                                    + " equal groups");

    EplbResult out;
    out.num_layers = static_cast<int>(weight.size());
    out.num_experts = E;
    out.num_replicas = numReplicas;
    out.hierarchical = eplbUsesHierarchical(numGroups, numNodes);
    const Shape shape = out.hierarchical ? Shape{E, numGroups, numNodes, numGpus, numReplicas}
                                         : Shape{E, 1, 1, numGpus, numReplicas};

    const auto L = weight.size();
    out.phy2log.assign(L, std::vector<int>(static_cast<std::size_t>(numReplicas)));
    out.phyrank.assign(L, std::vector<int>(static_cast<std::size_t>(numReplicas)));
    out.logcnt.assign(L, std::vector<int>(static_cast<std::size_t>(E)));
    HierarchicalLayer layer(shape);
    std::vector<float> w(static_cast<std::size_t>(E));
    for (std::size_t l = 0; l < L; ++l) {
        for (int e = 0; e < E; ++e)
            w[static_cast<std::size_t>(e)] = static_cast<float>(weight[l][static_cast<std::size_t>(e)]);
        layer.run(w.data(), out.phy2log[l].data(), out.phyrank[l].data(), out.logcnt[l].data());
    }

    // log2phy is padded to the largest replica count of any layer, as the reference's tensor is.
    int maxCnt = 1;
    for (const auto& row : out.logcnt)
        maxCnt = std::max(maxCnt, *std::max_element(row.begin(), row.end()));
    out.log2phy.assign(L, std::vector<std::vector<int>>(static_cast<std::size_t>(E),
                                                        std::vector<int>(static_cast<std::size_t>(maxCnt), -1)));
    for (std::size_t l = 0; l < L; ++l)
        for (int r = 0; r < numReplicas; ++r) {
            const auto e = static_cast<std::size_t>(out.phy2log[l][static_cast<std::size_t>(r)]);
            out.log2phy[l][e][static_cast<std::size_t>(out.phyrank[l][static_cast<std::size_t>(r)])] = r;
        }
    return out;
}

Placement eplbToPlacement(const EplbResult& r, int numGpus)
{
    if (numGpus <= 0 || r.num_replicas % numGpus != 0)
        throw std::invalid_argument("EPLB: " + std::to_string(r.num_replicas) + " slots do not divide evenly over "
                                    + std::to_string(numGpus) + " GPUs");
    const int perGpu = r.num_replicas / numGpus;
    Placement p;
    p.num_experts = r.num_experts;
    p.layers.resize(r.phy2log.size());
    for (std::size_t l = 0; l < r.phy2log.size(); ++l) {
        auto& gpus = p.layers[l].gpu_slots;
        gpus.resize(static_cast<std::size_t>(numGpus));
        for (int s = 0; s < r.num_replicas; ++s)
            gpus[static_cast<std::size_t>(s / perGpu)].emplace_back(r.phy2log[l][static_cast<std::size_t>(s)]);
    }
    return p;
}

}  // namespace moex
