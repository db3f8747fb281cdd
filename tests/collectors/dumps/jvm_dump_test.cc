// Heap dumps of real JVMs: HprofDumpApp (data/HprofDumpApp.java) runs on JDK 17 (and JDK 25 when
// installed) with and without compressed references; the test takes `jcmd GC.class_histogram -all`,
// `jcmd GC.heap_dump -all` (plain and -gz=1) and the histogram again, and checks that the per-class
// instance counts and bytes of the dump equal the JVM's own histogram.
//
// Exclusions, each with its reason:
//  * java.lang.Class: the histogram counts every mirror in the heap, including the mirrors of
//  CDS-archived
//    classes that are not loaded; the heap dump has CLASS DUMPs only for loaded classes (HotSpot's
//    heap dumper skips the other mirrors). Where the counts agree (no archived heap), the bytes
//    must agree too.
//  * jdk.internal.vm.FillerElement[] (JDK 22+): GC filler arrays. HotSpot dumps them as int[]
//  (their klass
//    is an int array klass), so int[] in the dump = int[] + FillerElement[] in the histogram.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "analysis/heap_graph.h"
#include "collectors/dumps/class_names.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "common/stable_class_name.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectors/dumps/graph_compare.h"

namespace heapwatch::hprof {
namespace {

namespace fs = std::filesystem;
using analysis::ClassId;
using analysis::HeapGraph;

struct Row {
  uint64_t instances = 0;
  uint64_t bytes = 0;
  friend bool operator==(const Row&, const Row&) = default;
};
using Histogram = std::map<std::string, Row>;

// Runs `argv` and returns its stdout (empty on failure).
std::string Run(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const std::string& a : argv) cmd += "'" + a + "' ";
  cmd += "2>/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// GC.class_histogram rows: "   1:   9490   1442192  [B (java.base@17.0.15)". Array rows use JVM
// descriptors; other names are already in source form (hidden classes keep their "/0x..." suffix).
Histogram ParseHistogram(const std::string& text) {
  Histogram h;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string num, name;
    Row r;
    if (!(ss >> num >> r.instances >> r.bytes >> name) || num.empty() || num.back() != ':')
      continue;
    // The dump readers give hidden and lambda classes their stable names
    // (common/stable_class_name.h); the JVM's histogram is compared under those names.
    name = name[0] == '[' ? dumps::ParseClassName(name).source_name : StableClassName(name);
    Row& acc = h[name];
    acc.instances += r.instances;
    acc.bytes += r.bytes;
  }
  return h;
}

Histogram FromGraph(const HeapGraph& g) {
  Histogram h;
  for (const auto& row : analysis::ComputeClassHistogram(g).rows) {
    Row& acc = h[row.class_name];
    acc.instances += row.instances;
    acc.bytes += row.bytes;
  }
  return h;
}

class Jvm {
 public:
  Jvm(const std::string& java, const std::vector<std::string>& flags) : java_(java) {
    std::string out = ::testing::TempDir() + "/hprof_jvm_" + std::to_string(getpid()) + ".out";
    std::vector<std::string> argv = {java};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-cp", HW_HPROF_TEST_CLASSES, "HprofDumpApp"});
    pid_ = fork();
    if (pid_ == 0) {
      FILE* f = freopen(out.c_str(), "w", stdout);
      (void)f;
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    for (int i = 0; i < 300 && !ready_; ++i) {
      std::ifstream in(out);
      std::string word;
      while (in >> word) ready_ |= word == "READY";
      if (!ready_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::remove(out.c_str());
  }
  ~Jvm() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ready() const { return ready_; }
  std::string Jcmd(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {fs::path(java_).parent_path().string() + "/jcmd",
                                     std::to_string(pid_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return Run(argv);
  }

 private:
  std::string java_;
  pid_t pid_ = -1;
  bool ready_ = false;
};

std::string ResolveJava(const std::string& java) {
  std::error_code ec;
  fs::path p = fs::canonical(java, ec);
  return ec ? java : p.string();
}

void CheckJvm(const std::string& java, const std::vector<std::string>& flags,
              uint32_t expected_reference_size) {
  if (!fs::exists(java)) GTEST_SKIP() << java << " not installed";
  Jvm jvm(ResolveJava(java), flags);
  ASSERT_TRUE(jvm.ready()) << "HprofDumpApp did not start on " << java;
  std::string dir = ::testing::TempDir();
  std::string plain = dir + "/hprof_jvm_" + std::to_string(getpid()) + ".hprof";
  std::string gz = plain + ".gz";
  Histogram before, after;
  // The heap is quiet, but retry if anything allocated between the histograms and the dump.
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::remove(plain.c_str());
    before = ParseHistogram(jvm.Jcmd({"GC.class_histogram", "-all"}));
    jvm.Jcmd({"GC.heap_dump", "-all", plain});
    after = ParseHistogram(jvm.Jcmd({"GC.class_histogram", "-all"}));
    if (before == after) break;
  }
  ASSERT_FALSE(before.empty());
  ASSERT_EQ(before, after) << "the heap kept changing";
  std::remove(gz.c_str());
  jvm.Jcmd({"GC.heap_dump", "-all", "-gz=1", gz});

  auto g = ReadHeapGraph(plain);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->info().layout.reference_size, expected_reference_size) << g->info().size_model_notes;
  EXPECT_TRUE(g->info().layout.inferred) << g->info().size_model_notes;
  Histogram mine = FromGraph(*g);

  int compared = 0;
  for (const auto& [name, row] : before) {
    if (name == "java.lang.Class" || name == "jdk.internal.vm.FillerElement[]") continue;
    Row expected = row;
    if (name == "int[]" && before.contains("jdk.internal.vm.FillerElement[]")) {
      expected.instances += before.at("jdk.internal.vm.FillerElement[]").instances;
      expected.bytes += before.at("jdk.internal.vm.FillerElement[]").bytes;
    }
    auto it = mine.find(name);
    Row got = it == mine.end() ? Row{} : it->second;
    EXPECT_EQ(got.instances, expected.instances) << name;
    EXPECT_EQ(got.bytes, expected.bytes) << name << " (" << expected.instances << " instances)";
    ++compared;
  }
  EXPECT_GT(compared, 250);
  // Nothing in the dump that the histogram does not know.
  for (const auto& [name, row] : mine) {
    EXPECT_TRUE(before.contains(name) || name == "java.lang.Class") << name << " only in the dump";
  }
  // java.lang.Class: counts differ when CDS archived mirrors of unloaded classes exist; otherwise
  // exact.
  Row classes = before["java.lang.Class"];
  if (mine["java.lang.Class"].instances == classes.instances) {
    EXPECT_EQ(mine["java.lang.Class"].bytes, classes.bytes);
  } else {
    EXPECT_LT(mine["java.lang.Class"].instances, classes.instances);
  }

  // The three-pass path agrees with the single pass.
  ReadOptions three;
  three.single_pass = false;
  auto g3 = ReadHeapGraph(plain, three);
  ASSERT_TRUE(g3.ok()) << g3.status();
  testing::ExpectSameGraph(*g, *g3);

  // The -gz dump (HotSpot's chunked gzip) reads into the same graph.
  auto z = ReadHeapGraph(gz);
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->object_count(), g->object_count());
  EXPECT_EQ(z->graph().targets, g->graph().targets);
  EXPECT_EQ(FromGraph(*z), mine);

  // Things the app built are in the graph as expected.
  ClassId node = g->FindClass("HprofDumpApp$Node");
  ASSERT_TRUE(node.valid());
  EXPECT_EQ(analysis::ComputeClassTotals(*g)[node.value].instances, 1000u);
  ClassId weak = g->FindClass("java.lang.ref.WeakReference");
  ASSERT_TRUE(weak.valid());
  EXPECT_TRUE(g->class_info(weak).is_reference);
  uint64_t weak_edges = 0;
  for (uint64_t e = 0; e < g->graph().edge_count(); ++e) weak_edges += g->graph().is_weak(e);
  EXPECT_GE(weak_edges, 60u) << "20 weak + 20 soft + 20 phantom references with live referents";
  std::remove(plain.c_str());
  std::remove(gz.c_str());
}

TEST(JvmDumpTest, Jdk17CompressedOops) { CheckJvm(HW_TEST_JAVA, {"-Xmx256m"}, 4); }
TEST(JvmDumpTest, Jdk17UncompressedOops) {
  CheckJvm(HW_TEST_JAVA, {"-Xmx256m", "-XX:-UseCompressedOops"}, 8);
}
TEST(JvmDumpTest, Jdk25CompressedOops) { CheckJvm(HW_TEST_JAVA25, {"-Xmx256m"}, 4); }
TEST(JvmDumpTest, Jdk25UncompressedOops) {
  CheckJvm(HW_TEST_JAVA25, {"-Xmx256m", "-XX:-UseCompressedOops"}, 8);
}

}  // namespace
}  // namespace heapwatch::hprof
