// The all-pairs GPU route table (Topology::computeRoutes). Routes are equal-cost multipath: bytes
// split evenly over all shortest paths (by hop count), which is how NCCL and the NVSwitch fabric
// spread a pair's traffic over parallel switch chips and how ECMP spreads it over spines.
#include "topology/topology.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace moex {

namespace {

// Inside a domain: nvlink links through nvswitch chips, ending at a GPU. In the network: any link
// through leaf/spine switches, ending at a NIC. The source is always left; no other endpoint kind
// is ever crossed, so routes never run through a CPU, a third GPU or another NIC.
enum class Mode { nvlink, network };

// A shortest-path DAG from one source with path counts, plus spreading one unit of bytes over it.
// Arrays span all nodes and are reset through the list of nodes touched, so one Dag serves many
// sources cheaply.
class Dag {
public:
    Dag(const Topology& t, const std::vector<std::vector<LinkId>>& out, Mode mode)
        : m_t(t), m_out(out), m_mode(mode), m_dist(t.nodes().size(), -1), m_paths(t.nodes().size(), 0),
          m_lat(t.nodes().size(), 0), m_back(t.nodes().size(), 0), m_pred(t.nodes().size())
    {
    }

    struct Spread {
        std::vector<LinkShare> links;                     // source side first
        std::vector<std::pair<NodeId, double>> arrivals;  // target reached, fraction of the bytes
        int hops = -1;                                    // -1: no target reachable
        double latency_us = 0;                            // the slowest of the shortest paths
    };

    void run(NodeId source)
    {
        for (NodeId n : m_touched)
            m_dist[n.index()] = -1;
        m_touched.clear();
        m_source = source;
        visit(source, 0);
        m_paths[source.index()] = 1;
        m_lat[source.index()] = 0;
        for (std::size_t head = 0; head < m_touched.size(); ++head) {
            const NodeId u = m_touched[head];
            if (u != m_source && !isTransit(u))
                continue;
            for (LinkId l : m_out[u.index()]) {
                const TopoLink& link = m_t.link(l);
                if (!usable(link) || link.to == m_source)
                    continue;
                const NodeId v = link.to;
                if (m_dist[v.index()] < 0)
                    visit(v, m_dist[u.index()] + 1);
                if (m_dist[v.index()] == m_dist[u.index()] + 1) {
                    m_pred[v.index()].push_back(l);
                    m_paths[v.index()] += m_paths[u.index()];
                    m_lat[v.index()] = std::max(m_lat[v.index()], m_lat[u.index()] + link.latency_us);
                }
            }
        }
    }

    [[nodiscard]] int dist(NodeId n) const { return m_dist[n.index()]; }

    // One unit of bytes from the source to the nearest of `targets`, spread over all shortest paths:
    // a link's share = (paths from the source to its tail) x (paths from its head to a target) / all.
    [[nodiscard]] Spread spread(const std::vector<NodeId>& targets)
    {
        Spread out;
        int best = -1;
        for (NodeId t : targets)
            if (dist(t) > 0 && (best < 0 || dist(t) < best))
                best = dist(t);
        if (best < 0)
            return out;
        std::vector<NodeId>& level = m_level;
        std::vector<NodeId>& next = m_next;
        level.clear();
        double total = 0;
        for (NodeId t : targets)
            if (dist(t) == best && m_back[t.index()] == 0) {
                level.push_back(t);
                m_back[t.index()] = 1;
                total += m_paths[t.index()];
                out.latency_us = std::max(out.latency_us, m_lat[t.index()]);
            }
        for (NodeId t : level)
            out.arrivals.emplace_back(t, m_paths[t.index()] / total);
        out.hops = best;
        m_visited = level;
        m_shares.clear();
        while (!level.empty()) {
            next.clear();
            for (NodeId v : level) {
                for (LinkId l : m_pred[v.index()]) {
                    const NodeId u = m_t.link(l).from;
                    if (m_back[u.index()] == 0) {
                        next.push_back(u);
                        m_visited.push_back(u);
                    }
                    m_back[u.index()] += m_back[v.index()];
                    m_shares.push_back({l, m_paths[u.index()] * m_back[v.index()] / total});
                }
            }
            std::swap(level, next);
        }
        for (NodeId n : m_visited)
            m_back[n.index()] = 0;
        out.links.assign(m_shares.rbegin(), m_shares.rend());  // exact size; source side first
        return out;
    }

private:
    void visit(NodeId n, int d)
    {
        m_dist[n.index()] = d;
        m_paths[n.index()] = 0;
        m_lat[n.index()] = 0;
        m_pred[n.index()].clear();
        m_touched.push_back(n);
    }

