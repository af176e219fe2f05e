// Topology YAML: built-in parameters and their errors, custom topologies, malformed files (every
// error reported), round trips, and the sample files against the built-ins.
//   tst_topology_yaml                              run all
//   MOEX_WRITE_SAMPLES=1 tst_topology_yaml samples  rewrite samples/topologies/*.yaml from the built-ins
#ifndef Q_MOC_RUN  // moc of Qt 6.4 cannot parse C++20 standard headers; it needs none of these
#include "common/atomic_file.h"
#include "topology/builtin_topologies.h"
#include "topology/topology_yaml.h"

#include <cmath>
#endif

#include "topology_fixtures.h"

#include <QTest>

using namespace moex;
using moex::test::build;
using moex::test::near;

namespace {

#define CHECK_TEXT(cond, text)                                                                                         \
    do {                                                                                                               \
        const std::string msg_ = (text);                                                                               \
        QVERIFY2((cond), msg_.c_str());                                                                                \
    } while (false)

struct Loaded {
    std::optional<Topology> topology;
    Diagnostics diags;
};

Loaded loadText(const std::string& text)
{
    Loaded out;
    auto root = parseYaml(text, "t.yaml", out.diags);
    if (!root)
        return out;
    YamlReader reader("t.yaml", out.diags);
    out.topology = readTopology(*root, reader);
    return out;
}

const char* const kSampleKeys[] = {"gb200-nvl72", "gb300-nvl72", "hgx-h100", "hgx-h800", "hgx-h200", "hgx-b200"};

// The leading comment block of a sample (what it is, where its numbers come from, an example);
// regeneration keeps it and rewrites the graph below it.
std::string commentBlock(const std::string& text)
{
    std::size_t end = 0;
    while (end < text.size() && text[end] == '#') {
        const std::size_t nl = text.find('\n', end);
        end = nl == std::string::npos ? text.size() : nl + 1;
    }
    return text.substr(0, end);
}

}  // namespace

class TestTopologyYaml : public QObject {
    Q_OBJECT
private slots:
    void invalidParams_data();
    void invalidParams();
    void customTopology();
    void malformedYaml_data();
    void malformedYaml();
    void allErrorsReported();
    void paramsYaml();
    void roundTrip_data();
    void roundTrip();
    void samples();
};

void TestTopologyYaml::invalidParams_data()
{
    QTest::addColumn<QByteArray>("key");
    QTest::addColumn<int>("racks");
    QTest::addColumn<int>("nodes");
    QTest::addColumn<int>("gpusPerNode");
    QTest::addColumn<int>("nicsPerGpu");
    QTest::addColumn<QByteArray>("fragment");
    QTest::addRow("unknown") << QByteArray("hgx-h300") << 1 << 1 << 8 << 1
                             << QByteArray("valid names: gb200-nvl72, gb300-nvl72, hgx-h100");
    QTest::addRow("racks 0") << QByteArray("gb200-nvl72") << 0 << 1 << 8 << 1
                             << QByteArray("racks = 0 is out of range [1, 16]");
    QTest::addRow("racks 17") << QByteArray("gb300-nvl72") << 17 << 1 << 8 << 1 << QByteArray("racks = 17");
    QTest::addRow("nodes 129") << QByteArray("hgx-h100") << 1 << 129 << 8 << 1
                               << QByteArray("nodes = 129 is out of range [1, 128]");
    QTest::addRow("gpus 9") << QByteArray("hgx-h200") << 1 << 1 << 9 << 1 << QByteArray("gpus_per_node = 9");
    QTest::addRow("nics 5") << QByteArray("hgx-b200") << 1 << 1 << 8 << 5 << QByteArray("nics_per_gpu = 5");
    QTest::addRow("racks on hgx") << QByteArray("hgx-h800") << 2 << 1 << 8 << 1
                                  << QByteArray("'racks' applies to NVL72");
    QTest::addRow("nodes on nvl72") << QByteArray("gb200-nvl72") << 1 << 4 << 8 << 1
                                    << QByteArray("'nodes' applies to hgx");
}

