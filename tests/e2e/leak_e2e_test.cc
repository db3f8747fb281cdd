// End to end test of "Leaks, not classes" with a real JVM, the real heapwatchd binary, real gRPC,
// real /metrics and a real LMDB store:
//
//  SixSuspectProgramIsOneLeak: EventLeakApp leaks EventLeakApp$Event objects into the static
//    ConcurrentHashMap EVENTS; each event holds a double[], a byte[], a String and a Long, so six
//    classes grow together (the event class, double[], byte[], java.lang.String, java.lang.Long,
//    java.util.concurrent.ConcurrentHashMap$Node). heapwatchd runs at a 1 s interval with automatic
//    escalation. The test asserts that ListLeaks shows exactly one leak for the agent, whose
//    classes include all six and whose main class is the event class; that one extended dump is
//    taken for it; and that once its report exists the leak's accumulation point is the static
//    map's table (java.util.concurrent.ConcurrentHashMap$Node[], reached from class EventLeakApp
//    through "static EVENTS" and then "table", as the report's path shows). /metrics
//    shows one leak series with the event class as main_class. After a SIGTERM restart on the same
//    data dir the leak comes back from the replayed history and the stored report (one leak, all
//    six classes, the same main class and accumulation point). It prints how long each step took.
//
//  KnownPatternProgramsAreOneLeakEach: one heapwatchd watches seven JVMs at once: ThreadLocalPoolApp
//    (a pool's ThreadLocal lists never removed), ListenerApp (method-reference listeners never
//    unregistered from a static bus), FinalizerBacklogApp (finalizable objects queued behind a
//    blocked finalizer thread), CleanerBacklogApp (Cleaner actions capturing their own object) and
//    StaticCacheApp (a static HashMap cache without eviction), all growing, and the clean variants
//    of the first two (ThreadLocalPoolCleanApp, ListenerCleanApp; the other programs' clean variants
//    are checked on their dumps in tests/pipeline). Each leaking JVM must have exactly one leak
//    whose report names its known-leak pattern (thread-local-value / listeners-never-removed /
//    finalizer-backlog / cleaner-backlog / static-collection) with the path through the right
//    fields and the thread names masked; the clean JVMs no leak. It prints how long it took.
//
// The JVM is started from a copy of its jar in the test's own directory and heapwatchd watches only
// that (OwnJarsWatchConfig), so other e2e tests running in parallel are never watched or dumped.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/e2e/daemon_fixture.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/subprocess.h"

namespace heapwatch {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::heapwatch::v1;
using testing::CopyJar;
using testing::MakeTempDir;
using testing::MetricValue;
using testing::OwnJarsWatchConfig;
using testing::ReadFile;
using testing::ReadPort;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitFor;

constexpr char kEventClass[] = "EventLeakApp$Event";
const std::vector<std::string>& SixClasses() {
  static const std::vector<std::string> kSix = {
      kEventClass,        "double[]",       "byte[]",
      "java.lang.String", "java.lang.Long", "java.util.concurrent.ConcurrentHashMap$Node"};
  return kSix;
}
// What the analysis names as the accumulation point of the event leak: the map's bucket array. It
// holds every Node and so (through them) every event; the ConcurrentHashMap object itself only
// dominates it, with a few fields of its own. The path check below ties it to the static map.
constexpr char kAccumulationPoint[] = "java.util.concurrent.ConcurrentHashMap$Node[]";

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out, options).ok());
  return out;
}

std::string Secs(absl::Duration d) { return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d)); }

class LeakEndToEnd : public testing::DaemonFixture {
 protected:
  LeakEndToEnd() : DaemonFixture("heapwatch-leaks") {}

  // Writes `config` to <dir>/heapwatchd.yaml and starts heapwatchd with it.
  void StartDaemon(const std::string& config, absl::Duration interval,
                   const std::string& log_name = "heapwatchd.log") {
    const std::string config_path = dir_ + "/heapwatchd.yaml";
    std::ofstream(config_path) << config;
    DaemonFixture::StartDaemon(config_path, interval, log_name);
  }

