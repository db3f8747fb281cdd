// Strongly connected components and the condensation DAG (analysis/strong_components.h): golden
// tiny graphs, Boost.Graph's strong_components as the oracle on thousands of random graphs (cycles,
// self-loops, duplicate references, isolated objects, weak references), chains and cycles of 10^7
// objects (no recursion), and the class-object edges of a HeapGraph.
#include "analysis/strong_components.h"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/heap_graph.h"
#include "boost/graph/adjacency_list.hpp"
#include "boost/graph/strong_components.hpp"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "gtest/gtest.h"
#include "tests/analysis/graph_test_util.h"

namespace heapwatch::analysis {
namespace {

using testing::Edge;
using testing::MakeGraph;

uint64_t SizeOf(ObjectIndex v) { return 8 * (v.value % 7) + 16; }

// Checks `c` against its definition on `graph`: the partition equals Boost.Graph's, the DAG has
// exactly the projected edges (no self-loop, no duplicate), every edge goes from a higher to a
// lower id, and the per-component totals add up.
void CheckCondensation(const CsrGraph& graph, bool follow_weak, const Condensation& c,
                       const std::function<uint64_t(ObjectIndex)>& size = SizeOf) {
  const uint32_t n = graph.node_count();
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  G g(n);
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t e = graph.offsets[v]; e < graph.offsets[v + 1]; ++e) {
      if (!follow_weak && graph.is_weak(e)) continue;
      boost::add_edge(v, graph.targets[e].value, g);
    }
  }
  std::vector<int> boost_component(n);
  const int boost_count =
      n == 0 ? 0
             : boost::strong_components(
                   g, boost::make_iterator_property_map(boost_component.begin(),
                                                        boost::get(boost::vertex_index, g)));
  ASSERT_EQ(c.component_of.size(), n);
  ASSERT_EQ(c.component_count, static_cast<uint32_t>(boost_count));
  // Same partition: the two numberings are a bijection.
  std::map<uint32_t, int> ours_to_boost;
  std::map<int, uint32_t> boost_to_ours;
  for (uint32_t v = 0; v < n; ++v) {
    const uint32_t ours = c.component_of[v].value;
    ASSERT_LT(ours, c.component_count);
    auto [a, inserted_a] = ours_to_boost.emplace(ours, boost_component[v]);
    ASSERT_EQ(a->second, boost_component[v]) << "object " << v;
    auto [b, inserted_b] = boost_to_ours.emplace(boost_component[v], ours);
    ASSERT_EQ(b->second, ours) << "object " << v;
  }
  // The DAG.
  ASSERT_EQ(c.dag.node_count(), c.component_count);
  std::set<std::pair<uint32_t, uint32_t>> expected;
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t e = graph.offsets[v]; e < graph.offsets[v + 1]; ++e) {
      if (!follow_weak && graph.is_weak(e)) continue;
      const uint32_t x = c.component_of[v].value;
      const uint32_t y = c.component_of[graph.targets[e].value].value;
      if (x != y) expected.emplace(x, y);
    }
  }
  std::set<std::pair<uint32_t, uint32_t>> actual;
  for (uint32_t x = 0; x < c.component_count; ++x) {
    for (ObjectIndex y : c.successors(ComponentId(x))) {
      ASSERT_GT(x, y.value) << "DAG edge " << x << " -> " << y.value << " not from higher to lower";
      ASSERT_TRUE(actual.emplace(x, y.value).second)
          << "duplicate DAG edge " << x << " -> " << y.value;
    }
  }
  EXPECT_EQ(actual, expected);
  EXPECT_TRUE(c.dag.weak.empty());
  std::vector<uint64_t> bytes(c.component_count, 0);
  std::vector<uint32_t> objects(c.component_count, 0);
  for (uint32_t v = 0; v < n; ++v) {
    bytes[c.component_of[v].value] += size(ObjectIndex(v));
    ++objects[c.component_of[v].value];
  }
  EXPECT_EQ(c.component_bytes, bytes);
  EXPECT_EQ(c.component_objects, objects);
}

TEST(StrongComponentsTest, Empty) {
  CsrGraph g = MakeGraph(0, {});
  auto c = CondenseStrongComponents(g, SizeOf);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->component_count, 0u);
  EXPECT_TRUE(c->component_of.empty());
  EXPECT_EQ(c->dag.node_count(), 0u);
}

TEST(StrongComponentsTest, SelfLoopIsOneComponentWithoutDagEdge) {
  CsrGraph g = MakeGraph(1, {{0, 0}, {0, 0}});
  auto c = CondenseStrongComponents(g, SizeOf);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->component_count, 1u);
  EXPECT_EQ(c->dag.edge_count(), 0u);
  EXPECT_EQ(c->component_bytes[0], 16u);
}

