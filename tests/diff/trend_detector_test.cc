// TrendDetector's contract on small hand-made series: validation, ordering, warm-up, each of tests
// A-D, the reported figures, hysteresis, determinism and forgetting. Pattern sweeps are in
// trend_patterns_test.cc.
#include "diff/trend_detector.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "diff/trend_stats.h"
#include "gtest/gtest.h"

namespace heapwatch::diff {
namespace {

constexpr double kMiB = 1 << 20;
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

Snapshot Snap(int index, const std::vector<std::pair<std::string, double>>& classes,
              absl::Duration interval = absl::Seconds(60), const char* agent = "agent") {
  Snapshot s;
  s.agent = AgentId(agent);
  s.time = kT0 + interval * index;
  for (const auto& [name, bytes] : classes) {
    s.histogram.rows.push_back(
        {name, "", static_cast<uint64_t>(bytes / 16), static_cast<uint64_t>(bytes)});
  }
  return s;
}

// Feeds values[i] as class "C" (plus an unrelated flat class) at times kT0 + i * interval; returns
// the index of every snapshot after which "C" was a suspect.
std::vector<int> SuspectIndices(TrendDetector& d, const std::vector<double>& values) {
  std::vector<int> out;
  for (size_t i = 0; i < values.size(); ++i) {
    d.Observe(Snap(static_cast<int>(i), {{"C", values[i]}, {"Flat", 5 * kMiB}}));
    if (d.SuspectFor("C")) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<double> Linear(int n, double start, double step) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(start + step * i);
  return v;
}

TEST(TrendOptionsTest, DefaultsAreValid) { EXPECT_TRUE(ValidateTrendOptions(TrendOptions{}).ok()); }

TEST(TrendOptionsTest, EachBadFieldIsNamed) {
  struct Case {
    const char* field;
    void (*mutate)(TrendOptions&);
  };
  const Case cases[] = {
      {"window_snapshots", [](TrendOptions& o) { o.window_snapshots = 7; }},
      {"window_snapshots", [](TrendOptions& o) { o.window_snapshots = 5000; }},
      {"min_snapshots", [](TrendOptions& o) { o.min_snapshots = 3; }},
      {"min_snapshots", [](TrendOptions& o) { o.segments = 5; }},  // needs min_snapshots >= 10
      {"segments", [](TrendOptions& o) { o.segments = 0; }},
      {"segments", [](TrendOptions& o) { o.segments = 9; }},
      {"recent_snapshots", [](TrendOptions& o) { o.recent_snapshots = 0; }},
      {"recent_snapshots", [](TrendOptions& o) { o.recent_snapshots = 5; }},
      {"peak_lookback_snapshots", [](TrendOptions& o) { o.peak_lookback_snapshots = 11; }},
      {"warmup", [](TrendOptions& o) { o.warmup = absl::Seconds(-1); }},
      {"warmup", [](TrendOptions& o) { o.warmup = absl::InfiniteDuration(); }},
      {"max_p_value", [](TrendOptions& o) { o.max_p_value = 0; }},
      {"max_p_value", [](TrendOptions& o) { o.max_p_value = 0.6; }},
      {"max_p_value", [](TrendOptions& o) { o.max_p_value = std::nan(""); }},
      {"min_growth_bytes_per_second", [](TrendOptions& o) { o.min_growth_bytes_per_second = -1; }},
      {"min_growth_bytes_per_second",
       [](TrendOptions& o) { o.min_growth_bytes_per_second = INFINITY; }},
      {"min_relative_growth", [](TrendOptions& o) { o.min_relative_growth = -0.1; }},
      {"min_step_fraction", [](TrendOptions& o) { o.min_step_fraction = 1.5; }},
      {"confirm_snapshots", [](TrendOptions& o) { o.confirm_snapshots = 0; }},
      {"clear_snapshots", [](TrendOptions& o) { o.clear_snapshots = 0; }},
  };
  for (const Case& c : cases) {
    TrendOptions o;
    c.mutate(o);
    const Status st = ValidateTrendOptions(o);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(st.message().find(std::string("TrendOptions.") + c.field + " ="), std::string::npos)
        << st.message();
    EXPECT_EQ(TrendDetector::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(TrendDetectorTest, IgnoresOutOfOrderAndForeignSnapshots) {
  TrendDetector d(TrendOptions{});
  EXPECT_TRUE(d.Observe(Snap(1, {{"C", 1}})));
  EXPECT_FALSE(d.Observe(Snap(1, {{"C", 2}})));  // same time
  EXPECT_FALSE(d.Observe(Snap(0, {{"C", 2}})));  // older
  EXPECT_FALSE(d.Observe(Snap(2, {{"C", 2}}, absl::Seconds(60), "other-agent")));
  EXPECT_TRUE(d.Observe(Snap(2, {{"C", 2}})));
  EXPECT_EQ(d.snapshots_observed(), 2u);
}

TEST(TrendDetectorTest, SteadyLeakFlaggedAfterWarmupPlusMinSnapshotsWithExactFigures) {
  TrendOptions o;
  TrendDetector d(o);
  // 1 MiB per minute on top of 4 MiB, from the first snapshot.
  const std::vector<int> at = SuspectIndices(d, Linear(30, 4 * kMiB, kMiB));
  ASSERT_FALSE(at.empty());
  // Warm-up is snapshots 0-4; the 8th post-warm-up snapshot is index 12.
  EXPECT_EQ(at.front(), static_cast<int>(o.warmup_snapshots + o.min_snapshots - 1));
  EXPECT_EQ(at.size(), 30u - at.front());  // and it stays flagged
  const auto s = d.SuspectFor("C");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->class_name, "C");
  EXPECT_DOUBLE_EQ(s->growth_bytes_per_second, kMiB / 60);
  EXPECT_NEAR(s->growth_instances_per_second, kMiB / 16 / 60, 1e-9);
  EXPECT_EQ(s->bytes, static_cast<uint64_t>(33 * kMiB));
  EXPECT_EQ(s->instances, static_cast<uint64_t>(33 * kMiB / 16));
  EXPECT_EQ(s->window_size, 12u);
  EXPECT_DOUBLE_EQ(s->window_growth_bytes, 11 * kMiB);
  EXPECT_DOUBLE_EQ(s->p_value, MannKendallExactUpperTail(12, 66));  // 1/12!
  EXPECT_DOUBLE_EQ(s->score, 1.0);
  EXPECT_EQ(s->first_seen, kT0 + absl::Minutes(at.front()));
  EXPECT_FALSE(d.SuspectFor("Flat").has_value());
  EXPECT_FALSE(d.SuspectFor("NoSuchClass").has_value());
}

TEST(TrendDetectorTest, NoEvaluationDuringWarmupSnapshots) {
  TrendOptions o;
  o.warmup_snapshots = 10;
  TrendDetector d(o);
  const std::vector<int> at = SuspectIndices(d, Linear(40, 0, kMiB));
  ASSERT_FALSE(at.empty());
  EXPECT_EQ(at.front(), 10 + static_cast<int>(o.min_snapshots) - 1);
}

TEST(TrendDetectorTest, WarmupDurationCountsFromAgentStartOrFirstSnapshot) {
  TrendOptions o;
  o.warmup_snapshots = 0;
  o.warmup = absl::Minutes(10);
  {
    TrendDetector d(o);  // agent start unknown: 10 minutes from the first snapshot
    for (int i = 0; i < 10; ++i) {
      d.Observe(Snap(i, {{"C", 1}}));
      EXPECT_FALSE(d.warmed_up()) << i;
    }
    d.Observe(Snap(10, {{"C", 1}}));
    EXPECT_TRUE(d.warmed_up());
  }
  {
    TrendDetector d(o,
                    kT0 - absl::Minutes(7));  // the JVM started 7 minutes before the first snapshot
    for (int i = 0; i < 3; ++i) {
      d.Observe(Snap(i, {{"C", 1}}));
      EXPECT_FALSE(d.warmed_up()) << i;
    }
    d.Observe(Snap(3, {{"C", 1}}));
    EXPECT_TRUE(d.warmed_up());
  }
}

TEST(TrendDetectorTest, TestAInsignificantOrderNotFlagged) {
  // Large and growing overall, but zig-zagging: Mann-Kendall's p stays above 0.002 on every window
  // (exact p for 8..12 points: 0.031, 0.060, 0.014, 0.030, 0.0069), so it is not flagged; with a
  // looser significance level the same series is.
  std::vector<double> bytes;
  for (double x : {10, 20, 11, 21, 12, 22, 13, 23, 14, 24, 15, 25}) bytes.push_back(x * kMiB);
  TrendOptions o;
  o.warmup_snapshots = 0;
  {
    TrendDetector d(o);
    EXPECT_TRUE(SuspectIndices(d, bytes).empty());
  }
  o.max_p_value = 0.05;
  TrendDetector d(o);
  EXPECT_FALSE(SuspectIndices(d, bytes).empty());
}

TEST(TrendDetectorTest, TestBTooLittleGrowthNotFlagged) {
  TrendOptions o;
  {
    TrendDetector d(
        o);  // perfectly monotonic, but only 64 KiB per snapshot: 0.75 MiB over the window
    EXPECT_TRUE(SuspectIndices(d, Linear(40, 0, 64 * 1024)).empty());
  }
  {
    TrendDetector d(o);  // 1 MiB per snapshot on 200 MiB: 5.5% over the window, below 10%
    EXPECT_TRUE(SuspectIndices(d, Linear(40, 200 * kMiB, kMiB)).empty());
  }
  {
    o.min_relative_growth = 0.05;  // ...unless the relative threshold is lowered
    TrendDetector d(o);
    EXPECT_FALSE(SuspectIndices(d, Linear(40, 200 * kMiB, kMiB)).empty());
  }
  {
    TrendOptions r;
    r.min_growth_bytes_per_second = kMiB / 30;  // 2 MiB per minute required
    TrendDetector d(r);
    EXPECT_TRUE(SuspectIndices(d, Linear(40, 0, kMiB)).empty());
  }
}

TEST(TrendDetectorTest, TestCOneTimeStepNotFlagged) {
  // Flat at 2 MiB, a 50 MiB buffer allocated once, flat again: Mann-Kendall is significant right
  // after the step, but the growth does not span the last min_snapshots snapshots.
  TrendDetector d(TrendOptions{});
  std::vector<double> v(20, 2 * kMiB);
  for (int i = 0; i < 20; ++i) v.push_back(52 * kMiB + (i % 3) * 1024);
  std::vector<double> scratch;
  ASSERT_LE(MannKendall(std::vector<double>(v.begin() + 14, v.begin() + 26), &scratch).p_value,
            0.002);
  EXPECT_TRUE(SuspectIndices(d, v).empty());
}

TEST(TrendDetectorTest, TestDPlateauClearedAfterClearSnapshots) {
  TrendOptions o;
  TrendDetector d(o);
  std::vector<double> v = Linear(25, 0, kMiB);          // grows until index 24...
  for (int i = 0; i < 15; ++i) v.push_back(24 * kMiB);  // ...then stays exactly there
  const std::vector<int> at = SuspectIndices(d, v);
  ASSERT_FALSE(at.empty());
  // Index 25 is the first plateau snapshot; the last two snapshots hold no new maximum from index
  // 26 on, and clear_snapshots (3) failing evaluations later the class is cleared.
  EXPECT_EQ(at.back(), 25 + static_cast<int>(o.clear_snapshots) - 1);
}

TEST(TrendDetectorTest, HysteresisAndNewEpisodeGetsNewFirstSeen) {
  TrendOptions o;
  TrendDetector d(o);
  std::vector<double> v = Linear(25, 0, kMiB);
  for (int i = 0; i < 40; ++i) v.push_back(24 * kMiB);         // plateau: cleared
  for (int i = 1; i <= 20; ++i) v.push_back((24 + i) * kMiB);  // grows again from index 65
  absl::Time first_episode = absl::InfinitePast();
  bool cleared = false;
  for (size_t i = 0; i < v.size(); ++i) {
    d.Observe(Snap(static_cast<int>(i), {{"C", v[i]}}));
    const auto s = d.SuspectFor("C");
    if (s && first_episode == absl::InfinitePast()) first_episode = s->first_seen;
    if (!s && first_episode != absl::InfinitePast()) cleared = true;
    if (s && cleared) {
      EXPECT_GT(s->first_seen, first_episode);
      EXPECT_EQ(s->first_seen, kT0 + absl::Minutes(static_cast<int64_t>(i)));
      return;
    }
  }
  FAIL() << "second episode never flagged (cleared=" << cleared << ")";
}

TEST(TrendDetectorTest, ConfirmSnapshotsDelaysFlagging) {
  TrendOptions o;
  o.confirm_snapshots = 3;
  TrendDetector d(o);
  const std::vector<int> at = SuspectIndices(d, Linear(30, 0, kMiB));
  ASSERT_FALSE(at.empty());
  EXPECT_EQ(at.front(), static_cast<int>(o.warmup_snapshots + o.min_snapshots - 1 + 2));
  // first_seen is when the class became a suspect, i.e. after confirmation.
  EXPECT_EQ(d.SuspectFor("C")->first_seen, kT0 + absl::Minutes(at.front()));
}

TEST(TrendDetectorTest, DuplicateRowsAreSummed) {
  TrendDetector d(TrendOptions{});
  for (int i = 0; i < 20; ++i) {
    // Half the leak under each of two class loaders.
    d.Observe(Snap(i, {{"C", i * kMiB / 2}, {"C", i * kMiB / 2}}));
  }
  const auto s = d.SuspectFor("C");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->bytes, static_cast<uint64_t>(19 * kMiB));
  EXPECT_DOUBLE_EQ(s->growth_bytes_per_second, kMiB / 60);
}

TEST(TrendDetectorTest, SuspectsSortedByScoreThenName) {
  TrendDetector d(TrendOptions{});
  for (int i = 0; i < 30; ++i) {
    const double dip = (i == 27) ? 3 * kMiB : 0;  // one dip lowers B's Kendall tau, hence its score
    d.Observe(Snap(i, {{"b.Leak", i * kMiB}, {"a.Leak", i * kMiB}, {"c.Leak", i * kMiB - dip}}));
  }
  const std::vector<Suspect> s = d.Suspects();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].class_name, "a.Leak");
  EXPECT_EQ(s[1].class_name, "b.Leak");
  EXPECT_EQ(s[2].class_name, "c.Leak");
  EXPECT_EQ(s[0].score, s[1].score);
  EXPECT_GT(s[1].score, s[2].score);
  EXPECT_GT(s[2].score, 0.0);
}

TEST(TrendDetectorTest, VanishedClassIsNotSuspectAndIsForgotten) {
  TrendOptions o;
  TrendDetector d(o);
  for (int i = 0; i < 20; ++i) d.Observe(Snap(i, {{"C", i * kMiB}, {"Flat", kMiB}}));
  ASSERT_TRUE(d.SuspectFor("C").has_value());
  EXPECT_EQ(d.tracked_classes(), 2u);
  d.Observe(Snap(20, {{"Flat", kMiB}}));
  EXPECT_FALSE(d.SuspectFor("C").has_value());
  // Forgotten once every snapshot in its history ring (peak_lookback_snapshots of them) has it
  // absent.
  const int forgotten_at = 20 + static_cast<int>(o.peak_lookback_snapshots) - 1;
  for (int i = 21; i <= forgotten_at; ++i) {
    EXPECT_EQ(d.tracked_classes(), 2u) << i;
    d.Observe(Snap(i, {{"Flat", kMiB}}));
  }
  EXPECT_EQ(d.tracked_classes(), 1u);
  // A class that comes back starts from a clean history (its old samples are zero, not stale).
  for (int i = forgotten_at + 1; i < forgotten_at + 40; ++i) {
    d.Observe(Snap(i, {{"C", kMiB}, {"Flat", kMiB}}));
    EXPECT_FALSE(d.SuspectFor("C").has_value());
  }
}

// Deterministic pseudo-random series with several kinds of classes, for the replay tests.
std::vector<Snapshot> MixedHistory(int n) {
  std::vector<Snapshot> out;
  uint64_t x = 88172645463325252ull;
  auto next = [&x] {  // xorshift64
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<double>(x % 1000) / 1000.0;
  };
  for (int i = 0; i < n; ++i) {
    std::vector<std::pair<std::string, double>> rows = {
        {"leak.Steady", (2 + i) * kMiB + next() * 1e5},
        {"leak.Late", i > 40 ? (i - 40) * 2 * kMiB + 3 * kMiB * next() : 0},
        {"cache.Plateau", std::min(i, 20) * 3 * kMiB},
        {"buffer.Saw", (i % 4) * 10 * kMiB},
        {"noise.Flat", 50 * kMiB * (1 + 0.1 * next())},
    };
    if (i % 7 != 3) rows.push_back({"sometimes.Absent", 4 * kMiB});
    out.push_back(
        Snap(i, rows, absl::Seconds(60) + absl::Milliseconds(static_cast<int>(next() * 9000))));
  }
  return out;
}

TEST(TrendDetectorTest, DeterministicAndReplayable) {
  const std::vector<Snapshot> history = MixedHistory(120);
  TrendDetector live(TrendOptions{});
  std::vector<std::vector<Suspect>> seen;
  for (const Snapshot& s : history) {
    live.Observe(s);
    seen.push_back(live.Suspects());
  }
  // A daemon restart: a new detector replays the stored history and ends in the same state, with
  // the same suspects at every step along the way.
  TrendDetector replay(TrendOptions{});
  for (size_t i = 0; i < history.size(); ++i) {
    replay.Observe(history[i]);
    ASSERT_EQ(replay.Suspects(), seen[i]) << "snapshot " << i;
  }
  // The mixed history does exercise both outcomes.
  bool steady = false, saw = false, plateau_late = false;
  for (const Suspect& s : seen.back()) {
    steady |= s.class_name == "leak.Steady";
    saw |= s.class_name == "buffer.Saw";
    plateau_late |= s.class_name == "cache.Plateau";
  }
  EXPECT_TRUE(steady);
  EXPECT_FALSE(saw);
  EXPECT_FALSE(plateau_late);
  EXPECT_TRUE(live.SuspectFor("leak.Late").has_value());
}

TEST(TrendDetectorTest, PartialReplayReproducesStatisticsOfRestoredSuspects) {
  // Replaying only the last warmup_snapshots + peak_lookback_snapshots snapshots gives the same
  // per-class statistics; every suspect it restores is a live suspect with the same figures
  // (first_seen aside), and a leak young enough to pass the entry conditions in the replayed span
  // is restored.
  const TrendOptions o;
  const std::vector<Snapshot> history = MixedHistory(120);
  TrendDetector live(o);
  for (const Snapshot& s : history) live.Observe(s);
  TrendDetector partial(o);
  const size_t k = o.warmup_snapshots + o.peak_lookback_snapshots;
  for (size_t i = history.size() - k; i < history.size(); ++i) partial.Observe(history[i]);
  const std::vector<Suspect> restored = partial.Suspects();
  ASSERT_FALSE(restored.empty());
  bool late = false;
  for (Suspect s : restored) {
    const auto l = live.SuspectFor(s.class_name);
    ASSERT_TRUE(l.has_value()) << s.class_name;
    s.first_seen = l->first_seen;
    EXPECT_EQ(s, *l);
    late |= s.class_name == "leak.Late";
  }
  EXPECT_TRUE(late);
}

TEST(TrendDetectorTest, MovedDetectorKeepsState) {
  TrendDetector d(TrendOptions{});
  for (int i = 0; i < 20; ++i) d.Observe(Snap(i, {{"C", i * kMiB}}));
  TrendDetector moved = std::move(d);
  ASSERT_TRUE(moved.SuspectFor("C").has_value());
  moved.Observe(Snap(20, {{"C", 20 * kMiB}}));
  EXPECT_EQ(moved.SuspectFor("C")->bytes, static_cast<uint64_t>(20 * kMiB));
}

}  // namespace
}  // namespace heapwatch::diff

