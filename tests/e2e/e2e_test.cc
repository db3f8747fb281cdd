// End to end with real JVMs, the real heapwatchd and heapwatchctl binaries, real gRPC, real
// /metrics:
//
//  1. start LeakyApp (a static list that grows by ~300 KB/s of LeakyApp$Leak) and HealthyApp (a
//     cache that fills then plateaus, a sawtooth buffer, flat churn), each from a copy of its jar in
//     the test's own directory, then heapwatchd on a temporary data dir with ephemeral ports and a
//     1 s interval, watching only the JVMs of those jar copies (tests running in parallel have their
//     own); a decoy LeakyApp started the old way (`-cp classes LeakyApp`) must never be watched;
//  2. within a bounded number of snapshots LeakyApp$Leak must be a suspect over gRPC, in
//     `heapwatchctl suspects --json` and in /metrics; nothing of HealthyApp may ever be a suspect
//     (checked by polling all three views and, for the moments between polls, the daemon's log of
//     suspect changes). HealthyApp's cache fills only after the trend detector has started
//     evaluating it, and the stored history (`heapwatchctl history --json`) must show that the
//     cache and the sawtooth moved by more than trend.min_growth_bytes within the detector's
//     windows: the size gate could not have dropped them, so the statistical tests are what kept
//     them clean;
//  3. kill -9 the daemon, restart it on the same data dir: every history point seen before the kill
//     (`heapwatchctl history --json`) is still there, and the agents are watched again under the
//     same ids;
//  4. kill HealthyApp: it is reported down and all its Prometheus series disappear;
//  5. SIGTERM: heapwatchd exits 0.
// Every child process dies with the test (see subprocess.h).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "diff/trend_detector.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/subprocess.h"

