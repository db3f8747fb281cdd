// SummarizeClassLoaders (analysis/class_loaders.h) on hand-built heaps (a redeployed web
// application whose old loaders stay, a clean one), on random heaps against a brute-force count,
// and on the corpus's real HotSpot dumps.
#include "analysis/class_loaders.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "analysis/heap_graph.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/leak_heap.h"

namespace heapwatch::analysis {
namespace {

using testing::Instance;

constexpr char kWebappLoader[] = "org.apache.catalina.loader.ParallelWebappClassLoader";

// The boot classes, `deployments` WebappClassLoader objects each defining the application's three
// classes (with one instance of com.example.App each), and one application class loader defining
// com.example.Launcher. With `with_lambda`, every webapp loader also defines two lambda classes of
// App that the reader gave the same stable name.
StatusOr<HeapGraph> Redeployed(int deployments, bool with_lambda = false) {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  b.AddClass(Instance("java.lang.Class", {}, 96), 0x20);
  const ClassId loader_class = b.AddClass(Instance(kWebappLoader, {}, 64), 0x30);
  const ClassId app_loader_class =
      b.AddClass(Instance("jdk.internal.loader.ClassLoaders$AppClassLoader", {}, 64), 0x40);
  ClassInfo strings;
  strings.name = "java.lang.String[]";
  strings.instance_kind = ObjectKind::kObjectArray;
  b.AddClass(strings, 0x50);
  b.AddInstance(0x9000, app_loader_class, {});
  b.AddClass(Instance("com.example.Launcher", {}, 16), 0x60, 0x9000);
  uint64_t next_class = 0x1000;
  uint64_t next_object = 0x100000;
  for (int d = 0; d < deployments; ++d) {
    const uint64_t loader = 0x8000 + 0x10 * d;
    b.AddInstance(loader, loader_class, {});
    b.AddRoot(loader, GcRootKind::kJniGlobal);
    ClassId app = kNoClass;
    for (const char* name : {"com.example.App", "com.example.Util", "org.lib.Helper"}) {
      const ClassId c = b.AddClass(Instance(name, {}, 16), next_class, loader);
      next_class += 0x10;
      if (app == kNoClass) app = c;
    }
    b.AddInstance(next_object, app, {});
    b.AddRoot(next_object, GcRootKind::kJniGlobal);
    next_object += 0x10;
    // The array class of App: same loader, left out.
    ClassInfo apps;
    apps.name = "com.example.App[]";
    apps.instance_kind = ObjectKind::kObjectArray;
    b.AddClass(apps, next_class, loader);
    next_class += 0x10;
    if (with_lambda) {
      for (int k = 0; k < 2; ++k) {
        b.AddClass(Instance("com.example.App$$Lambda", {}, 16), next_class, loader);
        next_class += 0x10;
      }
    }
  }
  for (uint64_t c = 0x10; c <= 0x60; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  return std::move(b).Build();
}

TEST(ClassLoadersTest, RedeployedApplicationDefinesItsClassesOncePerLoader) {
  auto g = Redeployed(7);
  ASSERT_TRUE(g.ok()) << g.status();
  const ClassLoaderSummary s = SummarizeClassLoaders(*g);
  EXPECT_EQ(s.loader_objects, 8u);  // 7 webapp loaders + the application class loader
  EXPECT_EQ(s.boot_classes, 4u);    // Object, Class and the two loader classes (String[]: array)
  EXPECT_EQ(s.duplicated_class_names, 3u);
  ASSERT_EQ(s.duplicates.size(), 1u);
  EXPECT_EQ(s.duplicates[0].loader_class, kWebappLoader);
  EXPECT_EQ(s.duplicates[0].loaders, 7u);
  EXPECT_EQ(s.duplicates[0].class_names, 3u);
  // Application classes first, by name.
  EXPECT_THAT(s.duplicates[0].examples,
              ::testing::ElementsAre("com.example.App", "com.example.Util", "org.lib.Helper"));
  ASSERT_EQ(s.loaders.size(), 8u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(s.loaders[i].loader_class, kWebappLoader);
    EXPECT_EQ(s.loaders[i].classes, 3u);
    EXPECT_EQ(s.loaders[i].instances, 1u);
  }
  // Ties broken by loader id: the first deployment's loader first.
  EXPECT_EQ(s.loaders[0].loader_id, 0x8000u);
  EXPECT_EQ(s.loaders[7].loader_class, "jdk.internal.loader.ClassLoaders$AppClassLoader");
  EXPECT_EQ(s.loaders[7].classes, 1u);
}

TEST(ClassLoadersTest, CleanRedeployHasNoDuplicates) {
  auto g = Redeployed(1);
  ASSERT_TRUE(g.ok()) << g.status();
  const ClassLoaderSummary s = SummarizeClassLoaders(*g);
  EXPECT_EQ(s.loader_objects, 2u);
  EXPECT_EQ(s.duplicated_class_names, 0u);
  EXPECT_TRUE(s.duplicates.empty());
}

TEST(ClassLoadersTest, LambdasOfOneLoaderAreNotDuplicates) {
  auto one = Redeployed(1, /*with_lambda=*/true);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(SummarizeClassLoaders(*one).duplicated_class_names, 0u);
  auto three = Redeployed(3, /*with_lambda=*/true);
  ASSERT_TRUE(three.ok()) << three.status();
  const ClassLoaderSummary s = SummarizeClassLoaders(*three);
  EXPECT_EQ(s.duplicated_class_names, 4u);
  ASSERT_EQ(s.duplicates.size(), 1u);
  EXPECT_EQ(s.duplicates[0].loaders, 3u);
  EXPECT_EQ(s.loaders[0].classes, 5u);
}

TEST(ClassLoadersTest, ReflectionAccessorLoadersAreNotDuplicates) {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  const ClassId delegating =
      b.AddClass(Instance("jdk.internal.reflect.DelegatingClassLoader", {}, 64), 0x20);
  for (uint64_t i = 0; i < 5; ++i) {
    b.AddInstance(0x8000 + 0x10 * i, delegating, {});
    b.AddClass(Instance("jdk.internal.reflect.GeneratedMethodAccessor", {}, 16), 0x100 + 0x10 * i,
               0x8000 + 0x10 * i);
  }
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  const ClassLoaderSummary s = SummarizeClassLoaders(*g);
  EXPECT_EQ(s.loader_objects, 5u);
  EXPECT_EQ(s.duplicated_class_names, 0u);
  EXPECT_TRUE(s.duplicates.empty());
}

TEST(ClassLoadersTest, GroupsWithMoreExtraCopiesComeFirst) {
  // 3 loaders x 3 names (6 extra copies) before 2 loaders x 1 name of another loader class.
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  const ClassId webapp = b.AddClass(Instance(kWebappLoader, {}, 64), 0x20);
  const ClassId other = b.AddClass(Instance("com.acme.PluginLoader", {}, 64), 0x30);
  uint64_t next = 0x1000;
  for (uint64_t i = 0; i < 3; ++i) {
    b.AddInstance(0x8000 + 0x10 * i, webapp, {});
    for (const char* name : {"a.A", "a.B", "a.C"}) {
      b.AddClass(Instance(name, {}, 16), next, 0x8000 + 0x10 * i);
      next += 0x10;
    }
  }
  for (uint64_t i = 0; i < 2; ++i) {
    b.AddInstance(0x9000 + 0x10 * i, other, {});
    b.AddClass(Instance("p.Plugin", {}, 16), next, 0x9000 + 0x10 * i);
    next += 0x10;
  }
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  const ClassLoaderSummary s = SummarizeClassLoaders(*g);
  ASSERT_EQ(s.duplicates.size(), 2u);
  EXPECT_EQ(s.duplicates[0].loader_class, kWebappLoader);
  EXPECT_EQ(s.duplicates[1].loader_class, "com.acme.PluginLoader");
  EXPECT_EQ(s.duplicated_class_names, 4u);
}

TEST(ClassLoadersTest, LimitsCutTheLists) {
  auto g = Redeployed(7);
  ASSERT_TRUE(g.ok()) << g.status();
  ClassLoaderOptions options;
  options.max_loaders = 2;
  options.examples = 1;
  const ClassLoaderSummary s = SummarizeClassLoaders(*g, options);
  EXPECT_EQ(s.loaders.size(), 2u);
  EXPECT_EQ(s.loader_objects, 8u);
  ASSERT_EQ(s.duplicates.size(), 1u);
  EXPECT_THAT(s.duplicates[0].examples, ::testing::ElementsAre("com.example.App"));
}

// Brute force: for every class name, the set of loader objects defining it.
std::map<std::string, std::set<uint32_t>> BruteForce(const HeapGraph& g) {
  std::map<std::string, std::set<uint32_t>> out;
  for (uint32_t c = 0; c < g.class_count(); ++c) {
    const ClassInfo& info = g.class_info(ClassId(c));
    if (info.synthetic || info.instance_kind != ObjectKind::kInstance) continue;
    if (!info.class_loader.valid()) continue;
    out[info.name].insert(info.class_loader.value);
  }
  return out;
}

void ExpectMatchesBruteForce(const HeapGraph& g) {
  const auto brute = BruteForce(g);
  ClassLoaderOptions all;
  all.max_loaders = 1u << 30;
  all.max_groups = 1u << 30;
  all.examples = 1u << 30;
  const ClassLoaderSummary s = SummarizeClassLoaders(g, all);
  uint32_t duplicated = 0;
  std::map<uint32_t, uint32_t> classes_per_loader;
  std::map<uint32_t, uint32_t> names_per_count;  // loaders -> names defined by that many
  for (const auto& [name, loaders] : brute) {
    // (The random heaps and corpus dumps have no DelegatingClassLoader-only names but the
    // JDK 8 corpus dump's accessors, which the summary leaves out on purpose.)
    bool delegating = true;
    for (uint32_t l : loaders) {
      delegating &=
          absl::StrContains(g.class_info(g.class_of(ObjectIndex(l))).name, "DelegatingClassLoader");
    }
    if (loaders.size() >= 2 && delegating) continue;
    if (loaders.size() >= 2) {
      ++duplicated;
      ++names_per_count[loaders.size()];
    }
  }
  for (uint32_t c = 0; c < g.class_count(); ++c) {
    const ClassInfo& info = g.class_info(ClassId(c));
    if (info.synthetic || info.instance_kind != ObjectKind::kInstance) continue;
    if (info.class_loader.valid()) ++classes_per_loader[info.class_loader.value];
  }
  EXPECT_EQ(s.duplicated_class_names, duplicated);
  EXPECT_EQ(s.loader_objects, classes_per_loader.size());
  ASSERT_EQ(s.loaders.size(), classes_per_loader.size());
  for (const ClassLoaderRow& row : s.loaders) {
    EXPECT_EQ(row.classes, classes_per_loader[row.loader.value]);
  }
  std::map<uint32_t, uint32_t> got_per_count;
  uint32_t example_total = 0;
  for (const DuplicateClassGroup& grp : s.duplicates) {
    got_per_count[grp.loaders] += grp.class_names;
    example_total += static_cast<uint32_t>(grp.examples.size());
    for (const std::string& name : grp.examples) {
      ASSERT_TRUE(brute.count(name)) << name;
      EXPECT_EQ(brute.at(name).size(), grp.loaders) << name;
    }
  }
  EXPECT_EQ(got_per_count, names_per_count);
  EXPECT_EQ(example_total, duplicated);
}

TEST(ClassLoadersTest, RandomHeapsMatchBruteForce) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int round = 0; round < 300; ++round) {
    HeapGraphBuilder b{DumpInfo{}};
    b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
    const int loader_classes = 1 + static_cast<int>(rng() % 3);
    std::vector<ClassId> lc;
    for (int i = 0; i < loader_classes; ++i) {
      lc.push_back(b.AddClass(Instance("L" + std::to_string(i), {}, 32), 0x20 + 0x10 * i));
    }
    const int loaders = static_cast<int>(rng() % 6);
    for (int i = 0; i < loaders; ++i) b.AddInstance(0x10000 + 0x10 * i, lc[rng() % lc.size()], {});
    const int classes = static_cast<int>(rng() % 40);
    for (int i = 0; i < classes; ++i) {
      const uint64_t loader =
          loaders == 0 || rng() % 4 == 0 ? 0 : 0x10000 + 0x10 * (rng() % loaders);
      ClassInfo info = Instance("C" + std::to_string(rng() % 8), {}, 16);
      if (rng() % 6 == 0) {
        info.name += "[]";
        info.instance_kind = ObjectKind::kObjectArray;
      }
      b.AddClass(info, 0x100000 + 0x10 * i, loader);
    }
    auto g = std::move(b).Build();
    ASSERT_TRUE(g.ok()) << g.status();
    ExpectMatchesBruteForce(*g);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(ClassLoadersTest, CorpusDumpsMatchBruteForce) {
  const std::filesystem::path dir = std::filesystem::path(HEAPWATCH_CORPORA_DIR) / "eclipse-mat";
  int read = 0;
  for (const char* file : {"oracle_jdk8_05_x64.hprof", "openjdk_jdk11_04_x64.hprof.gz"}) {
    const std::filesystem::path path = dir / file;
    if (!std::filesystem::exists(path)) continue;
    auto g = dumps::ReadHeapDump(path.string());
    ASSERT_TRUE(g.ok()) << g.status();
    ++read;
    SCOPED_TRACE(file);
    ExpectMatchesBruteForce(*g);
    const ClassLoaderSummary s = SummarizeClassLoaders(*g);
    EXPECT_GT(s.loader_objects, 0u);
    EXPECT_GT(s.boot_classes, 100u);
  }
  if (read == 0) GTEST_SKIP() << "no corpus dump under " << dir;
}

}  // namespace
}  // namespace heapwatch::analysis
