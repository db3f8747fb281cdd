// The reader on every file of the external corpora (../shared/corpora, see each EXPECTED.md): each
// file is read or rejected with an error naming its format, and the upstream projects' expectations
// hold: the hprof-slurp record census, MAT's TestInstanceSizes (shallow sizes vs jmap -histo),
// perflib's counts on the Android dump, NetBeans' HeapTest/OQLEngineTest counts and heap summary,
// MAT's multi-dump file, the raw record counts listed in the EXPECTED.md files.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "collectors/dumps/class_names.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectors/dumps/graph_compare.h"

namespace heapwatch::hprof {
namespace {

namespace fs = std::filesystem;
using analysis::ClassId;
using analysis::GcRootKind;
using analysis::HeapGraph;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using ::testing::HasSubstr;

std::string Corpora() {
  const char* env = std::getenv("HEAPWATCH_CORPORA_DIR");
  return env != nullptr && *env != '\0' ? env : HW_CORPORA_DIR;
}

std::string Path(const std::string& rel) { return Corpora() + "/" + rel; }

// Graphs are read once per test binary run (the biggest corpora file inflates to 522 MB).
const HeapGraph& Graph(const std::string& rel, const ReadOptions& options = {},
                       const std::string& key = "") {
  static auto* cache = new std::map<std::string, std::unique_ptr<HeapGraph>>();
  std::string k = rel + "#" + key;
  auto it = cache->find(k);
  if (it == cache->end()) {
    auto g = ReadHeapGraph(Path(rel), options);
    EXPECT_TRUE(g.ok()) << g.status();
    auto p = std::make_unique<HeapGraph>(g.ok() ? std::move(g).value() : HeapGraph());
    it = cache->emplace(k, std::move(p)).first;
  }
  return *it->second;
}

void RequireCorpora() {
  if (!fs::exists(Corpora())) GTEST_SKIP() << "corpora not found at " << Corpora();
}

struct KindCounts {
  uint64_t classes = 0, instances = 0, object_arrays = 0, primitive_arrays = 0;
};
KindCounts CountKinds(const HeapGraph& g) {
  KindCounts k;
  for (uint32_t v = 0; v < g.object_count(); ++v) {
    switch (g.kind(ObjectIndex{v})) {
      case ObjectKind::kClass:
        ++k.classes;
        break;
      case ObjectKind::kInstance:
        ++k.instances;
        break;
      case ObjectKind::kObjectArray:
        ++k.object_arrays;
        break;
      case ObjectKind::kPrimitiveArray:
        ++k.primitive_arrays;
        break;
    }
  }
  return k;
}

// ---- Every file: read, or rejected naming its format.

enum class Expect { kRead, kPhd, kJavacore, kHistogramText, kOther };

Expect ExpectationFor(const std::string& name) {
  auto ends = [&name](const std::string& s) {
    return name.size() >= s.size() && name.ends_with(s);
  };
  if (ends(".hprof") || ends(".hprof.gz") || ends(".bin") || ends(".android-hprof"))
    return Expect::kRead;
  if (ends(".phd")) return Expect::kPhd;
  if (name.starts_with("javacore.")) return Expect::kJavacore;
  // jmap -histo outputs shipped with MAT's dumps.
  if (name.starts_with("histogram_") || ends(".notes.txt") ||
      name.starts_with("sun_jdk6_31_hprofagent_")) {
    return Expect::kHistogramText;
  }
  return Expect::kOther;
}

TEST(CorporaTest, EveryFileIsReadOrRejectedNamingItsFormat) {
  RequireCorpora();
  int read = 0, rejected = 0;
  for (const auto& entry : fs::recursive_directory_iterator(Corpora())) {
    if (!entry.is_regular_file()) continue;
    std::string path = entry.path().string();
    std::string name = entry.path().filename().string();
    Expect expect = ExpectationFor(name);
    Status probe = ProbeHeapDump(path);
    if (expect == Expect::kRead) {
      const HeapGraph& g = Graph(fs::relative(entry.path(), Corpora()).string());
      EXPECT_TRUE(probe.ok()) << path << ": " << probe;
      EXPECT_EQ(g.info().format.substr(0, 13), "JAVA PROFILE ") << path;
      ++read;
      continue;
    }
    auto g = ReadHeapGraph(path);
    ASSERT_FALSE(g.ok()) << path << " was read as a heap dump";
    EXPECT_EQ(g.status().code(), probe.code()) << path;
    std::string msg(g.status().message());
    EXPECT_THAT(msg, HasSubstr(path)) << "the error names the file";
    switch (expect) {
      case Expect::kPhd:
        EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
        EXPECT_THAT(msg, HasSubstr("IBM Portable Heap Dump (PHD)"));
        break;
      case Expect::kJavacore:
        EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
        EXPECT_THAT(msg, HasSubstr("IBM javacore"));
        break;
      case Expect::kHistogramText:
        EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
        EXPECT_THAT(msg, HasSubstr("class histogram text"));
        break;
      default:
        EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument)
            << path << ": " << g.status();
        EXPECT_THAT(msg, ::testing::AnyOf(HasSubstr("text file, not a heap dump"),
                                          HasSubstr("not an HPROF")));
    }
    ++rejected;
  }
  EXPECT_GE(read, 20);
  EXPECT_GE(rejected, 10);
}

// ---- Raw record counts listed in the EXPECTED.md files.

TEST(CorporaTest, RawRecordCountsFromExpectedMd) {
  RequireCorpora();
  struct Row {
    std::string file;
    uint64_t classes, instances;
    int64_t object_arrays = -1, primitive_arrays = -1;
  };
  const std::vector<Row> rows = {
      {"eclipse-mat/sun_jdk5_64bit.hprof", 411, 1036, 454, 1963},
      {"eclipse-mat/sun_jdk6_32bit.hprof", 1281, 8664},
      {"eclipse-mat/sun_jdk6_18_x32.hprof", 1260, 8518},
      {"eclipse-mat/sun_jdk6_18_x64.hprof", 1262, 13831},
      {"eclipse-mat/sun_jdk5_13_x32.hprof", 336, 544},
      {"eclipse-mat/sun_jdk6_30_x64_compressedOops.hprof", 376, 1453},
      {"eclipse-mat/sun_jdk6_30_x64_nocompressedOops.hprof", 376, 1453},
      {"eclipse-mat/oracle_jdk7_21_x64.hprof", 541, 10217},
      {"eclipse-mat/oracle_jdk8_05_x64.hprof", 603, 7920},
      {"eclipse-mat/openjdk_jdk11_04_x64.hprof.gz", 1912, 129433},
      {"eclipse-mat/java_pid1884.0001.hprof.gz", 560, 7900},
      {"adt-tools-base-perflib/dialer.android-hprof", 3571, 24612, 1919, 13585},
      {"leakcanary/leak_service_binder.hprof", 3645, 25183},
      {"leakcanary/leak_service_binder_ignored.hprof", 3630, 24782},
      {"openjdk-jhat/jmap.bin", 352, 1088, 484, 576},
      {"netbeans/heap_dump.bin", 474, 4149, 748, 2891},
  };
  for (const Row& r : rows) {
    const HeapGraph& g = Graph(r.file);
    KindCounts k = CountKinds(g);
    EXPECT_EQ(k.classes, r.classes) << r.file;
    EXPECT_EQ(k.instances, r.instances) << r.file;
    if (r.object_arrays >= 0)
      EXPECT_EQ(k.object_arrays, static_cast<uint64_t>(r.object_arrays)) << r.file;
    if (r.primitive_arrays >= 0)
      EXPECT_EQ(k.primitive_arrays, static_cast<uint64_t>(r.primitive_arrays)) << r.file;
    // The graph agrees with a census of the same file.
    auto census = ReadRecordCensus(Path(r.file));
    ASSERT_TRUE(census.ok()) << census.status();
    if (census->heap_dumps == 1) {
      EXPECT_EQ(k.instances, census->sub_record(kSubInstanceDump)) << r.file;
      EXPECT_EQ(k.classes, census->sub_record(kSubClassDump)) << r.file;
    }
  }
  // sun_jdk5_64bit: 602 raw INSTANCE DUMP records of java.lang.String (MAT asserts 492 reachable
  // ones).
  const HeapGraph& g = Graph("eclipse-mat/sun_jdk5_64bit.hprof");
  EXPECT_EQ(analysis::ComputeClassTotals(g)[g.FindClass("java.lang.String").value].instances, 602u);
}

// ---- hprof-slurp: the record census in its golden outputs.

std::map<std::string, uint64_t> ParseSlurpSummary(const std::string& file, uint64_t* dumps,
                                                  uint64_t* segments) {
  std::ifstream in(file);
  std::map<std::string, uint64_t> out;
  std::string line;
  static const std::regex kCount(R"(^(\.\.)?([A-Za-z0-9 \-]+): (\d+)\s*$)");
  static const std::regex kDumps(R"(^(\d+) heap dumps containing in total (\d+) segments:\s*$)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, kDumps)) {
      *dumps = std::stoull(m[1]);
      *segments = std::stoull(m[2]);
    } else if (std::regex_match(line, m, kCount)) {
      out[m[2]] = std::stoull(m[3]);
    }
    if (line.starts_with("Found ")) break;  // the summary ends where the thread list starts
  }
  return out;
}

