// The known-leak patterns (analysis/leak_patterns/, docs/leak-patterns.md) on real JVMs: programs
// written for these tests (tests/pipeline/java) leak in the classic ways, or clean up, and are
// dumped with jcmd GC.heap_dump. The pipeline must name the pattern, the culprit and the path
// through the right field on the leak, claim nothing on the clean variant, and `heapwatchctl
// analyze` must print text a developer can act on at the top of the suspect's report.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "ctl/ctl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/analyze_dump.h"
#include "tests/daemon/test_jvm.h"

namespace heapwatch::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "hw-patterns-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs `main_class argument`, waits for "ready", dumps it with jcmd and returns the dump's path.
std::string TakeDump(const TempDir& dir, const std::string& main_class,
                     const std::string& argument) {
  daemon::TestJvm java(main_class, argument);
  EXPECT_TRUE(java.ready()) << main_class;
  if (!java.ready()) return "";
  const std::string dump = dir.path() + "/" + main_class + "-" + argument + ".hprof";
  const std::string command = std::string(HEAPWATCH_JCMD) + " " + std::to_string(java.pid()) +
                              " GC.heap_dump " + dump + " > /dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0);
  return dump;
}

DumpAnalysis Analyze(const std::string& dump, std::vector<std::string> suspects = {},
                     analysis::ThreadNamePrivacy names = analysis::ThreadNamePrivacy::kMasked) {
  AnalyzeDumpOptions options;
  options.thread_names = names;
  options.suspect_classes = std::move(suspects);
  options.dynamic_sizes = false;
  auto analysis = AnalyzeDump(dump, options);
  EXPECT_TRUE(analysis.ok()) << analysis.status();
  return analysis.ok() ? std::move(*analysis) : DumpAnalysis{};
}

std::vector<std::string> Ids(const std::vector<analysis::LeakPatternMatch>& matches) {
  std::vector<std::string> ids;
  for (const analysis::LeakPatternMatch& m : matches) ids.push_back(m.pattern_id);
  return ids;
}

std::vector<std::string> References(const analysis::GcRootPathReport& path) {
  std::vector<std::string> refs;
  for (size_t i = 1; i < path.steps.size(); ++i) refs.push_back(path.steps[i].reference);
  return refs;
}

std::string AnalyzeText(const std::string& dump, const std::string& suspect) {
  std::vector<std::string> args = {"heapwatchctl", "analyze", dump, "--class", suspect};
  std::vector<const char*> argv;
  for (const std::string& s : args) argv.push_back(s.c_str());
  std::ostringstream out, err;
  EXPECT_EQ(ctl::RunCtl(static_cast<int>(argv.size()), argv.data(), out, err), 0) << err.str();
  return out.str();
}

