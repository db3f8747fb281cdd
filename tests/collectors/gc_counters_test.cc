// GC counters and the live-set series: collector classification on the names HotSpot publishes,
// the LiveSetTracker on synthetic counter sequences (full GC, G1 mixed phase, ZGC cycle, upper
// bounds), and real JDK 17 JVMs of every collector, whose live-set point must match the JVM's own
// GC log (-Xlog:gc, the post-GC heap of the same collection) within 3% (or 2 MiB).
#include "collectors/gc_counters.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "collectors/attach.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::JvmLaunch;
using testing::TempDir;
using testing::TestJvm;

constexpr uint64_t kMiB = 1 << 20;

TEST(ClassifyCollector, NamesOfEveryJdk17Collector) {
  EXPECT_EQ(ClassifyCollector("GarbageFirst", "G1 young collection pauses"), CollectorRole::kYoung);
  EXPECT_EQ(ClassifyCollector("GarbageFirst", "G1 full collection pauses"), CollectorRole::kFull);
  EXPECT_EQ(ClassifyCollector("GarbageFirst", "G1 concurrent cycle pauses"),
            CollectorRole::kG1ConcurrentCycle);
  EXPECT_EQ(ClassifyCollector("ParScav:MSC", "Parallel young collection pauses"),
            CollectorRole::kYoung);
  EXPECT_EQ(ClassifyCollector("ParScav:MSC", "Parallel full collection pauses"),
            CollectorRole::kFull);
  EXPECT_EQ(ClassifyCollector("Copy:MSC", "Serial young collection pauses"), CollectorRole::kYoung);
  EXPECT_EQ(ClassifyCollector("Copy:MSC", "Serial full collection pauses"), CollectorRole::kFull);
  // JDK 8 names.
  EXPECT_EQ(ClassifyCollector("ParScav:MSC", "PSScavenge"), CollectorRole::kYoung);
  EXPECT_EQ(ClassifyCollector("Copy:MSC", "Copy"), CollectorRole::kYoung);
  EXPECT_EQ(ClassifyCollector("", "Z concurrent cycle pauses"), CollectorRole::kConcurrentCycle);
  EXPECT_EQ(ClassifyCollector("Shenandoah", "Shenandoah full"), CollectorRole::kConcurrentCycle);
  EXPECT_EQ(ClassifyCollector("GarbageFirst", "something new"), CollectorRole::kOther);
}

TEST(IsForcedByDiagnostics, OnlyHistogramsAndDumps) {
  EXPECT_TRUE(IsForcedByDiagnostics("Heap Inspection Initiated GC"));
  EXPECT_TRUE(IsForcedByDiagnostics("Heap Dump Initiated GC"));
  EXPECT_FALSE(IsForcedByDiagnostics("System.gc()"));
  EXPECT_FALSE(IsForcedByDiagnostics("G1 Evacuation Pause"));
  EXPECT_FALSE(IsForcedByDiagnostics("Allocation Failure"));
}

// Counters of a G1 JVM: collectors young, full, concurrent cycle.
GcCounters G1(int64_t young, int64_t full, int64_t cycle, uint64_t post_gc_used,
              std::string cause = "G1 Evacuation Pause") {
  GcCounters c;
  c.policy = "GarbageFirst";
  c.last_cause = std::move(cause);
  c.hrt_frequency = 1'000'000'000;
  c.collectors = {{"G1 young collection pauses", young, 0},
                  {"G1 full collection pauses", full, 0},
                  {"G1 concurrent cycle pauses", cycle, 0}};
  c.roles = {CollectorRole::kYoung, CollectorRole::kFull, CollectorRole::kG1ConcurrentCycle};
  c.post_gc_used = post_gc_used;
  c.heap_used = post_gc_used + 10 * kMiB;
  c.heap_capacity = 512 * kMiB;
  c.heap_max = 1024 * kMiB;
  return c;
}

const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);

