#include "daemon/metrics.h"

#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "daemon/metric_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

// Family names declared by "# TYPE <name> <type>" lines of an exposition.
std::set<std::string> FamilyNames(const std::string& text) {
  std::set<std::string> names;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "# TYPE ")) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ');
      names.insert(parts.at(2));
    }
  }
  return names;
}

// Sample lines (not comments) that contain every one of `needles`.
std::vector<std::string> Samples(const std::string& text, std::vector<std::string> needles) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    bool all = true;
    for (const auto& n : needles) all = all && absl::StrContains(line, n);
    if (all) out.emplace_back(line);
  }
  return out;
}

AgentInfo Info(const std::string& id) {
  AgentInfo info;
  info.id = AgentId(id);
  info.host = "box";
  info.pid = 42;
  info.main_class = "com.example.Main";
  info.jvm_version = "17.0.15+6";
  return info;
}

Snapshot Snap(const std::string& agent, int64_t unix_seconds,
              std::vector<std::tuple<std::string, uint64_t, uint64_t>> rows) {
  Snapshot s;
  s.agent = AgentId(agent);
  s.time = absl::FromUnixSeconds(unix_seconds);
  for (auto& [name, instances, bytes] : rows) {
    s.histogram.rows.push_back({name, "", instances, bytes});
  }
  return s;
}

diff::Suspect SuspectOf(const std::string& name, uint64_t bytes) {
  diff::Suspect s;
  s.class_name = name;
  s.score = 0.9;
  s.growth_bytes_per_second = 1234.5;
  s.growth_instances_per_second = 12;
  s.bytes = bytes;
  return s;
}

diff::Leak LeakOf(const std::string& id, const std::string& main_class, double growth) {
  diff::Leak l;
  l.id = id;
  l.main_class = main_class;
  l.growth_bytes_per_second = growth;
  l.classes.push_back({main_class, 1000, growth});
  l.bytes = 1000;
  return l;
}

// The list in metric_names.h is exactly what the daemon registers and exposes once every kind of
// series exists (prometheus-cpp omits families without series from a scrape, so the test creates
// one of each).
TEST(Metrics, ExportedListEqualsWhatIsRegistered) {
  Metrics m;
  m.AddAgent(Info("a1"));
  m.RecordCollection(AgentId("a1"), CollectionResult::kOk, absl::Milliseconds(30));
  m.PublishSnapshot(AgentId("a1"), Snap("a1", 1000, {{"Leak", 10, 1000}}),
                    {SuspectOf("Leak", 1000)}, 5);
  m.SetStoreSize(4096);
  m.RecordRetentionRun(true);
  m.RecordGrpcRequest("ListAgents", "OK");
  m.RecordAuthFailure("wrong_role");
  m.SetCollectionsInFlight(1);
  m.RecordExtendedDump(AgentId("a1"), ExtendedDumpResult::kOk);
  m.ObserveExtendedDumpPause(absl::Milliseconds(400));
  m.ObserveExtendedDumpAnalysis(absl::Seconds(2));
  m.SetExtendedDumpAnalyses(1, 0);
  m.SetSuspectRetained(AgentId("a1"), "Leak", 123456);
  m.PublishLeaks(AgentId("a1"), {LeakOf("L000000000001", "Leak", 1234.5)});
  m.RecordCollectionPause(AgentId("a1"), HistogramMode::kLive, absl::Milliseconds(20));
  m.SetCollectionPlan(AgentId("a1"), absl::Minutes(3), false);
  m.SetLiveSet(AgentId("a1"), LiveSetPoint{absl::Now(), LiveSetSource::kFullGc, 1 << 20, 2 << 20,
                                           4 << 20});
  m.SetWebUrl("http://127.0.0.1:9750");
  m.SetStoreUsage({{"snapshots", 3, 4096}, {"reports", 1, 8192}});
  m.SetClassLoading(AgentId("a1"),
                    ClassLoadingPoint{absl::Now(), 5000, 10, 30 << 20, 32 << 20, 4 << 20}, false);
  m.SetStringTable(AgentId("a1"), 1234, 98765);
  diff::HeapExhaustion forecast;
  forecast.estimate = absl::Seconds(120);
  forecast.soonest = absl::Seconds(100);
  forecast.latest = absl::InfiniteDuration();
  m.SetHeapExhaustion(AgentId("a1"), forecast);
  std::set<std::string> expected(kExportedMetrics.begin(), kExportedMetrics.end());
  EXPECT_EQ(FamilyNames(m.ExpositionText()), expected) << m.ExpositionText();
}