namespace heapwatch {
namespace {

namespace v1 = ::heapwatch::v1;
using testing::CopyJar;
using testing::Field;
using testing::MakeTempDir;
using testing::OwnJarsWatchConfig;
using testing::ParseJson;
using testing::ReadFile;
using testing::ReadPort;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitFor;

constexpr char kLeakClass[] = "LeakyApp$Leak";
constexpr char kCacheClass[] = "HealthyApp$CacheEntry";
constexpr char kSawtoothClass[] = "HealthyApp$Buffered";
// A class that every JVM has in every histogram: its history has one point per snapshot.
constexpr char kAlwaysPresentClass[] = "java.lang.String";
constexpr absl::Duration kInterval = absl::Seconds(1);
// The trend detector's defaults flag a steady leak after warm-up (3) + min_snapshots (8) snapshots;
// allow for jitter and slow machines, but stay bounded.
constexpr int kMaxSnapshotsToFlag = 30;
// HealthyApp must stay clean for at least this many of its snapshots (more than warm-up + two
// windows).
constexpr int kMinHealthySnapshots = 30;
// The daemon runs the trend detector with its defaults (the test's configuration has no `trend:`).
const diff::TrendOptions kTrend;

struct HistoryPoint {
  std::string time;
  double bytes = 0;
  double instances = 0;
  friend bool operator<(const HistoryPoint& a, const HistoryPoint& b) { return a.time < b.time; }
};

// What the trend detector's size gate did with one class over its stored history.
struct SizeGate {
  int evaluations = 0;    // snapshots after which the detector evaluated the class
  int reached_tests = 0;  // ... of which the class varied by at least min_growth_bytes
  double min_range = 0;   // smallest and largest max - min of the bytes over an evaluated window
  double max_range = 0;
  double peak_bytes = 0;  // largest bytes of the class over the history
};

// Replays what TrendDetector::Observe and Evaluate (diff/trend_detector.cc) decide before any
// statistical test, for a class whose history (one point per snapshot, 0 where absent) starts with
// the detector's first snapshot of the agent: warm-up ends at snapshot index warmup_snapshots (the
// `warmup` duration is 0); after snapshot j the window is the last min(window_snapshots, j + 1 -
// warmup_snapshots) snapshots and the class is evaluated once that is at least min_snapshots; a class
// whose bytes vary by less than min_growth_bytes over the window is dropped there.
SizeGate ReplaySizeGate(const std::vector<HistoryPoint>& points, const diff::TrendOptions& o) {
  SizeGate gate;
  gate.min_range = std::numeric_limits<double>::infinity();
  for (const HistoryPoint& p : points) gate.peak_bytes = std::max(gate.peak_bytes, p.bytes);
  for (size_t j = o.warmup_snapshots; j < points.size(); ++j) {
    const size_t n = std::min(o.window_snapshots, j + 1 - o.warmup_snapshots);
    if (n < o.min_snapshots) continue;
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (size_t k = j + 1 - n; k <= j; ++k) {
      lo = std::min(lo, points[k].bytes);
      hi = std::max(hi, points[k].bytes);
    }
    ++gate.evaluations;
    if (hi - lo >= static_cast<double>(o.min_growth_bytes)) ++gate.reached_tests;
    gate.min_range = std::min(gate.min_range, hi - lo);
    gate.max_range = std::max(gate.max_range, hi - lo);
  }
  return gate;
}

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("heapwatch-e2e");
    std::cout << "e2e work directory: " << dir_ << std::endl;
    leaky_ = StartJava("LeakyApp");
    healthy_ = StartJava("HealthyApp", {"--fill-cache-when", FillCacheFile()});
    ASSERT_TRUE(WaitFor(absl::Seconds(60),
                        [&] {
                          return absl::StrContains(ReadFile(dir_ + "/LeakyApp.log"), "ready") &&
                                 absl::StrContains(ReadFile(dir_ + "/HealthyApp.log"), "ready");
                        }))
        << "the Java programs did not start:\n"
        << ReadFile(dir_ + "/LeakyApp.log") << ReadFile(dir_ + "/HealthyApp.log");
    // Only this test's JVMs are watched.
    std::ofstream(dir_ + "/heapwatchd.yaml") << OwnJarsWatchConfig(dir_) << R"(collection:
  discovery_interval: 1s
  # These tests are about detection at one histogram a second; the budget's own tests are
  # tests/e2e/cost_e2e.sh and pause_budget_test. 1 = no budget limit.
  pause_budget: 1
  backoff_initial: 2s
  backoff_max: 4s
)";
  }

  void TearDown() override {
    daemon_.reset();
    leaky_.reset();
    healthy_.reset();
    decoy_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Starts `program` from a copy of its jar in the test's directory (see OwnJarsWatchConfig).
  std::unique_ptr<Subprocess> StartJava(const std::string& program,
                                        const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv{HEAPWATCH_JAVA,
                                  "-Xmx512m",
                                  "-XX:+UseSerialGC",
                                  "-jar",
                                  CopyJar(HEAPWATCH_E2E_JARS, program, dir_),
                                  "--max-seconds",
                                  "900"};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<Subprocess>(argv, dir_ + "/" + program + ".log");
  }

  // HealthyApp fills its cache once this file exists.
  std::string FillCacheFile() const { return dir_ + "/fill-cache"; }

  // Every agent the daemon lists (up or down) must be one of this test's JVMs.
  void ExpectOnlyOwnAgents() {
    const v1::ListAgentsResponse response =
        Call(&v1::QueryService::Stub::ListAgents, v1::ListAgentsRequest());
    for (const v1::Agent& a : response.agents()) {
      EXPECT_TRUE(absl::StartsWith(a.main_class(), dir_ + "/"))
          << "heapwatchd watches a JVM that is not this test's: " << a.DebugString();
      if (decoy_) {
        EXPECT_NE(a.pid(), decoy_->pid()) << "the decoy JVM is watched";
      }
    }
  }

  // Starts heapwatchd with <dir>/<config> and waits for its two ports.
  void StartDaemon(const std::string& log_name, const std::string& config = "heapwatchd.yaml") {
    std::filesystem::remove(dir_ + "/grpc.port");
    std::filesystem::remove(dir_ + "/metrics.port");
    daemon_ = std::make_unique<Subprocess>(
        std::vector<std::string>{HEAPWATCHD, "--config", dir_ + "/" + config, "--data-dir",
                                 dir_ + "/data", "--grpc-listen", "127.0.0.1:0", "--metrics-listen",
                                 "127.0.0.1:0", "--grpc-port-file", dir_ + "/grpc.port",
                                 "--metrics-port-file", dir_ + "/metrics.port", "--interval",
                                 absl::FormatDuration(kInterval)},
        dir_ + "/" + log_name);
    ASSERT_TRUE(
        WaitFor(absl::Seconds(30),
                [&] { return ReadPort(dir_ + "/grpc.port") && ReadPort(dir_ + "/metrics.port"); }))
        << "heapwatchd wrote no port files:\n"
        << ReadFile(dir_ + "/" + log_name);
    grpc_address_ = absl::StrCat("127.0.0.1:", *ReadPort(dir_ + "/grpc.port"));
    metrics_url_ = absl::StrCat("http://127.0.0.1:", *ReadPort(dir_ + "/metrics.port"), "/metrics");
    stub_ = v1::QueryService::NewStub(
        grpc::CreateChannel(grpc_address_, grpc::InsecureChannelCredentials()));
  }

  template <typename Req, typename Resp>
  Resp Call(grpc::Status (v1::QueryService::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
            const Req& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    Resp response;
    grpc::Status status = (stub_.get()->*method)(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
    return response;
  }

  std::map<int64_t, v1::Agent> AgentsByPid() {
    std::map<int64_t, v1::Agent> out;
    const v1::ListAgentsResponse response =
        Call(&v1::QueryService::Stub::ListAgents, v1::ListAgentsRequest());
    for (const v1::Agent& a : response.agents()) {
      if (a.state() != v1::AGENT_STATE_DOWN) out[a.pid()] = a;
    }
    return out;
  }

  std::vector<v1::Suspect> Suspects() {
    auto r = Call(&v1::QueryService::Stub::ListSuspects, v1::ListSuspectsRequest());
    return {r.suspects().begin(), r.suspects().end()};
  }

  int SnapshotCount(const std::string& agent, const std::string& class_name) {
    v1::GetClassHistoryRequest request;
    request.set_agent(agent);
    request.set_class_name(class_name);
    grpc::ClientContext context;
    v1::GetClassHistoryResponse response;
    if (!stub_->GetClassHistory(&context, request, &response).ok()) return 0;
    return response.samples_size();
  }

  std::string Metrics() {
    auto r =
        RunCommand({HEAPWATCH_CURL, "-sf", "--max-time", "10", metrics_url_}, absl::Seconds(15));
    EXPECT_EQ(r.exit_code, 0) << "curl " << metrics_url_ << ": " << r.err;
    return r.out;
  }

  testing::CommandResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {HEAPWATCHCTL, "--server", grpc_address_});
    return RunCommand(args, absl::Seconds(30));
  }

  std::vector<HistoryPoint> History(const std::string& agent, const std::string& class_name) {
    auto r = Ctl({"history", agent, class_name, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    google::protobuf::Struct root = ParseJson(r.out);
    EXPECT_EQ(Field(root, "agent"), agent);
    EXPECT_EQ(Field(root, "class"), class_name);
    std::vector<HistoryPoint> points;
    for (const auto& v : root.fields().at("points").list_value().values()) {
      const auto& p = v.struct_value();
      points.push_back({Field(p, "time"), p.fields().at("bytes").number_value(),
                        p.fields().at("instances").number_value()});
    }
    return points;
  }

  std::string dir_;
  std::unique_ptr<Subprocess> leaky_, healthy_, decoy_, daemon_;
  std::string grpc_address_, metrics_url_;
  std::unique_ptr<v1::QueryService::Stub> stub_;
};

TEST_F(EndToEnd, LeakIsFlaggedHealthyIsNotHistorySurvivesKill9) {
  // A LeakyApp started the way every e2e test used to start it: its main class is the bare
  // "LeakyApp", which the old watch filters of all e2e tests matched.
  decoy_ = std::make_unique<Subprocess>(
      std::vector<std::string>{HEAPWATCH_JAVA, "-Xmx256m", "-XX:+UseSerialGC", "-cp",
                               HEAPWATCH_E2E_CLASSES, "LeakyApp", "--max-seconds", "900"},
      dir_ + "/decoy.log");
  ASSERT_TRUE(WaitFor(absl::Seconds(60),
                      [&] { return absl::StrContains(ReadFile(dir_ + "/decoy.log"), "ready"); }))
      << ReadFile(dir_ + "/decoy.log");
  const absl::Time test_start = absl::Now();
  ASSERT_NO_FATAL_FAILURE(StartDaemon("heapwatchd-1.log"));

  // ---- 1. both JVMs are discovered ----
  std::string leaky_agent, healthy_agent;
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    auto agents = AgentsByPid();
    if (agents.count(leaky_->pid())) leaky_agent = agents[leaky_->pid()].agent();
    if (agents.count(healthy_->pid())) healthy_agent = agents[healthy_->pid()].agent();
    return !leaky_agent.empty() && !healthy_agent.empty();
  })) << ReadFile(dir_ + "/heapwatchd-1.log");
  {
    auto agents = AgentsByPid();
    EXPECT_EQ(agents[leaky_->pid()].main_class(), dir_ + "/LeakyApp.jar");
    EXPECT_EQ(agents[healthy_->pid()].main_class(), dir_ + "/HealthyApp.jar");
    EXPECT_FALSE(agents[leaky_->pid()].jvm_version().empty());
  }
  // Give the decoy a few discovery rounds (discovery_interval: 1s) to be wrongly picked up.
  absl::SleepFor(absl::Seconds(3));
  ExpectOnlyOwnAgents();

  // HealthyApp's cache fills once the trend detector has evaluated the JVM at least once (after
  // warm-up + min_snapshots snapshots), so that the fill happens inside the detector's windows.
  ASSERT_EQ(kTrend.warmup, absl::ZeroDuration());
  const int fill_after = static_cast<int>(kTrend.warmup_snapshots + kTrend.min_snapshots) + 1;
  int fill_at = 0;  // the healthy JVM's snapshot count when the fill was requested
  auto maybe_fill_cache = [&] {
    if (fill_at > 0) return;
    const int n = SnapshotCount(healthy_agent, kAlwaysPresentClass);
    if (n < fill_after) return;
    std::ofstream(FillCacheFile()) << "fill\n";
    fill_at = n;
    std::cout << "E2E: HealthyApp's cache fill requested at its snapshot " << n << std::endl;
  };

  // ---- 2. the leak is flagged over gRPC within a bounded number of snapshots; the healthy JVM
  // never ----
  auto check_healthy_clean = [&](const std::vector<v1::Suspect>& healthy_suspects) {
    for (const v1::Suspect& s : healthy_suspects) {
      ADD_FAILURE() << "healthy JVM has a suspect: " << s.class_name() << " score " << s.score();
    }
  };
  int snapshots_at_flag = 0;
  absl::Time flagged_at;
  bool flagged = WaitFor(absl::Seconds(kMaxSnapshotsToFlag * 3), [&] {
    std::vector<v1::Suspect> suspects = Suspects();
    std::vector<v1::Suspect> healthy;
    bool leak = false;
    for (const v1::Suspect& s : suspects) {
      if (s.agent() == healthy_agent) healthy.push_back(s);
      if (s.agent() == leaky_agent && s.class_name() == kLeakClass) leak = true;
    }
    check_healthy_clean(healthy);
    maybe_fill_cache();
    if (leak) {
      snapshots_at_flag = SnapshotCount(leaky_agent, kLeakClass);
      flagged_at = absl::Now();
    }
    return leak || SnapshotCount(leaky_agent, kLeakClass) > kMaxSnapshotsToFlag;
  });
  ASSERT_TRUE(flagged && snapshots_at_flag > 0)
      << kLeakClass << " was not flagged within " << kMaxSnapshotsToFlag << " snapshots\n"
      << ReadFile(dir_ + "/heapwatchd-1.log");
  EXPECT_LE(snapshots_at_flag, kMaxSnapshotsToFlag);
  std::cout << "E2E: " << kLeakClass << " flagged over gRPC after " << snapshots_at_flag
            << " snapshots of the leaky JVM (" << absl::FormatDuration(flagged_at - test_start)
            << " after the daemon started)" << std::endl;
  RecordProperty("snapshots_until_flagged", snapshots_at_flag);

  // ... in heapwatchctl suspects --json ...
  bool in_ctl = WaitFor(absl::Seconds(10), [&] {
    auto r = Ctl({"suspects", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    google::protobuf::Struct root = ParseJson(r.out);
    bool found = false;
    for (const auto& v : root.fields().at("suspects").list_value().values()) {
      const auto& s = v.struct_value();
      EXPECT_NE(Field(s, "agent"), healthy_agent) << r.out;
      if (Field(s, "agent") == leaky_agent && Field(s, "class") == kLeakClass) {
        found = true;
        for (const char* key : {"bytes", "instances", "growth_bytes_per_second", "score"}) {
          EXPECT_TRUE(s.fields().count(key) && s.fields().at(key).has_number_value()) << key;
        }
        EXPECT_GT(s.fields().at("bytes").number_value(), 0);
        EXPECT_GT(s.fields().at("growth_bytes_per_second").number_value(), 10'000) << r.out;
        EXPECT_FALSE(Field(s, "first_seen").empty()) << r.out;
      }
    }
    return found;
  });
  EXPECT_TRUE(in_ctl) << "heapwatchctl suspects --json does not list the leak";

  // ... and in /metrics.
  const std::string suspect_series = absl::StrCat("heapwatch_leak_suspect{agent=\"", leaky_agent,
                                                  "\",class=\"", kLeakClass, "\"} 1");
  bool in_metrics =
      WaitFor(absl::Seconds(10), [&] { return absl::StrContains(Metrics(), suspect_series); });
  EXPECT_TRUE(in_metrics) << "no " << suspect_series << " in\n" << Metrics();
  {
    std::string metrics = Metrics();
    EXPECT_TRUE(absl::StrContains(
        metrics, absl::StrCat("heapwatch_agent_up{agent=\"", leaky_agent, "\"} 1")));
    EXPECT_TRUE(
        absl::StrContains(metrics, absl::StrCat("heapwatch_class_growth_bytes_per_second{agent=\"",
                                                leaky_agent, "\",class=\"", kLeakClass, "\"}")));
    EXPECT_TRUE(
        absl::StrContains(metrics, absl::StrCat("heapwatch_class_bytes{agent=\"", healthy_agent)));
    EXPECT_FALSE(
        absl::StrContains(metrics, absl::StrCat("heapwatch_leak_suspect{agent=\"", healthy_agent)));
  }

  // Keep watching the healthy JVM until it has had plenty of snapshots past warm-up, and until its
  // cache fill has passed through the detector's window and the plateau after it has filled one.
  ASSERT_TRUE(WaitFor(
      absl::Seconds((kMinHealthySnapshots + 2 * kTrend.window_snapshots) * 3),
      [&] {
        std::vector<v1::Suspect> healthy;
        for (const v1::Suspect& s : Suspects()) {
          if (s.agent() == healthy_agent) healthy.push_back(s);
        }
        check_healthy_clean(healthy);
        EXPECT_FALSE(absl::StrContains(
            Metrics(), absl::StrCat("heapwatch_leak_suspect{agent=\"", healthy_agent)));
        maybe_fill_cache();
        const int n = SnapshotCount(healthy_agent, kAlwaysPresentClass);
        return fill_at > 0 && n >= kMinHealthySnapshots &&
               n >= fill_at + 2 * static_cast<int>(kTrend.window_snapshots);
      }))
      << "fill requested at snapshot " << fill_at << "\n"
      << ReadFile(dir_ + "/HealthyApp.log");
  EXPECT_TRUE(absl::StrContains(ReadFile(dir_ + "/HealthyApp.log"), "cache full"))
      << ReadFile(dir_ + "/HealthyApp.log");
  ExpectOnlyOwnAgents();

  // The healthy patterns reached the detector's statistical tests: replay its size gate on the
  // stored history that it was fed.
  std::vector<HistoryPoint> cache_before = History(healthy_agent, kCacheClass);
  const std::vector<HistoryPoint> sawtooth = History(healthy_agent, kSawtoothClass);
  ASSERT_EQ(cache_before.size(), sawtooth.size()) << "one point per snapshot in both";
  ASSERT_GE(cache_before.size(), static_cast<size_t>(kMinHealthySnapshots));
  {
    // The cache was empty through warm-up and the first evaluation: it filled while watched.
    const size_t first_evaluation = kTrend.warmup_snapshots + kTrend.min_snapshots - 1;
    for (size_t j = 0; j <= first_evaluation; ++j) {
      EXPECT_EQ(cache_before[j].bytes, 0) << "snapshot " << j << " at " << cache_before[j].time;
    }
    const SizeGate cache = ReplaySizeGate(cache_before, kTrend);
    const SizeGate buffer = ReplaySizeGate(sawtooth, kTrend);
    std::cout << "E2E: size gate (min_growth_bytes " << kTrend.min_growth_bytes << ") over "
              << cache_before.size() << " snapshots of HealthyApp: " << kCacheClass << " peak "
              << cache.peak_bytes << " bytes, window range " << cache.min_range << ".."
              << cache.max_range << ", reached the tests in " << cache.reached_tests << " of "
              << cache.evaluations << " evaluations; " << kSawtoothClass << " peak "
              << buffer.peak_bytes << " bytes, window range " << buffer.min_range << ".."
              << buffer.max_range << ", reached the tests in " << buffer.reached_tests << " of "
              << buffer.evaluations << " evaluations" << std::endl;
    RecordProperty("cache_peak_bytes", static_cast<int>(cache.peak_bytes));
    RecordProperty("sawtooth_peak_bytes", static_cast<int>(buffer.peak_bytes));
    RecordProperty("sawtooth_min_window_range_bytes", static_cast<int>(buffer.min_range));
    // The fill is seen in at most 4 snapshots (3 s at intervals of at least 0.9 s), so at least
    // window_snapshots - 5 windows hold both an empty and a full cache.
    EXPECT_GE(cache.reached_tests, static_cast<int>(kTrend.window_snapshots) / 2)
        << "the size gate dropped the cache fill";
    // The sawtooth moves by more than the gate in every window.
    EXPECT_GT(buffer.evaluations, 0);
    EXPECT_EQ(buffer.reached_tests, buffer.evaluations)
        << "the size gate dropped the sawtooth in some windows (smallest range " << buffer.min_range
        << " bytes)";
  }

  // ---- 3. kill -9 and restart: the history is all there ----
  std::vector<HistoryPoint> leak_before = History(leaky_agent, kLeakClass);
  ASSERT_GE(leak_before.size(), static_cast<size_t>(snapshots_at_flag));
  EXPECT_LT(leak_before.front().bytes, leak_before.back().bytes);
  daemon_->Kill(SIGKILL);
  ASSERT_TRUE(daemon_->Wait(absl::Seconds(10)).has_value());
  const std::string log1 = ReadFile(dir_ + "/heapwatchd-1.log");

  ASSERT_NO_FATAL_FAILURE(StartDaemon("heapwatchd-2.log"));
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    auto agents = AgentsByPid();
    return agents.count(leaky_->pid()) && agents.count(healthy_->pid());
  }));
  {
    auto agents = AgentsByPid();
    EXPECT_EQ(agents[leaky_->pid()].agent(), leaky_agent) << "the agent id must survive a restart";
    EXPECT_EQ(agents[healthy_->pid()].agent(), healthy_agent);
  }
  // The trend detectors were rebuilt from the stored history: the leak is a suspect again at once, long
  // before warm-up + min_snapshots new histograms could have flagged it afresh.
  const bool replayed = WaitFor(absl::Seconds(3), [&] {
    for (const v1::Suspect& s : Suspects()) {
      if (s.agent() == leaky_agent && s.class_name() == kLeakClass) return true;
    }
    return false;
  });
  EXPECT_TRUE(replayed) << ReadFile(dir_ + "/heapwatchd-2.log");
  EXPECT_TRUE(absl::StrContains(ReadFile(dir_ + "/heapwatchd-2.log"), "stored snapshots, 1 suspects"));
  for (auto [agent, class_name, before] :
       {std::tuple{leaky_agent, std::string(kLeakClass), &leak_before},
        std::tuple{healthy_agent, std::string(kCacheClass), &cache_before}}) {
    std::vector<HistoryPoint> after = History(agent, class_name);
    std::map<std::string, HistoryPoint> by_time;
    for (const HistoryPoint& p : after) by_time[p.time] = p;
    size_t missing = 0;
    for (const HistoryPoint& p : *before) {
      auto it = by_time.find(p.time);
      if (it == by_time.end()) {
        ++missing;
        continue;
      }
      EXPECT_EQ(it->second.bytes, p.bytes) << p.time;
      EXPECT_EQ(it->second.instances, p.instances) << p.time;
    }
    EXPECT_EQ(missing, 0u) << class_name << ": " << missing << " of " << before->size()
                           << " points seen before kill -9 are gone";
    std::cout << "E2E: " << class_name << ": " << before->size() << " points before kill -9, all "
              << "present after restart (" << after.size() << " now)" << std::endl;
  }

  // ---- 4. an exiting JVM is reported down and its series vanish ----
  healthy_->Kill(SIGKILL);
  ASSERT_TRUE(healthy_->Wait(absl::Seconds(10)).has_value());
  const std::string healthy_label = absl::StrCat("agent=\"", healthy_agent, "\"");
  ASSERT_TRUE(WaitFor(absl::Seconds(20), [&] {
    bool down = false;
    const v1::ListAgentsResponse response =
        Call(&v1::QueryService::Stub::ListAgents, v1::ListAgentsRequest());
    for (const v1::Agent& a : response.agents()) {
      if (a.agent() == healthy_agent) down = a.state() == v1::AGENT_STATE_DOWN;
    }
    return down && !absl::StrContains(Metrics(), healthy_label);
  })) << Metrics();
  EXPECT_TRUE(absl::StrContains(Metrics(), absl::StrCat("agent=\"", leaky_agent, "\"")));

  // ---- 5. SIGTERM: graceful exit ----
  daemon_->Kill(SIGTERM);
  std::optional<int> status = daemon_->Wait(absl::Seconds(40));
  ASSERT_TRUE(status.has_value()) << "heapwatchd did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;

  // Between polls: the daemon logs every class that becomes a suspect; none may be of the healthy
  // JVM.
  const std::string log2 = ReadFile(dir_ + "/heapwatchd-2.log");
  for (const std::string* log : {&log1, &log2}) {
    for (absl::string_view line : absl::StrSplit(*log, '\n')) {
      if (absl::StrContains(line, "is a leak suspect")) {
        EXPECT_FALSE(absl::StrContains(line, healthy_agent)) << line;
      }
      EXPECT_FALSE(absl::StrContains(line, " critical ")) << line;
    }
  }
  EXPECT_TRUE(absl::StrContains(log1, absl::StrCat(kLeakClass, " is a leak suspect")));
  EXPECT_TRUE(absl::StrContains(log2, "heapwatchd stopped"));
  std::cout << "E2E: total " << absl::FormatDuration(absl::Now() - test_start) << std::endl;
}

