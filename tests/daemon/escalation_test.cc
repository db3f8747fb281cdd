// Escalation policy against a real store in a temporary directory, with a fake clock: restart
// recovery, suspects joining one dump, the per-agent interval, every budget of docs/escalation.md
// (refusals, and dumps and analyses waiting for memory, disk or a worker), dump_timeout,
// keep_raw_dumps, shutdown, a failed dump, and the queries over stored records. Where a dump must
// really be written, it is taken of a real JVM (tests/daemon/java); an analysis is held running
// through the analysis start listener (AnalysisGate) while a test checks what waits behind it.
#include "daemon/escalation.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "heapwatch/records/v1/records.pb.h"
#include "proto/time_util.h"
#include "tests/daemon/test_jvm.h"
#include "tests/daemon/test_store.h"

namespace heapwatch::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const AgentId kAgent{"host-42-x"};
const AgentId kOther{"host-43-y"};
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
// heap_bytes of a target whose dump is estimated at 12 MiB (1.2 x), the unit of the budget tests.
constexpr uint64_t kHeap10MiB = uint64_t{10} << 20;
constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

// Polls `done` every 50 ms for up to `timeout` (real time: the escalation's threads run on their
// own); returns its last value.
bool WaitFor(const std::function<bool()>& done, absl::Duration timeout = absl::Seconds(60)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Holds every analysis at its start (Escalation::SetAnalysisStartListener) until the test releases
// its agent, so that a test can look at what waits while an analysis runs.
class AnalysisGate {
 public:
  void Enter(const AgentId& agent) {
    std::unique_lock<std::mutex> lock(mu_);
    started_.insert(agent.value);
    cv_.notify_all();
    cv_.wait(lock, [&] { return all_released_ || released_.count(agent.value) > 0; });
  }
  bool Started(const AgentId& agent) {
    std::lock_guard<std::mutex> lock(mu_);
    return started_.count(agent.value) > 0;
  }
  bool WaitStarted(const AgentId& agent) {
    return WaitFor([&] { return Started(agent); });
  }
  void Release(const AgentId& agent) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.insert(agent.value);
    cv_.notify_all();
  }
  void ReleaseAll() {
    std::lock_guard<std::mutex> lock(mu_);
    all_released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> started_, released_;
  bool all_released_ = false;
};

diff::Suspect SuspectOf(const std::string& name, absl::Time first_seen,
                        const std::string& leak = "") {
  diff::Suspect s;
  s.class_name = name;
  s.leak = leak;
  s.score = 0.9;
  s.first_seen = first_seen;
  s.bytes = 1000;
  s.instances = 10;
  return s;
}

class EscalationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = heapwatch::testing::MakeTestDir("escalation");
    ASSERT_FALSE(dir_.empty());
    AgentInfo info;
    info.id = kAgent;
    info.pid = 42;
    auto store = heapwatch::testing::OpenTestStore(dir_, {info});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    gate_.ReleaseAll();
    escalation_.reset();
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void Start(EscalationConfig config = {}) {
    auto e = Escalation::Start(config, dir_ + "/data", {}, store_.get(), &metrics_, &clock_);
    ASSERT_TRUE(e.ok()) << e.status();
    escalation_ = *std::move(e);
    escalation_->SetAnalysisStartListener(
        [this](const AgentId& agent, std::string_view) { gate_.Enter(agent); });
  }

  // A live agent whose "JVM" is this test process (not a JVM: a dump of it fails).
  EscalationTarget Target(uint64_t heap_bytes = 10 << 20) {
    EscalationTarget t;
    t.info.id = kAgent;
    t.info.pid = getpid();
    t.jvm.pid = getpid();
    t.jvm.ns_pid = getpid();
    t.jvm.uid = getuid();
    t.jvm.gid = getgid();
    t.jvm.root_tmp_dir = "/tmp";
    t.heap_bytes = heap_bytes;
    return t;
  }

  // `agent` backed by a real JVM, its last histogram `heap_bytes` large.
  EscalationTarget JvmTarget(const AgentId& agent, const collectors::LocalJvm& jvm,
                             uint64_t heap_bytes = kHeap10MiB) {
    EscalationTarget t;
    t.info.id = agent;
    t.info.pid = jvm.pid;
    t.jvm = jvm;
    t.heap_bytes = heap_bytes;
    return t;
  }

  // The agent's only dump record (a default one when there is none).
  v1::ExtendedDump OnlyDump(const AgentId& agent = kAgent) {
    std::vector<v1::ExtendedDump> dumps = Dumps(agent);
    EXPECT_LE(dumps.size(), 1u);
    return dumps.empty() ? v1::ExtendedDump() : dumps[0];
  }
  bool StateIs(const AgentId& agent, v1::ExtendedDumpState state) {
    return OnlyDump(agent).state() == state;
  }

  // Raw dump files in the dump directory (any user).
  std::vector<std::string> RawFiles() {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_ + "/data/dumps", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file()) out.push_back(it->path().string());
    }
    return out;
  }

  void PutDump(const std::string& dump_id, v1::ExtendedDumpState state, absl::Time dump_time,
               std::vector<std::string> classes = {}) {
    v1::ExtendedDump d;
    d.set_agent(kAgent.value);
    d.set_dump_id(dump_id);
    d.set_state(state);
    proto::SetTimestamp(dump_time, &d, &v1::ExtendedDump::mutable_requested_time);
    proto::SetTimestamp(dump_time, &d, &v1::ExtendedDump::mutable_dump_time);
    if (state == v1::EXTENDED_DUMP_STATE_DONE) {
      proto::SetTimestamp(dump_time + absl::Minutes(2), &d,
                          &v1::ExtendedDump::mutable_finished_time);
    }
    for (const auto& c : classes) d.add_suspect_classes(c);
    ASSERT_TRUE(store_->PutRecord("xdump", absl::StrCat(kAgent.value, "/", dump_id),
                                  d.SerializeAsString())
                    .ok());
  }

  std::vector<v1::ExtendedDump> Dumps(const AgentId& agent = kAgent) {
    auto dumps = escalation_->ListDumps(agent);
    EXPECT_TRUE(dumps.ok()) << dumps.status();
    return dumps.ok() ? *dumps : std::vector<v1::ExtendedDump>{};
  }

  bool HasMetric(const std::string& line) {
    return metrics_.ExpositionText().find(line) != std::string::npos;
  }

  std::string dir_;
  std::unique_ptr<storage::SnapshotStore> store_;
  Metrics metrics_;
  FakeClock clock_{kT0};
  AnalysisGate gate_;  // outlives escalation_, whose threads call it
  std::unique_ptr<Escalation> escalation_;
};

