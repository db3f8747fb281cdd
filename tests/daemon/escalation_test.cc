// Escalation policy against a real store in a temporary directory, with a fake clock: restart
// recovery, suspects joining one dump, the per-agent interval, budget refusals, a failed dump, and
// the queries over stored records. Dumps of real JVMs are covered by tests/e2e.
#include "daemon/escalation.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "heapwatch/records/v1/records.pb.h"
#include "proto/time_util.h"

namespace heapwatch::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const AgentId kAgent{"host-42-x"};
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

diff::Suspect SuspectOf(const std::string& name, absl::Time first_seen) {
  diff::Suspect s;
  s.class_name = name;
  s.score = 0.9;
  s.first_seen = first_seen;
  s.bytes = 1000;
  s.instances = 10;
  return s;
}

class EscalationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/heapwatch-escalation-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    storage::StoreOptions options;
    options.dir = dir_ + "/data";
    options.background_retention = false;
    auto store = storage::SnapshotStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    AgentInfo info;
    info.id = kAgent;
    info.pid = 42;
    ASSERT_TRUE(store_->PutAgent(info).ok());
  }
  void TearDown() override {
    escalation_.reset();
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void Start(EscalationConfig config = {}) {
    auto e = Escalation::Start(config, dir_ + "/data", {}, store_.get(), &metrics_, &clock_);
    ASSERT_TRUE(e.ok()) << e.status();
    escalation_ = *std::move(e);
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

  std::vector<v1::ExtendedDump> Dumps() {
    auto dumps = escalation_->ListDumps(kAgent);
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