// The cost-of-watching series of an agent: the pause counter (at 0 from the start, so its first
// increase is visible), its histogram by mode, the planned interval, the over-budget flag and the
// live-set gauges; all removed when the JVM exits.
TEST(Metrics, ClassLoadingSeries) {
  Metrics m;
  m.AddAgent(Info("a1"));
  m.SetClassLoading(AgentId("a1"),
                    ClassLoadingPoint{absl::Now(), 5000, 10, 30 << 20, 32 << 20, 4 << 20}, false);
  m.SetClassLoading(AgentId("a1"),
                    ClassLoadingPoint{absl::Now(), 5400, 25, 31 << 20, 32 << 20, 4 << 20}, true);
  const std::string text = m.ExpositionText();
  EXPECT_THAT(text, ::testing::HasSubstr("heapwatch_classes_loaded{agent=\"a1\"} 5375"));
  // The counter counts what was unloaded while watched: 25 - 10.
  EXPECT_THAT(text, ::testing::HasSubstr("heapwatch_classes_unloaded_total{agent=\"a1\"} 15"));
  EXPECT_THAT(text, ::testing::HasSubstr("heapwatch_metaspace_used_bytes{agent=\"a1\"} 32505856"));
  EXPECT_THAT(text, ::testing::HasSubstr("heapwatch_class_loader_leak{agent=\"a1\"} 1"));
  m.RemoveAgent(AgentId("a1"));
  EXPECT_THAT(m.ExpositionText(),
              ::testing::Not(::testing::HasSubstr("heapwatch_classes_loaded{")));
}

// heapwatch_string_table_entries / _bytes: set per agent, not for an unknown agent, gone with it.
TEST(Metrics, StringTableSeries) {
  Metrics m;
  m.AddAgent(Info("a1"));
  m.SetStringTable(AgentId("a1"), 1000, 80000);
  m.SetStringTable(AgentId("a1"), 1500, 120000);
  m.SetStringTable(AgentId("other"), 7, 7);
  const std::string text = m.ExpositionText();
  EXPECT_THAT(text, ::testing::HasSubstr("heapwatch_string_table_entries{agent=\"a1\"} 1500"));
  EXPECT_THAT(text, ::testing::HasSubstr("heapwatch_string_table_bytes{agent=\"a1\"} 120000"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("agent=\"other\"")));
  m.RemoveAgent(AgentId("a1"));
  EXPECT_THAT(m.ExpositionText(),
              ::testing::Not(::testing::HasSubstr("heapwatch_string_table_entries{")));
}