void TestTopologyYaml::invalidParams()
{
    QFETCH(QByteArray, key);
    QFETCH(int, racks);
    QFETCH(int, nodes);
    QFETCH(int, gpusPerNode);
    QFETCH(int, nicsPerGpu);
    QFETCH(QByteArray, fragment);
    TopologyParams p;
    p.builtin = key.toStdString();
    p.racks = racks;
    p.nodes = nodes;
    p.gpus_per_node = gpusPerNode;
    p.nics_per_gpu = nicsPerGpu;
    try {
        buildTopology(p);
        QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
        CHECK_TEXT(std::string(e.what()).find(fragment.toStdString()) != std::string::npos, e.what());
    }
}

const char* const kSmallCustom = R"(name: two-gpus
gpu: {base: h200, hbm_usable_gb: 130}
nodes:
  - {name: g0, kind: gpu}
  - {name: g1, kind: gpu}
  - {name: sw, kind: nvswitch}
links:
  - {from: g0, to: sw, kind: nvlink, gbs: 200, latency_us: 0.3}
  - {from: g1, to: sw, kind: nvlink, gbs: 200}
)";

void TestTopologyYaml::customTopology()
{
    Loaded l = loadText(kSmallCustom);
    CHECK_TEXT(l.topology.has_value() && l.diags.empty(), l.diags.format());
    const Topology& t = *l.topology;
    QCOMPARE(t.name, std::string("two-gpus"));
    QCOMPARE(t.numGpus(), 2);
    QCOMPARE(t.gpu.name, std::string("H200 SXM"));
    QCOMPARE(t.gpu.hbm_usable_gb, 130.0);
    QCOMPARE(t.gpu.hbm_bw_gbs, 4800.0);
    QCOMPARE(t.links().size(), std::size_t(4));
    const Route& r = t.route(GpuId(0), GpuId(1));
    QCOMPARE(r.hops, 2);
    QCOMPARE(r.links.size(), std::size_t(2));
    QVERIFY(near(r.latency_us, 0.3 + 0.25));  // default nvlink latency on the second link
    QCOMPARE(t.link(r.links[0].link).capacity_gbs, 200.0);

    // A GPU of its own: every figure given, usable HBM defaulting to the whole.
    Loaded own =
        loadText("gpu: {name: X1, arch: blackwell, hbm_gb: 96, hbm_bw_gbs: 3000, bf16_tflops: 500, tdp_w: 400}\n"
                 "nodes:\n  - {name: g, kind: gpu}\n");
    CHECK_TEXT(own.topology.has_value(), own.diags.format());
    QCOMPARE(own.topology->gpu.hbm_usable_gb, 96.0);
    QVERIFY(own.topology->gpu.arch == GpuArch::blackwell);
    QCOMPARE(own.topology->name, std::string("custom"));
}