TEST(CorporaTest, HprofSlurpRecordCensusMatchesGoldenFiles) {
  RequireCorpora();
  const std::map<std::string, std::pair<bool, uint8_t>> kKeys = {
      // (is sub-record, tag)
      {"UTF-8 Strings", {false, kTagString}},
      {"Classes unloaded", {false, kTagUnloadClass}},
      {"Stack traces", {false, kTagStackTrace}},
      {"Stack frames", {false, kTagStackFrame}},
      {"Start threads", {false, kTagStartThread}},
      {"Allocation sites", {false, kTagAllocSites}},
      {"End threads", {false, kTagEndThread}},
      {"Control settings", {false, kTagControlSettings}},
      {"CPU samples", {false, kTagCpuSamples}},
      {"Heap summaries", {false, kTagHeapSummary}},
      // hprof-slurp's "Classes loaded" counts the classes it holds data for, i.e. CLASS DUMPs.
      {"Classes loaded", {true, kSubClassDump}},
      {"GC root unknown", {true, kSubRootUnknown}},
      {"GC root thread objects", {true, kSubRootThreadObject}},
      {"GC root JNI global", {true, kSubRootJniGlobal}},
      {"GC root JNI local", {true, kSubRootJniLocal}},
      {"GC root Java frame", {true, kSubRootJavaFrame}},
      {"GC root native stack", {true, kSubRootNativeStack}},
      {"GC root sticky class", {true, kSubRootStickyClass}},
      {"GC root thread block", {true, kSubRootThreadBlock}},
      {"GC root monitor used", {true, kSubRootMonitorUsed}},
      {"GC primitive array dump", {true, kSubPrimitiveArrayDump}},
      {"GC object array dump", {true, kSubObjectArrayDump}},
      {"GC class dump", {true, kSubClassDump}},
      {"GC instance dump", {true, kSubInstanceDump}},
  };
  for (const std::string& name : {"hprof-32", "hprof-64"}) {
    uint64_t dumps = 0, segments = 0;
    auto golden = ParseSlurpSummary(Path("hprof-slurp/" + name + "-result.txt"), &dumps, &segments);
    ASSERT_GE(golden.size(), kKeys.size()) << name;
    auto census = ReadRecordCensus(Path("hprof-slurp/" + name + ".bin"));
    ASSERT_TRUE(census.ok()) << census.status();
    for (const auto& [key, where] : kKeys) {
      ASSERT_TRUE(golden.contains(key)) << name << ": " << key;
      uint64_t mine = where.first ? census->sub_record(where.second) : census->record(where.second);
      EXPECT_EQ(mine, golden[key]) << name << ": " << key;
    }
    EXPECT_EQ(census->heap_dump_records(), dumps) << name;
    EXPECT_EQ(census->total_sub_records(), segments) << name;
    EXPECT_EQ(census->id_size, name == "hprof-32" ? 4u : 8u);
  }
}