TEST(Metrics, CostOfWatchingSeriesLiveAndDieWithTheAgent) {
  Metrics m;
  m.AddAgent(Info("a1"));
  const std::string zero = m.ExpositionText();
  EXPECT_NE(zero.find(R"(heapwatch_collection_pause_seconds_total{agent="a1"} 0)"),
            std::string::npos)
      << zero;
  m.RecordCollectionPause(AgentId("a1"), HistogramMode::kAllAfterGc, absl::Milliseconds(250));
  m.RecordCollectionPause(AgentId("a1"), HistogramMode::kLive, absl::Milliseconds(500));
  m.SetCollectionPlan(AgentId("a1"), absl::Seconds(170), true);
  m.SetLiveSet(AgentId("a1"), LiveSetPoint{absl::Now(), LiveSetSource::kConcurrentCycle,
                                           700 << 20, 900 << 20, 1024 << 20});
  EXPECT_NE(m.ExpositionText().find(R"(heapwatch_heap_live_growth_bytes_per_second{agent="a1"} 0)"),
            std::string::npos);
  m.SetLiveSetGrowth(AgentId("a1"), 1234.5);
  const std::string text = m.ExpositionText();
  for (const char* series :
       {R"(heapwatch_collection_pause_seconds_total{agent="a1"} 0.75)",
        R"(heapwatch_collection_pause_seconds_count{mode="all_after_gc"} 1)",
        R"(heapwatch_collection_pause_seconds_count{mode="live"} 1)",
        R"(heapwatch_collection_interval_seconds{agent="a1"} 170)",
        R"(heapwatch_pause_budget_exceeded{agent="a1"} 1)",
        R"(heapwatch_heap_live_bytes{agent="a1"} 734003200)",
        R"(heapwatch_heap_capacity_bytes{agent="a1"} 943718400)",
        R"(heapwatch_heap_max_bytes{agent="a1"} 1073741824)",
        R"(heapwatch_heap_live_growth_bytes_per_second{agent="a1"} 1234.5)"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
  m.RemoveAgent(AgentId("a1"));
  const std::string after = m.ExpositionText();
  EXPECT_EQ(after.find(R"(agent="a1")"), std::string::npos) << after;
  // The per-mode histogram is not per agent: it stays.
  EXPECT_NE(after.find(R"(heapwatch_collection_pause_seconds_count{mode="live"} 1)"),
            std::string::npos);
}

// The store's use per kind: one series per kind in both families.
TEST(Metrics, StoreUsagePerKind) {
  Metrics m;
  m.SetStoreUsage({{"snapshots", 3, 4096}, {"reports", 2, 8192}});
  m.SetStoreUsage({{"snapshots", 5, 12288}, {"reports", 2, 8192}});
  const std::string text = m.ExpositionText();
  for (const char* series : {R"(heapwatch_store_bytes{kind="snapshots"} 12288)",
                             R"(heapwatch_store_bytes{kind="reports"} 8192)",
                             R"(heapwatch_store_records{kind="snapshots"} 5)",
                             R"(heapwatch_store_records{kind="reports"} 2)"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
}

TEST(Metrics, NamesFollowPrometheusConventions) {
  for (std::string_view name : kExportedMetrics) {
    EXPECT_TRUE(name.starts_with("heapwatch_")) << name;
    EXPECT_EQ(name.find("milliseconds"), std::string_view::npos) << name << ": use base units";
  }
  EXPECT_TRUE(metric_names::kCollections.ends_with("_total"));
  EXPECT_TRUE(metric_names::kRetentionRuns.ends_with("_total"));
  EXPECT_TRUE(metric_names::kGrpcRequests.ends_with("_total"));
  EXPECT_TRUE(metric_names::kCollectionDuration.ends_with("_seconds"));
  EXPECT_TRUE(metric_names::kStoreSize.ends_with("_bytes"));
  EXPECT_TRUE(metric_names::kExtendedDumps.ends_with("_total"));
  EXPECT_TRUE(metric_names::kSuspectRetained.ends_with("_bytes"));
  EXPECT_TRUE(metric_names::kExtendedDumpPause.ends_with("_seconds"));
  EXPECT_TRUE(metric_names::kExtendedDumpAnalysis.ends_with("_seconds"));
}

TEST(Metrics, ExtendedDumpCountersOutliveTheAgentButRetainedSizesDoNot) {
  Metrics m;
  m.AddAgent(Info("a1"));
  m.SetSuspectRetained(AgentId("a1"), "Leak", 4096);
  m.RecordExtendedDump(AgentId("a1"), ExtendedDumpResult::kError);
  EXPECT_NE(m.ExpositionText().find(
                "heapwatch_suspect_retained_bytes{agent=\"a1\",class=\"Leak\"} 4096"),
            std::string::npos)
      << m.ExpositionText();
  m.RemoveAgent(AgentId("a1"));
  const std::string text = m.ExpositionText();
  EXPECT_EQ(text.find("heapwatch_suspect_retained_bytes{"), std::string::npos) << text;
  EXPECT_NE(text.find("heapwatch_extended_dumps_total{agent=\"a1\",result=\"error\"} 1"),
            std::string::npos)
      << text;
  // An agent never dumped leaves no extended-dump series behind.
  m.AddAgent(Info("a2"));
  EXPECT_NE(m.ExpositionText().find(
                "heapwatch_extended_dumps_total{agent=\"a2\",result=\"error\"} 0"),
            std::string::npos);
  m.RemoveAgent(AgentId("a2"));
  EXPECT_EQ(m.ExpositionText().find("agent=\"a2\""), std::string::npos);
  // Not added (or removed): no retained-size series appears.
  m.SetSuspectRetained(AgentId("a1"), "Leak", 1);
  EXPECT_EQ(m.ExpositionText().find("heapwatch_suspect_retained_bytes{"), std::string::npos);
}

TEST(Metrics, AgentSeriesAppearWithTheAgentAndVanishWhenItExits) {
  Metrics m;
  m.AddAgent(Info("a1"));
  m.AddAgent(Info("a2"));
  std::string text = m.ExpositionText();
  EXPECT_THAT(
      Samples(text, {"heapwatch_agent_info{", "agent=\"a1\"", "main_class=\"com.example.Main\"",
                     "pid=\"42\"", "host=\"box\"", "jvm_version=\"17.0.15+6\""}),
      ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_agent_up{agent=\"a1\"} 1"}), ::testing::SizeIs(1));
  // Counters start at 0 for every result, so rate() sees the first failure.
  EXPECT_THAT(Samples(text, {"heapwatch_collections_total{", "agent=\"a1\""}),
              ::testing::SizeIs(5));
  EXPECT_THAT(Samples(text, {"heapwatch_agents{state=\"up\"} 2"}), ::testing::SizeIs(1));

  m.SetAgentUp(AgentId("a1"), false);
  text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_agent_up{agent=\"a1\"} 0"}), ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_agents{state=\"unreachable\"} 1"}), ::testing::SizeIs(1));

  m.PublishSnapshot(AgentId("a1"), Snap("a1", 1000, {{"X", 1, 100}}), {SuspectOf("X", 100)}, 10);
  m.RecordCollection(AgentId("a1"), CollectionResult::kTimeout, absl::Seconds(10));
  m.RemoveAgent(AgentId("a1"));
  text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"agent=\"a1\""}), ::testing::IsEmpty()) << text;
  EXPECT_THAT(Samples(text, {"heapwatch_agent_up{agent=\"a2\"} 1"}), ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_agents{state=\"up\"} 1"}), ::testing::SizeIs(1));
  // The duration histogram is not per agent and keeps the observations.
  EXPECT_THAT(Samples(text, {"heapwatch_collection_duration_seconds_count 1"}),
              ::testing::SizeIs(1));
  // Collections of a removed agent are not resurrected.
  m.RecordCollection(AgentId("a1"), CollectionResult::kOk, absl::Seconds(1));
  m.PublishSnapshot(AgentId("a1"), Snap("a1", 1001, {{"X", 1, 100}}), {}, 10);
  EXPECT_THAT(Samples(m.ExpositionText(), {"agent=\"a1\""}), ::testing::IsEmpty());
}