void TestTopologyYaml::malformedYaml_data()
{
    QTest::addColumn<QByteArray>("yaml");
    QTest::addColumn<int>("line");
    QTest::addColumn<QByteArray>("fragment");
    const QByteArray head = "name: t\ngpu: h200\nnodes:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"
                            "  - {name: sw0, kind: nvswitch}\n";
    const QByteArray ok = "  - {from: gpu0, to: sw0, kind: nvlink, gbs: 100}\n";
    QTest::addRow("unknown node in link")
        << head + "links:\n" + ok + "  - {from: gpu1, to: sw1, kind: nvlink, gbs: 100}\n"
        << 9 << QByteArray("'to' names unknown node 'sw1'; did you mean 'sw0'?");
    QTest::addRow("duplicate name") << head + "  - {name: gpu1, kind: gpu}\nlinks: []\n"
                                    << 7 << QByteArray("duplicate node name 'gpu1' (first defined at line 5)");
    QTest::addRow("negative gbs") << head + "links:\n  - {from: gpu0, to: sw0, kind: nvlink, gbs: -5}\n"
                                  << 8 << QByteArray("link capacity 'gbs' must be positive, got -5");
    QTest::addRow("zero gbs") << head + "links:\n  - {from: gpu0, to: sw0, kind: nvlink, gbs: 0}\n"
                              << 8 << QByteArray("must be positive, got 0");
    QTest::addRow("tiny gbs") << head + "links:\n  - {from: gpu0, to: sw0, kind: nvlink, gbs: 1e-300}\n"
                              << 8 << QByteArray("link capacity 'gbs' must be at least 0.001 GB/s (1 MB/s), got 1.0e-300");
    QTest::addRow("empty node name") << QByteArray("gpu: h200\nnodes:\n  - {name: g, kind: gpu}\n  - {name: \"\", kind: nvswitch}\n")
                                     << 4 << QByteArray("'name' is empty: give a name");
    QTest::addRow("zero HBM bandwidth") << QByteArray("gpu: {base: h100, hbm_bw_gbs: 0}\nnodes:\n  - {name: g, kind: gpu}\n")
                                        << 1 << QByteArray("'hbm_bw_gbs' must be at least 0.001, got 0");
    QTest::addRow("zero bf16 rate") << QByteArray("gpu: {base: h100, bf16_tflops: 0}\nnodes:\n  - {name: g, kind: gpu}\n")
                                    << 1 << QByteArray("'bf16_tflops' must be at least 0.001, got 0");
    QTest::addRow("zero power") << QByteArray("gpu: {base: h100, tdp_w: 0, idle_w: 0}\nnodes:\n  - {name: g, kind: gpu}\n")
                                << 1 << QByteArray("'tdp_w' must be at least 1, got 0");
    QTest::addRow("nan gbs") << head + "links:\n  - {from: gpu0, to: sw0, kind: nvlink, gbs: .nan}\n"
                             << 8 << QByteArray("got NaN");
    QTest::addRow("unknown node key") << QByteArray("gpu: h200\nnodes:\n  - {name: g, kind: gpu, domian: 1}\n") << 3
                                      << QByteArray("unknown key 'domian' in topology node; did you mean 'domain'?");
    QTest::addRow("unknown top key") << head + "link: []\n"
                                     << 7 << QByteArray("unknown key 'link' in topology; did you mean 'links'?");
    QTest::addRow("disconnected gpu") << head + "links:\n" + ok << 1
                                      << QByteArray("no route from gpu 'gpu0' to gpu 'gpu1'");
    QTest::addRow("no gpus") << QByteArray("gpu: h200\nnodes:\n  - {name: sw0, kind: nvswitch}\n") << 3
                             << QByteArray("the topology has no gpu nodes");
    QTest::addRow("wrong builtin param") << QByteArray("builtin: hgx-h200\nracks: 2\n") << 2
                                         << QByteArray("'racks' does not apply to hgx-h200");
    QTest::addRow("nodes on nvl72") << QByteArray("{builtin: gb200-nvl72, nodes: 2}") << 1
                                    << QByteArray("'nodes' does not apply to gb200-nvl72");
    QTest::addRow("unknown builtin") << QByteArray("builtin: hgx-h20\n") << 1
                                     << QByteArray("unknown built-in topology 'hgx-h20'; valid names: gb200-nvl72");
    QTest::addRow("builtin typo hint") << QByteArray("builtin: hgx-h20\n") << 1
                                       << QByteArray("did you mean 'hgx-h200'?");
    QTest::addRow("nodes out of range") << QByteArray("builtin: hgx-h200\nnodes: 200\n") << 2
                                        << QByteArray("'nodes' = 200 is out of range [1, 128]");
    QTest::addRow("unknown kind") << QByteArray("gpu: h200\nnodes:\n  - {name: g, kind: gpuu}\n") << 3
                                  << QByteArray("'kind' must be one of: gpu, nvswitch");
    QTest::addRow("unknown gpu spec") << QByteArray("gpu: h2000\nnodes:\n  - {name: g, kind: gpu}\n") << 1
                                      << QByteArray("unknown GPU 'h2000'; built-in GPUs: h100");
    QTest::addRow("nic without gpu") << head + "  - {name: nic0, kind: nic}\nlinks: []\n"
                                     << 7 << QByteArray("nic 'nic0' needs 'gpu: NAME'");
    QTest::addRow("nic names a switch") << head + "  - {name: nic0, kind: nic, gpu: sw0}\nlinks: []\n"
                                        << 7 << QByteArray("'gpu' names unknown gpu 'sw0'");
    QTest::addRow("nic not linked") << head + "  - {name: nic0, kind: nic, gpu: gpu1}\nlinks: []\n"
                                    << 7 << QByteArray("nic 'nic0' needs a link to and from its gpu 'gpu1'");
    QTest::addRow("gpu spec incomplete") << QByteArray(
                                                "gpu: {name: X1, hbm_gb: 96}\nnodes:\n  - {name: g, kind: gpu}\n")
                                         << 1 << QByteArray("missing required key 'hbm_bw_gbs'");
    QTest::addRow("gpu spec key typo") << QByteArray("gpu: {base: h100, tdp: 600}\nnodes:\n  - {name: g, kind: gpu}\n")
                                       << 1 << QByteArray("unknown key 'tdp' in gpu; did you mean 'tdp_w'?");
    QTest::addRow("self link") << head + "links:\n  - {from: gpu0, to: gpu0, kind: nvlink, gbs: 5}\n"
                               << 8 << QByteArray("to itself");
}