// ---- Eclipse MAT TestInstanceSizes: shallow sizes vs the jmap -histo of the same JVM.

std::vector<std::string> InstanceSizeMismatches(const HeapGraph& g, const std::string& histogram,
                                                int* compared) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> totals;  // name -> (instances, bytes)
  std::map<std::string, uint32_t> instance_size;
  auto t = analysis::ComputeClassTotals(g);
  for (uint32_t c = 0; c < g.class_count(); ++c) {
    const auto& info = g.class_info(ClassId{c});
    totals[info.name].first += t[c].instances;
    totals[info.name].second += t[c].shallow_bytes;
    instance_size[info.name] = info.instance_size;
  }
  std::ifstream in(histogram);
  std::string line;
  std::vector<std::string> mismatches;
  *compared = 0;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::vector<std::string> tok;
    for (std::string x; ss >> x;) tok.push_back(x);
    size_t i = !tok.empty() && tok[0].back() == ':' ? 1 : 0;
    if (tok.size() < i + 3 || !std::isdigit(static_cast<unsigned char>(tok[i][0]))) continue;
    uint64_t count = std::stoull(tok[i]), bytes = std::stoull(tok[i + 1]);
    std::string jvm_name = tok[i + 2];
    // As TestInstanceSizes: skip VM-internal rows ("<methodKlass>") and java.lang.Class.
    if (jvm_name[0] == '<' || jvm_name == "java.lang.Class") continue;
    std::string name = dumps::ParseClassName(jvm_name).source_name;
    if (name.ends_with("[]")) {
      // Arrays: total shallow size, only when the instance count matches.
      auto it = totals.find(name);
      if (it == totals.end() || it->second.first != count) continue;
      ++*compared;
      if (it->second.second != bytes) {
        mismatches.push_back(name + ": jmap " + std::to_string(bytes) + " bytes, heapwatch " +
                             std::to_string(it->second.second));
      }
    } else {
      ++*compared;
      auto it = instance_size.find(name);
      if (it == instance_size.end() || it->second != bytes / count) {
        mismatches.push_back(name + ": jmap " + std::to_string(bytes / count) +
                             " bytes per instance, heapwatch " +
                             std::to_string(it == instance_size.end() ? 0 : it->second));
      }
    }
  }
  return mismatches;
}