TEST(Metrics, ClassSeriesCoverTopClassesPlusSuspectsAndFollowThem) {
  Metrics m;
  m.AddAgent(Info("a"));
  const AgentId a("a");
  // Top 2 by bytes are Big and Mid; Small is exported only while it is a suspect. Rows of one class
  // name are summed (two class loaders).
  m.PublishSnapshot(
      a, Snap("a", 1000, {{"Big", 10, 5000}, {"Mid", 5, 3000}, {"Small", 1, 10}, {"Mid", 1, 1000}}),
      {SuspectOf("Small", 10)}, 2);
  std::string text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{", "class=\"Big\"", "} 5000"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{", "class=\"Mid\"", "} 4000"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_class_instances{", "class=\"Mid\"", "} 6"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{", "class=\"Small\"", "} 10"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_leak_suspect{", "class=\"Small\"", "} 1"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_leak_suspect_score{", "class=\"Small\"", "} 0.9"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(
      Samples(text, {"heapwatch_class_growth_bytes_per_second{", "class=\"Small\"", "} 1234.5"}),
      ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_class_growth_instances_per_second{", "class=\"Small\""}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_leak_suspect{", "class=\"Big\""}), ::testing::IsEmpty());
  EXPECT_THAT(Samples(text, {"heapwatch_agent_last_snapshot_timestamp_seconds{agent=\"a\"} 1000"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{"}), ::testing::SizeIs(3));

  // Small is no longer a suspect and drops out; Mid vanished from the heap; New enters the top 2.
  m.PublishSnapshot(a, Snap("a", 1060, {{"Big", 10, 5000}, {"New", 2, 200}, {"Small", 1, 10}}), {},
                    2);
  text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"class=\"Small\""}), ::testing::IsEmpty()) << text;
  EXPECT_THAT(Samples(text, {"class=\"Mid\""}), ::testing::IsEmpty()) << text;
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{", "class=\"New\"", "} 200"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_leak_suspect"}), ::testing::IsEmpty());
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{"}), ::testing::SizeIs(2));

  // top_classes = 0 exports suspects only.
  m.PublishSnapshot(a, Snap("a", 1120, {{"Big", 10, 5000}, {"Small", 2, 20}}),
                    {SuspectOf("Small", 20)}, 0);
  text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{"}), ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_class_bytes{", "class=\"Small\"", "} 20"}),
              ::testing::SizeIs(1));
}

// The daemon publishes the classes LeakDetector::LatestClasses chose (no second hashing of every
// row's name): the class series must be exactly those of PublishSnapshot from the snapshot's rows,
// through repeated names (several class loaders), ties, classes leaving and entering the top, and
// suspects in and out of the snapshot.
TEST(Metrics, ClassesChosenByTheDetectorExportTheSameSeriesAsTheRows) {
  Metrics from_rows, from_detector;
  from_rows.AddAgent(Info("a"));
  from_detector.AddAgent(Info("a"));
  const AgentId a("a");
  diff::LeakDetector detector(diff::LeakOptions{});
  const std::vector<std::vector<std::tuple<std::string, uint64_t, uint64_t>>> snapshots = {
      {{"Big", 10, 5000}, {"Mid", 5, 500}, {"Small", 1, 10}, {"Tie", 2, 500}},
      {{"Small", 1, 10}, {"Big", 10, 5000}, {"Small", 3, 600}, {"Tie", 2, 500}},
      {{"New", 2, 700}, {"Big", 10, 5000}},
      {{"Big", 10, 5000}, {"Mid", 5, 500}, {"Aaa", 1, 500}, {"Tie", 2, 500}, {"Zero", 0, 0}},
      {{"Zero", 0, 0}},
  };
  const std::vector<std::vector<diff::Suspect>> suspects = {
      {},
      {SuspectOf("Small", 610)},
      {SuspectOf("Small", 0), SuspectOf("Mid", 0)},
      {SuspectOf("Tie", 500)},
      {SuspectOf("Big", 5000)}};
  auto class_lines = [](const std::string& text) {
    std::vector<std::string> out;
    for (const std::string& line : Samples(text, {"heapwatch_"})) {
      if (absl::StrContains(line, "class") || absl::StrContains(line, "last_snapshot")) {
        out.push_back(line);
      }
    }
    return out;
  };
  for (size_t i = 0; i < snapshots.size(); ++i) {
    for (int top : {2, 3}) {
      const Snapshot s = Snap("a", 1000 + static_cast<int64_t>(i) * 2 + (top == 3), snapshots[i]);
      ASSERT_TRUE(detector.Observe(s));
      from_rows.PublishSnapshot(a, s, suspects[i], top);
      std::vector<std::string> names;
      for (const diff::Suspect& x : suspects[i]) names.push_back(x.class_name);
      from_detector.PublishSnapshot(a, s.time, detector.LatestClasses(top, names), suspects[i]);
      const std::vector<std::string> want = class_lines(from_rows.ExpositionText());
      EXPECT_FALSE(want.empty());
      EXPECT_EQ(class_lines(from_detector.ExpositionText()), want)
          << "snapshot " << i << ", top " << top;
    }
  }
}

// One growth series per current leak, labelled with its id and main class; the count per agent
// starts at 0 with the agent; a leak that ends loses its series, one whose main class changes gets
// a new series in place of the old; everything goes with the agent.
TEST(Metrics, LeakSeriesFollowTheCurrentLeaks) {
  Metrics m;
  m.AddAgent(Info("a"));
  const AgentId a("a");
  std::string text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_leaks{agent=\"a\"} 0"}), ::testing::SizeIs(1)) << text;
  EXPECT_THAT(Samples(text, {"heapwatch_leak_growth_bytes_per_second{"}), ::testing::IsEmpty());

  m.PublishLeaks(a, {LeakOf("L00000000000a", "com.example.Event", 5000),
                     LeakOf("L00000000000b", "byte[]", 250.5)});
  text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_leaks{agent=\"a\"} 2"}), ::testing::SizeIs(1)) << text;
  EXPECT_THAT(Samples(text, {"heapwatch_leak_growth_bytes_per_second{", "agent=\"a\"",
                             "leak=\"L00000000000a\"", "main_class=\"com.example.Event\"",
                             "} 5000"}),
              ::testing::SizeIs(1))
      << text;
  EXPECT_THAT(Samples(text, {"heapwatch_leak_growth_bytes_per_second{", "leak=\"L00000000000b\"",
                             "main_class=\"byte[]\"", "} 250.5"}),
              ::testing::SizeIs(1))
      << text;

  // b ended; a's main class changed (an accumulation point named it) and it grows faster.
  m.PublishLeaks(a, {LeakOf("L00000000000a", "com.example.Registry", 7000)});
  text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_leaks{agent=\"a\"} 1"}), ::testing::SizeIs(1)) << text;
  EXPECT_THAT(Samples(text, {"heapwatch_leak_growth_bytes_per_second{"}), ::testing::SizeIs(1))
      << text;
  EXPECT_THAT(Samples(text, {"heapwatch_leak_growth_bytes_per_second{", "leak=\"L00000000000a\"",
                             "main_class=\"com.example.Registry\"", "} 7000"}),
              ::testing::SizeIs(1))
      << text;

  // Leaks of an agent not added are not published; removing the agent removes its leak series.
  m.PublishLeaks(AgentId("other"), {LeakOf("L00000000000c", "X", 1)});
  m.RemoveAgent(a);
  text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_leak"}), ::testing::IsEmpty()) << text;
}