  std::vector<v1::Leak> Leaks(const std::string& agent) {
    v1::ListLeaksRequest request;
    request.set_agent(agent);
    const v1::ListLeaksResponse r = Call(&v1::QueryService::Stub::ListLeaks, request);
    return {r.leaks().begin(), r.leaks().end()};
  }
};

std::set<std::string> ClassesOf(const v1::Leak& leak) {
  std::set<std::string> out;
  for (const v1::LeakClass& c : leak.classes()) out.insert(c.class_name());
  return out;
}

bool HasAllSix(const std::set<std::string>& classes) {
  for (const std::string& c : SixClasses()) {
    if (!classes.count(c)) return false;
  }
  return true;
}

std::string LeaksText(const std::vector<v1::Leak>& leaks) {
  std::string out;
  for (const v1::Leak& l : leaks) absl::StrAppend(&out, "\n  ", ToJson(l));
  return out;
}

TEST_F(LeakEndToEnd, SixSuspectProgramIsOneLeak) {
  const absl::Time test_start = absl::Now();
  Subprocess* app = StartJava("EventLeakApp", "1g");
  ASSERT_FALSE(HasFailure());
  const std::string dump_dir = dir_ + "/dumps";
  const std::string config = absl::StrCat(OwnJarsWatchConfig(dir_), R"(collection:
  discovery_interval: 1s
  # Detection at one histogram a second; the pause budget's own tests are elsewhere (1 = no limit).
  pause_budget: 1
  backoff_initial: 2s
  backoff_max: 4s
trend:
  min_growth_bytes: 262144
escalation:
  enabled: true
  auto: true
  min_dump_interval: 1h
  join_window: 20s
  dump_dir: )",
                                          dump_dir, "\n");
  ASSERT_NO_FATAL_FAILURE(StartDaemon(config, absl::Seconds(1)));
  const absl::Time daemon_start = absl::Now();
  const std::string agent = AgentOf(app->pid());
  ASSERT_FALSE(agent.empty()) << DaemonLog();

  // Poll every half second; remember when each thing first happened.
  std::map<std::string, absl::Time> suspect_at;  // class -> first seen as a suspect
  std::optional<absl::Time> all_six_suspects, first_leak, one_leak_with_six, dump_done,
      accumulation_point_at;
  std::vector<v1::Leak> leaks;
  v1::ListReportsResponse reports;
  size_t most_leaks = 0;
  auto poll = [&] {
    const absl::Time now = absl::Now();
    const v1::ListSuspectsResponse suspects =
        Call(&v1::QueryService::Stub::ListSuspects, v1::ListSuspectsRequest());
    for (const v1::Suspect& s : suspects.suspects()) {
      if (s.agent() == agent) suspect_at.emplace(s.class_name(), now);
    }
    std::set<std::string> seen;
    for (const auto& [c, t] : suspect_at) seen.insert(c);
    if (!all_six_suspects && HasAllSix(seen)) all_six_suspects = now;
    leaks = Leaks(agent);
    most_leaks = std::max(most_leaks, leaks.size());
    if (!first_leak && !leaks.empty()) first_leak = now;
    if (!one_leak_with_six && leaks.size() == 1 && HasAllSix(ClassesOf(leaks[0]))) {
      one_leak_with_six = now;
    }
    v1::ListReportsRequest request;
    request.set_agent(agent);
    reports = Call(&v1::QueryService::Stub::ListReports, request);
    for (const v1::ExtendedDump& d : reports.dumps()) {
      if (!dump_done && d.state() == v1::EXTENDED_DUMP_STATE_DONE) dump_done = now;
    }
    if (!accumulation_point_at && dump_done) {
      for (const v1::Leak& l : leaks) {
        if (!l.accumulation_point().empty()) accumulation_point_at = now;
      }
    }
    return one_leak_with_six && accumulation_point_at;
  };
  const bool done = WaitFor(absl::Minutes(5), poll, absl::Milliseconds(500));
  auto since = [&](const std::optional<absl::Time>& t) {
    return t ? Secs(*t - daemon_start) : std::string("never");
  };
  std::cout << "E2E: after heapwatchd started (interval 1 s):" << std::endl;
  for (const auto& [c, t] : suspect_at) {
    std::cout << "E2E:   " << c << " became a suspect at " << Secs(t - daemon_start) << std::endl;
  }
  std::cout << "E2E:   all six suspects at " << since(all_six_suspects) << "; first leak at "
            << since(first_leak) << "; one leak with all six at " << since(one_leak_with_six)
            << "; extended dump DONE at " << since(dump_done)
            << "; leak with an accumulation point at " << since(accumulation_point_at)
            << "; at most " << most_leaks << " leaks at once" << std::endl;
  std::cout << "E2E: leaks now:" << LeaksText(leaks) << std::endl;
  std::cout << "E2E: dumps: " << ToJson(reports) << std::endl;
  ASSERT_TRUE(done) << "no single leak with all six classes and an accumulation point within 5 "
                       "minutes; leaks:"
                    << LeaksText(leaks) << "\n"
                    << DaemonLog();

  // ---- the leak, a few snapshots later: still exactly one, with all six, named right ----
  absl::SleepFor(absl::Seconds(3));
  leaks = Leaks(agent);
  std::cout << "E2E: leaks 3 s later:" << LeaksText(leaks) << std::endl;
  ASSERT_EQ(leaks.size(), 1u) << LeaksText(leaks);
  const v1::Leak& leak = leaks[0];
  EXPECT_EQ(leak.agent(), agent);
  const std::set<std::string> classes = ClassesOf(leak);
  for (const std::string& c : SixClasses()) {
    EXPECT_TRUE(classes.count(c)) << c << " is not in the leak:\n" << ToJson(leak);
  }
  EXPECT_EQ(leak.main_class(), kEventClass) << ToJson(leak);
  EXPECT_EQ(leak.accumulation_point(), kAccumulationPoint) << ToJson(leak);
  EXPECT_GT(leak.growth_bytes_per_second(), 0) << ToJson(leak);
  EXPECT_TRUE(absl::StartsWith(leak.leak(), "L") && leak.leak().size() == 13) << leak.leak();
  // Every suspect of the agent names this leak.
  const v1::ListSuspectsResponse suspects =
      Call(&v1::QueryService::Stub::ListSuspects, v1::ListSuspectsRequest());
  for (const v1::Suspect& s : suspects.suspects()) {
    if (s.agent() == agent) EXPECT_EQ(s.leak(), leak.leak()) << ToJson(s);
  }

  // ---- ExplainSuspect: the live detector says why the event class is a suspect, and in which leak
  // ----
  {
    v1::ExplainSuspectRequest request;
    request.set_agent(agent);
    request.set_class_name(kEventClass);
    const v1::ExplainSuspectResponse e = Call(&v1::QueryService::Stub::ExplainSuspect, request);
    EXPECT_TRUE(e.known()) << ToJson(e);
    EXPECT_TRUE(e.suspect()) << ToJson(e);
    EXPECT_EQ(e.leak(), leak.leak());
    bool some_scale_flags_it = false;
    for (const v1::TrendScale& scale : e.scales()) some_scale_flags_it |= scale.suspect();
    EXPECT_TRUE(some_scale_flags_it) << ToJson(e);
    std::cout << "E2E: ExplainSuspect(" << kEventClass << "): " << e.scales_size() << " time scales"
              << std::endl;
  }

  // ---- one extended dump for the leak; the event's report names the static map's table ----
  int taken = 0;
  const v1::ExtendedDump* done_dump = nullptr;
  for (const v1::ExtendedDump& d : reports.dumps()) {
    if (d.state() == v1::EXTENDED_DUMP_STATE_DUMPING ||
        d.state() == v1::EXTENDED_DUMP_STATE_ANALYZING ||
        d.state() == v1::EXTENDED_DUMP_STATE_DONE) {
      ++taken;
    }
    if (d.state() == v1::EXTENDED_DUMP_STATE_DONE) done_dump = &d;
  }
  EXPECT_EQ(taken, 1) << "one leak must cause one dump: " << ToJson(reports);
  ASSERT_NE(done_dump, nullptr);
  const std::set<std::string> analysed(done_dump->report_classes().begin(),
                                       done_dump->report_classes().end());
  std::cout << "E2E: dump " << done_dump->dump_id() << " analysed " << absl::StrJoin(analysed, ", ")
            << std::endl;
  EXPECT_TRUE(analysed.count(kEventClass)) << ToJson(*done_dump);
  EXPECT_EQ(leak.dump_id(), done_dump->dump_id())
      << "the leak names the dump its accumulation point "
         "comes from: "
      << ToJson(leak);
  v1::GetReportRequest get;
  get.set_agent(agent);
  get.set_class_name(kEventClass);
  const v1::GetReportResponse report = Call(&v1::QueryService::Stub::GetReport, get);
  ASSERT_FALSE(report.report().accumulation_points().empty()) << report.DebugString();
  // One drill-down report per leak: asked by leak id, it is the main class's, with every class.
  v1::GetReportRequest by_leak;
  by_leak.set_agent(agent);
  by_leak.set_leak(leak.leak());
  const v1::GetReportResponse leak_report = Call(&v1::QueryService::Stub::GetReport, by_leak);
  EXPECT_EQ(leak_report.report().class_name(), kEventClass);
  EXPECT_EQ(leak_report.report().leak().leak(), leak.leak());
  EXPECT_EQ(leak_report.report().leak().classes_size(), leak.classes_size());
  EXPECT_EQ(leak_report.report().leak().accumulation_point(), leak.accumulation_point());
  const v1::AccumulationPoint& ap = report.report().accumulation_points(0);
  EXPECT_EQ(ap.object().class_name(), leak.accumulation_point());
  std::string path;
  bool through_static_map = false;
  for (int i = 0; i < ap.path().steps_size(); ++i) {
    const v1::PathStep& step = ap.path().steps(i);
    absl::StrAppend(&path, " -> [", step.reference(), "] ", step.object().class_name());
    if (step.reference() == "static EVENTS" &&
        step.object().class_name() == "java.util.concurrent.ConcurrentHashMap" &&
        i + 1 < ap.path().steps_size() && ap.path().steps(i + 1).reference() == "table" &&
        i + 2 == ap.path().steps_size()) {
      through_static_map = true;
    }
  }
  std::cout << "E2E: accumulation point of " << kEventClass << ":" << path << " (share "
            << ap.share() << ")" << std::endl;
  EXPECT_TRUE(through_static_map)
      << "the accumulation point must be the table of the map in static EVENTS:" << path;
  // The other five classes' reports name the very same object (that is what makes them one leak
  // once the report is in: SetAccumulationPoints groups by object).
  for (const std::string& c : SixClasses()) {
    if (!analysed.count(c)) continue;
    get.set_class_name(c);
    const v1::GetReportResponse r = Call(&v1::QueryService::Stub::GetReport, get);
    if (r.report().accumulation_points().empty()) {
      ADD_FAILURE() << c << " has no accumulation point";
      continue;
    }
    const v1::AccumulationPoint& p = r.report().accumulation_points(0);
    std::cout << "E2E: top accumulation point of " << c << ": " << p.object().class_name() << " @ "
              << absl::StrCat("0x", absl::Hex(p.object().object_id())) << " (share " << p.share()
              << ", " << p.suspect_instances() << " instances)" << std::endl;
    EXPECT_EQ(p.object().object_id(), ap.object().object_id()) << c;
  }

  // ---- heapwatchctl leaks shows the same leak (text), with its accumulation point ----
  {
    const testing::CommandResult ctl = RunCommand(
        {HEAPWATCHCTL, "--server", grpc_address_, "leaks", "--agent", agent}, absl::Seconds(30));
    std::cout << "E2E: heapwatchctl leaks --agent " << agent << ":\n" << ctl.out << std::endl;
    EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
    EXPECT_TRUE(absl::StrContains(ctl.out, leak.leak())) << ctl.out;
    EXPECT_TRUE(absl::StrContains(ctl.out, kEventClass)) << ctl.out;
    EXPECT_TRUE(absl::StrContains(ctl.out, kAccumulationPoint)) << ctl.out;
  }

  // ---- /metrics: one leak series named by the event class; the per-class suspects stay ----
  const std::string metrics = Metrics();
  EXPECT_EQ(MetricValue(metrics, absl::StrCat("heapwatch_leaks{agent=\"", agent, "\"}")), 1.0)
      << metrics;
  const std::optional<double> growth = MetricValue(
      metrics, absl::StrCat("heapwatch_leak_growth_bytes_per_second{agent=\"", agent, "\",leak=\"",
                            leak.leak(), "\",main_class=\"", kEventClass, "\"}"));
  ASSERT_TRUE(growth.has_value()) << metrics;
  EXPECT_GT(*growth, 0);
  for (const std::string& c : SixClasses()) {
    EXPECT_EQ(MetricValue(metrics, absl::StrCat("heapwatch_leak_suspect{agent=\"", agent,
                                                "\",class=\"", c, "\"}")),
              1.0)
        << c;
  }

  // ---- a restart rebuilds the leak from the stored history and the stored report ----
  ASSERT_NO_FATAL_FAILURE(StopDaemon());
  const std::string first_log = DaemonLog();
  const absl::Time restart = absl::Now();
  ASSERT_NO_FATAL_FAILURE(StartDaemon(config, absl::Seconds(1), "heapwatchd-2.log"));
  ASSERT_EQ(AgentOf(app->pid()), agent) << DaemonLog();
  std::vector<v1::Leak> after;
  const bool back = WaitFor(absl::Seconds(30), [&] {
    after = Leaks(agent);
    return after.size() == 1 && HasAllSix(ClassesOf(after[0])) &&
           !after[0].accumulation_point().empty();
  });
  std::cout << "E2E: after the restart (" << Secs(absl::Now() - restart) << "):" << LeaksText(after)
            << std::endl;
  for (absl::string_view line : absl::StrSplit(DaemonLog(), '\n')) {
    if (absl::StrContains(line, "replayed")) std::cout << "E2E: log: " << line << std::endl;
  }
  ASSERT_TRUE(back) << "the leak did not come back after the restart:" << LeaksText(after) << "\n"
                    << DaemonLog();
  EXPECT_EQ(after[0].main_class(), kEventClass);
  EXPECT_EQ(after[0].accumulation_point(), kAccumulationPoint);
  std::cout << "E2E: leak id before the restart " << leak.leak() << ", after " << after[0].leak()
            << std::endl;
  EXPECT_TRUE(absl::StrContains(DaemonLog(), "replayed")) << DaemonLog();
  ASSERT_NO_FATAL_FAILURE(StopDaemon());
  for (absl::string_view line : absl::StrSplit(first_log + DaemonLog(), '\n')) {
    EXPECT_FALSE(absl::StrContains(line, " critical ")) << line;
    if (absl::StrContains(line, " is a leak") || absl::StrContains(line, "no longer a leak") ||
        absl::StrContains(line, "extended dump")) {
      std::cout << "E2E: log: " << line << std::endl;
    }
  }
  std::cout << "E2E: total " << Secs(absl::Now() - test_start) << std::endl;
}