// 0 -> 1 -> 2 -> 1, 0 -> 3, 3 -> 2 (twice), 4 isolated: components {0}, {1,2}, {3}, {4}.
TEST(StrongComponentsTest, Golden) {
  CsrGraph g = MakeGraph(5, {{0, 1}, {1, 2}, {2, 1}, {0, 3}, {3, 2}, {3, 2}});
  auto c = CondenseStrongComponents(g, SizeOf);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->component_count, 4u);
  EXPECT_EQ(c->component_of[1], c->component_of[2]);
  const uint32_t x0 = c->component_of[0].value, x12 = c->component_of[1].value,
                 x3 = c->component_of[3].value;
  // {1,2} is the only sink reached from 0 and 3, so it completes first.
  EXPECT_EQ(x12, 0u);
  EXPECT_GT(x0, x3);
  EXPECT_EQ(c->component_objects[x12], 2u);
  EXPECT_EQ(c->component_bytes[x12], SizeOf(ObjectIndex(1)) + SizeOf(ObjectIndex(2)));
  EXPECT_EQ(c->successors(ComponentId(x3)).size(), 1u);  // the duplicate 3 -> 2 counted once
  EXPECT_EQ(c->successors(ComponentId(x0)).size(), 2u);
  CheckCondensation(g, false, *c);
}

TEST(StrongComponentsTest, WeakReferencesFollowedOnlyWhenAsked) {
  CsrGraph g = MakeGraph(2, {{0, 1}, {1, 0, /*weak=*/true}});
  auto strong = CondenseStrongComponents(g, SizeOf);
  ASSERT_TRUE(strong.ok()) << strong.status();
  EXPECT_EQ(strong->component_count, 2u);
  StrongComponentsOptions all;
  all.follow_weak_references = true;
  auto with_weak = CondenseStrongComponents(g, SizeOf, all);
  ASSERT_TRUE(with_weak.ok()) << with_weak.status();
  EXPECT_EQ(with_weak->component_count, 1u);
}

TEST(StrongComponentsTest, RejectsBadInput) {
  CsrGraph g = MakeGraph(2, {{0, 1}});
  g.targets[0] = ObjectIndex(7);
  auto c = CondenseStrongComponents(g, SizeOf);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  StrongComponentsOptions no_class;
  no_class.follow_class_edges = false;
  auto d = CondenseStrongComponents(MakeGraph(1, {}), SizeOf, no_class);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << d.status();
}

TEST(StrongComponentsTest, MatchesBoostOnRandomGraphs) {
  std::mt19937_64 rng(testing::PrintedSeed("StrongComponentsTest.MatchesBoostOnRandomGraphs"));
  for (int round = 0; round < 4000; ++round) {
    testing::RandomGraphShape shape;
    shape.max_nodes = round % 10 == 0 ? 400 : 40;
    shape.max_edges_per_node = (round % 4) + 0.5;
    shape.weak_probability = round % 3 == 0 ? 0.2 : 0.0;
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    for (bool follow_weak : {false, true}) {
      StrongComponentsOptions options;
      options.follow_weak_references = follow_weak;
      auto c = CondenseStrongComponents(t.graph, SizeOf, options);
      ASSERT_TRUE(c.ok()) << c.status();
      SCOPED_TRACE(::testing::Message() << "round " << round << " follow_weak " << follow_weak);
      CheckCondensation(t.graph, follow_weak, *c);
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) return;
    }
  }
}

// 10^7 objects in one chain 0 -> 1 -> ... : as many components, numbered from the end of the chain.
// A recursive DFS would need 10^7 stack frames.
TEST(StrongComponentsTest, LongChainDoesNotRecurse) {
  constexpr uint32_t kN = 10'000'000;
  CsrGraph g;
  g.offsets.assign(size_t{kN} + 1, 0);
  g.targets.resize(kN - 1);
  for (uint32_t v = 0; v + 1 < kN; ++v) {
    g.targets[v] = ObjectIndex(v + 1);
    g.offsets[v + 1] = v + 1;
  }
  g.offsets[kN] = kN - 1;
  auto c = CondenseStrongComponents(g, [](ObjectIndex) -> uint64_t { return 16; });
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->component_count, kN);
  bool ordered = true;
  for (uint32_t v = 0; v < kN; ++v) ordered &= c->component_of[v].value == kN - 1 - v;
  EXPECT_TRUE(ordered);
  EXPECT_EQ(c->dag.edge_count(), kN - 1u);

  // Closing the chain into a cycle makes it one component with no DAG edge.
  g.targets.push_back(ObjectIndex(0));
  g.offsets[kN] = kN;
  auto cycle = CondenseStrongComponents(g, [](ObjectIndex) -> uint64_t { return 16; });
  ASSERT_TRUE(cycle.ok()) << cycle.status();
  EXPECT_EQ(cycle->component_count, 1u);
  EXPECT_EQ(cycle->dag.edge_count(), 0u);
  EXPECT_EQ(cycle->component_bytes[0], uint64_t{16} * kN);
}