TEST_F(EscalationTest, RestartFailsInterruptedDumpsAndDeletesLeftoverRawDumps) {
  PutDump("20231114T221320.000000Z", v1::EXTENDED_DUMP_STATE_DUMPING, kT0 - absl::Minutes(5));
  PutDump("20231114T220000.000000Z", v1::EXTENDED_DUMP_STATE_DONE, kT0 - absl::Minutes(20));
  const std::string user_dir = dir_ + "/data/dumps/1000";
  fs::create_directories(user_dir);
  std::ofstream(user_dir + "/20231114T221320.000000Z.hprof.gz") << "partial";
  std::ofstream(user_dir + "/notes.txt") << "not a dump";
  Start();
  std::vector<v1::ExtendedDump> dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[0].state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_THAT(dumps[0].error(), HasSubstr("daemon restarted"));
  EXPECT_EQ(dumps[1].state(), v1::EXTENDED_DUMP_STATE_DONE);
  EXPECT_FALSE(fs::exists(user_dir + "/20231114T221320.000000Z.hprof.gz"));
  EXPECT_TRUE(fs::exists(user_dir + "/notes.txt"));
}

TEST_F(EscalationTest, SuspectsWithinTheIntervalJoinOneQueuedDump) {
  // A dump 10 minutes ago: the next one may start 50 minutes from now.
  PutDump("20231114T215320.000000Z", v1::EXTENDED_DUMP_STATE_DONE, kT0 - absl::Minutes(10),
          {"Old"});
  Start();
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0)});
  clock_.Advance(absl::Seconds(20));
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0), SuspectOf("B", kT0)});
  clock_.Advance(absl::Seconds(20));
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0), SuspectOf("B", kT0)});
  std::vector<v1::ExtendedDump> dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[0].state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  EXPECT_EQ(dumps[0].trigger(), v1::EXTENDED_DUMP_TRIGGER_SUSPECT);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("A", "B"));

  // A request cannot jump the interval either; it says when the next dump is allowed.
  auto manual = escalation_->Trigger(kAgent);
  ASSERT_EQ(manual.status().code(), absl::StatusCode::kResourceExhausted) << manual.status();
  EXPECT_THAT(manual.status().message(), HasSubstr("next one is allowed at 2023-11-14T23:03:20Z"));
  EXPECT_TRUE(HasMetric(
      absl::StrCat("heapwatch_extended_dumps_total{agent=\"", kAgent.value,
                   "\",result=\"refused\"} 1")));
  EXPECT_TRUE(HasMetric("heapwatch_extended_dump_analyses_queued 1"));
}