    [[nodiscard]] bool isTransit(NodeId n) const
    {
        const NodeKind k = m_t.node(n).kind;
        return m_mode == Mode::nvlink ? k == NodeKind::nvswitch : (k == NodeKind::leaf || k == NodeKind::spine);
    }

    [[nodiscard]] bool usable(const TopoLink& l) const
    {
        const NodeKind k = m_t.node(l.to).kind;
        if (m_mode == Mode::nvlink)
            return l.kind == LinkKind::nvlink && (k == NodeKind::nvswitch || k == NodeKind::gpu);
        return k == NodeKind::leaf || k == NodeKind::spine || k == NodeKind::nic;
    }

    const Topology& m_t;
    const std::vector<std::vector<LinkId>>& m_out;
    Mode m_mode;
    NodeId m_source;
    std::vector<int> m_dist;
    std::vector<double> m_paths;  // counts stay exact in a double up to 2^53
    std::vector<double> m_lat;
    std::vector<double> m_back;               // paths from a node to the targets (during spread)
    std::vector<std::vector<LinkId>> m_pred;  // links into a node on its shortest paths
    std::vector<NodeId> m_touched;
    std::vector<NodeId> m_level, m_next, m_visited;  // scratch of spread(), kept to avoid reallocation
    std::vector<LinkShare> m_shares;
};

// Sums shares per link while keeping the order links were first met (source side first).
class Accumulator {
public:
    explicit Accumulator(std::size_t links) : m_share(links, 0) {}

    void add(LinkId l, double share)
    {
        if (m_share[l.index()] == 0)
            m_order.push_back(l);
        m_share[l.index()] += share;
    }