void TestTopologyYaml::malformedYaml()
{
    QFETCH(QByteArray, yaml);
    QFETCH(int, line);
    QFETCH(QByteArray, fragment);
    Loaded l = loadText(yaml.toStdString());
    QVERIFY(!l.topology.has_value());
    bool found = false;
    for (const Diagnostic& d : l.diags.items())
        found = found || (d.where.line == line && d.message.find(fragment.toStdString()) != std::string::npos);
    CHECK_TEXT(found,
               "expected line " + std::to_string(line) + ": " + fragment.toStdString() + "\ngot:\n" + l.diags.format());
    QVERIFY(l.diags.format().find("t.yaml:") == 0);
}

void TestTopologyYaml::allErrorsReported()
{
    const std::string yaml =
        "gpu: h200\nnodes:\n  - {name: a, kind: gpu}\n  - {name: a, kind: gpu}\n"
        "links:\n  - {from: a, to: b, kind: nvlink, gbs: -1}\n  - {from: a, to: c, kind: nv, gbs: 1}\n";
    Loaded l = loadText(yaml);
    QVERIFY(!l.topology.has_value());
    CHECK_TEXT(l.diags.size() >= 5, l.diags.format());  // duplicate, unknown b, gbs, unknown c, kind
}

void TestTopologyYaml::paramsYaml()
{
    Diagnostics diags;
    auto root = parseYaml("{builtin: hgx-h200, nodes: 8, nics_per_gpu: 2, nic_gbs: 100}", "p.yaml", diags);
    QVERIFY(root.has_value());
    YamlReader reader("p.yaml", diags);
    auto p = readTopologyParams(*root, reader);
    CHECK_TEXT(p.has_value(), diags.format());
    QCOMPARE(p->builtin, std::string("hgx-h200"));
    QCOMPARE(p->nodes, 8);
    QCOMPARE(p->nics_per_gpu, 2);
    QCOMPARE(p->nic_gbs, 100.0);
    QCOMPARE(topologyParamsToYaml(*p), std::string("{builtin: hgx-h200, nodes: 8, nics_per_gpu: 2, nic_gbs: 100}"));
    TopologyParams plain;
    plain.builtin = "gb200-nvl72";
    QCOMPARE(topologyParamsToYaml(plain), std::string("{builtin: gb200-nvl72}"));
    plain.racks = 2;
    plain.nvlink_gbs = 812.5;
    auto again = parseYaml(topologyParamsToYaml(plain), "q.yaml", diags);
    YamlReader r2("q.yaml", diags);
    auto q = readTopologyParams(*again, r2);
    QVERIFY(q.has_value());
    QCOMPARE(q->racks, 2);
    QCOMPARE(q->nvlink_gbs, 812.5);
    // readTopology builds it.
    auto built = readTopology(*root, reader);
    QVERIFY(built.has_value());
    QCOMPARE(built->numGpus(), 64);
    QCOMPARE(built->builtin, std::string("hgx-h200"));
}

