// analysis/class_loaders.h through the pipeline on real dumps (jcmd GC.heap_dump) of
// tests/pipeline/java/HwLoaderLeak.java: six pinned URLClassLoaders each defining the program's
// classes are reported as "6 instances of java.net.URLClassLoader define HwLoaderLeak$Helper,
// HwLoaderLeak$Plugin"; released loaders, unloaded by a GC, are not.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "ctl/report_render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/analyze_dump.h"
#include "proto/report_proto.h"
#include "tests/daemon/test_jvm.h"

namespace heapwatch::pipeline {
namespace {

namespace fs = std::filesystem;

StatusOr<DumpAnalysis> DumpAndAnalyze(const std::string& mode) {
  std::string pattern = (fs::temp_directory_path() / "hw-loaders-XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  DumpAnalysis result;
  {
    daemon::TestJvm java("HwLoaderLeak", "6 " + mode);
    if (!java.ready()) return absl::InternalError("HwLoaderLeak did not start");
    const std::string dump = dir + "/loaders.hprof";
    const std::string command = std::string(HEAPWATCH_JCMD) + " " + std::to_string(java.pid()) +
                                " GC.heap_dump " + dump + " > /dev/null";
    if (std::system(command.c_str()) != 0) return absl::InternalError("jcmd failed");
    auto analysis = AnalyzeDump(dump);
    fs::remove_all(dir);
    return analysis;
  }
}

TEST(ClassLoadersJvmTest, PinnedLoadersDefineTheSameClasses) {
  auto a = DumpAndAnalyze("pinned");
  ASSERT_TRUE(a.ok()) << a.status();
  const analysis::ClassLoaderSummary& s = a->class_loaders;
  ASSERT_FALSE(s.duplicates.empty());
  const analysis::DuplicateClassGroup& g = s.duplicates.front();
  EXPECT_EQ(g.loader_class, "java.net.URLClassLoader");
  EXPECT_EQ(g.loaders, 6u);
  EXPECT_EQ(g.class_names, 2u);
  EXPECT_THAT(g.examples, ::testing::ElementsAre("HwLoaderLeak$Helper", "HwLoaderLeak$Plugin"));
  int url_loaders = 0;
  for (const analysis::ClassLoaderRow& row : s.loaders) {
    if (row.loader_class != "java.net.URLClassLoader") continue;
    ++url_loaders;
    EXPECT_EQ(row.classes, 2u);
    EXPECT_EQ(row.instances, 1u);  // the Plugin instance each loader's class has
  }
  EXPECT_EQ(url_loaders, 6);
  EXPECT_GT(s.boot_classes, 400u);

  // What `heapwatchctl analyze` prints of it.
  v1::DumpReport report = proto::ToDumpReport(a->report, a->suspects);
  *report.mutable_class_loaders() = proto::ToProto(s);
  const std::string text = ctl::RenderDumpReport(report);
  EXPECT_THAT(text, ::testing::HasSubstr("class loaders: 6 instances of java.net.URLClassLoader "
                                         "define HwLoaderLeak$Helper, HwLoaderLeak$Plugin\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("class names are defined by more than one loader"));
}

TEST(ClassLoadersJvmTest, ReleasedLoadersAreGone) {
  auto a = DumpAndAnalyze("released");
  ASSERT_TRUE(a.ok()) << a.status();
  for (const analysis::DuplicateClassGroup& g : a->class_loaders.duplicates) {
    EXPECT_NE(g.loader_class, "java.net.URLClassLoader") << g.loaders << " loaders";
  }
}

}  // namespace
}  // namespace heapwatch::pipeline