TEST(CorporaTest, MatTestInstanceSizes) {
  RequireCorpora();
  struct Case {
    std::string histogram, dump;
    int allowed;
  };
  const std::vector<Case> cases = {
      {"histogram_sun_jdk5_13_x32.txt", "sun_jdk5_13_x32.hprof", 1},
      {"histogram_sun_jdk6_18_x32.txt", "sun_jdk6_18_x32.hprof", 0},
      {"histogram_sun_jdk6_18_x64.txt", "sun_jdk6_18_x64.hprof", 0},
      {"sun_jdk6_30_x64_compressedOops.notes.txt", "sun_jdk6_30_x64_compressedOops.hprof", 0},
      {"sun_jdk6_30_x64_nocompressedOops.notes.txt", "sun_jdk6_30_x64_nocompressedOops.hprof", 0},
  };
  for (const Case& c : cases) {
    const HeapGraph& g = Graph("eclipse-mat/" + c.dump);
    int compared = 0;
    std::vector<std::string> mismatches =
        InstanceSizeMismatches(g, Path("eclipse-mat/" + c.histogram), &compared);
    EXPECT_LE(static_cast<int>(mismatches.size()), c.allowed)
        << c.dump << ":\n  " << ::testing::PrintToString(mismatches);
    EXPECT_GT(compared, 100) << c.dump;
    EXPECT_TRUE(g.info().layout.inferred) << c.dump << ": " << g.info().size_model_notes;
  }
  // The two sun_jdk6_30 dumps have identical records; only the inferred reference size tells them
  // apart.
  const auto& coops = Graph("eclipse-mat/sun_jdk6_30_x64_compressedOops.hprof").info().layout;
  const auto& plain = Graph("eclipse-mat/sun_jdk6_30_x64_nocompressedOops.hprof").info().layout;
  EXPECT_EQ(coops.reference_size, 4u);
  EXPECT_EQ(coops.object_header, 12u);
  EXPECT_EQ(plain.reference_size, 8u);
  EXPECT_EQ(plain.object_header, 16u);
}

// ---- Eclipse MAT MultipleSnapshots: two heap dumps in one file, with different object counts.