// An automatic dump waits for its join window, so a class flagged seconds later shares it; a
// request starts the waiting dump at once instead of taking another.
TEST_F(EscalationTest, AutomaticDumpWaitsForItsJoinWindowAndARequestStartsIt) {
  Start();  // join_window 1m; the fake clock stands still, so nothing starts by itself
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0)});
  clock_.Advance(absl::Seconds(20));
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0), SuspectOf("B", kT0 + absl::Seconds(20))});
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the dump thread looked at least once
  std::vector<v1::ExtendedDump> dumps = Dumps();
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("A", "B"));
  // B joined after the request; it stays covered at the next collections (no re-join, no new dump).
  clock_.Advance(absl::Seconds(20));
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0), SuspectOf("B", kT0 + absl::Seconds(20))});
  ASSERT_EQ(Dumps().size(), 1u);
  EXPECT_THAT(Dumps()[0].suspect_classes(), ElementsAre("A", "B"));
  auto manual = escalation_->Trigger(kAgent);
  ASSERT_TRUE(manual.ok()) << manual.status();
  EXPECT_EQ(manual->dump_id(), dumps[0].dump_id());
  for (int i = 0; i < 200 && Dumps()[0].state() == v1::EXTENDED_DUMP_STATE_QUEUED; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  dumps = Dumps();
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_NE(dumps[0].state(), v1::EXTENDED_DUMP_STATE_QUEUED);  // taken (and failed: not a JVM)
}

