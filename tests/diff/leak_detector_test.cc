// LeakDetector: multi-timescale detection on replayed histories (tests/diff/replay.h), the daily
// cycle veto, the grouping of suspects into leaks, explanations and determinism.
#include "diff/leak_detector.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/diff/replay.h"

namespace heapwatch::diff {
namespace {

using namespace replay;  // NOLINT: the shapes are the vocabulary of these tests

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kHour = 3600, kDay = 86400;

struct Delay {
  bool flagged = false;
  double seconds = 0;  // since the leak started
  double grown = 0;    // growth at detection, in units of G
};

// A leak of `rate` bytes/s on `base` starting after `start` seconds, replayed at `interval` until
// it is flagged or has grown 4G.
Delay LeakDelay(double base, double rate, absl::Duration interval, double start, uint64_t seed,
                const LeakOptions& options = {}) {
  const double g = std::max(static_cast<double>(options.trend.min_growth_bytes),
                            options.trend.min_relative_growth * base);
  std::vector<ReplayClass> classes = Background();
  classes.push_back({"com.example.Leak", LinearLeak(base, rate, start), base * 0.002});
  ReplayOptions r;
  r.interval = interval;
  r.seed = seed;
  r.length = absl::Seconds(start + std::max(4 * g / rate, 20 * absl::ToDoubleSeconds(interval)));
  Delay d;
  ReplayResult result = Replay(options, classes, r, [&](const LeakDetector& det, double) {
    return det.SuspectFor("com.example.Leak").has_value();
  });
  const ClassOutcome& o = result.classes.back();
  if (o.first_flagged) {
    d.flagged = true;
    d.seconds = *o.first_flagged - start;
    d.grown = d.seconds * rate / g;
  }
  return d;
}

// The sensitivity target: a steady growth of G per T is flagged by the time it has grown
// 2G, whatever the collection interval (1 s to 5 min) and the rate (G per minute to G per 3 days).
// Combinations that would need more than ~300,000 snapshots (1-2 s intervals with G per day or
// slower) run in bench/diff (heapwatch_trend_sweep --replay); those with fewer than 4 snapshots per
// T are below what any interval-based detector can resolve.
TEST(LeakDetectorTest, SteadyGrowthIsFlaggedByTwiceGAtEveryIntervalAndRate) {
  for (double interval : {1.0, 2.0, 10.0, 60.0, 300.0}) {
    for (double per : {60.0, 600.0, kHour, kDay, 3 * kDay}) {
      if (per / interval < 4 || (per * 3 / interval > 300'000)) continue;
      for (uint64_t seed : {1, 2}) {
        const Delay d = LeakDelay(2e6, kMiB / per, absl::Seconds(interval), 600, seed);
        SCOPED_TRACE(absl::StrFormat("interval %gs, G per %gs, seed %d", interval, per, seed));
        ASSERT_TRUE(d.flagged);
        EXPECT_LE(d.grown, 2.0) << d.seconds << " s";
      }
    }
  }
}

// The slow leak: 30 MB/day in a class that already holds 400 MB (G = 40 MB, 10% of it),
// at the daemon's 60 s interval.
TEST(LeakDetectorTest, SlowLeakInALargeClassIsFlagged) {
  const Delay d = LeakDelay(400e6, 30e6 / kDay, absl::Seconds(60), kHour, 3);
  ASSERT_TRUE(d.flagged);
  EXPECT_LE(d.grown, 2.0);
}

// Fast leaks keep the guarantee of scale 0: flagged within 10 snapshots of growth.
TEST(LeakDetectorTest, FastLeakIsFlaggedWithinTenSnapshots) {
  for (double interval : {1.0, 60.0}) {
    const double rate = 2e6 / interval;  // 2 MB per snapshot
    const Delay d = LeakDelay(2e6, rate, absl::Seconds(interval), 600, 5);
    ASSERT_TRUE(d.flagged);
    EXPECT_LE(d.seconds / interval, 10.5) << "interval " << interval;
  }
}

// The session leak: ~32 KB/s at a 2 s interval on a class of 20 MB was never flagged by
// the per-window detector (24 s of growth < 1 MiB). G = 2 MB here (10% of 20 MB).
TEST(LeakDetectorTest, SessionLeakAtTwoSecondsIsFlagged) {
  const Delay d = LeakDelay(20e6, 32e3, absl::Seconds(2), 120, 9);
  ASSERT_TRUE(d.flagged);
  EXPECT_LE(d.grown, 2.0);
}
struct HealthyCase {
  std::string name;
  ReplayClass cls;
  double period = 0;  // seconds; 0 for non-periodic patterns
  HistogramMode mode = HistogramMode::kLive;
};

std::vector<HealthyCase> HealthyCases() {
  return {
      {"daily cycle", {"com.example.Session", DailyCycle(5e6, 200e6), 1e5}, kDay},
      {"smooth daily cycle", {"com.example.Session", SineDay(5e6, 200e6), 1e5}, kDay},
      {"sawtooth 10 min", {"com.example.Buffer", Sawtooth(5e6, 50e6, 600), 1e5}, 600},
      {"sawtooth 1 h", {"com.example.Buffer", Sawtooth(5e6, 50e6, kHour), 1e5}, kHour},
      {"sawtooth 6 h", {"com.example.Buffer", Sawtooth(5e6, 50e6, 6 * kHour), 1e5}, 6 * kHour},
      {"sawtooth 1 day", {"com.example.Buffer", Sawtooth(5e6, 50e6, kDay), 1e5}, kDay},
      {"flat noise", {"com.example.Flat", Flat(50e6), 2e6}},
      {"one-time step", {"com.example.Step", Step(5e6, 50e6, 2 * kHour), 1e5}},
      {"-all garbage", {"com.example.Garbage", Flat(50e6), 1e6, 20e6}, 0, HistogramMode::kAll},
  };
}

// Healthy patterns never raise a leak. A periodic pattern's first rise is, as far as anything can
// tell, growth (nothing earlier to compare it with): it may be flagged during its first period and
// must be cleared then; from the second period on it is never flagged again. Non-periodic ones are
// never flagged. Four days at 60 s and a day and a half at 2 s.
TEST(LeakDetectorTest, HealthyPatternsNeverRaiseALeak) {
  for (double interval : {2.0, 60.0}) {
    for (const HealthyCase& c : HealthyCases()) {
      SCOPED_TRACE(absl::StrFormat("%s at %gs", c.name, interval));
      std::vector<ReplayClass> classes = Background();
      classes.push_back(c.cls);
      ReplayOptions r;
      r.interval = absl::Seconds(interval);
      r.length = absl::Seconds(interval < 10 ? 1.5 * kDay : 4 * kDay);
      r.mode = c.mode;
      const ReplayResult res = Replay(LeakOptions{}, classes, r);
      for (size_t i = 0; i + 1 < classes.size(); ++i) {
        EXPECT_FALSE(res.classes[i].first_flagged) << classes[i].name;
      }
      const ClassOutcome& o = res.classes.back();
      if (c.period == 0) {
        EXPECT_FALSE(o.first_flagged) << "at " << o.first_flagged.value_or(0) << " s";
        continue;
      }
      if (!o.first_flagged) continue;
      EXPECT_LT(*o.last_flagged, c.period) << o.episodes << " episodes";
      EXPECT_FALSE(o.flagged_at_end);
    }
  }
}

// A cache that fills for 2 h and then plateaus may be flagged while it fills, and is cleared within
// a few buckets of the scale it was flagged on (buckets of at most a quarter of the fill here).
TEST(LeakDetectorTest, CacheIsClearedSoonAfterItsPlateau) {
  for (double interval : {2.0, 60.0}) {
    std::vector<ReplayClass> classes = Background();
    classes.push_back({"com.example.Cache", Fill(5e6, 50e6, kHour, 3 * kHour), 1e5});
    ReplayOptions r;
    r.interval = absl::Seconds(interval);
    r.length = absl::Seconds(12 * kHour);
    const ReplayResult res = Replay(LeakOptions{}, classes, r);
    const ClassOutcome& o = res.classes.back();
    ASSERT_TRUE(o.first_flagged) << "a 2 h fill of 45 MB looks like a leak while it lasts";
    EXPECT_FALSE(o.flagged_at_end);
    ASSERT_TRUE(o.last_cleared);
    EXPECT_LE(*o.last_cleared - 3 * kHour, 2 * kHour) << "interval " << interval;
  }
}

// A fill shorter than the detection delay is never flagged.
TEST(LeakDetectorTest, ShortFillIsNeverFlagged) {
  std::vector<ReplayClass> classes = Background();
  // 10 MB in 3 snapshots of 60 s: fast, but over before any scale has min_snapshots of growth.
  classes.push_back({"com.example.Cache", Fill(5e6, 10e6, kHour, kHour + 180), 1e4});
  ReplayOptions r;
  r.length = absl::Seconds(2 * kDay);
  const ReplayResult res = Replay(LeakOptions{}, classes, r);
  EXPECT_FALSE(res.classes.back().first_flagged);
}

// The daily-cycle veto is what keeps the second and later days quiet: without it (cycle_lookback 0)
// the morning rise of every day is flagged on some scale.
TEST(LeakDetectorTest, WithoutTheCycleVetoEveryMorningIsALeak) {
  LeakOptions options;
  options.cycle_lookback = absl::ZeroDuration();
  std::vector<ReplayClass> classes = Background();
  classes.push_back({"com.example.Session", DailyCycle(5e6, 200e6), 1e5});
  ReplayOptions r;
  r.length = absl::Seconds(4 * kDay);
  const ReplayResult res = Replay(options, classes, r);
  EXPECT_GE(res.classes.back().episodes, 3u);
}

// The cycle veto keeps its maxima in 32 bits where they fit: a class of more than 4 GiB keeps exact
// 64-bit maxima, so its daily cycle is vetoed like a small one's (maxima saturated at 4 GiB or
// wrapped around would let every morning's rise through, as without the veto).
TEST(LeakDetectorTest, CycleVetoHoldsForAClassAbove4GiB) {
  for (bool veto : {false, true}) {
    LeakOptions options;
    if (!veto) options.cycle_lookback = absl::ZeroDuration();
    std::vector<ReplayClass> classes = Background();
    classes.push_back({"com.example.Session", DailyCycle(4.5e9, 2e9), 1e6});
    ReplayOptions r;
    r.length = absl::Seconds(4 * kDay);
    double peak_threshold = 0;
    const ReplayResult res = Replay(options, classes, r, [&](const LeakDetector& d, double t) {
      if (veto && t > 3.5 * kDay) {
        const Explanation e = d.Explain("com.example.Session");
        if (e.cycle_veto) peak_threshold = std::max(peak_threshold, e.cycle_veto->threshold);
      }
      return false;
    });
    if (veto) {
      EXPECT_LE(res.classes.back().episodes, 1u) << "only the first morning may be flagged";
      EXPECT_FALSE(res.classes.back().flagged_at_end);
      // The past peak (6.5 GB) plus a quarter of G.
      EXPECT_GT(peak_threshold, 6.4e9);
    } else {
      EXPECT_GE(res.classes.back().episodes, 3u);
    }
  }
}

// A leak on top of a daily cycle (peaks rise every day) is still found.
TEST(LeakDetectorTest, LeakOnTopOfADailyCycleIsFlagged) {
  std::vector<ReplayClass> classes = Background();
  const Shape cycle = DailyCycle(5e6, 100e6);
  classes.push_back({"com.example.Session",
                     [cycle](double t) { return cycle(t) + (t > kDay ? 30e6 * (t - kDay) / kDay : 0); },
                     1e5});
  ReplayOptions r;
  r.length = absl::Seconds(5 * kDay);
  const ReplayResult res = Replay(LeakOptions{}, classes, r, [](const LeakDetector& d, double t) {
    return t > 1.5 * kDay && d.SuspectFor("com.example.Session").has_value();
  });
  EXPECT_TRUE(res.classes.back().flagged_at_end) << "30 MB/day under a 100 MB daily cycle";
}

// One leak, six classes: an event object with its double[], byte[], String, Long and map node, all
// growing together (the six-suspect program), is one leak named by the event class.
std::vector<ReplayClass> EventLeak(double rate_events, double start) {
  // Per event: 40 B event, 816 B double[100], 1040 B byte[1024], 56 B String+chars, 16 B Long,
  // 32 B node.
  auto per = [=](double bytes) { return LinearLeak(1e5, rate_events * bytes, start); };
  return {{"com.example.Event", per(40), 0},
          {"double[]", per(816), 0},
          {"byte[]", [=](double t) { return 20e6 + (t > start ? rate_events * 1040 * (t - start) : 0); }, 0},
          {"java.lang.String", [=](double t) { return 8e6 + (t > start ? rate_events * 56 * (t - start) : 0); }, 0},
          {"java.lang.Long", per(16), 0},
          {"java.util.concurrent.ConcurrentHashMap$Node", per(32), 0}};
}

TEST(LeakDetectorTest, ClassesGrowingTogetherAreOneLeak) {
  std::vector<ReplayClass> classes = EventLeak(2000, 300);  // 2,000 events/s, about 4 MB/s
  classes.push_back({"com.example.Small", Flat(1e5), 2e4});
  ReplayOptions r;
  r.interval = absl::Seconds(2);
  r.length = absl::Seconds(900);
  LeakDetector* seen = nullptr;
  std::vector<Leak> leaks;
  std::vector<Suspect> suspects;
  Replay(LeakOptions{}, classes, r, [&](const LeakDetector& d, double t) {
    if (t < 600) return false;
    leaks = d.Leaks();
    suspects = d.Suspects();
    return true;
  });
  (void)seen;
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ(leaks[0].main_class, "com.example.Event");
  EXPECT_EQ(leaks[0].classes.size(), 6u);
  EXPECT_EQ(suspects.size(), 6u);
  for (const Suspect& s : suspects) EXPECT_EQ(s.leak, leaks[0].id) << s.class_name;
  EXPECT_NE(leaks[0].id.find('L'), std::string::npos);
  EXPECT_EQ(leaks[0].id.size(), 13u);
}

// Two unrelated leaks whose increments are independent (bursty, uncorrelated) are two leaks.
TEST(LeakDetectorTest, IndependentLeaksAreSeparateLeaks) {
  LeakDetector detector{LeakOptions{}};
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> burst(1.0);
  Snapshot s;
  s.agent = AgentId("a");
  double a = 1e6, b = 1e6;
  for (int i = 0; i < 200; ++i) {
    s.time = absl::FromUnixSeconds(1'700'000'000 + 2 * i);
    a += 2e5 * burst(rng);
    b += 3e5 * burst(rng);
    s.histogram.rows = {{"com.example.A", "", 1, static_cast<uint64_t>(a)},
                        {"com.example.B", "", 1, static_cast<uint64_t>(b)}};
    detector.Observe(s);
  }
  ASSERT_EQ(detector.Suspects().size(), 2u);
  EXPECT_EQ(detector.Leaks().size(), 2u);
}

// An extended dump's accumulation points override the correlation: same point, one leak; different
// points, different leaks. The leak then names its accumulation point.
TEST(LeakDetectorTest, AccumulationPointsDecideTheGrouping) {
  LeakDetector detector{LeakOptions{}};
  Snapshot s;
  s.agent = AgentId("a");
  for (int i = 0; i < 60; ++i) {
    s.time = absl::FromUnixSeconds(1'700'000'000 + 2 * i);
    const uint64_t v = 1'000'000 + 300'000 * static_cast<uint64_t>(i);
    s.histogram.rows = {{"com.example.A", "", 1, v}, {"com.example.B", "", 1, 2 * v},
                        {"byte[]", "", 1, 3 * v}};
    detector.Observe(s);
  }
  ASSERT_EQ(detector.Leaks().size(), 1u) << "lockstep growth";
  const std::string id = detector.Leaks()[0].id;
  detector.SetAccumulationPoints({{"com.example.A", "0x1", "java.util.HashMap"},
                                  {"com.example.B", "0x2", "java.util.ArrayList"},
                                  {"byte[]", "0x1", "java.util.HashMap"}});
  std::vector<Leak> leaks = detector.Leaks();
  ASSERT_EQ(leaks.size(), 2u);
  for (const Leak& l : leaks) {
    if (l.main_class == "com.example.A") {
      EXPECT_EQ(l.accumulation_point, "java.util.HashMap");
      ASSERT_EQ(l.classes.size(), 2u);
    } else {
      EXPECT_EQ(l.main_class, "com.example.B");
      EXPECT_EQ(l.accumulation_point, "java.util.ArrayList");
    }
  }
  // The group that kept the most classes keeps the id.
  EXPECT_TRUE(detector.LeakFor(id).has_value());
  EXPECT_EQ(detector.LeakFor(id)->main_class, "com.example.A");
}

// A point that lies inside another suspect class's growing structure groups its class with that
// one: a Cleaner's PhantomCleanable list (class B = the list's nodes, point = the CleanerImpl that
// holds the list) holds the Connections (class A, point = the list's first node, an instance of B
// whose immediate dominator is B's point). A point of B's class elsewhere (another list, not under
// B's point) does not, and neither does one whose class is not a suspect.
TEST(LeakDetectorTest, PointInsideAnotherSuspectsStructureIsThatLeak) {
  LeakDetector detector{LeakOptions{}};
  Snapshot s;
  s.agent = AgentId("a");
  for (int i = 0; i < 60; ++i) {
    s.time = absl::FromUnixSeconds(1'700'000'000 + 2 * i);
    const uint64_t v = 1'000'000 + 300'000 * static_cast<uint64_t>(i);
    s.histogram.rows = {{"com.example.Connection", "", 1, v},
                        {"jdk.internal.ref.CleanerImpl$PhantomCleanableRef", "", 1, 2 * v},
                        {"com.example.Other", "", 1, 3 * v},
                        {"com.example.Stray", "", 1, 4 * v}};
    detector.Observe(s);
  }
  ASSERT_EQ(detector.Leaks().size(), 1u) << "lockstep growth";
  using Point = LeakDetector::AccumulationPoint;
  detector.SetAccumulationPoints(
      {Point{"com.example.Connection", "0x10", "jdk.internal.ref.CleanerImpl$PhantomCleanableRef",
             {"0x1", "0x9"}},
       Point{"jdk.internal.ref.CleanerImpl$PhantomCleanableRef", "0x1",
             "jdk.internal.ref.CleanerImpl", {"0x9"}},
       // Another list of the same node class, under a different holder: not nested.
       Point{"com.example.Other", "0x20", "jdk.internal.ref.CleanerImpl$PhantomCleanableRef",
             {"0x2", "0x9"}},
       // A point of a class that is not a suspect: its own leak.
       Point{"com.example.Stray", "0x30", "java.util.HashMap", {"0x1"}}});
  std::vector<Leak> leaks = detector.Leaks();
  ASSERT_EQ(leaks.size(), 3u);
  bool cleaner = false;
  for (const Leak& l : leaks) {
    if (l.main_class != "com.example.Connection") continue;
    cleaner = true;
    EXPECT_EQ(l.accumulation_point, "jdk.internal.ref.CleanerImpl");
    std::vector<std::string> names;
    for (const LeakClass& c : l.classes) names.push_back(c.class_name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{
                         "com.example.Connection",
                         "jdk.internal.ref.CleanerImpl$PhantomCleanableRef"}));
  }
  EXPECT_TRUE(cleaner);

  // Without the dominators (reports stored before they were recorded) the points differ: two leaks.
  detector.SetAccumulationPoints(
      {Point{"com.example.Connection", "0x10", "jdk.internal.ref.CleanerImpl$PhantomCleanableRef",
             {}},
       Point{"jdk.internal.ref.CleanerImpl$PhantomCleanableRef", "0x1",
             "jdk.internal.ref.CleanerImpl", {}}});
  const std::optional<Suspect> connection = detector.SuspectFor("com.example.Connection");
  const std::optional<Suspect> node =
      detector.SuspectFor("jdk.internal.ref.CleanerImpl$PhantomCleanableRef");
  ASSERT_TRUE(connection && node);
  EXPECT_NE(connection->leak, node->leak);
}

TEST(LeakDetectorTest, ExplainShowsEveryScaleAndTest) {
  LeakDetector detector{LeakOptions{}};
  Snapshot s;
  s.agent = AgentId("a");
  for (int i = 0; i < 120; ++i) {
    s.time = absl::FromUnixSeconds(1'700'000'000 + 2 * i);
    s.histogram.rows = {{"com.example.Leak", "", 1, 1'000'000 + 200'000 * static_cast<uint64_t>(i)},
                        {"com.example.Flat", "", 1, 5'000'000}};
    detector.Observe(s);
  }
  const Explanation leak = detector.Explain("com.example.Leak");
  EXPECT_TRUE(leak.known);
  EXPECT_TRUE(leak.suspect);
  EXPECT_FALSE(leak.leak.empty());
  ASSERT_GE(leak.scales.size(), 2u);
  EXPECT_EQ(leak.scales[0].time_scale, absl::ZeroDuration());
  EXPECT_EQ(leak.scales[1].time_scale, absl::Seconds(4));
  ASSERT_FALSE(leak.scales[0].tests.empty());
  EXPECT_EQ(leak.scales[0].tests[0].test, "A significance");
  EXPECT_TRUE(leak.scales[0].suspect);
  for (const TestExplanation& t : leak.scales[0].tests) EXPECT_TRUE(t.pass) << t.test;
  ASSERT_TRUE(leak.cycle_veto);
  EXPECT_TRUE(leak.cycle_veto->pass);

  const Explanation flat = detector.Explain("com.example.Flat");
  EXPECT_TRUE(flat.known);
  EXPECT_FALSE(flat.suspect);
  ASSERT_FALSE(flat.scales.empty());
  bool failed = false;
  for (const TestExplanation& t : flat.scales[0].tests) failed = failed || !t.pass;
  EXPECT_TRUE(failed);

  EXPECT_FALSE(detector.Explain("com.example.Unknown").known);
}

TEST(LeakDetectorTest, ReplayingTheSameHistoryGivesTheSameLeaksAndEpisodes) {
  auto run = [] {
    LeakDetector detector{LeakOptions{}};
    std::vector<ReplayClass> classes = EventLeak(500, 200);
    classes.push_back({"com.example.Cache", Fill(5e6, 30e6, 100, 400), 1e5});
    std::mt19937_64 rng(3);
    std::normal_distribution<double> normal(0, 1);
    Snapshot s;
    s.agent = AgentId("a");
    for (int i = 0; i < 600; ++i) {
      const double t = 2.0 * i;
      s.time = absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(t);
      s.histogram.rows.clear();
      for (const ReplayClass& c : classes) {
        s.histogram.rows.push_back(
            {c.name, "", 1, static_cast<uint64_t>(c.shape(t) + c.noise_sd * normal(rng))});
      }
      detector.Observe(s);
    }
    return std::make_pair(detector.Leaks(), detector.Episodes());
  };
  const auto first = run();
  const auto second = run();
  EXPECT_FALSE(first.second.empty());
  EXPECT_EQ(first.first, second.first);
  EXPECT_EQ(first.second, second.second);
}

TEST(LeakDetectorTest, ValidatesOptions) {
  EXPECT_TRUE(ValidateLeakOptions(LeakOptions{}).ok());
  LeakOptions o;
  o.min_time_scale = absl::ZeroDuration();
  EXPECT_FALSE(ValidateLeakOptions(o).ok());
  o = LeakOptions{};
  o.max_time_scale = absl::Seconds(1);
  EXPECT_FALSE(ValidateLeakOptions(o).ok());
  o = LeakOptions{};
  o.scale_window_buckets = 41;
  EXPECT_FALSE(ValidateLeakOptions(o).ok());
  o = LeakOptions{};
  o.group_min_correlation = 2;
  EXPECT_FALSE(ValidateLeakOptions(o).ok());
  o = LeakOptions{};
  o.trend.max_p_value = 0;
  EXPECT_NE(ValidateLeakOptions(o).message().find("max_p_value"), std::string_view::npos);
  EXPECT_FALSE(LeakDetector::Create(o).ok());
}

// first_seen is the time of a real snapshot, the one at which the class became a suspect, even when
// a bucketed scale (whose buckets are dated by their midpoints) flags it.
TEST(LeakDetectorTest, FirstSeenIsTheSnapshotThatFlaggedIt) {
  LeakDetector detector{LeakOptions{}};
  Snapshot s;
  s.agent = AgentId("a");
  std::vector<absl::Time> times;
  std::optional<absl::Time> flagged_at;
  // 40 KB/s at 2 s on a 20 MB class: too slow for scale 0, found on a bucketed scale.
  for (int i = 0; i < 400 && !flagged_at; ++i) {
    s.time = absl::FromUnixSeconds(1'700'000'001) + absl::Seconds(2 * i);
    times.push_back(s.time);
    s.histogram.rows = {{"com.example.Slow", "", 1,
                         20'000'000 + (i > 20 ? 80'000 * static_cast<uint64_t>(i - 20) : 0)}};
    detector.Observe(s);
    if (std::optional<Suspect> suspect = detector.SuspectFor("com.example.Slow")) {
      EXPECT_GT(suspect->time_scale, absl::ZeroDuration());
      flagged_at = suspect->first_seen;
      EXPECT_EQ(*flagged_at, s.time);
    }
  }
  ASSERT_TRUE(flagged_at);
  s.time += absl::Seconds(2);
  s.histogram.rows[0].bytes += 1'000'000;
  detector.Observe(s);
  ASSERT_TRUE(detector.SuspectFor("com.example.Slow"));
  EXPECT_EQ(detector.SuspectFor("com.example.Slow")->first_seen, *flagged_at);
  EXPECT_EQ(detector.Leaks().at(0).first_seen, *flagged_at);
}

// When the interval stretches (the pause budget), the scales finer than it fall out of use and are
// reset: a leak flagged on them, that then stops, is cleared instead of staying flagged for good.
TEST(LeakDetectorTest, ScalesThatFallOutOfUseDropTheirSuspects) {
  LeakDetector detector{LeakOptions{}};
  Snapshot s;
  s.agent = AgentId("a");
  absl::Time t = absl::FromUnixSeconds(1'700'000'000);
  uint64_t bytes = 20'000'000;
  for (int i = 0; i < 150; ++i, t += absl::Seconds(2)) {  // 5 minutes at 2 s, leaking 40 KB/s
    s.time = t;
    bytes += 80'000;
    s.histogram.rows = {{"com.example.Leak", "", 1, bytes}};
    detector.Observe(s);
  }
  ASSERT_TRUE(detector.SuspectFor("com.example.Leak").has_value());
  EXPECT_GE(detector.time_scales().size(), 8u);  // 4 s to 512 s have had a bucket boundary
  // Then every 10 minutes: still leaking while the fine scales fall out of use (the median
  // interval passes their widths after 8 long intervals), then flat for a day.
  for (int i = 0; i < 12; ++i, t += absl::Minutes(10)) {
    s.time = t;
    bytes += 24'000'000;
    s.histogram.rows = {{"com.example.Leak", "", 1, bytes}};
    detector.Observe(s);
  }
  for (int i = 0; i < 144; ++i, t += absl::Minutes(10)) {
    s.time = t;
    detector.Observe(s);
  }
  EXPECT_FALSE(detector.SuspectFor("com.example.Leak").has_value());
  EXPECT_TRUE(detector.Leaks().empty());
  for (absl::Duration w : detector.time_scales()) EXPECT_GE(w, absl::Minutes(10));
}

TEST(LeakDetectorTest, JdkClasses) {
  EXPECT_TRUE(IsJdkClass("byte[]"));
  EXPECT_TRUE(IsJdkClass("java.lang.String[][]"));
  EXPECT_TRUE(IsJdkClass("java.util.concurrent.ConcurrentHashMap$Node"));
  EXPECT_TRUE(IsJdkClass("jdk.internal.misc.Unsafe"));
  EXPECT_FALSE(IsJdkClass("com.example.Event"));
  EXPECT_FALSE(IsJdkClass("com.example.Event[]"));
  EXPECT_FALSE(IsJdkClass("javalike.Foo"));
}

// LatestClasses: the latest snapshot's classes summed by name (saturating), the top ones by bytes
// with ties by name, then the requested ones that are in the snapshot; each class once. Checked
// against sums computed here over snapshots whose rows change order, repeat names and drop classes.
TEST(LeakDetectorTest, LatestClassesSumsTheLatestSnapshotsRowsByName) {
  LeakDetector detector(LeakOptions{});
  EXPECT_TRUE(detector.LatestClasses(5, {"A"}).empty());
  std::mt19937_64 rng(7);
  for (int k = 0; k < 200; ++k) {
    Snapshot s;
    s.agent = AgentId("a");
    s.time = absl::FromUnixSeconds(1'700'000'000 + k);
    std::vector<std::string> names;
    for (int c = 0; c < 12; ++c) {
      if (rng() % 5 != 0) names.push_back(absl::StrFormat("C%02d", c));  // classes come and go
    }
    if (k % 3 == 0) std::shuffle(names.begin(), names.end(), rng);
    if (k % 4 == 0 && !names.empty()) names.push_back(names.front());  // two class loaders
    std::map<std::string, std::pair<uint64_t, uint64_t>> expected;
    for (const std::string& n : names) {
      const uint64_t bytes = (rng() % 4) * 100;  // many ties, some zero
      s.histogram.rows.push_back({n, "", bytes / 10, bytes});
      expected[n].first += bytes;
      expected[n].second += bytes / 10;
    }
    if (k == 100) {
      // Beyond 64 bits summed: saturates instead of wrapping around.
      s.histogram.rows.push_back({"Huge", "", 1, UINT64_MAX - 5});
      s.histogram.rows.push_back({"Huge", "", 1, 100});
      expected["Huge"] = {UINT64_MAX, 2};
    }
    ASSERT_TRUE(detector.Observe(s));
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> by_bytes(expected.begin(),
                                                                                expected.end());
    std::stable_sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) {
      return a.second.first > b.second.first;  // map order: ties by name
    });
    const size_t top = 4;
    std::vector<ClassTotal> want;
    for (size_t i = 0; i < std::min(top, by_bytes.size()); ++i) {
      want.push_back({by_bytes[i].first, by_bytes[i].second.first, by_bytes[i].second.second});
    }
    const std::vector<std::string> also = {"C11", "Absent", "C00", "C11"};
    for (const std::string& n : also) {
      auto it = expected.find(n);
      if (it == expected.end()) continue;
      if (std::any_of(want.begin(), want.end(),
                      [&](const ClassTotal& c) { return c.class_name == n; }))
        continue;
      want.push_back({n, it->second.first, it->second.second});
    }
    EXPECT_EQ(detector.LatestClasses(top, also), want) << "snapshot " << k;
  }
}
}  // namespace
}  // namespace heapwatch::diff