void TestTopologyYaml::roundTrip_data()
{
    QTest::addColumn<QByteArray>("key");
    QTest::addColumn<int>("count");
    QTest::addColumn<int>("nicsPerGpu");
    QTest::addColumn<bool>("pxn");
    QTest::addRow("gb200 x2") << QByteArray("gb200-nvl72") << 2 << 1 << true;
    QTest::addRow("hgx-h800 x3, 2 nics") << QByteArray("hgx-h800") << 3 << 2 << true;
    QTest::addRow("hgx-b200 x2, no pxn") << QByteArray("hgx-b200") << 2 << 1 << false;
    // What `moex-cli topology host-cpu -o` writes: CPU ranks without a power model (tdp_w 0).
    QTest::addRow("host-cpu x4") << QByteArray("host-cpu") << 4 << 1 << true;
}

void TestTopologyYaml::roundTrip()
{
    QFETCH(QByteArray, key);
    QFETCH(int, count);
    QFETCH(int, nicsPerGpu);
    QFETCH(bool, pxn);
    TopologyParams p;
    p.builtin = key.toStdString();
    (p.builtin == "host-cpu" ? p.ranks : p.builtin.find("nvl72") != std::string::npos ? p.racks : p.nodes) = count;
    p.nics_per_gpu = nicsPerGpu;
    p.nvlink_gbs = 1.0 / 3 * 1000;  // a double that needs all 17 digits
    Topology t = buildTopology(p);
    t.pxn = pxn;
    t.gpu.idle_w = std::min(123.456, t.gpu.tdp_w);
    t.finalize();
    const std::string yaml = topologyToYaml(t);
    Loaded l = loadText(yaml);
    CHECK_TEXT(l.topology.has_value(), l.diags.format());
    const std::string diff = firstDifference(t, *l.topology);
    CHECK_TEXT(diff.empty(), diff);
    QVERIFY(l.topology->builtin.empty());
    QCOMPARE(topologyToYaml(*l.topology), yaml);
    // The difference finder itself notices a change.
    Topology changed = *l.topology;
    changed.gpu.tdp_w += 1;
    QVERIFY(!firstDifference(t, changed).empty());
}

void TestTopologyYaml::samples()
{
    // MOEX_WRITE_SAMPLES=1 tst_topology samples: rewrite the graphs from the built-ins.
    const bool write = qEnvironmentVariableIsSet("MOEX_WRITE_SAMPLES");
    for (const char* key : kSampleKeys) {
        const std::string path = std::string(MOEX_SOURCE_DIR) + "/samples/topologies/" + key + ".yaml";
        const Topology built = build(key);
        const std::string header = commentBlock(readFile(path));
        if (write)
            writeFileAtomically(path, header + topologyToYaml(built));
        Topology loaded;
        try {
            loaded = loadTopologyFile(path);
        } catch (const InputError& e) {
            QFAIL(e.what());
        }
        const std::string diff = firstDifference(built, loaded);
        CHECK_TEXT(diff.empty(), path + ": " + diff + " (regenerate with MOEX_WRITE_SAMPLES=1 tst_topology samples)");
        CHECK_TEXT(header.find("FACTS.md") != std::string::npos, path + ": the opening comment must cite FACTS.md");
        CHECK_TEXT(header.find("moex-cli validate samples/topologies/" + std::string(key) + ".yaml") !=
                       std::string::npos,
                   path + ": the opening comment must show an example command");
    }
}

QTEST_GUILESS_MAIN(TestTopologyYaml)
#include "tst_topology_yaml.moc"