std::vector<std::string> PathReferences(const v1::GcRootPath& path) {
  std::vector<std::string> refs;
  for (int i = 1; i < path.steps_size(); ++i) refs.push_back(path.steps(i).reference());
  return refs;
}

TEST_F(LeakEndToEnd, KnownPatternProgramsAreOneLeakEach) {
  const absl::Time test_start = absl::Now();
  struct Jvm {
    std::string main_class;
    std::string pattern;  // empty for a clean one
    std::string agent;
    Subprocess* process = nullptr;
    std::optional<absl::Time> named_at;  // one leak whose report names the pattern
  };
  std::vector<Jvm> jvms = {{"ThreadLocalPoolApp", "thread-local-value"},
                           {"ListenerApp", "listeners-never-removed"},
                           {"FinalizerBacklogApp", "finalizer-backlog"},
                           {"CleanerBacklogApp", "cleaner-backlog"},
                           {"StaticCacheApp", "static-collection"},
                           {"ThreadLocalPoolCleanApp", ""},
                           {"ListenerCleanApp", ""}};
  for (Jvm& j : jvms) {
    j.process = StartJava(j.main_class, "256m");
    ASSERT_FALSE(HasFailure());
  }
  const std::string config = absl::StrCat(OwnJarsWatchConfig(dir_), R"(collection:
  discovery_interval: 1s
  pause_budget: 1
  backoff_initial: 2s
  backoff_max: 4s
trend:
  min_growth_bytes: 262144
escalation:
  enabled: true
  auto: true
  min_dump_interval: 1h
  join_window: 10s
  dump_dir: )",
                                          dir_, "/dumps\n");
  ASSERT_NO_FATAL_FAILURE(StartDaemon(config, absl::Seconds(1)));
  const absl::Time daemon_start = absl::Now();
  for (Jvm& j : jvms) {
    j.agent = AgentOf(j.process->pid());
    ASSERT_FALSE(j.agent.empty()) << j.main_class << "\n" << DaemonLog();
  }

  auto report_of = [&](const v1::Leak& leak) {
    v1::GetReportRequest get;
    get.set_agent(leak.agent());
    get.set_leak(leak.leak());
    v1::GetReportResponse response;
    grpc::Status status = CallStatus(&v1::QueryService::Stub::GetReport, get, &response);
    return status.ok() ? std::optional<v1::DrillDownReport>(response.report()) : std::nullopt;
  };
  const bool done = WaitFor(
      absl::Minutes(3),
      [&] {
        bool all = true;
        for (Jvm& j : jvms) {
          if (j.pattern.empty() || j.named_at) continue;
          const std::vector<v1::Leak> leaks = Leaks(j.agent);
          if (leaks.size() == 1 && !leaks[0].dump_id().empty()) {
            const auto report = report_of(leaks[0]);
            if (report && report->leak_patterns_size() > 0) j.named_at = absl::Now();
          }
          all = all && j.named_at.has_value();
        }
        return all;
      },
      absl::Seconds(1));
  for (const Jvm& j : jvms) {
    std::cout << "E2E: " << j.main_class << ": "
              << (j.pattern.empty() ? std::string("clean")
                  : j.named_at      ? "pattern named at " + Secs(*j.named_at - daemon_start)
                                    : std::string("pattern never named"))
              << "; leaks:" << LeaksText(Leaks(j.agent)) << std::endl;
  }
  ASSERT_TRUE(done) << DaemonLog();

  for (const Jvm& j : jvms) {
    SCOPED_TRACE(j.main_class);
    const std::vector<v1::Leak> leaks = Leaks(j.agent);
    if (j.pattern.empty()) {
      EXPECT_TRUE(leaks.empty()) << LeaksText(leaks);
      continue;
    }
    ASSERT_EQ(leaks.size(), 1u) << LeaksText(leaks);
    const std::optional<v1::DrillDownReport> report = report_of(leaks[0]);
    ASSERT_TRUE(report.has_value());
    ASSERT_EQ(report->leak_patterns_size(), 1) << ToJson(*report);
    const v1::LeakPatternMatch& m = report->leak_patterns(0);
    EXPECT_EQ(m.pattern_id(), j.pattern) << ToJson(m);
    const std::vector<std::string> refs = PathReferences(m.path());
    std::cout << "E2E: " << j.main_class << " report of " << report->class_name() << ": "
              << m.summary() << "\nE2E:   path: " << absl::StrJoin(refs, " -> ") << std::endl;
    if (j.pattern == "thread-local-value") {
      EXPECT_TRUE(absl::StrContains(m.summary(),
                                    "ThreadLocal static ThreadLocalPoolApp$RequestContext.BUFFERS"))
          << m.summary();
      EXPECT_TRUE(absl::StrContains(m.summary(), "named \"pool-#-thread-#\"")) << m.summary();
      ASSERT_EQ(refs.size(), 4u) << absl::StrJoin(refs, " -> ");
      EXPECT_EQ(refs[0], "threadLocals");
      EXPECT_EQ(refs[1], "table");
      EXPECT_EQ(refs[3], "value");
      EXPECT_EQ(m.path().steps(0).object().thread_name(), "pool-#-thread-#");
    } else if (j.pattern == "listeners-never-removed") {
      EXPECT_TRUE(absl::StrContains(m.summary(),
                                    "listeners registered by ListenerApp$ViewModel "
                                    "(lambda, capturing a ListenerApp$ViewModel) "
                                    "are never removed"))
          << m.summary();
      ASSERT_GE(refs.size(), 3u);
      EXPECT_EQ(absl::StrJoin(refs.end() - 3, refs.end(), " -> "),
                "static BUS -> listeners -> elementData");
    } else if (j.pattern == "finalizer-backlog") {
      EXPECT_TRUE(absl::StrContains(m.summary(), "objects wait for the finalizer thread "
                                                 "(FinalizerBacklogApp$Resource first)"))
          << m.summary();
      ASSERT_FALSE(refs.empty());
      EXPECT_LE(refs.size(), 8u) << "the path goes to the queue's head";
      EXPECT_TRUE(absl::StrContains(refs.back(), "referent")) << absl::StrJoin(refs, " -> ");
    } else if (j.pattern == "static-collection") {
      EXPECT_TRUE(absl::StrContains(m.summary(),
                                    "static StaticCacheApp.CACHE (a java.util.HashMap) retains"))
          << m.summary();
      ASSERT_FALSE(refs.empty());
      EXPECT_EQ(refs.back(), "static CACHE");
    } else if (j.pattern == "cleaner-backlog") {
      EXPECT_TRUE(absl::StrContains(m.summary(), "(CleanerBacklogApp$Connection) registered with "
                                                 "a java.lang.ref.Cleaner are never cleaned"))
          << m.summary();
      ASSERT_GE(refs.size(), 2u);
      EXPECT_EQ(absl::StrJoin(refs.end() - 2, refs.end(), " -> "), "action -> arg$1");
    }
    // heapwatchctl report prints the pattern at the top of the leak's report.
    const testing::CommandResult ctl = RunCommand(
        {HEAPWATCHCTL, "--server", grpc_address_, "report", j.agent, report->class_name()},
        absl::Seconds(30));
    EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
    EXPECT_TRUE(absl::StrContains(ctl.out, "Known leak pattern: ")) << ctl.out;
    EXPECT_TRUE(absl::StrContains(ctl.out, "[" + j.pattern + "]")) << ctl.out;
  }
  std::cout << "E2E: KnownPatternProgramsAreOneLeakEach took " << Secs(absl::Now() - test_start)
            << std::endl;
}

