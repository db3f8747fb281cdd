// StringTableWatch (daemon/string_table_watch.h): on synthetic string-table series with fake times
// (steady growth is an interned-string leak; start-up interning, a one-time step and a flat table
// are not), then on real readings (VM.stringtable over the attach socket) of two real JVMs
// (tests/daemon/java/HwInterner.java): the one that interns unique strings and keeps them gives one
// interned_strings leak, the one that interns a bounded set gives none. The readings are real and
// taken ~0.2 s apart; only their times are fake (a minute apart), so the daemon's default trend
// options apply unchanged. Also measures the safepoint pause of each VM.stringtable.
#include "daemon/string_table_watch.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collectors/gc_counters.h"
#include "collectors/string_table.h"
#include "gtest/gtest.h"
#include "tests/daemon/test_jvm.h"

namespace heapwatch::daemon {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

collectors::StringTableStats Reading(int i, uint64_t entries) {
  collectors::StringTableStats s;
  s.time = kStart + absl::Seconds(60 * (i + 1));
  s.buckets = 65536;
  s.bucket_bytes = 65536 * 8;
  s.entries = entries;
  s.entry_bytes = entries * 16;
  s.literals = entries;
  s.literal_bytes = entries * 64;
  s.footprint_bytes = s.bucket_bytes + s.entry_bytes + s.literal_bytes;
  return s;
}

// Start-up: 20,000 strings over the first 3 readings (warm-up), then flat at 30,000.
uint64_t StartUp(int i) { return i < 3 ? 10000 + 7000 * static_cast<uint64_t>(i) : 30000; }

TEST(StringTableWatchTest, SteadyInterningIsALeak) {
  StringTableWatch watch(diff::LeakOptions{}, kStart);
  std::optional<diff::Leak> leak;
  int first_leak = -1;
  for (int i = 0; i < 40; ++i) {
    // From reading 5 on, 5,000 new strings per reading that stay.
    const uint64_t grown = i < 5 ? 0 : 5000 * static_cast<uint64_t>(i - 4);
    leak = watch.Observe(Reading(i, StartUp(i) + grown));
    if (leak && first_leak < 0) first_leak = i;
  }
  ASSERT_TRUE(leak.has_value());
  EXPECT_EQ(leak->kind, kInternedStringsLeakKind);
  EXPECT_EQ(leak->main_class, kStringTableSeries);
  EXPECT_FALSE(leak->id.empty());
  EXPECT_EQ(leak->bytes, (30000u + 5000u * 35) * 80);
  EXPECT_GT(leak->growth_bytes_per_second, 0);
  EXPECT_NE(leak->detail.find("interned-string growth: 205000 strings"), std::string::npos)
      << leak->detail;
  EXPECT_NE(leak->detail.find("String.intern()"), std::string::npos);
  EXPECT_GE(first_leak, 10);
  EXPECT_LE(first_leak, 25);
  ASSERT_TRUE(watch.last().has_value());
  EXPECT_EQ(watch.last()->entries, 205000u);
  ASSERT_TRUE(watch.suspect().has_value());
}

TEST(StringTableWatchTest, StartUpInterningAndAStepAreNotALeak) {
  StringTableWatch watch(diff::LeakOptions{}, kStart);
  for (int i = 0; i < 40; ++i) {
    // Start-up, then one step of 50,000 strings at reading 20 (a cache warmed once).
    const uint64_t entries = StartUp(i) + (i >= 20 ? 50000 : 0);
    EXPECT_FALSE(watch.Observe(Reading(i, entries)).has_value()) << i;
  }
}

TEST(StringTableWatchTest, GrowthBelowTheThresholdIsNotALeak) {
  StringTableWatch watch(diff::LeakOptions{}, kStart);
  for (int i = 0; i < 40; ++i) {
    // 100 strings per reading: 1,100 over the window, under min_entry_growth (10,000).
    EXPECT_FALSE(watch.Observe(Reading(i, 30000 + 100 * static_cast<uint64_t>(i))).has_value())
        << i;
  }
}

TEST(StringTableWatchTest, OlderReadingsAreIgnored) {
  StringTableWatch watch(diff::LeakOptions{}, kStart);
  watch.Observe(Reading(5, 1000));
  watch.Observe(Reading(4, 9000));
  ASSERT_TRUE(watch.last().has_value());
  EXPECT_EQ(watch.last()->entries, 1000u);
}

struct RealRun {
  std::optional<diff::Leak> leak;
  int leak_readings = 0;
  uint64_t first_entries = 0, last_entries = 0;
  absl::Duration max_pause = absl::ZeroDuration();
  std::vector<absl::Duration> pauses;
  absl::Duration MedianPause() const {
    if (pauses.empty()) return absl::ZeroDuration();
    std::vector<absl::Duration> p = pauses;
    std::nth_element(p.begin(), p.begin() + p.size() / 2, p.end());
    return p[p.size() / 2];
  }
};

// 18 readings of a real HwInterner JVM (`mode` leaky or bounded), fed with fake times a minute
// apart.
RealRun WatchRealJvm(const std::string& mode) {
  RealRun run;
  TestJvm jvm("HwInterner", mode);
  EXPECT_TRUE(jvm.ready());
  std::optional<collectors::LocalJvm> local = jvm.Discover();
  EXPECT_TRUE(local.has_value());
  if (!local) return run;
  StringTableWatch watch(diff::LeakOptions{}, kStart);
  for (int i = 0; i < 18; ++i) {
    auto before = collectors::ReadGcCountersFile(local->perfdata_path);
    auto stats = collectors::CollectStringTable(*local, collectors::AttachOptions{});
    auto after = collectors::ReadGcCountersFile(local->perfdata_path);
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (!stats.ok()) return run;
    if (before.ok() && after.ok()) {
      run.pauses.push_back(collectors::SafepointTimeBetween(*before, *after));
      run.max_pause = std::max(run.max_pause, run.pauses.back());
    }
    if (i == 0) run.first_entries = stats->entries;
    run.last_entries = stats->entries;
    stats->time = kStart + absl::Minutes(i + 1);
    run.leak = watch.Observe(*stats);
    if (run.leak) ++run.leak_readings;
    absl::SleepFor(absl::Milliseconds(200));
  }
  return run;
}

TEST(StringTableWatchTest, RealJvmInterningUniqueStringsIsOneLeak) {
  const RealRun run = WatchRealJvm("leaky");
  std::printf(
      "leaky JVM: %llu -> %llu interned strings; VM.stringtable pause median %.3f ms, max %.3f "
      "ms\n",
      static_cast<unsigned long long>(run.first_entries),
      static_cast<unsigned long long>(run.last_entries),
      absl::ToDoubleMilliseconds(run.MedianPause()), absl::ToDoubleMilliseconds(run.max_pause));
  ASSERT_TRUE(run.leak.has_value());
  EXPECT_EQ(run.leak->kind, kInternedStringsLeakKind);
  EXPECT_GT(run.last_entries, run.first_entries + 50000);
  EXPECT_GE(run.leak_readings, 1);
  EXPECT_LT(run.max_pause, absl::Milliseconds(100));
}

TEST(StringTableWatchTest, RealJvmInterningABoundedSetIsNoLeak) {
  const RealRun run = WatchRealJvm("bounded");
  std::printf(
      "bounded JVM: %llu -> %llu interned strings; VM.stringtable pause median %.3f ms, max %.3f "
      "ms\n",
      static_cast<unsigned long long>(run.first_entries),
      static_cast<unsigned long long>(run.last_entries),
      absl::ToDoubleMilliseconds(run.MedianPause()), absl::ToDoubleMilliseconds(run.max_pause));
  EXPECT_FALSE(run.leak.has_value()) << run.leak->detail;
  EXPECT_EQ(run.leak_readings, 0);
  EXPECT_GT(run.last_entries, 1000u);
}

}  // namespace
}  // namespace heapwatch::daemon