TEST(LiveSetTracker, FirstReadingIsOnlyABaseline) {
  LiveSetTracker tracker;
  EXPECT_FALSE(tracker.Observe(t0, G1(10, 1, 2, 100 * kMiB), false).has_value());
  EXPECT_FALSE(tracker.natural_old_gc());
}

TEST(LiveSetTracker, FullCollectionIsAnExactPoint) {
  LiveSetTracker tracker;
  tracker.Observe(t0, G1(10, 0, 0, 300 * kMiB), false);
  auto p = tracker.Observe(t0 + absl::Seconds(2), G1(10, 1, 0, 120 * kMiB, "System.gc()"), false);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->source, LiveSetSource::kFullGc);
  EXPECT_EQ(p->live_bytes, 120 * kMiB);
  EXPECT_EQ(p->capacity_bytes, 512 * kMiB);
  EXPECT_EQ(p->max_bytes, 1024 * kMiB);
  EXPECT_EQ(p->time, t0 + absl::Seconds(2));
  EXPECT_TRUE(tracker.natural_old_gc());
}

TEST(LiveSetTracker, FullCollectionForcedByAHistogramIsNotNatural) {
  LiveSetTracker tracker;
  tracker.Observe(t0, G1(10, 0, 0, 300 * kMiB), false);
  // Seen by the sampler (not flagged forced) but the JVM says a heap inspection caused it.
  auto p = tracker.Observe(t0 + absl::Seconds(2),
                           G1(10, 1, 0, 120 * kMiB, "Heap Inspection Initiated GC"), false);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->live_bytes, 120 * kMiB);
  EXPECT_FALSE(tracker.natural_old_gc());
  // Flagged forced by the caller (its own live histogram), whatever the cause says.
  p = tracker.Observe(t0 + absl::Seconds(4), G1(10, 2, 0, 121 * kMiB), true);
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(tracker.natural_old_gc());
}

TEST(LiveSetTracker, G1MixedPhaseGivesItsLowestOccupancyWhenOldStopsShrinking) {
  LiveSetTracker tracker(absl::Hours(1));  // no upper bounds in this test
  tracker.Observe(t0, G1(10, 0, 0, 400 * kMiB), false);
  // The concurrent cycle ends (remark + cleanup): no point yet.
  EXPECT_FALSE(tracker.Observe(t0 + absl::Seconds(2), G1(10, 0, 2, 410 * kMiB), false));
  // Mixed collections shrink the old generation...
  EXPECT_FALSE(tracker.Observe(t0 + absl::Seconds(4), G1(11, 0, 2, 330 * kMiB), false));
  EXPECT_FALSE(tracker.Observe(t0 + absl::Seconds(6), G1(12, 0, 2, 260 * kMiB), false));
  // ... until a collection no longer does: the phase's minimum is the point.
  auto p = tracker.Observe(t0 + absl::Seconds(8), G1(13, 0, 2, 270 * kMiB), false);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->source, LiveSetSource::kConcurrentCycle);
  EXPECT_EQ(p->live_bytes, 260 * kMiB);
  EXPECT_TRUE(tracker.natural_old_gc());
  // Young collections after the phase give nothing (upper bounds are rate-limited to 1 h here).
  EXPECT_FALSE(tracker.Observe(t0 + absl::Seconds(10), G1(14, 0, 2, 280 * kMiB), false));
}

TEST(LiveSetTracker, G1MixedPhaseEndsAfterEightCollections) {
  LiveSetTracker tracker(absl::Hours(1));
  tracker.Observe(t0, G1(0, 0, 0, 900 * kMiB), false);
  tracker.Observe(t0 + absl::Seconds(1), G1(0, 0, 2, 900 * kMiB), false);
  uint64_t used = 900 * kMiB;
  std::optional<LiveSetPoint> p;
  int collections = 0;
  while (!p.has_value() && collections < 20) {
    used -= 10 * kMiB;  // keeps shrinking
    ++collections;
    p = tracker.Observe(t0 + absl::Seconds(1 + collections), G1(collections, 0, 2, used), false);
  }
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(collections, 8);
  EXPECT_EQ(p->live_bytes, used);
}