TEST_F(EscalationTest, OverTheMemoryBudgetIsRefusedBeforeTheJvmIsPaused) {
  EscalationConfig config;
  config.max_analysis_memory_bytes = 1 << 20;
  Start(config);
  escalation_->OnCollection(Target(100 << 20), {SuspectOf("A", kT0)});
  std::vector<v1::ExtendedDump> dumps = Dumps();
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_THAT(dumps[0].error(), HasSubstr("refused: "));
  EXPECT_THAT(dumps[0].error(), HasSubstr("escalation.max_analysis_memory_bytes"));
  EXPECT_FALSE(dumps[0].has_dump_time());  // never dumped
  // The refusal covers the suspect's episode: no new record at the next collection.
  clock_.Advance(absl::Minutes(1));
  escalation_->OnCollection(Target(100 << 20), {SuspectOf("A", kT0)});
  EXPECT_EQ(Dumps().size(), 1u);
  auto manual = escalation_->Trigger(kAgent);
  EXPECT_EQ(manual.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(manual.status().message(), HasSubstr("max_analysis_memory_bytes"));
  EXPECT_TRUE(HasMetric(absl::StrCat("heapwatch_extended_dumps_total{agent=\"", kAgent.value,
                                     "\",result=\"refused\"} 2")));
}

TEST_F(EscalationTest, OverTheDiskBudgetIsRefusedBeforeTheJvmIsPaused) {
  EscalationConfig config;
  config.max_dump_disk_bytes = 1 << 20;
  Start(config);
  escalation_->OnCollection(Target(100 << 20), {SuspectOf("A", kT0)});
  v1::ExtendedDump d = OnlyDump();
  EXPECT_EQ(d.state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_THAT(d.error(), HasSubstr("refused: "));
  EXPECT_THAT(d.error(), HasSubstr("escalation.max_dump_disk_bytes"));
  EXPECT_FALSE(d.has_dump_time());
  auto manual = escalation_->Trigger(kAgent);
  EXPECT_EQ(manual.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(manual.status().message(), HasSubstr("max_dump_disk_bytes"));
}

// The file system's free space is read when the dump is about to start: a 1 EiB heap fits every
// budget here but no disk.
TEST_F(EscalationTest, MoreThanTheFreeDiskSpaceIsRefusedBeforeTheJvmIsPaused) {
  EscalationConfig config;
  config.join_window = absl::ZeroDuration();
  config.max_analysis_memory_bytes = kUnlimited;
  config.max_dump_disk_bytes = kUnlimited;
  Start(config);
  escalation_->OnCollection(Target(uint64_t{1} << 60), {SuspectOf("A", kT0)});
  ASSERT_TRUE(WaitFor([&] { return StateIs(kAgent, v1::EXTENDED_DUMP_STATE_FAILED); }));
  v1::ExtendedDump d = OnlyDump();
  EXPECT_THAT(d.error(), HasSubstr("refused: "));
  EXPECT_THAT(d.error(), HasSubstr(" free"));
  EXPECT_FALSE(d.has_dump_time());
  EXPECT_TRUE(HasMetric(absl::StrCat("heapwatch_extended_dumps_total{agent=\"", kAgent.value,
                                     "\",result=\"refused\"} 1")));
}

TEST_F(EscalationTest, BeyondMaxQueuedADumpIsRefused) {
  EscalationConfig config;
  config.max_queued = 1;
  Start(config);  // join_window 1m on a fake clock: the first dump stays queued
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0)});
  EscalationTarget other = Target();
  other.info.id = kOther;
  escalation_->OnCollection(other, {SuspectOf("B", kT0)});
  EXPECT_EQ(OnlyDump(kAgent).state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  v1::ExtendedDump refused = OnlyDump(kOther);
  EXPECT_EQ(refused.state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_THAT(refused.error(),
              HasSubstr("refused: 1 dumps are already waiting (escalation.max_queued)"));
  auto manual = escalation_->Trigger(kOther);
  EXPECT_EQ(manual.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(manual.status().message(), HasSubstr("escalation.max_queued"));
}

TEST_F(EscalationTest, QueuedDumpsFailWhenTheDaemonStops) {
  Start();  // join_window 1m on a fake clock: the dump stays queued
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0)});
  ASSERT_EQ(OnlyDump().state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  EXPECT_TRUE(escalation_->Stop(absl::Seconds(30)));
  v1::ExtendedDump d = OnlyDump();
  EXPECT_EQ(d.state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_THAT(d.error(), HasSubstr("the daemon stopped before the dump was taken"));
  EXPECT_TRUE(HasMetric(absl::StrCat("heapwatch_extended_dumps_total{agent=\"", kAgent.value,
                                     "\",result=\"error\"} 1")));
  EXPECT_TRUE(HasMetric("heapwatch_extended_dump_analyses_queued 0"));
}

// ---- Budgets that make dumps wait, with dumps of a real JVM (two agents, one JVM) and the first
// analysis held running by the gate. "Does not start" is checked after a second: the escalation's
// threads are woken when work arrives and poll every 0.5 s besides.

class EscalationJvmTest : public EscalationTest {
 protected:
  void SetUp() override {
    EscalationTest::SetUp();
    ASSERT_TRUE(java_.ready());
    auto jvm = java_.Discover();
    ASSERT_TRUE(jvm.has_value()) << "the test JVM " << java_.pid() << " is not discovered";
    jvm_ = *jvm;
  }
  // A collection of `agent` (backed by the test JVM, 12 MiB estimate) that flags HwSession, a
  // second after the previous one. (Two dumps requested in the same microsecond get ids a
  // microsecond apart, and the later one waits for that microsecond, which a still fake clock
  // never reaches.)
  void Flag(const AgentId& agent) {
    clock_.Advance(absl::Seconds(1));
    escalation_->OnCollection(JvmTarget(agent, jvm_), {SuspectOf("HwSession", kT0)});
  }
  static EscalationConfig JvmConfig() {
    EscalationConfig config;
    config.join_window = absl::ZeroDuration();
    return config;
  }
  void ExpectBothDone() {
    EXPECT_TRUE(WaitFor([&] {
      return StateIs(kAgent, v1::EXTENDED_DUMP_STATE_DONE) &&
             StateIs(kOther, v1::EXTENDED_DUMP_STATE_DONE);
    })) << OnlyDump(kAgent).error() << " / " << OnlyDump(kOther).error();
  }

  TestJvm java_{200};
  collectors::LocalJvm jvm_;
};

// Two 12 MiB analyses, 20 MiB of analysis memory and two workers: the second waits for the first.
TEST_F(EscalationJvmTest, AnAnalysisWaitsUntilRunningAnalysesFreeMemory) {
  EscalationConfig config = JvmConfig();
  config.max_concurrent_analyses = 2;
  config.max_analysis_memory_bytes = 20 << 20;
  Start(config);
  Flag(kAgent);
  ASSERT_TRUE(gate_.WaitStarted(kAgent));
  Flag(kOther);
  ASSERT_TRUE(WaitFor([&] { return StateIs(kOther, v1::EXTENDED_DUMP_STATE_ANALYZING); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(gate_.Started(kOther));
  gate_.Release(kAgent);
  EXPECT_TRUE(gate_.WaitStarted(kOther));
  gate_.Release(kOther);
  ExpectBothDone();
}

// Two 12 MiB dumps and 20 MiB of disk: the second is not taken until the first is analysed and
// its raw dump deleted.
TEST_F(EscalationJvmTest, ADumpWaitsUntilEarlierDumpsAreAnalysedAndDeleted) {
  EscalationConfig config = JvmConfig();
  config.max_concurrent_analyses = 2;
  config.max_dump_disk_bytes = 20 << 20;
  Start(config);
  Flag(kAgent);
  ASSERT_TRUE(gate_.WaitStarted(kAgent));
  Flag(kOther);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(OnlyDump(kOther).state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  EXPECT_FALSE(OnlyDump(kOther).has_dump_time());
  gate_.Release(kAgent);
  ASSERT_TRUE(gate_.WaitStarted(kOther));
  EXPECT_EQ(RawFiles().size(), 1u);  // the first raw dump is gone
  gate_.Release(kOther);
  ExpectBothDone();
}

TEST_F(EscalationJvmTest, AtMostMaxConcurrentAnalysesRunAtOnce) {
  EscalationConfig config = JvmConfig();
  config.max_concurrent_analyses = 1;
  Start(config);
  Flag(kAgent);
  ASSERT_TRUE(gate_.WaitStarted(kAgent));
  Flag(kOther);
  ASSERT_TRUE(WaitFor([&] { return StateIs(kOther, v1::EXTENDED_DUMP_STATE_ANALYZING); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(gate_.Started(kOther));
  EXPECT_TRUE(HasMetric("heapwatch_extended_dump_analyses_in_flight 1"));
  EXPECT_TRUE(HasMetric("heapwatch_extended_dump_analyses_queued 1"));
  gate_.Release(kAgent);
  EXPECT_TRUE(gate_.WaitStarted(kOther));
  gate_.Release(kOther);
  ExpectBothDone();
}

TEST_F(EscalationJvmTest, DumpsWaitingForAnalysisAreDeletedWhenTheDaemonStops) {
  EscalationConfig config = JvmConfig();
  config.max_concurrent_analyses = 1;
  Start(config);
  Flag(kAgent);
  ASSERT_TRUE(gate_.WaitStarted(kAgent));
  Flag(kOther);
  ASSERT_TRUE(WaitFor([&] { return StateIs(kOther, v1::EXTENDED_DUMP_STATE_ANALYZING); }));
  ASSERT_EQ(RawFiles().size(), 2u);
  bool stopped = false;
  std::thread stopper([&] { stopped = escalation_->Stop(absl::Seconds(60)); });
  EXPECT_TRUE(WaitFor([&] { return StateIs(kOther, v1::EXTENDED_DUMP_STATE_FAILED); }));
  EXPECT_THAT(OnlyDump(kOther).error(),
              HasSubstr("the daemon stopped before the dump was analysed"));
  EXPECT_EQ(RawFiles().size(), 1u);  // only the dump being analysed
  gate_.Release(kAgent);
  stopper.join();
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(RawFiles().empty());
}

// The JVM's attach listener is up (jcmd answered), then the JVM is stopped: it accepts the dump
// request on its socket and never replies.
TEST_F(EscalationJvmTest, ADumpNotWrittenWithinDumpTimeoutFails) {
  const std::string jcmd =
      absl::StrCat(HEAPWATCH_JCMD, " ", java_.pid(), " VM.version > /dev/null");
  ASSERT_EQ(std::system(jcmd.c_str()), 0);
  ASSERT_EQ(::kill(java_.pid(), SIGSTOP), 0);
  EscalationConfig config = JvmConfig();
  config.dump_timeout = absl::Seconds(2);
  Start(config);
  const absl::Time start = absl::Now();
  Flag(kAgent);
  const bool failed =
      WaitFor([&] { return StateIs(kAgent, v1::EXTENDED_DUMP_STATE_FAILED); }, absl::Seconds(30));
  const absl::Duration took = absl::Now() - start;
  ::kill(java_.pid(), SIGKILL);  // a dump still waiting (the test failed) ends before TearDown
  ASSERT_TRUE(failed);
  EXPECT_LT(took, absl::Seconds(15));
  EXPECT_THAT(OnlyDump().error(), HasSubstr("dump failed: DEADLINE_EXCEEDED"));
  EXPECT_TRUE(RawFiles().empty());
}

// After a dump's reports are stored the report listener gets each analysed class's top
// accumulation point, the same that the stored report names; LatestAnalysedDump reads them back
// from the store (after a restart too).
TEST_F(EscalationJvmTest, AnalysedDumpsHandTheirAccumulationPointsToTheListener) {
  gate_.ReleaseAll();
  Start(JvmConfig());
  std::mutex mu;
  std::vector<AnalysedDump> heard;
  escalation_->SetReportListener([&](const AnalysedDump& d) {
    std::lock_guard<std::mutex> lock(mu);
    heard.push_back(d);
  });
  Flag(kAgent);
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !heard.empty();
  })) << OnlyDump().error();
  AnalysedDump got;
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(heard.size(), 1u);
    got = heard[0];
  }
  EXPECT_EQ(got.agent, kAgent);
  const v1::ExtendedDump dump = OnlyDump();
  EXPECT_EQ(dump.state(), v1::EXTENDED_DUMP_STATE_DONE);
  EXPECT_EQ(got.dump_id, dump.dump_id());
  auto report = escalation_->GetReport(kAgent, "HwSession");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_FALSE(report->accumulation_points().empty()) << report->DebugString();
  // Stored with their exact dynamic sizes: each HwSession reaches itself, its token String and
  // that String's byte[], and its payload byte[]; they die with the sessions.
  EXPECT_EQ(report->dynamic_objects(), 4 * report->instances());
  EXPECT_EQ(report->dynamic_bytes(), report->retained_bytes());
  EXPECT_GT(report->accumulation_points(0).object().dynamic_objects(), report->instances());
  ASSERT_FALSE(report->top_objects().empty());
  EXPECT_GT(report->top_objects(0).dynamic_objects(), 0u);
  const v1::HeapObject& top = report->accumulation_points(0).object();
  ASSERT_EQ(got.points.size(), 1u);
  EXPECT_EQ(got.points[0].suspect_class, "HwSession");
  EXPECT_EQ(got.points[0].object_class, top.class_name());
  EXPECT_EQ(got.points[0].object_id, absl::StrCat("0x", absl::Hex(top.object_id())));
  std::vector<std::string> stored_dominators;
  for (uint64_t d : report->accumulation_points(0).dominator_object_ids()) {
    stored_dominators.push_back(absl::StrCat("0x", absl::Hex(d)));
  }
  EXPECT_FALSE(stored_dominators.empty());
  EXPECT_EQ(got.points[0].dominator_ids, stored_dominators);

  auto latest = escalation_->LatestAnalysedDump(kAgent);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->dump_id, got.dump_id);
  ASSERT_EQ((*latest)->points.size(), 1u);
  EXPECT_EQ((*latest)->points[0].suspect_class, got.points[0].suspect_class);
  EXPECT_EQ((*latest)->points[0].object_id, got.points[0].object_id);
  EXPECT_EQ((*latest)->points[0].object_class, got.points[0].object_class);
  EXPECT_EQ((*latest)->points[0].dominator_ids, got.points[0].dominator_ids);
  auto none = escalation_->LatestAnalysedDump(kOther);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  escalation_.reset();
  Start(JvmConfig());
  latest = escalation_->LatestAnalysedDump(kAgent);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->dump_id, got.dump_id);
}

TEST_F(EscalationJvmTest, AnalysedRawDumpsAreDeletedUnlessKeepRawDumps) {
  gate_.ReleaseAll();
  EscalationConfig config = JvmConfig();
  Start(config);
  Flag(kAgent);
  ASSERT_TRUE(WaitFor([&] { return StateIs(kAgent, v1::EXTENDED_DUMP_STATE_DONE); }))
      << OnlyDump().error();
  EXPECT_FALSE(OnlyDump().raw_dump_kept());
  EXPECT_TRUE(RawFiles().empty());

  escalation_.reset();
  config.keep_raw_dumps = true;
  Start(config);
  Flag(kOther);
  ASSERT_TRUE(WaitFor([&] { return StateIs(kOther, v1::EXTENDED_DUMP_STATE_DONE); }))
      << OnlyDump(kOther).error();
  const v1::ExtendedDump kept = OnlyDump(kOther);
  EXPECT_TRUE(kept.raw_dump_kept());
  EXPECT_TRUE(fs::is_regular_file(kept.raw_dump_path())) << kept.raw_dump_path();
  EXPECT_EQ(RawFiles().size(), 1u);
  // A restart keeps it too: a record names it.
  escalation_.reset();
  Start(config);
  EXPECT_TRUE(fs::is_regular_file(kept.raw_dump_path()));
}

TEST_F(EscalationTest, ADumpThatFailsIsRecordedWithItsErrorAndCounted) {
  EscalationConfig config;
  config.join_window = absl::ZeroDuration();
  Start(config);
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0)});
  std::vector<v1::ExtendedDump> dumps;
  for (int i = 0; i < 200; ++i) {  // the dump thread picks the job up within 0.5 s
    dumps = Dumps();
    if (!dumps.empty() && dumps[0].state() == v1::EXTENDED_DUMP_STATE_FAILED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_THAT(dumps[0].error(), HasSubstr("dump failed"));
  EXPECT_TRUE(dumps[0].has_dump_time());
  EXPECT_TRUE(HasMetric(absl::StrCat("heapwatch_extended_dumps_total{agent=\"", kAgent.value,
                                     "\",result=\"error\"} 1")));
  // The attempt counts toward the interval.
  EXPECT_EQ(escalation_->Trigger(kAgent).status().code(), absl::StatusCode::kResourceExhausted);
  // The class is not covered by a failed dump: it is retried after the interval.
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0)});
  dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[0].state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("A"));
}