TEST(LeakPatternsJvm, ThreadLocalInAThreadPool) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwThreadLocalPool", "leak");
  ASSERT_FALSE(dump.empty());
  const DumpAnalysis analysis = Analyze(dump, {"byte[]"});
  ASSERT_THAT(Ids(analysis.report.leak_patterns), ElementsAre("thread-local-value"));
  const analysis::LeakPatternMatch& m = analysis.report.leak_patterns[0];
  EXPECT_THAT(m.summary, HasSubstr("ThreadLocal static HwThreadLocalPool$RequestContext.BUFFERS "
                                   "holds 4 values (4 java.util.ArrayList)"));
  // Executors.defaultThreadFactory names them pool-N-thread-M: shown with the digits masked.
  EXPECT_THAT(m.summary, HasSubstr("in 4 live threads named \"pool-#-thread-#\" (4 of them "
                                   "thread-pool workers)"));
  EXPECT_THAT(m.culprits, Contains(HasSubstr("\"pool-#-thread-#\" (THREAD_OBJECT root")));
  EXPECT_GE(m.retained_bytes, 2000u * 1024);
  ASSERT_TRUE(m.path.found);
  EXPECT_EQ(m.path.steps.front().object.gc_root_kind, "THREAD_OBJECT");
  const std::vector<std::string> refs = References(m.path);
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[0], "threadLocals");
  EXPECT_EQ(refs[1], "table");
  EXPECT_EQ(refs[3], "value");

  // The suspect byte[]: the pattern at the top, its threads kept alive by java.lang.Thread (the
  // excluded holder), not <ROOT>, and every accumulation point with its path.
  ASSERT_EQ(analysis.suspects.size(), 1u);
  const analysis::SuspectReport& suspect = analysis.suspects[0];
  EXPECT_THAT(Ids(suspect.leak_patterns), ElementsAre("thread-local-value"));
  ASSERT_FALSE(suspect.kept_alive_by.empty());
  EXPECT_EQ(suspect.kept_alive_by[0].class_name, "java.lang.Thread");
  EXPECT_EQ(suspect.kept_alive_by[0].biggest_dominator.thread_name, "pool-#-thread-#");
  EXPECT_EQ(m.path.steps.front().object.thread_name, "pool-#-thread-#");
  for (const analysis::AccumulationPointReport& point : suspect.accumulation_points) {
    EXPECT_TRUE(point.path.found) << point.object.class_name;
  }
  const std::string text = AnalyzeText(dump, "byte[]");
  EXPECT_THAT(text, HasSubstr("Known leak pattern: ThreadLocal value held by a live thread "
                              "[thread-local-value]"));
  EXPECT_THAT(text, HasSubstr("declared by static HwThreadLocalPool$RequestContext.BUFFERS"));
  EXPECT_THAT(text, HasSubstr("java.lang.Thread@0x"));
  EXPECT_THAT(text, HasSubstr("\"pool-#-thread-#\" (THREAD_OBJECT root"));
  EXPECT_THAT(text, Not(HasSubstr("pool-1-thread")));
  EXPECT_THAT(text, HasSubstr("Usual fix: call remove() in a finally block"));
  EXPECT_THAT(text, Not(HasSubstr("no GC root reaches it")));
}

TEST(LeakPatternsJvm, ThreadLocalRemovedIsNotClaimed) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwThreadLocalPool", "clean");
  ASSERT_FALSE(dump.empty());
  EXPECT_THAT(Ids(Analyze(dump).report.leak_patterns), ElementsAre());
}

TEST(LeakPatternsJvm, ListenersNeverUnregistered) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwListeners", "leak");
  ASSERT_FALSE(dump.empty());
  const DumpAnalysis analysis = Analyze(dump, {"long[]"});
  ASSERT_THAT(Ids(analysis.report.leak_patterns), ElementsAre("listeners-never-removed"));
  const analysis::LeakPatternMatch& m = analysis.report.leak_patterns[0];
  EXPECT_EQ(m.objects, 2000u);
  EXPECT_THAT(m.summary, HasSubstr("2000 listeners of class HwListeners$ViewModel$$Lambda"));
  EXPECT_THAT(m.summary,
              HasSubstr("listeners registered by HwListeners$ViewModel (lambda, capturing a "
                        "HwListeners$ViewModel) are never removed"));
  EXPECT_THAT(m.summary, HasSubstr("(static HwListeners.BUS)"));
  EXPECT_THAT(m.culprits,
              Contains("each listener captures a HwListeners$ViewModel (field arg$1) (2000 "
                       "listeners)"));
  const std::vector<std::string> refs = References(m.path);
  ASSERT_GE(refs.size(), 3u);
  EXPECT_THAT(std::vector<std::string>(refs.end() - 3, refs.end()),
              ElementsAre("static BUS", "listeners", "array"));
  ASSERT_EQ(analysis.suspects.size(), 1u);
  EXPECT_THAT(Ids(analysis.suspects[0].leak_patterns), ElementsAre("listeners-never-removed"));
  const std::string text = AnalyzeText(dump, "long[]");
  EXPECT_THAT(text, HasSubstr("Known leak pattern: Listeners registered and never removed"));
  EXPECT_THAT(text, HasSubstr("listeners registered by HwListeners$ViewModel (lambda, capturing a "
                              "HwListeners$ViewModel) are never removed"));
}

TEST(LeakPatternsJvm, ListenersThatUnregisterAreNotClaimed) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwListeners", "clean");
  ASSERT_FALSE(dump.empty());
  EXPECT_THAT(Ids(Analyze(dump).report.leak_patterns), ElementsAre());
}