TEST(CorporaTest, MatTwoDumpsInOneFile) {
  RequireCorpora();
  ReadOptions first;
  first.dump_ordinal = 0;
  ReadOptions second;
  second.dump_ordinal = 1;
  const HeapGraph& a = Graph("eclipse-mat/oracle_jdk7_21_hprofagent.hprof", first, "0");
  const HeapGraph& b = Graph("eclipse-mat/oracle_jdk7_21_hprofagent.hprof", second, "1");
  const HeapGraph& last = Graph("eclipse-mat/oracle_jdk7_21_hprofagent.hprof");
  EXPECT_EQ(a.info().dump_count, 2u);
  EXPECT_EQ(a.info().dump_ordinal, 0u);
  EXPECT_EQ(b.info().dump_ordinal, 1u);
  EXPECT_NE(a.object_count(), b.object_count());
  EXPECT_GT(a.object_count(), 1000u);
  EXPECT_EQ(last.object_count(), b.object_count());
  ReadOptions third;
  third.dump_ordinal = 2;
  EXPECT_EQ(
      ReadHeapGraph(Path("eclipse-mat/oracle_jdk7_21_hprofagent.hprof"), third).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// The Lengauer-Tarjan example graph of MAT's CreateSampleDump: one R, each of A..L present.
TEST(CorporaTest, MatDominatorTestDataIsPresent) {
  RequireCorpora();
  for (const std::string& file :
       {"eclipse-mat/sun_jdk6_32bit.hprof", "eclipse-mat/sun_jdk5_64bit.hprof"}) {
    const HeapGraph& g = Graph(file);
    auto t = analysis::ComputeClassTotals(g);
    for (char c = 'A'; c <= 'L'; ++c) {
      ClassId id =
          g.FindClass(std::string("org.eclipse.mat.tests.CreateSampleDump$DominatorTestData$") + c);
      ASSERT_TRUE(id.valid()) << file << " " << c;
      EXPECT_EQ(t[id.value].instances, 1u) << c;
    }
    ClassId r = g.FindClass("org.eclipse.mat.tests.CreateSampleDump$DominatorTestData$R");
    ASSERT_TRUE(r.valid());
    EXPECT_EQ(t[r.value].instances, 1u);
  }
}

// ---- Android perflib (HprofParserTest, ClassObjTest, DominatorsTest counts).

TEST(CorporaTest, PerflibDialerCounts) {
  RequireCorpora();
  const HeapGraph& g = Graph("adt-tools-base-perflib/dialer.android-hprof");
  EXPECT_EQ(g.info().format, "JAVA PROFILE 1.0.3");
  EXPECT_EQ(g.info().size_model, analysis::SizeModel::kAndroid);
  EXPECT_EQ(g.object_count(), 43687u);  // instances + classes over all heaps
  auto t = analysis::ComputeClassTotals(g);
  ClassId bytes = g.FindClass("byte[]");
  ASSERT_TRUE(bytes.valid());
  EXPECT_EQ(t[bytes.value].instances, 1406u);
  EXPECT_EQ(t[bytes.value].shallow_bytes, 681489u);
  EXPECT_EQ(t[g.FindClass("int[][]").value].instances, 37u);
  EXPECT_EQ(t[g.FindClass("java.lang.String[]").value].instances, 1396u);
  EXPECT_EQ(g.shallow_size(g.FindObject(0xB0D60401)), 43224u);
  ObjectIndex int2d = g.FindObject(0xB0F69F58);
  ASSERT_TRUE(int2d.valid());
  EXPECT_EQ(g.shallow_size(int2d), 40u);
  EXPECT_EQ(g.class_info(g.class_of(int2d)).name, "int[][]");
  // Superclass chain and class loaders.
  std::vector<std::string> chain;
  for (ClassId c = g.FindClass("android.app.Application"); c.valid();
       c = g.class_info(c).super_class) {
    chain.push_back(g.class_info(c).name);
  }
  EXPECT_THAT(chain,
              ::testing::ElementsAre("android.app.Application", "android.content.ContextWrapper",
                                     "android.content.Context", "java.lang.Object"));
  EXPECT_FALSE(g.class_info(g.FindClass("android.app.Application")).class_loader.valid());
  ObjectIndex loader =
      g.class_info(g.FindClass("com.android.dialer.DialerApplication")).class_loader;
  ASSERT_TRUE(loader.valid());
  EXPECT_EQ(g.class_info(g.class_of(loader)).name, "dalvik.system.PathClassLoader");
  // Thread$State.$VALUES is an array of 6 Thread$State instances.
  ClassId state = g.FindClass("java.lang.Thread$State");
  ObjectIndex state_class = g.class_info(state).class_object;
  bool found = false;
  for (uint64_t e = g.graph().first_edge(state_class);
       e < g.graph().first_edge(ObjectIndex{state_class.value + 1}); ++e) {
    if (g.DescribeReference(state_class, e) != "static $VALUES") continue;
    ObjectIndex values = g.graph().targets[e];
    EXPECT_EQ(g.array_length(values), 6u);
    for (ObjectIndex v : g.graph().successors(values)) EXPECT_EQ(g.class_of(v), state);
    found = true;
  }
  EXPECT_TRUE(found);
  // Heaps named by HEAP DUMP INFO records.
  std::set<std::string> heaps(g.heap_names().begin(), g.heap_names().end());
  EXPECT_TRUE(heaps.contains("app") && heaps.contains("zygote"));  // Dalvik (KitKat): no image heap
  std::map<std::string, uint64_t> per_heap;
  for (uint32_t v = 0; v < g.object_count(); ++v)
    ++per_heap[g.heap_names()[g.heap(ObjectIndex{v}).value]];
  EXPECT_GT(per_heap["app"], 0u);
  EXPECT_GT(per_heap["zygote"], 0u);
}

// ---- LeakCanary: the KeyedWeakReference's referent is a weak edge.

TEST(CorporaTest, LeakCanaryKeyedWeakReferenceReferentIsWeak) {
  RequireCorpora();
  const HeapGraph& g = Graph("leakcanary/leak_service_binder.hprof");
  ClassId kwr = g.FindClass("com.squareup.leakcanary.KeyedWeakReference");
  ASSERT_TRUE(kwr.valid());
  EXPECT_TRUE(g.class_info(kwr).is_reference);
  int weak = 0;
  for (uint32_t v = 0; v < g.object_count(); ++v) {
    if (g.class_of(ObjectIndex{v}) != kwr) continue;
    for (uint64_t e = g.graph().first_edge(ObjectIndex{v});
         e < g.graph().first_edge(ObjectIndex{v + 1}); ++e) {
      bool is_referent =
          g.DescribeReference(ObjectIndex{v}, e) == "java.lang.ref.Reference.referent";
      EXPECT_EQ(g.graph().is_weak(e), is_referent);
      weak += is_referent;
    }
  }
  EXPECT_GE(weak, 1);
}

// ---- NetBeans profiler heap library (HeapTest, OQLEngineTest).

TEST(CorporaTest, NetBeansHeapDumpBin) {
  RequireCorpora();
  ReadOptions netbeans;
  netbeans.size_model = analysis::SizeModel::kNetBeans;
  const HeapGraph& g = Graph("netbeans/heap_dump.bin", netbeans, "netbeans");
  EXPECT_EQ(g.class_count(), 474u);
  EXPECT_EQ(g.gc_roots().size(), 453u);
  EXPECT_EQ(g.root_objects().size(), 429u);
  // HeapSummary: live instances excluding class objects, and their bytes under NetBeans' size
  // model.
  uint64_t instances = 0, bytes = 0;
  for (uint32_t v = 0; v < g.object_count(); ++v) {
    if (g.kind(ObjectIndex{v}) == ObjectKind::kClass) continue;
    ++instances;
    bytes += g.shallow_size(ObjectIndex{v});
  }
  EXPECT_EQ(instances, 7788u);
  EXPECT_EQ(bytes, 2635552u);
  // Instance 3606613704 has a MONITOR_USED root.
  ObjectIndex monitor = g.FindObject(3606613704ull);
  ASSERT_TRUE(monitor.valid());
  bool monitor_root = false;
  for (const auto& r : g.gc_roots())
    monitor_root |= r.object == monitor && r.kind == GcRootKind::kMonitorUsed;
  EXPECT_TRUE(monitor_root);
  // getJavaClassesByRegExp(".*Lock.*") == 6.
  int locks = 0;
  for (uint32_t c = 0; c < g.class_count(); ++c)
    locks += g.class_info(ClassId{c}).name.find("Lock") != std::string::npos;
  EXPECT_EQ(locks, 6);
  // NetBeans' documented sizes: Integer 20, String 28, HashMap 64.
  EXPECT_EQ(g.class_info(g.FindClass("java.lang.Integer")).instance_size, 20u);
  EXPECT_EQ(g.class_info(g.FindClass("java.lang.String")).instance_size, 28u);
  EXPECT_EQ(g.class_info(g.FindClass("java.util.HashMap")).instance_size, 64u);
}

TEST(CorporaTest, NetBeansSmallHeapOql) {
  RequireCorpora();
  const HeapGraph& g = Graph("netbeans/small_heap.bin");
  EXPECT_EQ(g.gc_roots().size(), 491u);
  EXPECT_EQ(g.root_objects().size(), 404u);
  EXPECT_EQ(g.class_count(), 443u);
  auto ids = [&g](ObjectIndex v) {
    std::set<uint64_t> out;
    for (ObjectIndex t : g.graph().successors(v)) out.insert(g.object_id(t));
    return out;
  };
  // referees / referrers of object 1684166976.
  ObjectIndex o = g.FindObject(1684166976ull);
  ASSERT_TRUE(o.valid());
  EXPECT_EQ(ids(o), (std::set<uint64_t>{1684166992ull}));
  analysis::CsrGraph rev = g.BuildReverseGraph();
  std::set<uint64_t> referrers;
  for (ObjectIndex s : rev.successors(o)) referrers.insert(g.object_id(s));
  EXPECT_EQ(referrers, (std::set<uint64_t>{1684166952ull}));
  // referees(class java.io.File) = its static references.
  ObjectIndex file = g.class_info(g.FindClass("java.io.File")).class_object;
  std::set<uint64_t> statics;
  for (uint64_t e = g.graph().first_edge(file);
       e < g.graph().first_edge(ObjectIndex{file.value + 1}); ++e) {
    if (g.ResolveReference(file, e).kind == analysis::ReferenceSlot::Kind::kStaticField) {
      statics.insert(g.object_id(g.graph().targets[e]));
    }
  }
  EXPECT_EQ(statics,
            (std::set<uint64_t>{1684106928ull, 1684106888ull, 1684106848ull, 1684106408ull}));
}

// ---- jhat's edge cases: a dump without any heap dump, the hprof agent's dump, a jmap dump.

TEST(CorporaTest, JhatFiles) {
  RequireCorpora();
  const HeapGraph& minimal = Graph("openjdk-jhat/minimal.bin");
  EXPECT_EQ(minimal.info().dump_count, 0u);
  EXPECT_EQ(minimal.object_count(), 0u);
  EXPECT_GT(Graph("openjdk-jhat/hprof.bin").object_count(), 2000u);
  EXPECT_GT(Graph("openjdk-jhat/jmap.bin").object_count(), 2000u);
}

// ---- gzip-compressed dumps: HotSpot's segmented -gz output, a 522 MB stream.

TEST(CorporaTest, GzipDumps) {
  RequireCorpora();
  const HeapGraph& big = Graph("eclipse-mat/java_pid1884.0001.hprof.gz");
  EXPECT_EQ(big.info().format, "JAVA PROFILE 1.0.2");
  EXPECT_TRUE(big.info().layout.inferred) << big.info().size_model_notes;
  uint64_t largest = 0;
  for (uint32_t v = 0; v < big.object_count(); ++v)
    largest = std::max(largest, big.shallow_size(ObjectIndex{v}));
  EXPECT_GT(largest, 100u << 20) << "the huge arrays";
  auto census = ReadRecordCensus(Path("eclipse-mat/java_pid1884.0001.hprof.gz"));
  ASSERT_TRUE(census.ok());
  EXPECT_EQ(census->stream_bytes, 522836448u);
}

// The single combined pass (dumps in address order) and the three-pass path build the same graph.
TEST(CorporaTest, SinglePassAndThreePassesAgree) {
  RequireCorpora();
  for (const std::string& file :
       {"netbeans/heap_dump.bin", "adt-tools-base-perflib/dialer.android-hprof",
        "leakcanary/leak_service_binder.hprof", "eclipse-mat/openjdk_jdk11_04_x64.hprof.gz",
        "eclipse-mat/sun_jdk6_30_x64_compressedOops.hprof"}) {
    SCOPED_TRACE(file);
    ReadOptions three;
    three.single_pass = false;
    ReadOptions edges;
    edges.instance_class_edges = true;
    ReadOptions edges_three = edges;
    edges_three.single_pass = false;
    const HeapGraph& a = Graph(file);
    const HeapGraph& b = Graph(file, three, "three-pass");
    testing::ExpectSameGraph(a, b);
    testing::ExpectSameGraph(Graph(file, edges, "edges"),
                             Graph(file, edges_three, "edges-three-pass"));
  }
}

}  // namespace
}  // namespace heapwatch::hprof