TEST(LiveSetTracker, YoungCollectionsGiveAnUpperBoundAtMostOncePerInterval) {
  LiveSetTracker tracker(absl::Minutes(1));
  tracker.Observe(t0, G1(0, 0, 0, 100 * kMiB), false);
  auto p = tracker.Observe(t0 + absl::Seconds(2), G1(1, 0, 0, 105 * kMiB), false);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->source, LiveSetSource::kYoungUpperBound);
  EXPECT_EQ(p->live_bytes, 105 * kMiB);
  EXPECT_FALSE(tracker.natural_old_gc());
  EXPECT_FALSE(tracker.Observe(t0 + absl::Seconds(30), G1(2, 0, 0, 110 * kMiB), false));
  // No collection at all: nothing, however long.
  EXPECT_FALSE(tracker.Observe(t0 + absl::Seconds(90), G1(2, 0, 0, 110 * kMiB), false));
  p = tracker.Observe(t0 + absl::Seconds(95), G1(3, 0, 0, 111 * kMiB), false);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->live_bytes, 111 * kMiB);
}

TEST(LiveSetTracker, ZgcCycleIsAPoint) {
  GcCounters c;
  c.policy = "";
  c.hrt_frequency = 1'000'000'000;
  c.collectors = {{}, {}, {"Z concurrent cycle pauses", 5, 0}};
  c.roles = {CollectorRole::kOther, CollectorRole::kOther, CollectorRole::kConcurrentCycle};
  c.post_gc_used = 200 * kMiB;
  LiveSetTracker tracker;
  tracker.Observe(t0, c, false);
  c.collectors[2].invocations = 6;
  c.post_gc_used = 150 * kMiB;
  auto p = tracker.Observe(t0 + absl::Seconds(2), c, false);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->source, LiveSetSource::kConcurrentCycle);
  EXPECT_EQ(p->live_bytes, 150 * kMiB);
  EXPECT_TRUE(tracker.natural_old_gc());
}

TEST(LiveSetTracker, CountersOfAnotherShapeStartAgain) {
  LiveSetTracker tracker;
  tracker.Observe(t0, G1(10, 0, 0, 100 * kMiB), false);
  GcCounters other = G1(0, 5, 0, 50 * kMiB);
  other.policy = "ParScav:MSC";
  EXPECT_FALSE(tracker.Observe(t0 + absl::Seconds(2), other, false).has_value());
}

TEST(SafepointTimeBetween, DifferenceOfTheJvmsCounter) {
  GcCounters a = G1(0, 0, 0, 0), b = G1(0, 0, 0, 0);
  a.safepoint_time_ticks = 1'000'000'000;
  b.safepoint_time_ticks = 1'250'000'000;
  EXPECT_EQ(SafepointTimeBetween(a, b), absl::Milliseconds(250));
  EXPECT_EQ(SafepointTimeBetween(b, a), absl::ZeroDuration());  // went backwards
}

// ---- real JVMs

// The post-GC heap of the last collection in an -Xlog:gc file, in MiB as the JVM prints it:
// "Pause Full (...) 119M->117M(397M)", "Garbage Collection (...) 142M(28%)->142M(28%)", or
// Shenandoah's "Concurrent cleanup 113M->112M(377M)".
std::optional<double> LastPostGcMiB(const std::string& log) {
  std::istringstream in(log);
  std::string line;
  std::optional<double> last;
  static const std::regex kAfter(R"(GC\(\d+\) .*->(\d+)M)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kAfter)) {
      double v = 0;
      if (absl::SimpleAtod(m[1].str(), &v)) last = v;
    }
  }
  return last;
}

struct CollectorCase {
  const char* flag;
  const char* name;
};