TEST(Metrics, GrpcAndStoreSeries) {
  Metrics m;
  m.RecordGrpcRequest("ListSuspects", "OK");
  m.RecordGrpcRequest("ListSuspects", "OK");
  m.RecordGrpcRequest("GetClassHistory", "NOT_FOUND");
  m.SetStoreSize(1 << 20);
  std::string text = m.ExpositionText();
  EXPECT_THAT(Samples(text, {"heapwatch_grpc_requests_total{", "method=\"ListSuspects\"",
                             "code=\"OK\"", "} 2"}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_grpc_requests_total{", "code=\"NOT_FOUND\""}),
              ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_store_size_bytes 1048576"}), ::testing::SizeIs(1));
  EXPECT_THAT(Samples(text, {"heapwatch_build_info{version="}), ::testing::SizeIs(1));
}

// heapwatch_store_commits_total is exported from 0 and follows SnapshotStore::Commits(), a count
// that only grows: a smaller value (a stale read) does not lower the counter.
TEST(Metrics, StoreCommitsCounterFollowsTheStoresCount) {
  Metrics m;
  EXPECT_THAT(Samples(m.ExpositionText(), {"heapwatch_store_commits_total 0"}),
              ::testing::SizeIs(1));
  m.SetStoreCommits(5);
  EXPECT_THAT(Samples(m.ExpositionText(), {"heapwatch_store_commits_total 5"}),
              ::testing::SizeIs(1));
  m.SetStoreCommits(3);
  EXPECT_THAT(Samples(m.ExpositionText(), {"heapwatch_store_commits_total 5"}),
              ::testing::SizeIs(1));
  m.SetStoreCommits(1234567);
  EXPECT_THAT(Samples(m.ExpositionText(), {"heapwatch_store_commits_total 1234567"}),
              ::testing::SizeIs(1));
}

}  // namespace
}  // namespace heapwatch::daemon