    std::vector<LinkShare> take()
    {
        std::vector<LinkShare> out;
        out.reserve(m_order.size());
        for (LinkId l : m_order) {
            out.push_back({l, m_share[l.index()]});
            m_share[l.index()] = 0;
        }
        m_order.clear();
        return out;
    }

private:
    std::vector<double> m_share;
    std::vector<LinkId> m_order;
};

struct NicPort {
    NodeId nic;
    LinkId up;    // GPU -> NIC
    LinkId down;  // NIC -> GPU
};

using Adjacency = std::vector<std::vector<LinkId>>;  // outgoing links of each node
using NicPorts = std::vector<std::vector<NicPort>>;  // [gpu] its NICs
using PairsOf = std::vector<std::vector<std::pair<int, int>>>;  // [proxy gpu] the (src, dst) it sends for

// The all-pairs table is [src * G + dst].
struct PairIndex {
    int gpus = 0;
    [[nodiscard]] std::size_t operator()(int s, int d) const
    {
        return static_cast<std::size_t>(s) * static_cast<std::size_t>(gpus) + static_cast<std::size_t>(d);
    }
};

std::string gpuName(const Topology& t, int g) { return "'" + t.node(t.gpuNode(GpuId(g))).name + "'"; }

// Phase 1: routes inside NVLink domains. Marks in `needNet` each pair that needs the network (another
// domain, or a domain whose NVLink graph is split); returns whether any does.
bool routeInsideDomains(const Topology& t, const Adjacency& out, std::vector<Route>& routes, std::vector<char>& needNet)
{
    const int G = t.numGpus();
    const PairIndex at{G};
    bool anyNet = false;
    Dag dag(t, out, Mode::nvlink);
    for (int s = 0; s < G; ++s) {
        dag.run(t.gpuNode(GpuId(s)));
        for (int d = 0; d < G; ++d) {
            if (d == s)
                continue;
            if (t.domainOf(GpuId(s)) == t.domainOf(GpuId(d))) {
                Dag::Spread sp = dag.spread({t.gpuNode(GpuId(d))});
                if (sp.hops > 0) {
                    Route& r = routes[at(s, d)];
                    r.links = std::move(sp.links);
                    r.hops = sp.hops;
                    r.latency_us = sp.latency_us;
                    continue;
                }
            }
            needNet[at(s, d)] = 1;
            anyNet = true;
        }
    }
    return anyNet;
}

// Phase 2a: each GPU's NICs with the links between them. Throws std::invalid_argument for a NIC
// without its links.
NicPorts nicPortsOf(const Topology& t, const Adjacency& out)
{
    const int G = t.numGpus();
    NicPorts nics(static_cast<std::size_t>(G));
    for (std::size_t i = 0; i < t.nodes().size(); ++i) {
        const TopoNode& n = t.nodes()[i];
        if (n.kind != NodeKind::nic || !n.gpu.valid() || n.gpu.value >= G)
            continue;
        const NodeId nic(static_cast<std::int32_t>(i));
        const NodeId owner = t.gpuNode(n.gpu);
        NicPort port{nic, LinkId(), LinkId()};
        for (LinkId l : out[owner.index()])
            if (!port.up.valid() && t.link(l).to == nic)
                port.up = l;
        for (LinkId l : out[nic.index()])
            if (!port.down.valid() && t.link(l).to == owner)
                port.down = l;
        if (!port.up.valid() || !port.down.valid())
            throw std::invalid_argument("nic '" + n.name + "' needs links to and from its gpu " + gpuName(t, n.gpu.value));
        nics[n.gpu.index()].push_back(port);
    }
    return nics;
}

// Phase 2b: the fewest network hops between any NIC of one GPU and any of another, per pair
// (-1: none).
std::vector<int> networkHops(const Topology& t, const Adjacency& out, const NicPorts& nics)
{
    const int G = t.numGpus();
    const PairIndex at{G};
    Dag net(t, out, Mode::network);
    std::vector<int> gpuDist(static_cast<std::size_t>(G) * static_cast<std::size_t>(G), -1);
    for (int x = 0; x < G; ++x)
        for (const NicPort& a : nics[static_cast<std::size_t>(x)]) {
            net.run(a.nic);
            for (int y = 0; y < G; ++y)
                for (const NicPort& b : nics[static_cast<std::size_t>(y)]) {
                    const int d = net.dist(b.nic);
                    int& best = gpuDist[at(x, y)];
                    if (d > 0 && (best < 0 || d < best))
                        best = d;
                }
        }
    return gpuDist;
}

// Phase 3: the GPU that sends onto the network for each pair that needs it. With PXN, the one of
// the source's domain nearest (in network hops) to the destination - the source itself when it is
// among them, else the GPU with the destination's local index (its rail), else the lowest id.
// Throws std::invalid_argument for a pair with no route at all.
PairsOf assignProxies(const Topology& t, const std::vector<char>& needNet, const std::vector<int>& gpuDist)
{
    const int G = t.numGpus();
    const PairIndex at{G};
    std::map<int, std::vector<int>> domains;  // domain -> its GPUs in id order
    std::vector<int> localIndex(static_cast<std::size_t>(G));
    for (int g = 0; g < G; ++g) {
        auto& members = domains[t.domainOf(GpuId(g))];
        localIndex[static_cast<std::size_t>(g)] = static_cast<int>(members.size());
        members.push_back(g);
    }
    // Whether every GPU of a domain reaches every other over NVLink (true for all built-ins): then
    // the proxy depends only on (domain, destination) and the source, and is found once per pair
    // of the first two.
    std::map<int, bool> meshed;
    for (const auto& [dom, members] : domains) {
        bool all = true;
        for (int a : members)
            for (int b : members)
                all = all && (a == b || !needNet[at(a, b)]);
        meshed[dom] = all;
    }
    // Nearest candidate of `members` to d among those s can reach over NVLink (all when s < 0).
    auto nearest = [&](const std::vector<int>& members, int s, int d) -> std::pair<int, int> {
        int best = -1;
        for (int c : members) {
            const int cd = gpuDist[at(c, d)];
            if (cd > 0 && (best < 0 || cd < best) && (s < 0 || c == s || !needNet[at(s, c)]))
                best = cd;
        }
        int proxy = -1;
        for (int c : members)
            if (best > 0 && gpuDist[at(c, d)] == best && (s < 0 || c == s || !needNet[at(s, c)]) &&
                (proxy < 0 || localIndex[static_cast<std::size_t>(c)] == localIndex[static_cast<std::size_t>(d)]))
                proxy = c;
        return {best, proxy};
    };
    std::map<int, std::vector<std::pair<int, int>>> nearestByDomain;  // domain -> per dst (hops, proxy)
    if (t.pxn)
        for (const auto& [dom, members] : domains)
            if (meshed[dom]) {
                auto& row = nearestByDomain[dom];
                for (int d = 0; d < G; ++d)
                    row.push_back(nearest(members, -1, d));
            }
    PairsOf users(static_cast<std::size_t>(G));
    for (int s = 0; s < G; ++s) {
        const int dom = t.domainOf(GpuId(s));
        const auto& members = domains[dom];
        for (int d = 0; d < G; ++d) {
            if (!needNet[at(s, d)])
                continue;
            int proxy = s;
            if (t.pxn && dom != t.domainOf(GpuId(d))) {
                const auto [best, candidate] =
                    meshed[dom] ? nearestByDomain[dom][static_cast<std::size_t>(d)] : nearest(members, s, d);
                if (best > 0 && gpuDist[at(s, d)] != best)
                    proxy = candidate;
            }
            if (gpuDist[at(proxy, d)] <= 0)
                throw std::invalid_argument("no route from gpu " + gpuName(t, s) + " to gpu " + gpuName(t, d) +
                                            ": no NVLink path and no network path between their NICs");
            users[static_cast<std::size_t>(proxy)].emplace_back(s, d);
        }
    }
    return users;
}

// Phase 4: routes over the network: [NVLink to the proxy] + its NICs (split evenly over those at
// the fewest hops) + network ECMP + the destination NIC that was reached.
void routeOverNetwork(const Topology& t, const Adjacency& out, const NicPorts& nics, const PairsOf& users,
                      std::vector<Route>& routes)
{
    const int G = t.numGpus();
    const PairIndex at{G};
    Accumulator acc(t.links().size());
    std::vector<Dag> nicDags;
    for (int p = 0; p < G; ++p) {
        const auto& pairs = users[static_cast<std::size_t>(p)];
        if (pairs.empty())
            continue;
        const auto& ports = nics[static_cast<std::size_t>(p)];
        while (nicDags.size() < ports.size())
            nicDags.emplace_back(t, out, Mode::network);
        for (std::size_t k = 0; k < ports.size(); ++k)
            nicDags[k].run(ports[k].nic);
        std::map<int, std::vector<Dag::Spread>> legs;  // dst -> one spread per NIC of p
        for (const auto& [s, d] : pairs) {
            auto it = legs.find(d);
            if (it == legs.end()) {
                std::vector<NodeId> targets;
                for (const NicPort& b : nics[static_cast<std::size_t>(d)])
                    targets.push_back(b.nic);
                std::vector<Dag::Spread> perNic;
                for (std::size_t k = 0; k < ports.size(); ++k)
                    perNic.push_back(nicDags[k].spread(targets));
                it = legs.emplace(d, std::move(perNic)).first;
            }
            const std::vector<Dag::Spread>& perNic = it->second;
            int legHops = -1;
            int used = 0;
            for (const Dag::Spread& leg : perNic)
                if (leg.hops > 0 && (legHops < 0 || leg.hops < legHops))
                    legHops = leg.hops;
            for (const Dag::Spread& leg : perNic)
                used += leg.hops == legHops ? 1 : 0;
            const double w = 1.0 / used;

            Route& r = routes[at(s, d)];
            if (p != s) {
                const Route& first = routes[at(s, p)];
                for (const LinkShare& ls : first.links)
                    acc.add(ls.link, ls.share);
                r.hops = first.hops;
                r.latency_us = first.latency_us;
            }
            double slowest = 0;
            for (std::size_t k = 0; k < ports.size(); ++k) {
                const Dag::Spread& leg = perNic[k];
                if (leg.hops != legHops)
                    continue;
                acc.add(ports[k].up, w);
                for (const LinkShare& ls : leg.links)
                    acc.add(ls.link, w * ls.share);
                double down = 0;
                for (const auto& [nic, fraction] : leg.arrivals) {
                    for (const NicPort& b : nics[static_cast<std::size_t>(d)])
                        if (b.nic == nic) {
                            acc.add(b.down, w * fraction);
                            down = std::max(down, t.link(b.down).latency_us);
                        }
                }
                slowest = std::max(slowest, t.link(ports[k].up).latency_us + leg.latency_us + down);
            }
            r.links = acc.take();
            r.hops += 1 + legHops + 1;
            r.latency_us += slowest;
            r.crosses_network = true;
        }
    }
}

}  // namespace

void Topology::computeRoutes()
{
    const auto pairs = static_cast<std::size_t>(numGpus()) * static_cast<std::size_t>(numGpus());
    auto routes = std::make_shared<std::vector<Route>>(pairs, Route{});
    std::vector<char> needNet(pairs, 0);
    const bool inside = routeInsideDomains(*this, m_out, *routes, needNet);
    if (inside) {
        const NicPorts nics = nicPortsOf(*this, m_out);
        const std::vector<int> gpuDist = networkHops(*this, m_out, nics);
        const PairsOf users = assignProxies(*this, needNet, gpuDist);
        routeOverNetwork(*this, m_out, nics, users, *routes);
    }
    m_routes = std::move(routes);
}

}  // namespace moex