class RealJvmLiveSet : public ::testing::TestWithParam<CollectorCase> {};

TEST_P(RealJvmLiveSet, MatchesTheJvmsOwnGcLog) {
  TempDir dir;
  const std::string log = dir.path() + "/gc.log";
  JvmLaunch launch;
  launch.jvm_args = {std::string("-XX:+") + GetParam().flag, "-Xmx512m",
                     "-Xlog:gc:file=" + log};
  launch.program = {"-cp", testing::ClassesDir(), "HwBigHeapApp", "96"};
  TestJvm jvm(launch);
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  auto before = ReadGcCountersFile(local->perfdata_path);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_NEAR(static_cast<double>(before->heap_max), 512.0 * kMiB, kMiB) << GetParam().name;
  LiveSetTracker tracker;
  tracker.Observe(absl::Now(), *before, false);
  // A collection of the whole heap the application asks for (System.gc()).
  AttachOptions attach;
  auto reply = ExecuteJcmd(*local, "GC.run", attach);
  ASSERT_TRUE(reply.ok()) << reply.status();
  std::optional<LiveSetPoint> point;
  for (int i = 0; i < 50 && !point.has_value(); ++i) {
    auto c = ReadGcCountersFile(local->perfdata_path);
    ASSERT_TRUE(c.ok()) << c.status();
    point = tracker.Observe(absl::Now(), *c, false);
    if (!point) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(point.has_value()) << GetParam().name << ": no live-set point after System.gc()";
  EXPECT_NE(point->source, LiveSetSource::kYoungUpperBound);
  EXPECT_TRUE(tracker.natural_old_gc());
  // The JVM's own view of the same collection.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the log is written after the GC
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  auto logged = LastPostGcMiB(text.str());
  ASSERT_TRUE(logged.has_value()) << text.str();
  const double ours = static_cast<double>(point->live_bytes) / kMiB;
  std::cout << GetParam().name << ": live set " << ours << " MiB, -Xlog:gc " << *logged
            << " MiB\n";
  EXPECT_GT(*logged, 90);  // the program keeps ~96 MiB alive: the log line is the right one
  EXPECT_NEAR(ours, *logged, std::max(2.0, 0.03 * *logged)) << text.str();
}

INSTANTIATE_TEST_SUITE_P(EveryCollector, RealJvmLiveSet,
                         ::testing::Values(CollectorCase{"UseG1GC", "G1"},
                                           CollectorCase{"UseParallelGC", "Parallel"},
                                           CollectorCase{"UseSerialGC", "Serial"},
                                           CollectorCase{"UseZGC", "ZGC"},
                                           CollectorCase{"UseShenandoahGC", "Shenandoah"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RealJvmPause, SafepointTimeCoversALiveHistogram) {
  JvmLaunch launch;
  launch.jvm_args = {"-XX:+UseG1GC", "-Xmx512m"};
  launch.program = {"-cp", testing::ClassesDir(), "HwBigHeapApp", "96"};
  TestJvm jvm(launch);
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  auto before = ReadGcCountersFile(local->perfdata_path);
  ASSERT_TRUE(before.ok());
  auto reply = ExecuteJcmd(*local, "GC.class_histogram", AttachOptions());
  ASSERT_TRUE(reply.ok()) << reply.status();
  auto after = ReadGcCountersFile(local->perfdata_path);
  ASSERT_TRUE(after.ok());
  // A full GC of ~100 MiB of small objects plus the heap walk: well above a millisecond.
  const absl::Duration pause = SafepointTimeBetween(*before, *after);
  EXPECT_GT(pause, absl::Milliseconds(5));
  EXPECT_LT(pause, absl::Seconds(30));
  EXPECT_GT(after->safepoints, before->safepoints);
  EXPECT_EQ(after->last_cause, "Heap Inspection Initiated GC");
}

}  // namespace
}  // namespace heapwatch::collectors