namespace heapwatch::daemon {
namespace {

// The forecast's three series exist only while there is a forecast; an unbounded latest end is +Inf.
TEST(Metrics, HeapExhaustionSeriesComeAndGoWithTheForecast) {
  Metrics m;
  m.AddAgent(Info("a1"));
  diff::HeapExhaustion forecast;
  forecast.estimate = absl::Seconds(120);
  forecast.soonest = absl::Seconds(100);
  forecast.latest = absl::InfiniteDuration();
  m.SetHeapExhaustion(AgentId("a1"), forecast);
  const std::string text = m.ExpositionText();
  EXPECT_NE(text.find("heapwatch_heap_exhaustion_seconds{agent=\"a1\"} 120"), std::string::npos)
      << text;
  EXPECT_NE(text.find("heapwatch_heap_exhaustion_soonest_seconds{agent=\"a1\"} 100"),
            std::string::npos);
  EXPECT_NE(text.find("heapwatch_heap_exhaustion_latest_seconds{agent=\"a1\"} +Inf"),
            std::string::npos);
  m.SetHeapExhaustion(AgentId("a1"), std::nullopt);
  EXPECT_EQ(m.ExpositionText().find("heapwatch_heap_exhaustion"), std::string::npos);
}

}  // namespace
}  // namespace heapwatch::daemon