// A JVM that stops answering (SIGSTOP) is retried with backoff and reported unreachable, while the
// other JVM keeps being collected every interval; once it answers again it is back up.
TEST_F(EndToEnd, UnresponsiveJvmDoesNotBlockTheOthers) {
  std::ofstream(dir_ + "/stuck.yaml") << OwnJarsWatchConfig(dir_) << R"(collection:
  discovery_interval: 1s
  # These tests are about detection at one histogram a second; the budget's own tests are
  # tests/e2e/cost_e2e.sh and pause_budget_test. 1 = no budget limit.
  pause_budget: 1
  concurrency: 2
  handshake_timeout: 1s
  connect_timeout: 1s
  io_timeout: 2s
  backoff_initial: 2s
  backoff_max: 4s
)";
  healthy_->Kill(SIGSTOP);
  ASSERT_NO_FATAL_FAILURE(StartDaemon("heapwatchd-stuck.log", "stuck.yaml"));
  std::string leaky_agent, stuck_agent;
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    auto agents = AgentsByPid();
    if (agents.count(leaky_->pid())) leaky_agent = agents[leaky_->pid()].agent();
    if (agents.count(healthy_->pid())) stuck_agent = agents[healthy_->pid()].agent();
    return !leaky_agent.empty() && !stuck_agent.empty();
  })) << ReadFile(dir_ + "/heapwatchd-stuck.log");

  // The stopped JVM times out and is reported unreachable, in gRPC and in /metrics.
  ASSERT_TRUE(WaitFor(absl::Seconds(30),
                      [&] {
                        auto agents = AgentsByPid();
                        const v1::Agent& a = agents[healthy_->pid()];
                        return a.state() == v1::AGENT_STATE_UNREACHABLE &&
                               a.consecutive_failures() >= 2 &&
                               absl::StrContains(a.last_error(), "timeout");
                      }))
      << AgentsByPid()[healthy_->pid()].DebugString() << ReadFile(dir_ + "/heapwatchd-stuck.log");
  std::string metrics = Metrics();
  EXPECT_TRUE(absl::StrContains(metrics,
                                absl::StrCat("heapwatch_agent_up{agent=\"", stuck_agent, "\"} 0")));
  EXPECT_FALSE(absl::StrContains(metrics, absl::StrCat("heapwatch_collections_total{agent=\"",
                                                       stuck_agent, "\",result=\"timeout\"} 0")));

  // Meanwhile the other JVM is collected at its normal rate.
  const int before = SnapshotCount(leaky_agent, kLeakClass);
  const absl::Duration window = absl::Seconds(10);
  absl::SleepFor(window);
  const int during = SnapshotCount(leaky_agent, kLeakClass) - before;
  std::cout << "E2E: " << during << " snapshots of the responsive JVM in " << window
            << " while the other JVM was stopped" << std::endl;
  EXPECT_GE(during, 7) << "the stopped JVM slowed down the others";
  EXPECT_EQ(AgentsByPid()[leaky_->pid()].state(), v1::AGENT_STATE_UP);

  // It answers again: back up after at most backoff_max (+ jitter).
  healthy_->Kill(SIGCONT);
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    return AgentsByPid()[healthy_->pid()].state() == v1::AGENT_STATE_UP &&
           absl::StrContains(Metrics(),
                             absl::StrCat("heapwatch_agent_up{agent=\"", stuck_agent, "\"} 1"));
  })) << ReadFile(dir_ + "/heapwatchd-stuck.log");

  daemon_->Kill(SIGTERM);
  std::optional<int> status = daemon_->Wait(absl::Seconds(40));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  // Logged once when it started failing and once when it recovered, not at every attempt.
  const std::string log = ReadFile(dir_ + "/heapwatchd-stuck.log");
  int failed = 0, recovered = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, stuck_agent)) continue;
    failed += absl::StrContains(line, "collection failed") ? 1 : 0;
    recovered += absl::StrContains(line, "collections succeed again") ? 1 : 0;
  }
  EXPECT_EQ(failed, 1) << log;
  EXPECT_EQ(recovered, 1) << log;
}

// A jar that cannot be copied aborts the test with a message naming the program, both paths and
// the error (errno), and a missing jar says which target builds it.
TEST(E2eSupportDeathTest, CopyJarFailureSaysWhichJarFromWhereToWhereAndWhy) {
  const std::string dir = MakeTempDir("heapwatch-copyjar");
  EXPECT_DEATH(CopyJar(dir + "/no-jars", "NoSuchApp", dir),
               "CopyJar: cannot copy the jar of test program NoSuchApp from .*/no-jars/"
               "NoSuchApp.jar to .*/NoSuchApp.jar: No such file or directory \\(errno 2\\); no "
               "such jar: is the heapwatch_e2e_java target built\\?");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace heapwatch