namespace heapwatch::diff {
namespace {

// `-all` histograms (no GC first) carry garbage that only ever adds bytes. A snapshot taken with -all
// counts each class as the smaller of its value and the previous snapshot's raw value, so an
// isolated garbage spike is dropped. Without that, one spike is an earlier peak that a real leak
// must beat (test D) before it can be flagged: the same series reported as live histograms (where
// bytes are real, so the spike counts) is not flagged within 40 snapshots.
TEST(TrendDetectorTest, AllObjectsSnapshotsDropAnIsolatedGarbageSpike) {
  auto first_flagged = [](HistogramMode mode) {
    TrendDetector d(TrendOptions{});
    for (int i = 0; i < 40; ++i) {
      double c = 20 * kMiB + i * 2 * kMiB;  // a steady leak
      if (i == 8) c += 200 * kMiB;          // one histogram full of garbage
      Snapshot s = Snap(i, {{"C", c}, {"Flat", 5 * kMiB}});
      s.cost.mode = mode;
      d.Observe(s);
      if (d.SuspectFor("C")) return i;
    }
    return -1;
  };
  EXPECT_EQ(first_flagged(HistogramMode::kLive), -1) << "the spike must veto when it is real";
  const int flagged = first_flagged(HistogramMode::kAll);
  EXPECT_GE(flagged, 0);
  EXPECT_LE(flagged, 25);
}

TEST(TrendDetectorTest, AllObjectsSnapshotsStillFlagASteadyLeak) {
  TrendDetector d(TrendOptions{});
  bool flagged = false;
  for (int i = 0; i < 30 && !flagged; ++i) {
    Snapshot s = Snap(i, {{"C", 20 * kMiB + i * 2 * kMiB}, {"Flat", 5 * kMiB}});
    s.cost.mode = HistogramMode::kAll;
    d.Observe(s);
    flagged = d.SuspectFor("C").has_value();
  }
  EXPECT_TRUE(flagged);
  const auto s = d.SuspectFor("C");
  ASSERT_TRUE(s.has_value());
  // The slope is the leak's (2 MiB a minute), not changed by the one-snapshot lag.
  EXPECT_NEAR(s->growth_bytes_per_second, 2 * kMiB / 60, 0.05 * 2 * kMiB / 60);
}

// ObserveKeyed (LeakDetector's path: rows by class id) keeps exactly the state Observe keeps:
// same suspects with every figure, same explanations, same tracked classes, over leaks, noise,
// -all snapshots, rows in changing order, a class on two rows, and classes that vanish long enough
// to be forgotten and come back.
TEST(TrendDetectorTest, ObserveKeyedKeepsTheSameStateAsObserve) {
  TrendOptions o;
  o.min_growth_bytes = 1000;
  TrendDetector by_name(o), by_key(o);
  std::mt19937_64 rng(11);
  const int kClasses = 40;
  std::vector<std::string> names;
  for (int c = 0; c < kClasses; ++c) names.push_back("com.example.C" + std::to_string(c));
  for (int k = 0; k < 300; ++k) {
    Snapshot s;
    s.agent = AgentId("a");
    s.time = absl::FromUnixSeconds(1'700'000'000 + 10 * k);
    s.cost.mode = k % 7 == 0 ? HistogramMode::kAll : HistogramMode::kLive;
    std::vector<int> order;
    for (int c = 0; c < kClasses; ++c) {
      // Classes 30..39 vanish for 60 snapshots (longer than the ring) now and then.
      if (c >= 30 && (k / 60) % 2 == 1) continue;
      order.push_back(c);
    }
    if (k % 5 == 0) std::shuffle(order.begin(), order.end(), rng);
    if (k % 3 == 0) order.push_back(order.front());  // a class on two rows
    std::vector<TrendDetector::KeyedRow> keyed;
    for (int c : order) {
      // Classes 0..9 leak at various rates, the others are noise around a level.
      const uint64_t level = 10000 + 1000 * static_cast<uint64_t>(c);
      const uint64_t bytes = c < 10 ? level + static_cast<uint64_t>(k) * (50 + 40 * c) + rng() % 300
                                    : level + rng() % 3000;
      s.histogram.rows.push_back({names[c], "", bytes / 8, bytes});
      keyed.push_back({static_cast<uint32_t>(c), names[c], bytes, bytes / 8});
    }
    ASSERT_EQ(by_name.Observe(s), by_key.ObserveKeyed(s.time, s.agent, s.cost.mode, keyed));
    ASSERT_EQ(by_name.Suspects(), by_key.Suspects()) << "snapshot " << k;
    ASSERT_EQ(by_name.tracked_classes(), by_key.tracked_classes()) << "snapshot " << k;
    for (int c = 0; c < kClasses; c += 7) {
      ASSERT_EQ(by_name.Explain(names[c]), by_key.Explain(names[c])) << k << " " << names[c];
      ASSERT_EQ(by_name.Tracks(names[c]), by_key.TracksKey(static_cast<uint32_t>(c)));
    }
  }
  EXPECT_FALSE(by_key.Suspects().empty());
  // An older snapshot is refused by both paths alike.
  EXPECT_FALSE(by_key.ObserveKeyed(absl::FromUnixSeconds(1'700'000'000), AgentId("a"),
                                   HistogramMode::kLive, {}));
}

// Samples are kept in 32 bits while they fit: a class that passes 2^32 bytes and instances keeps
// exact values. Scaling every value and min_growth_bytes by 2^20 scales every figure by 2^20
// exactly (Mann-Kendall, Theil-Sen and the tests are scale-equivariant, and a power of two
// multiplies doubles exactly), so the scaled run, whose leaks cross 4 GiB midway, must report the
// small run's suspects with bytes, instances and slopes times 2^20 and the same p-values; values
// cut to 32 bits or saturated would not.
TEST(TrendDetectorTest, ClassesBeyond32BitsKeepExactValues) {
  constexpr uint64_t kScale = uint64_t{1} << 20;
  TrendOptions small_options;
  small_options.min_growth_bytes = 1000;
  TrendOptions big_options = small_options;
  big_options.min_growth_bytes = small_options.min_growth_bytes * kScale;
  TrendDetector small(small_options), big(big_options);
  std::mt19937_64 rng(5);
  bool crossed = false;
  for (int k = 0; k < 200; ++k) {
    Snapshot a, b;
    a.agent = b.agent = AgentId("a");
    a.time = b.time = absl::FromUnixSeconds(1'700'000'000 + 10 * k);
    a.cost.mode = b.cost.mode = k % 5 == 0 ? HistogramMode::kAll : HistogramMode::kLive;
    for (int c = 0; c < 12; ++c) {
      // Classes 0..5 leak from 3,000 units (3 GiB scaled) by 100-150 a snapshot; the others are
      // noise.
      const uint64_t bytes = c < 6 ? 3000 + static_cast<uint64_t>(k) * (100 + 10 * c) + rng() % 50
                                   : 2000 + rng() % 1500;
      const uint64_t instances = bytes / (c + 1) + 4096;  // > 2^32 scaled, too
      const std::string name = "C" + std::to_string(c);
      a.histogram.rows.push_back({name, "", instances, bytes});
      b.histogram.rows.push_back({name, "", instances * kScale, bytes * kScale});
      crossed = crossed || bytes * kScale > UINT32_MAX;
    }
    ASSERT_TRUE(small.Observe(a));
    ASSERT_TRUE(big.Observe(b));
    std::vector<Suspect> want = small.Suspects();
    for (Suspect& x : want) {
      x.bytes *= kScale;
      x.instances *= kScale;
      x.growth_bytes_per_second *= static_cast<double>(kScale);
      x.growth_instances_per_second *= static_cast<double>(kScale);
      x.window_growth_bytes *= static_cast<double>(kScale);
    }
    ASSERT_EQ(big.Suspects(), want) << "snapshot " << k;
  }
  EXPECT_TRUE(crossed);
  EXPECT_GE(big.Suspects().size(), 3u);
  for (const Suspect& x : big.Suspects()) EXPECT_GT(x.bytes, uint64_t{5} << 30) << x.class_name;
}

// Rows of one class are summed, rows without objects count as 0, and a class without a row has 0:
// whatever the ring position held from capacity snapshots before (the column is overwritten, not
// zeroed first).
TEST(TrendDetectorTest, RowsOfAClassAreSummedAndMissingClassesAreZero) {
  TrendDetector d(TrendOptions{});
  std::vector<double> want;
  for (int k = 0; k < 100; ++k) {
    Snapshot s;
    s.agent = AgentId("a");
    s.time = absl::FromUnixSeconds(1'700'000'000 + k);
    s.histogram.rows.push_back({"Other", "", 1, 8});  // keeps the detector's ring going
    const uint64_t v = 1000 + static_cast<uint64_t>(k);
    switch (k % 5) {
      case 0:
        s.histogram.rows.push_back({"A", "", 0, 0});
        s.histogram.rows.push_back({"A", "", 1, v});
        break;
      case 1:
        s.histogram.rows.push_back({"A", "", 1, v});
        s.histogram.rows.push_back({"A", "", 0, 0});
        break;
      case 2:
        s.histogram.rows.push_back({"A", "", 1, v});
        s.histogram.rows.push_back({"A", "", 2, v});
        break;
      case 3:
        break;  // no row
      case 4:
        s.histogram.rows.push_back({"A", "", 0, 0});
        break;
    }
    want.push_back(k % 5 == 2   ? 2.0 * static_cast<double>(v)
                   : k % 5 >= 3 ? 0.0
                                : static_cast<double>(v));
    ASSERT_TRUE(d.Observe(s));
    std::vector<double> t, y;
    ASSERT_TRUE(d.Window("A", &t, &y) || k < 5);
    if (y.empty()) continue;
    const std::vector<double> tail(want.end() - static_cast<ptrdiff_t>(y.size()), want.end());
    ASSERT_EQ(y, tail) << "snapshot " << k;
  }
}

}  // namespace
}  // namespace heapwatch::diff