TEST(LeakPatternsJvm, RedeployedApplicationPinnedByItsThread) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwRedeploy", "leak");
  ASSERT_FALSE(dump.empty());
  const DumpAnalysis analysis = Analyze(dump);
  // Four undeployed applications, each pinned by the worker thread it started; the live fifth one
  // (static HwRedeploy.CURRENT) is not claimed.
  ASSERT_THAT(Ids(analysis.report.leak_patterns),
              ElementsAre("class-loader-pinned", "class-loader-pinned", "class-loader-pinned",
                          "class-loader-pinned"));
  for (const analysis::LeakPatternMatch& m : analysis.report.leak_patterns) {
    SCOPED_TRACE(m.summary);
    EXPECT_THAT(m.summary, HasSubstr("Class loader java.net.URLClassLoader@"));
    EXPECT_THAT(m.summary, HasSubstr("is still running the application's code"));
    EXPECT_THAT(m.summary, HasSubstr("holds HwApp@"));
    ASSERT_TRUE(m.path.found);
    EXPECT_EQ(m.path.steps.back().object.class_name, "java.net.URLClassLoader");
    EXPECT_EQ(m.path.steps.back().reference, "<classloader>");
    EXPECT_THAT(References(m.path), Contains("<class>"));
  }
}

TEST(LeakPatternsJvm, CleanRedeployIsNotClaimed) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwRedeploy", "clean");
  ASSERT_FALSE(dump.empty());
  EXPECT_THAT(Ids(Analyze(dump).report.leak_patterns), ElementsAre());
}

TEST(LeakPatternsJvm, UnboundedStaticCache) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwStaticCache", "leak");
  ASSERT_FALSE(dump.empty());
  const DumpAnalysis analysis = Analyze(dump);
  ASSERT_THAT(Ids(analysis.report.leak_patterns), ElementsAre("static-collection"));
  const analysis::LeakPatternMatch& m = analysis.report.leak_patterns[0];
  EXPECT_THAT(m.summary, HasSubstr("static HwStaticCache.CACHE (a java.util.HashMap) retains"));
  EXPECT_THAT(m.summary, HasSubstr("in 8192 slots"));
  EXPECT_GE(m.retained_bytes, 6000u * 1024);
  ASSERT_TRUE(m.path.found);
  EXPECT_EQ(m.path.steps.back().reference, "static CACHE");
  EXPECT_EQ(m.path.steps.back().object.class_name, "java.util.HashMap");
}

TEST(LeakPatternsJvm, BoundedStaticCacheIsNotClaimed) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwStaticCache", "clean");
  ASSERT_FALSE(dump.empty());
  EXPECT_THAT(Ids(Analyze(dump).report.leak_patterns), ElementsAre());
}

// Thread names (docs/leak-patterns.md "Thread names and privacy") on a real dump: masked by
// default, full on request, never raw control or bidi characters, bounded; markup stays text.
TEST(LeakPatternsJvm, ThreadNamesMaskedSanitisedAndBounded) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwThreadNames", "leak");
  ASSERT_FALSE(dump.empty());
  const std::string fffd = "\xef\xbf\xbd";
  {
    const DumpAnalysis masked = Analyze(dump);
    ASSERT_THAT(Ids(masked.report.leak_patterns), ElementsAre("thread-local-value"));
    const analysis::LeakPatternMatch& m = masked.report.leak_patterns[0];
    EXPECT_THAT(m.culprits, Contains(HasSubstr("\"worker-#-of-#\" (THREAD_OBJECT root")));
    EXPECT_THAT(m.culprits, Contains(HasSubstr("\"\xc3\x9c"
                                               "berpr\xc3\xbc"
                                               "fung-\xc3\x9f-# "
                                               "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\"")));
    EXPECT_THAT(m.culprits, Contains(HasSubstr("\"<script>alert('x')</script>" + fffd + fffd +
                                               "forged line #\"")));
    EXPECT_THAT(m.culprits,
                Contains(HasSubstr("\"long-" + std::string(59, 'x') + "...\" (THREAD_OBJECT")));
    for (const std::string& line : m.culprits) {
      EXPECT_EQ(line.find('\n'), std::string::npos) << line;
      EXPECT_EQ(line.find("\xe2\x80\xae"), std::string::npos) << line;  // U+202E
      EXPECT_EQ(line.find("worker-17"), std::string::npos) << line;
    }
  }
  {
    const DumpAnalysis full = Analyze(dump, {}, analysis::ThreadNamePrivacy::kFull);
    ASSERT_EQ(full.report.leak_patterns.size(), 1u);
    EXPECT_THAT(full.report.leak_patterns[0].culprits,
                Contains(HasSubstr("\"worker-17-of-42\" (THREAD_OBJECT root")));
    EXPECT_THAT(full.report.leak_patterns[0].culprits,
                Contains(HasSubstr(fffd + fffd + "forged line 9\"")));
  }
  {
    const DumpAnalysis off = Analyze(dump, {}, analysis::ThreadNamePrivacy::kOff);
    ASSERT_EQ(off.report.leak_patterns.size(), 1u);
    for (const std::string& line : off.report.leak_patterns[0].culprits) {
      EXPECT_EQ(line.find("worker"), std::string::npos) << line;
    }
  }
}

