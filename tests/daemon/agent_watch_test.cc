// The one ingestion path (daemon/agent_watch.h) on a real LMDB store, with made-up times (no
// clock): live-set points and class histograms are stored, then ingested, as the daemon does.
#include "daemon/agent_watch.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"
#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

class AgentWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "agent_watch_test.XXXXXX";
    HW_CHECK(mkdtemp(tmpl.data()) != nullptr);
    dir_ = tmpl;
    store_ = OpenStore();
    info_.id = AgentId{"vm-4242-test"};
    info_.pid = 4242;
    info_.main_class = "com.example.Service";
    info_.start_time = kStart;
    HW_CHECK(store_->PutAgent(info_).ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<storage::SnapshotStore> OpenStore() {
    storage::StoreOptions options;
    options.dir = dir_;
    options.background_retention = false;
    auto store = storage::SnapshotStore::Open(options);
    HW_CHECK(store.ok());
    return *std::move(store);
  }

  std::unique_ptr<AgentWatch> NewWatch() {
    AgentWatchOptions options;
    return std::make_unique<AgentWatch>(info_, options, store_.get());
  }

  // An exact live-set point at kStart + t seconds, stored then ingested.
  WatchUpdate LiveSet(AgentWatch& watch, double t, uint64_t live_bytes,
                      LiveSetSource source = LiveSetSource::kConcurrentCycle) {
    LiveSetPoint p;
    p.time = kStart + absl::Seconds(t);
    p.source = source;
    p.live_bytes = live_bytes;
    p.capacity_bytes = 256 * kMiB;
    p.max_bytes = 256 * kMiB;
    HW_CHECK(store_->AppendLiveSet(info_.id, p).ok());
    return watch.IngestLiveSet(p);
  }

  // A live class histogram at kStart + t: 30 steady classes, and `orders` leaking orders (an
  // Order, its 512-byte payload in byte[] and its String id).
  WatchUpdate Histogram(AgentWatch& watch, double t, uint64_t orders) {
    Snapshot s;
    s.agent = info_.id;
    s.time = kStart + absl::Seconds(t);
    s.cost.mode = HistogramMode::kLive;
    for (int c = 0; c < 30; ++c) {
      s.histogram.rows.push_back({"com.example.Steady" + std::to_string(c), "", 1000, 64'000});
    }
    s.histogram.rows.push_back({"byte[]", "java.base", 5000 + orders, 20 * kMiB + orders * 528});
    s.histogram.rows.push_back(
        {"java.lang.String", "java.base", 9000 + orders, 216'000 + orders * 24});
    if (orders > 0) s.histogram.rows.push_back({"com.example.Order", "", orders, orders * 24});
    HW_CHECK(store_->Append(s).ok());
    return watch.IngestHistogram(s);
  }

  std::string dir_;
  std::unique_ptr<storage::SnapshotStore> store_;
  AgentInfo info_;
};

const diff::Leak* Only(const WatchUpdate& u) { return u.leaks.size() == 1 ? &u.leaks[0] : nullptr; }

// A leak of ~1 MB/s from the live set alone: a "heap" leak with its forecast after the ninth
// exact point (one of warm-up, eight rising); histograms wanted sooner; then three live histograms
// name its classes under the same id.
TEST_F(AgentWatchTest, TheLiveSetMakesALeakAndItsClassesJoinTheSameId) {
  auto watch = NewWatch();
  WatchUpdate u;
  double t = 0;
  uint64_t live = 40 * kMiB;
  for (int i = 0; i < 8; ++i, t += 10, live += 10 * kMiB) {
    u = LiveSet(*watch, t, live);
    EXPECT_TRUE(u.leaks.empty()) << "point " << i;
    EXPECT_FALSE(u.exhaustion.has_value()) << "point " << i;
  }
  u = LiveSet(*watch, t, live);
  ASSERT_TRUE(u.live_set_growth.has_value());
  ASSERT_NE(Only(u), nullptr);
  const diff::Leak heap = u.leaks[0];
  EXPECT_EQ(heap.kind, "heap");
  EXPECT_TRUE(heap.classes.empty());
  EXPECT_EQ(heap.id, diff::LeakId(kLiveSetSeries, u.live_set_growth->first_seen));
  EXPECT_NEAR(heap.growth_bytes_per_second, 1.0 * kMiB, 0.01 * kMiB);
  ASSERT_TRUE(u.exhaustion.has_value());
  ASSERT_TRUE(heap.exhaustion.has_value());
  // 120 MiB at t=80 s, 1 MiB/s, 98 % of 256 MiB: 130.9 s.
  EXPECT_NEAR(absl::ToDoubleSeconds(u.exhaustion->estimate), 130.9, 1);
  EXPECT_TRUE(u.wants_confirmation);
  EXPECT_TRUE(watch->WantsConfirmation());
  EXPECT_TRUE(u.suspects.empty());

  // Three live histograms 15 s apart while it leaks ~1,700 orders/s.
  uint64_t orders = 100'000;
  for (int i = 0; i < 3; ++i) {
    t += 15;
    orders += 15 * 1700;
    LiveSet(*watch, t - 1, live += 15 * kMiB, LiveSetSource::kFullGc);
    u = Histogram(*watch, t, orders);
  }
  ASSERT_NE(Only(u), nullptr);
  const diff::Leak& named = u.leaks[0];
  EXPECT_EQ(named.id, heap.id);  // one leak, not two
  EXPECT_EQ(named.kind, "");
  EXPECT_EQ(named.main_class, "com.example.Order");
  std::vector<std::string> classes;
  for (const diff::LeakClass& c : named.classes) classes.push_back(c.class_name);
  std::sort(classes.begin(), classes.end());
  EXPECT_EQ(classes, (std::vector<std::string>{"byte[]", "com.example.Order", "java.lang.String"}));
  ASSERT_TRUE(named.exhaustion.has_value());
  EXPECT_FALSE(u.wants_confirmation);
  ASSERT_EQ(u.suspects.size(), 3u);
  for (const diff::Suspect& s : u.suspects) EXPECT_EQ(s.leak, heap.id);

  // A restart: the replay rebuilds the same leak under the same id, named.
  auto replayed = NewWatch();
  AgentWatch::Replayed r;
  WatchUpdate again = replayed->Replay(absl::Hours(26), 20'000, {}, &r);
  EXPECT_EQ(r.snapshots, 3u);
  ASSERT_NE(Only(again), nullptr);
  EXPECT_EQ(again.leaks[0].id, heap.id);
  EXPECT_EQ(again.leaks[0].main_class, "com.example.Order");
}

// A flat live set with noise, a cache that fills then plateaus, and a one-time step after a
// deploy: no leak and no forecast at any point; exact points are asked for after the steps, and
// no longer once the plateau shows.
TEST_F(AgentWatchTest, HealthyLiveSetsAreQuiet) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 2.0 * kMiB);
  auto watch = NewWatch();
  double t = 0;
  WatchUpdate u;
  auto check = [&](const char* what) {
    EXPECT_TRUE(u.leaks.empty()) << what << " t=" << t;
    EXPECT_FALSE(u.exhaustion.has_value()) << what << " t=" << t;
  };
  int wanted = 0;
  for (int i = 0; i < 60; ++i, t += 10) {
    u = LiveSet(*watch, t, static_cast<uint64_t>(80.0 * kMiB + noise(rng)));
    check("flat");
    wanted += u.wants_confirmation;
  }
  EXPECT_EQ(wanted, 0);
  // A cache filling by 4 MiB a point for 4 points, then flat (plateau).
  double level = 80.0 * kMiB;
  for (int i = 0; i < 40; ++i, t += 10) {
    if (i < 4) level += 4.0 * kMiB;
    u = LiveSet(*watch, t, static_cast<uint64_t>(level + noise(rng)));
    check("cache");
  }
  EXPECT_FALSE(u.wants_confirmation);
  // A deploy: one step of 30 MiB, then flat.
  level += 30.0 * kMiB;
  for (int i = 0; i < 40; ++i, t += 10) {
    u = LiveSet(*watch, t, static_cast<uint64_t>(level + noise(rng)));
    check("step");
  }
  EXPECT_FALSE(u.wants_confirmation);
}

// A slow leak flagged from sparse concurrent cycles, then the live set passes G1's occupancy
// threshold and a cycle ends every 4 s: the every-point window spans 48 s of a 50 KiB/s leak in
// 1 MiB of noise, and the trend loses it. The leak stays listed under its id (the growth since it
// was first seen still shows), and ends once the live set has stopped growing.
TEST_F(AgentWatchTest, ALeakStaysOneLeakWhenItsPointsCrowd) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 1.0 * kMiB);
  auto watch = NewWatch();
  WatchUpdate u;
  double t = 0;
  double live = 40.0 * kMiB;
  const double rate = 50.0 * 1024;
  std::string id;
  for (int i = 0; i < 30 && id.empty(); ++i, t += 200) {
    u = LiveSet(*watch, t, static_cast<uint64_t>(live + rate * t + noise(rng)));
    if (!u.leaks.empty()) id = u.leaks[0].id;
  }
  ASSERT_FALSE(id.empty()) << "the sparse points never flagged the leak";
  // One more sparse point (the hold keeps only a flag older than AgentWatch::kHoldMinAge).
  u = LiveSet(*watch, t, static_cast<uint64_t>(live + rate * t + noise(rng)));
  ASSERT_EQ(Only(u) != nullptr ? Only(u)->id : "", id);
  t += 200;
  const double crowded = t;
  int lost = 0, renamed = 0;
  for (; t < crowded + 900; t += 4) {
    u = LiveSet(*watch, t, static_cast<uint64_t>(live + rate * t + noise(rng)));
    if (u.leaks.empty()) {
      ++lost;
    } else if (u.leaks[0].id != id) {
      ++renamed;
    }
    ASSERT_TRUE(u.exhaustion.has_value() || u.leaks.empty()) << "t=" << t;
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(renamed, 0);
  // The live set stops growing: flat for an hour of crowded points, and the leak ends.
  live += rate * t;
  bool ended = false;
  const double stop = t;
  for (; t < stop + 3600 && !ended; t += 4) {
    u = LiveSet(*watch, t, static_cast<uint64_t>(live + noise(rng)));
    ended = u.leaks.empty();
  }
  EXPECT_TRUE(ended);
  RecordProperty("ended_after_seconds", static_cast<int>(t - stop));
  EXPECT_FALSE(u.exhaustion.has_value());
}

// G1's mixed-phase minima climb on a healthy JVM as the heap is committed (seen: 30 -> 86 MiB
// while full collections read 18-27 MiB): the full collections refute the growth, so no leak and
// no forecast. Then a real leak, which the full collections confirm, is listed.
TEST_F(AgentWatchTest, FullCollectionsRefuteClimbingMixedPhaseMinima) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> full(18.0 * kMiB, 27.0 * kMiB);
  auto watch = NewWatch();
  WatchUpdate u;
  double t = 0;
  bool flagged_by_trend = false;
  for (int i = 0; i < 57; ++i, t += 20) {
    if (i % 4 == 3) {
      u = LiveSet(*watch, t - 1, static_cast<uint64_t>(full(rng)), LiveSetSource::kFullGc);
    } else {
      u = LiveSet(*watch, t, static_cast<uint64_t>((30.0 + i) * kMiB));
    }
    flagged_by_trend |= u.wants_confirmation;
    EXPECT_TRUE(u.leaks.empty()) << "t=" << t;
    EXPECT_FALSE(u.exhaustion.has_value()) << "t=" << t;
  }
  // The climb is steep enough that the trend alone flagged it (the test would not test the
  // refutation otherwise).
  EXPECT_TRUE(flagged_by_trend);
  // A leak of 0.5 MiB/s: concurrent-cycle and full-collection points rise together.
  double live = 25.0 * kMiB;
  bool listed = false;
  for (int i = 0; i < 30 && !listed; ++i, t += 20) {
    live += 10.0 * kMiB;
    u = LiveSet(*watch, t, static_cast<uint64_t>(live + 4.0 * kMiB));
    if (i % 3 == 2) u = LiveSet(*watch, t + 1, static_cast<uint64_t>(live), LiveSetSource::kFullGc);
    listed = !u.leaks.empty();
  }
  ASSERT_TRUE(listed);
  EXPECT_EQ(u.leaks[0].kind, "heap");
  EXPECT_TRUE(u.exhaustion.has_value());
}

// A class leak flagged by the class detector before the live set: the live set's growth is that
// leak's; no second leak, and the forecast goes on it.
TEST_F(AgentWatchTest, AClassLeakFlaggedFirstCarriesTheForecast) {
  auto watch = NewWatch();
  WatchUpdate u;
  double t = 0;
  uint64_t orders = 0;
  for (int i = 0; i < 25; ++i, t += 60) {
    orders += 60 * 1700;
    u = Histogram(*watch, t, orders);
  }
  ASSERT_NE(Only(u), nullptr) << u.leaks.size();
  const std::string id = u.leaks[0].id;
  EXPECT_EQ(u.leaks[0].kind, "");
  uint64_t live = 100 * kMiB;
  for (int i = 0; i < 10; ++i, t += 10, live += 10 * kMiB) u = LiveSet(*watch, t, live);
  ASSERT_TRUE(u.live_set_growth.has_value());
  ASSERT_NE(Only(u), nullptr);
  EXPECT_EQ(u.leaks[0].id, id);
  EXPECT_TRUE(u.leaks[0].exhaustion.has_value());
  EXPECT_FALSE(u.wants_confirmation);
}

// The growth probe through the watch: young collections leaving more and more behind ask for a
// histogram; an exact point that shows it was garbage ends the asking.
TEST_F(AgentWatchTest, UpperBoundsAskForAnExactPoint) {
  auto watch = NewWatch();
  LiveSet(*watch, 0, 40 * kMiB, LiveSetSource::kFullGc);
  bool wanted = false;
  for (int i = 1; i <= 8; ++i) {
    wanted = watch->IngestUpperBound(kStart + absl::Seconds(2 * i), 40 * kMiB + i * 2 * kMiB,
                                     256 * kMiB);
  }
  EXPECT_TRUE(wanted);
  // The live histogram's full GC: 40 MiB again, garbage.
  WatchUpdate u = LiveSet(*watch, 20, 40 * kMiB, LiveSetSource::kFullGc);
  EXPECT_FALSE(u.wants_confirmation);
  for (int i = 1; i <= 8; ++i) {
    wanted = watch->IngestUpperBound(kStart + absl::Seconds(20 + 2 * i), 40 * kMiB + i * 2 * kMiB,
                                     256 * kMiB);
  }
  EXPECT_FALSE(wanted);  // backing off
}

}  // namespace
}  // namespace heapwatch::daemon
