// Dynamic sizes (analysis/dynamic_size.h):
//   * exact sizes of sets and of every object against a brute-force BFS per object on thousands of
//     random graphs (cycles, shared substructures, self-loops, weak references), with each exact
//     method forced in turn;
//   * the same on the corpus HPROF dumps, read with and without MAT's "<class>" edges (the result
//     must not depend on it), in both reference modes;
//   * the estimate's error against the exact values on random graphs (a generous statistical
//     bound, not a timing);
//   * the thesis's Fig. 2.3 situation (seed 001, chapter 2) built by hand, with exact numbers.
#include "analysis/dynamic_size.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "analysis/strong_components.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "gtest/gtest.h"
#include "tests/analysis/graph_test_util.h"

namespace heapwatch::analysis {
namespace {

using testing::Edge;
using testing::MakeGraph;
using Method = ExactDynamicSizesOptions::Method;

uint64_t SizeOf(ObjectIndex v) { return 8 * (v.value % 5) + 16; }

// Brute force: BFS from `sources` over the CsrGraph.
DynamicSize BruteDynamicSize(const CsrGraph& graph, const std::vector<ObjectIndex>& sources,
                             bool follow_weak) {
  const std::vector<bool> none(graph.node_count(), false);
  const std::vector<bool> seen = testing::BruteReachable(graph, sources, none, follow_weak);
  DynamicSize out;
  for (uint32_t v = 0; v < graph.node_count(); ++v) {
    if (!seen[v]) continue;
    out.bytes += SizeOf(ObjectIndex(v));
    ++out.objects;
  }
  return out;
}

// Random graphs with shared substructures: "containers" that reference overlapping runs of shared
// objects, plus the random references of testing::RandomGraph (cycles, self-loops, duplicates).
CsrGraph RandomSharedGraph(std::mt19937_64& rng, uint32_t max_nodes, double weak_probability) {
  testing::RandomGraphShape shape;
  shape.max_nodes = max_nodes;
  shape.max_edges_per_node = std::uniform_real_distribution<double>(0.3, 2.5)(rng);
  shape.weak_probability = weak_probability;
  testing::TestGraph t = testing::RandomGraph(rng, shape);
  const uint32_t n = t.graph.node_count();
  std::vector<Edge> edges;
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t e = t.graph.offsets[v]; e < t.graph.offsets[v + 1]; ++e) {
      edges.push_back({v, t.graph.targets[e].value, t.graph.is_weak(e)});
    }
  }
  const uint32_t containers = std::uniform_int_distribution<uint32_t>(0, 4)(rng);
  for (uint32_t i = 0; i < containers && n > 2; ++i) {
    const uint32_t from = std::uniform_int_distribution<uint32_t>(0, n - 1)(rng);
    const uint32_t first = std::uniform_int_distribution<uint32_t>(0, n - 1)(rng);
    const uint32_t len = std::uniform_int_distribution<uint32_t>(1, std::min(n, 40u))(rng);
    for (uint32_t j = 0; j < len; ++j) edges.push_back({from, (first + j) % n, false});
  }
  return MakeGraph(n, edges);
}

