// Tests of pipeline/analyze_dump.h: the whole analysis of a real dump from the corpora (plain and
// gzip), clear errors for missing, truncated and non-dump files, and a dump taken with jcmd of a
// real JVM holding secrets: the accumulation point and its static field are found, and nothing of
// the secrets reaches the stored messages.
#include "pipeline/analyze_dump.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/report_proto.h"
#include "tests/analysis/leak_heap.h"
#include "tests/daemon/test_jvm.h"

namespace heapwatch::pipeline {
namespace {

using daemon::TestJvm;

namespace fs = std::filesystem;
using ::testing::ElementsAre;

std::string Corpus(const std::string& relative) {
  return std::string(HEAPWATCH_CORPORA_DIR) + "/" + relative;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "hw-dump-analysis-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string path() const { return path_; }

 private:
  std::string path_;
};

// The daemon's use: the suspect classes and the dump summary.
StatusOr<DumpAnalysis> Analyze(const std::string& path, const std::vector<std::string>& classes,
                               AnalyzeDumpOptions options = {}) {
  options.suspect_classes = classes;
  options.dump_summary = true;
  return AnalyzeDump(path, options);
}

uint64_t Instances(const analysis::DumpSummary& s, const std::string& name) {
  for (const analysis::ClassRow& row : s.classes) {
    if (row.class_name == name) return row.instances;
  }
  return 0;
}

TEST(AnalyzeDumpTest, CorpusDumpForOnePresentAndOneMissingClass) {
  AnalyzeDumpOptions options;
  options.top_objects = 5;
  options.summary.min_owner_bytes = 1024;
  bool progressed = false;
  options.progress = [&](std::string_view, double) { progressed = true; };
  auto a = Analyze(Corpus("eclipse-mat/sun_jdk6_32bit.hprof"),
                   {"java.lang.String", "com.acme.Nope", "java.lang.String"}, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(progressed);
  EXPECT_EQ(a->report.dump_format, "JAVA PROFILE 1.0.1");
  EXPECT_GT(a->report.totals.objects, 0u);
  EXPECT_EQ(a->report.totals.objects, a->summary->totals.objects);
  EXPECT_EQ(a->report.totals.reachable_shallow_bytes, a->summary->totals.reachable_shallow_bytes);
  ASSERT_EQ(a->suspects.size(), 1u);  // the duplicate counts once
  const analysis::SuspectReport& s = a->suspects[0];
  EXPECT_EQ(s.class_name, "java.lang.String");
  EXPECT_EQ(s.instances, Instances(*a->summary, "java.lang.String"));
  EXPECT_GT(s.instances, 0u);
  EXPECT_GE(s.retained_bytes, s.minimum_retained_bytes);
  EXPECT_FALSE(s.kept_alive_by.empty());
  EXPECT_TRUE(s.shortest_path.found);
  EXPECT_THAT(s.exclude_patterns, ::testing::Contains("java.*"));
  EXPECT_THAT(a->missing_classes, ElementsAre("com.acme.Nope"));
  ASSERT_EQ(a->report.top_objects.size(), 5u);
  for (size_t i = 1; i < a->report.top_objects.size(); ++i)
    EXPECT_GE(a->report.top_objects[i - 1].retained_bytes, a->report.top_objects[i].retained_bytes);
  EXPECT_FALSE(a->summary->owners.empty());
  EXPECT_GT(a->report.timings.total_seconds, 0);
}

TEST(AnalyzeDumpTest, GzipDumpGivesTheSameAnalysis) {
  TempDir dir;
  const std::string gz = dir.path() + "/dump.hprof.gz";
  const std::string command =
      "gzip -c '" + Corpus("eclipse-mat/sun_jdk5_64bit.hprof") + "' > '" + gz + "'";
  ASSERT_EQ(std::system(command.c_str()), 0);
  auto plain = Analyze(Corpus("eclipse-mat/sun_jdk5_64bit.hprof"), {"java.lang.String"});
  auto packed = Analyze(gz, {"java.lang.String"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(plain->report.totals.objects, packed->report.totals.objects);
  EXPECT_EQ(plain->report.totals.reachable_shallow_bytes,
            packed->report.totals.reachable_shallow_bytes);
  ASSERT_EQ(packed->suspects.size(), 1u);
  EXPECT_EQ(plain->suspects[0].retained_bytes, packed->suspects[0].retained_bytes);
  EXPECT_EQ(plain->summary->classes.size(), packed->summary->classes.size());
}

TEST(AnalyzeDumpTest, BadFilesGiveErrors) {
  TempDir dir;
  EXPECT_EQ(Analyze(dir.path() + "/missing.hprof", {}).status().code(),
            absl::StatusCode::kNotFound);

  const std::string text = dir.path() + "/text.hprof";
  std::ofstream(text) << "not a heap dump at all\n";
  EXPECT_EQ(Analyze(text, {}).status().code(), absl::StatusCode::kInvalidArgument);

  // Truncated at a few points inside the heap dump.
  std::ifstream in(Corpus("eclipse-mat/sun_jdk6_32bit.hprof"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t keep : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 7}) {
    const std::string cut = dir.path() + "/cut.hprof";
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, keep);
    auto a = Analyze(cut, {"java.lang.String"});
    EXPECT_FALSE(a.ok()) << keep;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss) << a.status();
  }

  AnalyzeDumpOptions options;
  options.exclude_patterns = {"("};
  EXPECT_EQ(Analyze(Corpus("eclipse-mat/sun_jdk6_32bit.hprof"), {}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The in-memory entry point: a class whose only instance is garbage still gets a suspect report
// (0 instances), a name no class has is missing; options are checked before anything is read.
TEST(AnalyzeDumpTest, HeapGraphSuspectsMissingClassesAndOptionErrors) {
  auto graph = analysis::testing::LeakHeap();  // its garbage Session is not the only instance
  ASSERT_TRUE(graph.ok()) << graph.status();
  analysis::HeapGraphBuilder b{analysis::DumpInfo{}};
  analysis::ClassInfo orphan;
  orphan.name = "com.acme.Orphan";
  orphan.instance_size = 16;
  const analysis::ClassId cls = b.AddClass(orphan, 0x10);
  b.AddInstance(0x100, cls, {});  // referenced by nothing
  b.AddRoot(0x10, analysis::GcRootKind::kStickyClass);
  auto small = std::move(b).Build();
  ASSERT_TRUE(small.ok()) << small.status();

  AnalyzeDumpOptions options;
  options.suspect_classes = {"com.acme.Orphan", "com.acme.Nope", "com.acme.Orphan"};
  auto a = AnalyzeHeapGraph(*small, options);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->suspects.size(), 1u);
  EXPECT_EQ(a->suspects[0].class_name, "com.acme.Orphan");
  EXPECT_EQ(a->suspects[0].instances, 0u);
  EXPECT_EQ(a->suspects[0].dynamic_objects, 0u);  // nothing reachable to measure
  EXPECT_THAT(a->missing_classes, ElementsAre("com.acme.Nope"));
  EXPECT_EQ(a->report.totals.unreachable_objects, 1u);
  EXPECT_FALSE(a->summary.has_value());
  EXPECT_FALSE(a->by_dynamic.has_value());

  options.suspect_classes = {"com.acme.Session"};
  options.dump_summary = true;
  options.by_dynamic_rows = 2;
  a = AnalyzeHeapGraph(*graph, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->suspects[0].instances, 5u);
  EXPECT_GT(a->suspects[0].dynamic_objects, 0u);
  EXPECT_TRUE(a->summary.has_value());
  ASSERT_TRUE(a->by_dynamic.has_value());
  EXPECT_EQ(a->by_dynamic->objects_by_dynamic.size(), 2u);
  EXPECT_GT(a->report.timings.dynamic_seconds, 0);

  AnalyzeDumpOptions bad;
  bad.accumulation_ratio = 1.5;
  EXPECT_EQ(AnalyzeHeapGraph(*graph, bad).status().code(), absl::StatusCode::kInvalidArgument);
  // Checked before the file is read: not NotFound.
  EXPECT_EQ(AnalyzeDump("/nonexistent.hprof", bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = {};
  bad.exclude_patterns = {"(("};
  EXPECT_EQ(AnalyzeDump("/nonexistent.hprof", bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- A real JVM.

TEST(AnalyzeDumpTest, RealJvmDumpFindsTheStaticListAndKeepsNoSecrets) {
  TempDir dir;
  TestJvm java(2000);
  ASSERT_TRUE(java.ready());
  const std::string dump = dir.path() + "/jvm.hprof.gz";
  const std::string command = std::string(HEAPWATCH_JCMD) + " " + std::to_string(java.pid()) +
                              " GC.heap_dump -gz=1 " + dump + " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  ASSERT_TRUE(fs::exists(dump));

  AnalyzeDumpOptions options;
  auto a = Analyze(dump, {"HwSession", "HwNothing"}, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->missing_classes, ElementsAre("HwNothing"));
  ASSERT_EQ(a->suspects.size(), 1u);
  const analysis::SuspectReport& s = a->suspects[0];
  EXPECT_EQ(s.instances, 2000u);
  // Each session retains itself, its token String (+ its byte[] value) and a 1000-byte payload.
  EXPECT_GE(s.retained_bytes, 2000u * 1000u);
  EXPECT_GE(s.retained_bytes, s.minimum_retained_bytes);
  ASSERT_FALSE(s.accumulation_points.empty());
  const analysis::AccumulationPointReport& point = s.accumulation_points[0];
  EXPECT_EQ(point.object.class_name, "java.lang.Object[]");
  EXPECT_GT(point.share, 0.9);
  ASSERT_TRUE(point.path.found);
  bool static_field = false;
  for (const analysis::PathStepReport& step : point.path.steps)
    static_field |= step.reference == "static SESSIONS";
  EXPECT_TRUE(static_field);
  ASSERT_FALSE(s.kept_alive_by.empty());
  EXPECT_EQ(s.kept_alive_by[0].class_name, "class HwSecretHolder");
  EXPECT_GT(a->peak_memory_bytes, 0u);

  // The owners: the list, keyed by its path ending in the static field, with the whole leak. (An
  // application class is not a GC root in a HotSpot dump: its path starts at a sticky system class,
  // e.g. sun.launcher.LauncherHelper's static appClass.)
  bool list_owner = false;
  for (const analysis::OwnerRow& row : a->summary->owners) {
    if (row.class_name == "java.util.ArrayList" && row.path.back() == "static SESSIONS") {
      EXPECT_EQ(row.path.front().rfind("STICKY_CLASS class ", 0), 0u) << row.path.front();
      EXPECT_GE(row.retained_bytes, s.minimum_retained_bytes);
      EXPECT_EQ(row.objects, 1u);
      list_owner = true;
    }
  }
  EXPECT_TRUE(list_owner);
  if (!list_owner) {
    for (const analysis::OwnerRow& row : a->summary->owners) {
      std::string path;
      for (const std::string& step : row.path) path += step + " / ";
      ADD_FAILURE() << "owner " << row.class_name << " " << row.retained_bytes << ": " << path;
    }
  }

  // Everything that would be stored, serialised: no token, no payload bytes.
  std::string stored;
  for (const analysis::SuspectReport& suspect : a->suspects) {
    v1::DrillDownReport report;
    proto::FillDrillDownReport(suspect, a->report.top_objects, &report);
    stored += report.SerializeAsString() + report.DebugString();
  }
  records::v1::ExtendedDumpSummary record;
  proto::FillDumpSummaryRecord(*a->summary, &record);
  stored += record.SerializeAsString() + record.DebugString();
  EXPECT_EQ(stored.find("hw-secret-token"), std::string::npos);
  EXPECT_EQ(stored.find("QQQQ"), std::string::npos);
  EXPECT_NE(stored.find("HwSession"), std::string::npos);  // the check can fail
}

}  // namespace
}  // namespace heapwatch::pipeline
