// ReadClassLoading (collectors/class_loading.h) on a real JVM's hsperfdata file, against what the
// JVM itself prints for the same counters (`jcmd PID PerfCounter.print`), and on regions without
// the counters.
#include "collectors/class_loading.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "collectors/attach.h"
#include "collectors/perf_data.h"
#include "gtest/gtest.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::JvmLaunch;
using testing::TestJvm;

std::map<std::string, int64_t> PerfCounters(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    try {
      out[line.substr(0, eq)] = std::stoll(line.substr(eq + 1));
    } catch (...) {
    }
  }
  return out;
}

TEST(ClassLoadingTest, RealJvmCountersMatchPerfCounterPrint) {
  // A GC first, so that the metaspace counters (updated at GCs) are set.
  TestJvm jvm(JvmLaunch{});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  ASSERT_TRUE(ExecuteJcmd(*local, "GC.run", AttachOptions{}).ok());
  // PerfCounter.print is run by the jcmd tool itself (it reads the same file), not by the JVM.
  const std::string java = testing::JavaPath();
  const std::string jcmd = java.substr(0, java.rfind('/') + 1) + "jcmd";
  std::string output;
  {
    FILE* pipe =
        ::popen((jcmd + " " + std::to_string(jvm.pid()) + " PerfCounter.print").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
    ASSERT_EQ(::pclose(pipe), 0) << output;
  }
  const std::string* text = &output;
  auto point = ReadClassLoadingFile(local->perfdata_path, absl::Now());
  ASSERT_TRUE(point.ok()) << point.status();
  const std::map<std::string, int64_t> c = PerfCounters(*text);
  ASSERT_TRUE(c.count("java.cls.loadedClasses"));
  const int64_t loaded = c.at("java.cls.loadedClasses") + c.at("java.cls.sharedLoadedClasses");
  // The JVM may load a few classes between the two readings (the attach listener's work).
  EXPECT_GE(static_cast<int64_t>(point->loaded_classes), loaded - 50);
  EXPECT_LE(static_cast<int64_t>(point->loaded_classes), loaded + 50);
  EXPECT_GT(point->loaded_classes, 400u);  // a JDK 17 hello world loads about 450
  EXPECT_EQ(static_cast<int64_t>(point->unloaded_classes),
            c.at("java.cls.unloadedClasses") + c.at("java.cls.sharedUnloadedClasses"));
  EXPECT_EQ(static_cast<int64_t>(point->metaspace_used_bytes), c.at("sun.gc.metaspace.used"));
  // Set by the GC.run above (0 before a first GC); small: the JDK classes are in the CDS archive.
  EXPECT_GT(point->metaspace_used_bytes, 0u);
  EXPECT_GE(point->metaspace_capacity_bytes, point->metaspace_used_bytes);
  EXPECT_EQ(static_cast<int64_t>(point->class_space_used_bytes),
            c.at("sun.gc.compressedclassspace.used"));
  EXPECT_EQ(point->live_classes(), point->loaded_classes - point->unloaded_classes);
}

TEST(ClassLoadingTest, MissingFileIsAnError) {
  EXPECT_FALSE(ReadClassLoadingFile("/nonexistent/hsperfdata", absl::Now()).ok());
}

}  // namespace
}  // namespace heapwatch::collectors