// A class com.acme.Registry whose static field holds one of its instances: the class object and
// the instance form one component exactly when the instance's reference to its class is an edge,
// whether the graph stores that reference (instance_class_edges) or not.
StatusOr<HeapGraph> RegistryHeap(bool instance_class_edges) {
  HeapGraphOptions options;
  options.instance_class_edges = instance_class_edges;
  HeapGraphBuilder b{DumpInfo{}, options};
  ClassInfo object;
  object.name = "java.lang.Object";
  object.instance_size = 16;
  object.class_object_size = 8;
  b.AddClass(object, 0x10);
  ClassInfo cls = object;
  cls.name = "java.lang.Class";
  b.AddClass(cls, 0x20);
  ClassInfo registry = object;
  registry.name = "com.acme.Registry";
  registry.instance_size = 24;
  registry.static_fields.push_back(FieldInfo{"INSTANCE", FieldType::kObject});
  ClassId r = b.AddClass(registry, 0x30);
  b.SetStaticReferences(r, {0x1000});
  b.AddInstance(0x1000, r, {});
  b.AddRoot(0x30, GcRootKind::kStickyClass);
  return std::move(b).Build();
}

TEST(StrongComponentsTest, ClassEdgesOfAHeapGraph) {
  for (bool stored : {false, true}) {
    auto graph = RegistryHeap(stored);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const ObjectIndex instance = graph->FindObject(0x1000);
    const ObjectIndex class_object = graph->FindObject(0x30);
    for (bool follow : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "stored " << stored << " follow " << follow);
      StrongComponentsOptions options;
      options.follow_class_edges = follow;
      auto c = CondenseStrongComponents(*graph, options);
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_EQ(c->component_of[instance.value] == c->component_of[class_object.value], follow);
      // Every class object then also reaches java.lang.Class's class object (0x20).
      const ObjectIndex class_class = graph->FindObject(0x20);
      const auto succ = c->successors(c->component_of[class_object.value]);
      EXPECT_EQ(std::count(succ.begin(), succ.end(),
                           ObjectIndex(c->component_of[class_class.value].value)),
                follow ? 1 : 0);
      EXPECT_EQ(c->component_bytes[c->component_of[instance.value].value],
                follow ? graph->shallow_size(instance) + graph->shallow_size(class_object)
                       : graph->shallow_size(instance));
    }
  }
}

// The HeapGraph overload on corpus dumps, read with and without MAT's "<class>" edges, for every
// combination of options, against Boost.Graph on the references the options select (built here
// independently: the stored class edge recognised through ResolveReference, implicit ones added
// from the class table).
TEST(StrongComponentsTest, CorpusDumpsMatchBoost) {
  for (const char* file :
       {"eclipse-mat/sun_jdk6_32bit.hprof", "adt-tools-base-perflib/dialer.android-hprof"}) {
    for (bool stored : {false, true}) {
      hprof::ReadOptions read;
      read.instance_class_edges = stored;
      auto graph = hprof::ReadHeapGraph(std::string(HEAPWATCH_CORPORA_DIR) + "/" + file, read);
      ASSERT_TRUE(graph.ok()) << graph.status();
      const CsrGraph& g = graph->graph();
      for (bool weak : {false, true}) {
        for (bool classes : {false, true}) {
          SCOPED_TRACE(::testing::Message() << file << " stored " << stored << " weak " << weak
                                            << " classes " << classes);
          std::vector<Edge> edges;
          for (uint32_t v = 0; v < g.node_count(); ++v) {
            const ObjectIndex o(v);
            if (classes && !stored) {
              const ClassId c = graph->class_of(o);
              if (c.valid() && graph->class_info(c).class_object.valid()) {
                edges.push_back({v, graph->class_info(c).class_object.value});
              }
            }
            for (uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
              if (!weak && g.is_weak(e)) continue;
              if (!classes && e == g.first_edge(o) &&
                  graph->ResolveReference(o, e).kind == ReferenceSlot::Kind::kClassObject) {
                continue;
              }
              edges.push_back({v, g.targets[e].value});
            }
          }
          StrongComponentsOptions options;
          options.follow_weak_references = weak;
          options.follow_class_edges = classes;
          auto c = CondenseStrongComponents(*graph, options);
          ASSERT_TRUE(c.ok()) << c.status();
          CheckCondensation(MakeGraph(g.node_count(), edges), true, *c,
                            [&](ObjectIndex v) { return graph->shallow_size(v); });
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace heapwatch::analysis