TEST(DynamicSizeTest, GoldenSmallGraph) {
  // 0 -> 1 -> 2 -> 1 (cycle), 0 -> 3 -> 2, 4 -> 4 (self-loop), 5 -weak-> 0.
  CsrGraph g = MakeGraph(6, {{0, 1}, {1, 2}, {2, 1}, {0, 3}, {3, 2}, {4, 4}, {5, 0, true}});
  auto size = [&](std::vector<ObjectIndex> set, bool all = false) {
    DynamicSizeOptions o;
    o.all_references = all;
    auto s = ComputeDynamicSize(g, SizeOf, set, o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : DynamicSize{};
  };
  EXPECT_EQ(size({}), (DynamicSize{0, 0}));
  EXPECT_EQ(size(testing::Objects({2})), (DynamicSize{24 + 32, 2}));
  EXPECT_EQ(size(testing::Objects({0})), (DynamicSize{16 + 24 + 32 + 40, 4}));
  EXPECT_EQ(size(testing::Objects({3, 1, 3})), (DynamicSize{24 + 32 + 40, 3}));
  EXPECT_EQ(size(testing::Objects({4})), (DynamicSize{48, 1}));
  EXPECT_EQ(size(testing::Objects({5})), (DynamicSize{16, 1}));
  EXPECT_EQ(size(testing::Objects({5}), true), (DynamicSize{16 + 16 + 24 + 32 + 40, 5}));
  auto bad = ComputeDynamicSize(g, SizeOf, testing::Objects({6}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);

  auto c = CondenseStrongComponents(g, SizeOf);
  ASSERT_TRUE(c.ok()) << c.status();
  for (Method method : {Method::kComponentDfs, Method::kBitParallel}) {
    ExactDynamicSizesOptions options;
    options.method = method;
    auto all = ComputeExactDynamicSizes(*c, options);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(all->BytesVector(), (std::vector<uint64_t>{112, 56, 56, 96, 48, 16}));
    EXPECT_EQ(all->objects(ObjectIndex(0)), 4u);
    EXPECT_TRUE(all->exact(ObjectIndex(0)));
  }
}

// Exact sizes of every object and of random sets equal a BFS per object, on thousands of random
// graphs, with each method.
TEST(DynamicSizeTest, ExactEqualsBruteForceOnRandomGraphs) {
  std::mt19937_64 rng(testing::PrintedSeed("DynamicSizeTest.ExactEqualsBruteForceOnRandomGraphs"));
  for (int round = 0; round < 3000; ++round) {
    const uint32_t max_nodes = round % 50 == 0 ? 700 : (round % 5 == 0 ? 150 : 40);
    const CsrGraph g = RandomSharedGraph(rng, max_nodes, round % 3 == 0 ? 0.25 : 0.0);
    const uint32_t n = g.node_count();
    for (bool all : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "round " << round << " all_references " << all);
      StrongComponentsOptions sco;
      sco.follow_weak_references = all;
      auto c = CondenseStrongComponents(g, SizeOf, sco);
      ASSERT_TRUE(c.ok()) << c.status();
      std::vector<DynamicSize> brute(n);
      for (uint32_t v = 0; v < n; ++v) brute[v] = BruteDynamicSize(g, {ObjectIndex(v)}, all);
      for (Method method : {Method::kAuto, Method::kComponentDfs, Method::kBitParallel}) {
        ExactDynamicSizesOptions options;
        options.method = method;
        auto exact = ComputeExactDynamicSizes(*c, options);
        ASSERT_TRUE(exact.ok()) << exact.status();
        ASSERT_EQ(exact->object_count(), n);
        for (uint32_t v = 0; v < n; ++v) {
          ASSERT_EQ(exact->bytes(ObjectIndex(v)), brute[v].bytes)
              << "object " << v << " method " << static_cast<int>(method);
          ASSERT_EQ(exact->objects(ObjectIndex(v)), brute[v].objects) << "object " << v;
          ASSERT_TRUE(exact->exact(ObjectIndex(v)));
        }
      }
      // A random set taken together.
      std::vector<ObjectIndex> set;
      const uint32_t members = std::uniform_int_distribution<uint32_t>(0, 5)(rng);
      for (uint32_t i = 0; i < members; ++i) {
        set.push_back(ObjectIndex(std::uniform_int_distribution<uint32_t>(0, n - 1)(rng)));
      }
      DynamicSizeOptions dso;
      dso.all_references = all;
      auto together = ComputeDynamicSize(g, SizeOf, set, dso);
      ASSERT_TRUE(together.ok()) << together.status();
      ASSERT_EQ(*together, BruteDynamicSize(g, set, all));
    }
  }
}

TEST(DynamicSizeTest, ExactRefusesBeyondItsBudget) {
  // A chain of 3000 objects: the DFS from every component costs about n^2 / 2, the bit-parallel
  // closure about n / 64 * n.
  constexpr uint32_t kN = 3000;
  std::vector<Edge> edges;
  for (uint32_t v = 0; v + 1 < kN; ++v) edges.push_back({v, v + 1});
  const CsrGraph g = MakeGraph(kN, edges);
  auto c = CondenseStrongComponents(g, SizeOf);
  ASSERT_TRUE(c.ok()) << c.status();
  ExactDynamicSizesOptions options;
  options.max_work = 10'000;
  auto refused = ComputeExactDynamicSizes(*c, options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  options.max_work = 200'000;  // enough for the bit-parallel closure only
  auto done = ComputeExactDynamicSizes(*c, options);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->objects(ObjectIndex(0)), kN);
  options.method = Method::kComponentDfs;
  EXPECT_EQ(ComputeExactDynamicSizes(*c, options).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(DynamicSizeTest, EstimateRefusesBeyondItsBudget) {
  // A chain of 300 objects each also referencing a leaf of its own: every sketch waits for its
  // predecessor, and those near the end of the chain are full (k + 1 = 17 entries, 136 bytes).
  std::vector<Edge> edges;
  for (uint32_t v = 0; v + 1 < 300; ++v) {
    edges.push_back({v, v + 1});
    edges.push_back({v, 300 + v});
  }
  auto c = CondenseStrongComponents(MakeGraph(600, edges), SizeOf);
  ASSERT_TRUE(c.ok()) << c.status();
  DynamicSizeSketchOptions options;
  options.sketch_size = 16;
  options.max_sketch_bytes = 100;
  EXPECT_EQ(EstimateDynamicSizes(*c, options).status().code(),
            absl::StatusCode::kResourceExhausted);
  options.max_sketch_bytes = 4096;
  EXPECT_TRUE(EstimateDynamicSizes(*c, options).ok());
}

TEST(DynamicSizeTest, RejectsInconsistentCondensation) {
  auto c = CondenseStrongComponents(MakeGraph(3, {{0, 1}, {1, 2}}), SizeOf);
  ASSERT_TRUE(c.ok()) << c.status();
  Condensation bad = *c;
  bad.dag.targets[0] = ObjectIndex(2);  // an edge to a higher component
  EXPECT_EQ(ComputeExactDynamicSizes(bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EstimateDynamicSizes(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = *c;
  bad.component_bytes.pop_back();
  EXPECT_EQ(ComputeExactDynamicSizes(bad).status().code(), absl::StatusCode::kInvalidArgument);
  DynamicSizeSketchOptions tiny;
  tiny.sketch_size = 1;
  EXPECT_EQ(EstimateDynamicSizes(*c, tiny).status().code(), absl::StatusCode::kInvalidArgument);
}

// Relative errors of the estimate against the exact values, over the objects whose estimate is not
// exact. Objects flagged exact must be exact.
struct EstimateErrors {
  std::vector<double> relative;  // |estimate - exact| / exact
  double signed_sum = 0;         // sum of (estimate - exact) / exact
  uint64_t flagged_exact = 0;
};

void CollectErrors(const DynamicSizes& estimate, const DynamicSizes& exact, EstimateErrors& out) {
  for (uint32_t x = 0; x < exact.component_count(); ++x) {
    const ComponentId c(x);
    const double truth = static_cast<double>(exact.component_bytes(c));
    const double guess = static_cast<double>(estimate.component_bytes(c));
    if (estimate.component_exact(c)) {
      ASSERT_EQ(estimate.component_bytes(c), exact.component_bytes(c)) << "component " << x;
      ASSERT_EQ(estimate.component_objects(c), exact.component_objects(c)) << "component " << x;
      ++out.flagged_exact;
      continue;
    }
    out.relative.push_back(std::abs(guess - truth) / truth);
    out.signed_sum += (guess - truth) / truth;
  }
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// Random graphs where most objects reach hundreds of components, estimated with small sketches so
// that most values are estimates. The bounds are about 2x the theory (relative standard error
// 1/sqrt(k - 1): median about 0.67 of it, p90 about 1.65 of it) and the mean signed error must be
// near 0 (unbiased): a broken estimator (wrong threshold, weights, or merge) misses them by far.
TEST(DynamicSizeTest, EstimateErrorWithinStatisticalBounds) {
  std::mt19937_64 rng(testing::PrintedSeed("DynamicSizeTest.EstimateErrorWithinStatisticalBounds"));
  for (uint32_t k : {16u, 64u}) {
    EstimateErrors errors;
    for (int round = 0; round < 40; ++round) {
      // A random DAG-heavy graph of 2000 objects with sizes spread over two orders of magnitude.
      const uint32_t n = 2000;
      std::vector<Edge> edges;
      for (uint32_t v = 0; v < n; ++v) {
        const uint32_t degree = std::uniform_int_distribution<uint32_t>(0, 3)(rng);
        for (uint32_t i = 0; i < degree; ++i) {
          // Mostly towards higher indices (a DAG), a few back edges (cycles).
          const bool back = std::uniform_real_distribution<double>(0, 1)(rng) < 0.02;
          const uint32_t lo = back ? 0 : v;
          edges.push_back({v, std::uniform_int_distribution<uint32_t>(lo, n - 1)(rng)});
        }
      }
      const CsrGraph g = MakeGraph(n, edges);
      std::vector<uint64_t> sizes(n);
      for (uint32_t v = 0; v < n; ++v) {
        sizes[v] = 8 * std::uniform_int_distribution<uint64_t>(2, 200)(rng);
      }
      auto c = CondenseStrongComponents(g, [&](ObjectIndex v) { return sizes[v.value]; });
      ASSERT_TRUE(c.ok()) << c.status();
      auto exact = ComputeExactDynamicSizes(*c);
      ASSERT_TRUE(exact.ok()) << exact.status();
      DynamicSizeSketchOptions options;
      options.sketch_size = k;
      options.seed = rng();
      auto estimate = EstimateDynamicSizes(*c, options);
      ASSERT_TRUE(estimate.ok()) << estimate.status();
      CollectErrors(*estimate, *exact, errors);
    }
    ASSERT_GT(errors.relative.size(), 10'000u) << "k " << k;
    const double rse = 1.0 / std::sqrt(k - 1.0);
    const double median = Quantile(errors.relative, 0.5);
    const double p90 = Quantile(errors.relative, 0.9);
    const double mean_signed = errors.signed_sum / static_cast<double>(errors.relative.size());
    std::cout << "[ estimate ] k=" << k << ": " << errors.relative.size() << " estimated, "
              << errors.flagged_exact << " exact; median relative error " << median << ", p90 "
              << p90 << ", mean signed " << mean_signed << std::endl;
    EXPECT_LT(median, 2 * 0.67 * rse) << "k " << k;
    EXPECT_LT(p90, 2 * 1.65 * rse) << "k " << k;
    EXPECT_LT(std::abs(mean_signed), 0.25 * rse) << "k " << k;
  }
}

// The estimator is unbiased: over thousands of seeds, the mean of estimate / exact - 1 of every
// estimated component stays within 4.5 standard errors of 0, for bytes and objects. Small sketches
// (k = 2, 4) on small graphs where each component's own share and threshold matter: a star (one
// object referencing 20 equal leaves), a star with skewed sizes, two containers sharing most of
// their elements, and a chain (whose sketches are mostly taken over from the successor). A wrong
// threshold or a doubly counted own share is biased by 5% or more here, which is over 4.5 standard
// errors at 4000 seeds.
TEST(DynamicSizeTest, EstimateIsUnbiased) {
  struct Case {
    std::vector<Edge> edges;
    std::vector<uint64_t> sizes;
  };
  std::vector<Case> cases;
  {
    Case star;
    for (uint32_t i = 1; i <= 20; ++i) star.edges.push_back({0, i});
    star.sizes.assign(21, 16);
    cases.push_back(star);
    Case skewed = star;
    for (uint32_t i = 0; i <= 20; ++i) skewed.sizes[i] = uint64_t{8} * (1 + (i * 7) % 23);
    cases.push_back(skewed);
    Case shared;  // 0 -> 2..21, 1 -> 7..26, 27 -> 0, 27 -> 1
    for (uint32_t i = 2; i <= 21; ++i) shared.edges.push_back({0, i});
    for (uint32_t i = 7; i <= 26; ++i) shared.edges.push_back({1, i});
    shared.edges.push_back({27, 0});
    shared.edges.push_back({27, 1});
    shared.sizes.assign(28, 24);
    shared.sizes[0] = 200;
    shared.sizes[27] = 400;
    cases.push_back(shared);
    Case chain;  // 0 -> 1 -> ... -> 29: most sketches are their successor's, shared
    for (uint32_t i = 0; i + 1 < 30; ++i) chain.edges.push_back({i, i + 1});
    chain.sizes.assign(30, 32);
    cases.push_back(chain);
  }
  constexpr int kSeeds = 4000;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& test_case = cases[ci];
    const uint32_t n = static_cast<uint32_t>(test_case.sizes.size());
    const CsrGraph g = MakeGraph(n, test_case.edges);
    auto c = CondenseStrongComponents(g, [&](ObjectIndex v) { return test_case.sizes[v.value]; });
    ASSERT_TRUE(c.ok()) << c.status();
    auto exact = ComputeExactDynamicSizes(*c);
    ASSERT_TRUE(exact.ok()) << exact.status();
    for (uint32_t k : {2u, 4u}) {
      // Per component: sums of the relative error and of its square, for bytes and objects.
      std::vector<double> sum_b(n, 0), sq_b(n, 0), sum_o(n, 0), sq_o(n, 0);
      std::vector<int> estimated(n, 0);
      for (int seed = 0; seed < kSeeds; ++seed) {
        DynamicSizeSketchOptions options;
        options.sketch_size = k;
        options.seed = 1000003ull * seed + k;
        auto estimate = EstimateDynamicSizes(*c, options);
        ASSERT_TRUE(estimate.ok()) << estimate.status();
        for (uint32_t v = 0; v < n; ++v) {
          const ObjectIndex o(v);
          if (estimate->exact(o)) continue;
          ++estimated[v];
          const double rb =
              static_cast<double>(estimate->bytes(o)) / static_cast<double>(exact->bytes(o)) - 1;
          const double ro =
              static_cast<double>(estimate->objects(o)) / static_cast<double>(exact->objects(o)) -
              1;
          sum_b[v] += rb;
          sq_b[v] += rb * rb;
          sum_o[v] += ro;
          sq_o[v] += ro * ro;
        }
      }
      int checked = 0;
      for (uint32_t v = 0; v < n; ++v) {
        if (estimated[v] == 0) continue;
        ASSERT_EQ(estimated[v], kSeeds) << "case " << ci << " object " << v;
        ++checked;
        for (auto [sum, sq, what] :
             {std::tuple{sum_b[v], sq_b[v], "bytes"}, std::tuple{sum_o[v], sq_o[v], "objects"}}) {
          const double mean = sum / kSeeds;
          const double sd = std::sqrt(std::max(0.0, sq / kSeeds - mean * mean));
          EXPECT_LT(std::abs(mean), 4.5 * sd / std::sqrt(double{kSeeds}) + 1e-3)
              << "case " << ci << " k " << k << " object " << v << " " << what << ": mean " << mean
              << ", sd " << sd;
        }
      }
      EXPECT_GT(checked, 0) << "case " << ci << " k " << k;
    }
  }
}

// ---- Heap graphs.

// Brute force on a heap graph, written independently of the ReferenceView: the "<class>" edge is
// recognised through ResolveReference, implicit class references are added from the class table.
DynamicSize HeapBrute(const HeapGraph& graph, const std::vector<ObjectIndex>& sources,
                      bool all_references) {
  const CsrGraph& g = graph.graph();
  std::vector<bool> seen(g.node_count(), false);
  std::vector<ObjectIndex> queue;
  DynamicSize out;
  auto enter = [&](ObjectIndex w) {
    if (seen[w.value]) return;
    seen[w.value] = true;
    queue.push_back(w);
    out.bytes += graph.shallow_size(w);
    ++out.objects;
  };
  for (ObjectIndex s : sources) enter(s);
  for (size_t head = 0; head < queue.size(); ++head) {
    const ObjectIndex v = queue[head];
    if (all_references && !graph.info().instance_class_edges) {
      const ClassId c = graph.class_of(v);
      if (c.valid() && graph.class_info(c).class_object.valid())
        enter(graph.class_info(c).class_object);
    }
    for (uint64_t e = g.offsets[v.value]; e < g.offsets[v.value + 1]; ++e) {
      if (!all_references) {
        if (g.is_weak(e)) continue;
        if (e == g.first_edge(v) &&
            graph.ResolveReference(v, e).kind == ReferenceSlot::Kind::kClassObject) {
          continue;
        }
      }
      enter(g.targets[e]);
    }
  }
  return out;
}

std::string Corpus(const std::string& relative) {
  return std::string(HEAPWATCH_CORPORA_DIR) + "/" + relative;
}

// On corpus dumps of every kind (HotSpot 32/64-bit, compressed oops, the hprof agent, gzip, JDK 11,
// Android, NetBeans): exact sizes of every object do not depend on whether the dump was read with
// "<class>" edges; they equal the brute force on every object of the dumps of at most 5000 objects
// and on a sample of the others (30 class objects, the 20 biggest, 200 at random);
// ComputeDynamicSize of single objects and of the instances of the most numerous class equals the
// brute force; estimates flagged exact are exact.
TEST(DynamicSizeTest, CorpusDumpsMatchBruteForce) {
  const std::vector<std::string> files = {
      "eclipse-mat/sun_jdk6_32bit.hprof",
      "eclipse-mat/sun_jdk5_64bit.hprof",
      "eclipse-mat/sun_jdk6_30_x64_compressedOops.hprof",
      "eclipse-mat/sun_jdk6_31_hprofagent_compressedOops.hprof",
      "eclipse-mat/openjdk_jdk11_04_x64.hprof.gz",
      "eclipse-mat/oracle_jdk8_05_x64.hprof",
      "adt-tools-base-perflib/dialer.android-hprof",
      "leakcanary/leak_service_binder.hprof",
      "netbeans/heap_dump.bin",
      "netbeans/small_heap.bin",
      "openjdk-jhat/jmap.bin",
  };
  std::mt19937_64 rng(testing::PrintedSeed("DynamicSizeTest.CorpusDumpsMatchBruteForce"));
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    hprof::ReadOptions plain, with_class_edges;
    with_class_edges.instance_class_edges = true;
    auto graph = hprof::ReadHeapGraph(Corpus(file), plain);
    ASSERT_TRUE(graph.ok()) << graph.status();
    auto graph_ce = hprof::ReadHeapGraph(Corpus(file), with_class_edges);
    ASSERT_TRUE(graph_ce.ok()) << graph_ce.status();
    const uint32_t n = graph->object_count();
    ASSERT_EQ(graph_ce->object_count(), n);
    for (bool all : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "all_references " << all);
      DynamicSizeOptions references;
      references.all_references = all;
      auto exact = ComputeExactDynamicSizes(*graph, references);
      ASSERT_TRUE(exact.ok()) << exact.status();
      auto exact_ce = ComputeExactDynamicSizes(*graph_ce, references);
      ASSERT_TRUE(exact_ce.ok()) << exact_ce.status();
      ASSERT_EQ(exact->BytesVector(), exact_ce->BytesVector());

      std::vector<ObjectIndex> sample;
      for (uint32_t v = 0; v < n; ++v) {
        if (graph->kind(ObjectIndex(v)) == ObjectKind::kClass) sample.push_back(ObjectIndex(v));
      }
      std::shuffle(sample.begin(), sample.end(), rng);
      sample.resize(std::min<size_t>(sample.size(), 30));
      std::vector<ObjectIndex> by_size(n);
      for (uint32_t v = 0; v < n; ++v) by_size[v] = ObjectIndex(v);
      std::partial_sort(
          by_size.begin(), by_size.begin() + std::min<uint32_t>(20, n), by_size.end(),
          [&](ObjectIndex a, ObjectIndex b) { return exact->bytes(a) > exact->bytes(b); });
      sample.insert(sample.end(), by_size.begin(), by_size.begin() + std::min<uint32_t>(20, n));
      for (int i = 0; i < 200; ++i) {
        sample.push_back(ObjectIndex(std::uniform_int_distribution<uint32_t>(0, n - 1)(rng)));
      }
      if (n <= 5000) {  // small dumps: every object
        sample.clear();
        for (uint32_t v = 0; v < n; ++v) sample.push_back(ObjectIndex(v));
      }
      for (ObjectIndex v : sample) {
        const DynamicSize truth = HeapBrute(*graph, {v}, all);
        ASSERT_EQ(exact->bytes(v), truth.bytes) << "object " << v.value;
        ASSERT_EQ(exact->objects(v), truth.objects) << "object " << v.value;
        auto single = ComputeDynamicSize(*graph_ce, std::vector<ObjectIndex>{v}, references);
        ASSERT_TRUE(single.ok()) << single.status();
        ASSERT_EQ(*single, truth) << "object " << v.value;
      }
      // The instances of the most numerous class, taken together.
      std::vector<ClassTotals> totals = ComputeClassTotals(*graph);
      const auto top = std::max_element(
          totals.begin(), totals.end(),
          [](const ClassTotals& a, const ClassTotals& b) { return a.instances < b.instances; });
      const ClassId top_class(static_cast<uint32_t>(top - totals.begin()));
      std::vector<ObjectIndex> instances;
      for (uint32_t v = 0; v < n; ++v) {
        if (graph->class_of(ObjectIndex(v)) == top_class) instances.push_back(ObjectIndex(v));
      }
      auto together = ComputeDynamicSize(*graph, instances, references);
      ASSERT_TRUE(together.ok()) << together.status();
      EXPECT_EQ(*together, HeapBrute(*graph, instances, all));

      auto estimate = EstimateDynamicSizes(*graph, references);
      ASSERT_TRUE(estimate.ok()) << estimate.status();
      for (uint32_t v = 0; v < n; ++v) {
        if (estimate->exact(ObjectIndex(v))) {
          ASSERT_EQ(estimate->bytes(ObjectIndex(v)), exact->bytes(ObjectIndex(v))) << v;
        }
      }
    }
  }
}

// The thesis's Fig. 2.3: a server S fills a buffer B with data objects O1..O4; an algorithm A
// copies them (shallowly) into its list L. S and A are GC roots (thread objects). By retained size
// B and L are small (each holds only itself: every data object is reachable through the other);
// by dynamic size they are the biggest objects after S and A, which reach them. Sizes (bytes):
// S, A: 24; B: Object[4] = 56; L: java.util.ArrayList 24 + its Object[4] 56; O_i: 24 + a byte[100
// * i] payload; every class object 8.
TEST(DynamicSizeTest, ThesisFigure2_3) {
  DumpInfo info;  // HotSpot layout: 16-byte headers, 8-byte references, 8-byte alignment
  HeapGraphBuilder b{info};
  auto instance_class = [](std::string name, std::vector<std::string> fields, uint32_t size) {
    ClassInfo c;
    c.name = std::move(name);
    for (auto& f : fields) c.instance_fields.push_back(FieldInfo{f, FieldType::kObject});
    c.instance_size = size;
    c.class_object_size = 8;
    return c;
  };
  auto array_class = [](std::string name, FieldType element) {
    ClassInfo c;
    c.name = std::move(name);
    c.instance_kind =
        element == FieldType::kObject ? ObjectKind::kObjectArray : ObjectKind::kPrimitiveArray;
    c.element_type = element;
    c.class_object_size = 8;
    return c;
  };
  b.AddClass(instance_class("java.lang.Object", {}, 16), 0x10);
  b.AddClass(instance_class("java.lang.Class", {}, 16), 0x20);
  const ClassId server = b.AddClass(instance_class("Server", {"buffer"}, 24), 0x30);
  const ClassId algorithm = b.AddClass(instance_class("Algorithm", {"list"}, 24), 0x40);
  const ClassId list = b.AddClass(instance_class("java.util.ArrayList", {"elementData"}, 24), 0x50);
  const ClassId objects = b.AddClass(array_class("java.lang.Object[]", FieldType::kObject), 0x60);
  const ClassId data = b.AddClass(instance_class("Data", {"payload"}, 24), 0x70);
  const ClassId bytes = b.AddClass(array_class("byte[]", FieldType::kByte), 0x80);
  constexpr uint64_t kS = 0x1000, kA = 0x1100, kB = 0x1200, kL = 0x1300, kLArray = 0x1400;
  const uint64_t kO[] = {0x2000, 0x2100, 0x2200, 0x2300};
  const uint64_t kP[] = {0x3000, 0x3100, 0x3200, 0x3300};
  b.AddInstance(kS, server, {kB});
  b.AddInstance(kA, algorithm, {kL});
  b.AddObjectArray(kB, objects, {kO[0], kO[1], kO[2], kO[3]});
  b.AddInstance(kL, list, {kLArray});
  b.AddObjectArray(kLArray, objects, {kO[0], kO[1], kO[2], kO[3]});
  for (int i = 0; i < 4; ++i) {
    b.AddInstance(kO[i], data, {kP[i]});
    b.AddPrimitiveArray(kP[i], bytes, 100 * (i + 1));
  }
  b.AddRoot(kS, GcRootKind::kThreadObject);
  b.AddRoot(kA, GcRootKind::kThreadObject);
  auto graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto at = [&](uint64_t id) { return graph->FindObject(id); };
  // Arrays start at offset 24 (16-byte header, 4-byte length, aligned to 8): byte[100 i] =
  // align8(24 + 100 i) = 128, 224, 328, 424; Object[4] = 24 + 4 * 8 = 56.
  ASSERT_EQ(graph->shallow_size(at(kP[0])), 128u);
  ASSERT_EQ(graph->shallow_size(at(kP[3])), 424u);
  ASSERT_EQ(graph->shallow_size(at(kB)), 56u);
  const uint64_t kData = 4 * 24 + 128 + 224 + 328 + 424;  // 1200

  auto tree = ComputeDominatorTree(graph->graph(), graph->root_objects());
  ASSERT_TRUE(tree.ok()) << tree.status();
  const RetainedSizes retained =
      ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return graph->shallow_size(v); });
  auto exact = ComputeExactDynamicSizes(*graph);
  ASSERT_TRUE(exact.ok()) << exact.status();

  EXPECT_EQ(retained[at(kB).value], 56u);
  EXPECT_EQ(retained[at(kL).value], 24u + 56u);
  EXPECT_EQ(retained[at(kS).value], 24u + 56u);
  EXPECT_EQ(exact->bytes(at(kB)), 56u + kData);
  EXPECT_EQ(exact->objects(at(kB)), 9u);
  EXPECT_EQ(exact->bytes(at(kL)), 24u + 56u + kData);
  EXPECT_EQ(exact->objects(at(kL)), 10u);
  EXPECT_EQ(exact->bytes(at(kS)), 24u + 56u + kData);
  EXPECT_EQ(exact->bytes(at(kA)), 24u + 24u + 56u + kData);
  EXPECT_EQ(exact->bytes(at(kO[3])), 24u + 424u);
  // The buffer and the list taken together reach everything but the two roots.
  auto both = ComputeDynamicSize(*graph, std::vector<ObjectIndex>{at(kB), at(kL)});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(*both, (DynamicSize{56 + 24 + 56 + kData, 11}));
  // Dynamic - retained ("shared size"): B and L share all the data, S and A too.
  EXPECT_EQ(exact->bytes(at(kB)) - retained[at(kB).value], kData);
  EXPECT_EQ(exact->bytes(at(kL)) - retained[at(kL).value], kData);
  // Ranking by dynamic size: A, then S and L (equal), then B, then the data objects; every
  // estimate is exact here (few components).
  std::vector<uint64_t> all = exact->BytesVector();
  std::sort(all.rbegin(), all.rend());
  EXPECT_EQ(all[0], exact->bytes(at(kA)));
  EXPECT_EQ(all[3], exact->bytes(at(kB)));
  auto estimate = EstimateDynamicSizes(*graph);
  ASSERT_TRUE(estimate.ok()) << estimate.status();
  EXPECT_EQ(estimate->BytesVector(), exact->BytesVector());

  // With every reference: each object also reaches its class object (8 bytes each) and, through
  // it, java.lang.Class's.
  DynamicSizeOptions all_references;
  all_references.all_references = true;
  auto with_classes = ComputeDynamicSize(*graph, std::vector<ObjectIndex>{at(kB)}, all_references);
  ASSERT_TRUE(with_classes.ok()) << with_classes.status();
  // B + Object[]'s class; data objects + Data's class; payloads + byte[]'s class; java.lang.Class.
  EXPECT_EQ(*with_classes, (DynamicSize{56 + kData + 32, 9 + 4}));
}

}  // namespace
}  // namespace heapwatch::analysis