// Interned-string growth (docs/leak-patterns.md): heapwatchd reads each JVM's string table every
// second (collection.string_table_interval) next to its histograms. InternApp interns unique
// strings and keeps them: one leak of kind "interned_strings" among its leaks, with the usual fix
// in its detail, and the string-table metrics; InternBoundedApp interns 500 keys: no leak at all.
// A restarted daemon on the same store reports the same leak again from the stored string-table
// series (docs/storage-format.md, string_table), before it could have seen new growth.
TEST_F(LeakEndToEnd, InternedStringGrowthIsOneLeak) {
  Subprocess* leaky = StartJava("InternApp", "256m");
  Subprocess* bounded = StartJava("InternBoundedApp", "256m");
  ASSERT_FALSE(HasFailure());
  const std::string config = absl::StrCat(OwnJarsWatchConfig(dir_), R"(collection:
  discovery_interval: 1s
  pause_budget: 1
  string_table_interval: 1s
escalation:
  enabled: false
)");
  ASSERT_NO_FATAL_FAILURE(StartDaemon(config, absl::Seconds(1)));
  const absl::Time daemon_start = absl::Now();
  const std::string leaky_agent = AgentOf(leaky->pid());
  const std::string bounded_agent = AgentOf(bounded->pid());
  ASSERT_FALSE(leaky_agent.empty()) << DaemonLog();
  ASSERT_FALSE(bounded_agent.empty()) << DaemonLog();
  auto interned = [&](const std::vector<v1::Leak>& leaks) {
    int n = 0;
    for (const v1::Leak& l : leaks) n += l.kind() == "interned_strings";
    return n;
  };
  const bool found = WaitFor(
      absl::Seconds(90), [&] { return interned(Leaks(leaky_agent)) > 0; }, absl::Seconds(1));
  const std::vector<v1::Leak> leaks = Leaks(leaky_agent);
  std::cout << "E2E: interned_strings leak " << (found ? "found" : "not found") << " after "
            << Secs(absl::Now() - daemon_start) << "; leaks:" << LeaksText(leaks) << std::endl;
  ASSERT_TRUE(found) << DaemonLog();
  EXPECT_EQ(interned(leaks), 1) << LeaksText(leaks);
  for (const v1::Leak& l : leaks) {
    if (l.kind() != "interned_strings") continue;
    EXPECT_EQ(l.main_class(), "<interned strings>");
    EXPECT_TRUE(absl::StrContains(l.detail(), "String.intern()")) << l.detail();
    EXPECT_TRUE(absl::StrContains(l.detail(), "UseStringDeduplication")) << l.detail();
  }
  const std::vector<v1::Leak> clean = Leaks(bounded_agent);
  EXPECT_TRUE(clean.empty()) << LeaksText(clean);
  const std::string metrics = Metrics();
  for (const std::string& agent : {leaky_agent, bounded_agent}) {
    EXPECT_TRUE(absl::StrContains(
        metrics, absl::StrCat("heapwatch_string_table_entries{agent=\"", agent, "\"}")))
        << agent;
  }

  // ---- a restarted daemon reports the leak again from the stored string-table series ----
  // It reads each string table once an hour: one new reading, on which a fresh trend cannot flag
  // anything (warm-up, minimum readings), so the leak can only come from the replayed series.
  std::string leak_id;
  for (const v1::Leak& l : leaks) {
    if (l.kind() == "interned_strings") leak_id = l.leak();
  }
  ASSERT_NO_FATAL_FAILURE(StopDaemon());
  const absl::Time restart = absl::Now();
  ASSERT_NO_FATAL_FAILURE(StartDaemon(
      absl::StrReplaceAll(config, {{"string_table_interval: 1s", "string_table_interval: 1h"}}),
      absl::Seconds(1), "heapwatchd-2.log"));
  ASSERT_EQ(AgentOf(leaky->pid()), leaky_agent) << DaemonLog();
  ASSERT_EQ(AgentOf(bounded->pid()), bounded_agent) << DaemonLog();
  std::vector<v1::Leak> after;
  const bool back = WaitFor(
      absl::Seconds(20),
      [&] {
        after = Leaks(leaky_agent);
        return interned(after) == 1;
      },
      absl::Milliseconds(200));
  std::cout << "E2E: interned_strings leak after the restart " << (back ? "found" : "not found")
            << " in " << Secs(absl::Now() - restart) << ":" << LeaksText(after) << std::endl;
  ASSERT_TRUE(back) << DaemonLog();
  for (const v1::Leak& l : after) {
    if (l.kind() == "interned_strings") {
      EXPECT_EQ(l.leak(), leak_id);  // the same leak
    }
  }
  const std::vector<v1::Leak> still_clean = Leaks(bounded_agent);
  EXPECT_TRUE(still_clean.empty()) << LeaksText(still_clean);
  ASSERT_NO_FATAL_FAILURE(StopDaemon());
}

}  // namespace
}  // namespace heapwatch