TEST(LeakPatternsJvm, FinalizerThreadBlocked) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwFinalizers", "leak");
  ASSERT_FALSE(dump.empty());
  const DumpAnalysis analysis = Analyze(dump);
  ASSERT_THAT(Ids(analysis.report.leak_patterns), ElementsAre("finalizer-backlog"));
  const analysis::LeakPatternMatch& m = analysis.report.leak_patterns[0];
  EXPECT_GE(m.objects, 20000u);
  EXPECT_THAT(m.summary, HasSubstr("objects wait for the finalizer thread (HwFinalizers$Resource "
                                   "first)"));
  EXPECT_THAT(m.culprits, Contains(HasSubstr("objects of class HwFinalizers$Resource wait")));
  ASSERT_TRUE(m.path.found);
  EXPECT_EQ(m.path.steps.back().object.class_name, "HwFinalizers$Resource");
  EXPECT_THAT(m.path.steps.back().reference, HasSubstr("referent"));
  // To the object at the queue's head: a few steps, not thousands of `next` links down the queue.
  EXPECT_LE(m.path.steps.size(), 8u);
}

TEST(LeakPatternsJvm, FinalizersThatRunAreNotClaimed) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwFinalizers", "clean");
  ASSERT_FALSE(dump.empty());
  EXPECT_THAT(Ids(Analyze(dump).report.leak_patterns), ElementsAre());
}

TEST(LeakPatternsJvm, CleanerActionCapturingThis) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwCleaners", "leak");
  ASSERT_FALSE(dump.empty());
  const DumpAnalysis analysis = Analyze(dump, {"HwCleaners$Connection"});
  ASSERT_THAT(Ids(analysis.report.leak_patterns), ElementsAre("cleaner-backlog"));
  const analysis::LeakPatternMatch& m = analysis.report.leak_patterns[0];
  EXPECT_EQ(m.objects, 5000u);
  EXPECT_THAT(m.summary, HasSubstr("5000 objects (HwCleaners$Connection) registered with a "
                                   "java.lang.ref.Cleaner are never cleaned"));
  EXPECT_THAT(m.culprits, Contains(HasSubstr("HwCleaners$Connection$$Lambda")));
  ASSERT_TRUE(m.path.found);
  const std::vector<std::string> refs = References(m.path);
  ASSERT_GE(refs.size(), 2u);
  EXPECT_THAT(std::vector<std::string>(refs.end() - 2, refs.end()), ElementsAre("action", "arg$1"));
  ASSERT_EQ(analysis.suspects.size(), 1u);
  EXPECT_THAT(Ids(analysis.suspects[0].leak_patterns), ElementsAre("cleaner-backlog"));
  const std::string text = AnalyzeText(dump, "HwCleaners$Connection");
  EXPECT_THAT(text, HasSubstr("Known leak pattern: Cleaner registrations never cleaned "
                              "[cleaner-backlog]"));
  EXPECT_THAT(text, HasSubstr("Usual fix: make the action a static nested class"));
}

TEST(LeakPatternsJvm, CleanerUsedRightIsNotClaimed) {
  TempDir dir;
  const std::string dump = TakeDump(dir, "HwCleaners", "clean");
  ASSERT_FALSE(dump.empty());
  EXPECT_THAT(Ids(Analyze(dump).report.leak_patterns), ElementsAre());
}

}  // namespace
}  // namespace heapwatch::pipeline