// After a restart, a DONE dump covers the episodes of its classes that began before its analysis
// finished (a class may have joined after the request); a class it did not cover gets a new dump.
TEST_F(EscalationTest, StoredDumpsCoverTheEpisodesTheyAnalysed) {
  const absl::Time requested = kT0 - absl::Hours(2);  // finished 2 minutes later
  PutDump("20231114T201320.000000Z", v1::EXTENDED_DUMP_STATE_DONE, requested, {"A", "B"});
  Start();
  escalation_->OnCollection(Target(), {SuspectOf("A", requested - absl::Minutes(1)),
                                       SuspectOf("B", requested + absl::Minutes(1))});
  EXPECT_EQ(Dumps().size(), 1u);
  escalation_->OnCollection(Target(), {SuspectOf("A", requested - absl::Minutes(1)),
                                       SuspectOf("B", requested + absl::Minutes(1)),
                                       SuspectOf("C", kT0)});
  std::vector<v1::ExtendedDump> dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("C"));
  // A new episode of A (cleared and flagged again after that dump) is not covered.
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0 - absl::Minutes(30)),
                                       SuspectOf("C", kT0)});
  dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("C", "A"));
}

// One escalation per leak: classes that join a leak already escalated start no dump of their
// own; a new leak starts one that analyses all its uncovered classes.
TEST_F(EscalationTest, ClassesJoiningAnEscalatedLeakStartNoDump) {
  const absl::Time requested = kT0 - absl::Hours(2);  // finished 2 minutes later
  PutDump("20231114T201320.000000Z", v1::EXTENDED_DUMP_STATE_DONE, requested, {"A"});
  Start();
  // Leak L1 began before the dump (A's episode): covered.
  escalation_->OnCollection(Target(), {SuspectOf("A", requested - absl::Minutes(1), "L1")});
  EXPECT_EQ(Dumps().size(), 1u);
  // B, C and D join L1 long after the dump: L1 stays covered, no dump for them.
  escalation_->OnCollection(Target(), {SuspectOf("A", requested - absl::Minutes(1), "L1"),
                                       SuspectOf("B", kT0, "L1"), SuspectOf("C", kT0, "L1"),
                                       SuspectOf("D", kT0 - absl::Minutes(5), "L1")});
  EXPECT_EQ(Dumps().size(), 1u) << "classes joining an escalated leak must not cause a dump";
  // A new leak L2 (E and F): one dump, which analyses every class not covered yet, the late
  // members of L1 included.
  escalation_->OnCollection(Target(), {SuspectOf("A", requested - absl::Minutes(1), "L1"),
                                       SuspectOf("B", kT0, "L1"), SuspectOf("C", kT0, "L1"),
                                       SuspectOf("D", kT0 - absl::Minutes(5), "L1"),
                                       SuspectOf("E", kT0, "L2"), SuspectOf("F", kT0, "L2")});
  std::vector<v1::ExtendedDump> dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[0].state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("B", "C", "D", "E", "F"));
  // More classes of L2 join the queued dump; nothing else is requested.
  clock_.Advance(absl::Seconds(10));
  escalation_->OnCollection(Target(), {SuspectOf("E", kT0, "L2"), SuspectOf("F", kT0, "L2"),
                                       SuspectOf("G", kT0 + absl::Seconds(10), "L2")});
  dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("B", "C", "D", "E", "F", "G"));
}

// A leak that started after the dump is a new leak even when it shares a class with an old one:
// a leak is covered only by a dump requested after it began.
TEST_F(EscalationTest, ALeakIsCoveredOnlyByADumpRequestedAfterItBegan) {
  const absl::Time requested = kT0 - absl::Hours(2);
  PutDump("20231114T201320.000000Z", v1::EXTENDED_DUMP_STATE_DONE, requested, {"A"});
  Start();
  // A's new episode (after the old dump) and B form leak L3, which began after that dump.
  escalation_->OnCollection(Target(), {SuspectOf("A", kT0 - absl::Minutes(10), "L3"),
                                       SuspectOf("B", kT0 - absl::Minutes(9), "L3")});
  std::vector<v1::ExtendedDump> dumps = Dumps();
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_THAT(dumps[0].suspect_classes(), ElementsAre("A", "B"));
}

TEST_F(EscalationTest, RequestsNeedALiveAgentAndEnabledEscalation) {
  EscalationConfig config;
  config.enabled = false;
  Start(config);
  EXPECT_EQ(escalation_->Trigger(kAgent).status().code(), absl::StatusCode::kFailedPrecondition);
  escalation_.reset();
  Start();
  EXPECT_EQ(escalation_->Trigger(kAgent).status().code(), absl::StatusCode::kNotFound);
  escalation_->OnCollection(Target(), {});
  escalation_->RemoveAgent(kAgent);
  EXPECT_EQ(escalation_->Trigger(kAgent).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(escalation_->GetReport(kAgent, "A").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(escalation_->Diff(kAgent, "", "", 0, 0).status().code(),
            absl::StatusCode::kNotFound);
}

// Reports and diffs are served from the stored records alone (the raw dumps are gone).
TEST_F(EscalationTest, ReportsAndDiffsComeFromStoredRecords) {
  const std::string a = "20231114T210000.000000Z", b = "20231114T220000.000000Z";
  PutDump(a, v1::EXTENDED_DUMP_STATE_DONE, kT0 - absl::Hours(2), {"Leak"});
  PutDump(b, v1::EXTENDED_DUMP_STATE_DONE, kT0 - absl::Hours(1), {"Leak"});
  for (const auto& [id, retained] : {std::pair{a, 1000}, std::pair{b, 5000}}) {
    records::v1::ExtendedDumpSummary s;
    s.set_agent(kAgent.value);
    s.set_dump_id(id);
    records::v1::DumpClassRow* c = s.add_classes();
    c->set_class_name("Leak");
    c->set_instances(retained / 100);
    c->set_shallow_bytes(retained);
    c->set_retained_bytes(retained);
    records::v1::DumpOwnerRow* o = s.add_owners();
    o->set_class_name("java.util.ArrayList");
    o->add_path("sticky class App");
    o->add_path("static SESSIONS");
    o->set_retained_bytes(retained + 40);
    o->set_objects(1);
    ASSERT_TRUE(
        store_->PutRecord("xsummary", absl::StrCat(kAgent.value, "/", id), s.SerializeAsString())
            .ok());
    v1::DrillDownReport r;
    r.set_agent(kAgent.value);
    r.set_class_name("Leak");
    r.mutable_dump()->set_dump_id(id);
    r.set_retained_bytes(retained);
    ASSERT_TRUE(store_->PutRecord("xreport", absl::StrCat(kAgent.value, "/Leak/", id),
                                  r.SerializeAsString())
                    .ok());
  }
  Start();
  auto report = escalation_->GetReport(kAgent, "Leak");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->retained_bytes(), 5000u);
  EXPECT_EQ(report->dump().dump_id(), b);
  EXPECT_EQ(report->dump().state(), v1::EXTENDED_DUMP_STATE_DONE);
  EXPECT_EQ(escalation_->GetReport(kAgent, "Lea").status().code(), absl::StatusCode::kNotFound);

  auto diff = escalation_->Diff(kAgent, "", "", 0, 0);
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_EQ(diff->from_dump(), a);
  EXPECT_EQ(diff->to_dump(), b);
  ASSERT_GE(diff->classes_size(), 1);
  EXPECT_EQ(diff->classes(0).class_name(), "Leak");
  EXPECT_EQ(diff->classes(0).delta_retained_bytes(), 4000);
  ASSERT_GE(diff->owners_size(), 1);
  EXPECT_EQ(diff->owners(0).class_name(), "java.util.ArrayList");
  EXPECT_THAT(diff->owners(0).path(), ElementsAre("sticky class App", "static SESSIONS"));
  EXPECT_EQ(diff->owners(0).delta_retained_bytes(), 4000);

  EXPECT_EQ(escalation_->Diff(kAgent, "nope", b, 0, 0).status().code(),
            absl::StatusCode::kNotFound);
  PutDump("20231114T223000.000000Z", v1::EXTENDED_DUMP_STATE_FAILED, kT0 - absl::Minutes(30));
  EXPECT_EQ(escalation_->Diff(kAgent, a, "20231114T223000.000000Z", 0, 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace heapwatch::daemon
