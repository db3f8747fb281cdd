// Record retention (daemon/record_retention.h) and the raw-dump disk budget of kept raw dumps,
// against a real LMDB store and real files, with a fake clock:
//  - four months of snapshots, dump records, reports and summaries of two agents stay under
//    retention.max_bytes with every record kind present, each record kind within its share, the
//    newest report of a live leak kept although its snapshots are long gone, and no dump record
//    without its reports and summary (or the reverse); a registered agent restarting daily (a new
//    agent id per JVM run) leaves delivery records that stay bounded (rule 4);
//  - rule 4 on its own: a delivery record goes only when its agent has no snapshot and is not
//    live;
//  - kept raw dumps count against max_dump_disk_bytes: the oldest are deleted first (at start and
//    when a new dump needs room), and their records say so.
#include "daemon/record_retention.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "daemon/agent_gateway.h"
#include "daemon/escalation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "heapwatch/records/v1/records.pb.h"
#include "proto/time_util.h"

namespace heapwatch::daemon {
namespace {

namespace fs = std::filesystem;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
const AgentId kLive{"app-1"};
const AgentId kGone{"app-2"};
const std::string kDelivery(kDeliveryTable);
constexpr char kLeakClass[] = "com.example.LeakySession";

std::string DumpIdFor(absl::Time t) {
  return absl::FormatTime("%Y%m%dT%H%M%E6SZ", t, absl::UTCTimeZone());
}

// A temporary directory, on tmpfs when there is one (fsync is then cheap, which keeps months of
// durable appends within seconds; the LMDB code paths are the same).
class Dir {
 public:
  Dir() {
    std::string base = fs::is_directory("/dev/shm") && access("/dev/shm", W_OK) == 0
                           ? std::string("/dev/shm")
                           : ::testing::TempDir();
    std::string tmpl = base + "/heapwatch-record-retention-XXXXXX";
    HW_CHECK(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A histogram of `classes` classes whose counts drift with `step`.
ClassHistogram Histogram(int classes, uint64_t step) {
  ClassHistogram h;
  for (int k = 0; k < classes; ++k) {
    ClassHistogramRow row;
    row.class_name = absl::StrCat("com.example.pkg", k % 7, ".Class", k);
    row.instances = 100 + k * 3 + (step * (k + 1)) % 97;
    row.bytes = row.instances * (16 + 8 * (k % 5));
    h.total_instances += row.instances;
    h.total_bytes += row.bytes;
    h.rows.push_back(std::move(row));
  }
  return h;
}

bool WaitFor(const std::function<bool()>& done, absl::Duration timeout = absl::Seconds(60)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

class RecordRetentionTest : public ::testing::Test {
 protected:
  void OpenStore(uint64_t max_bytes) {
    storage::StoreOptions options;
    options.dir = dir_.path() + "/data";
    options.background_retention = false;
    options.retention_age = absl::Hours(24 * 30);
    options.retention_bytes = max_bytes;
    options.initial_map_bytes = 8 << 20;
    options.clock = &clock_;
    auto store = storage::SnapshotStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void StartEscalation(EscalationConfig config) {
    auto e = Escalation::Start(config, dir_.path() + "/data", {}, store_.get(), &metrics_, &clock_);
    ASSERT_TRUE(e.ok()) << e.status();
    escalation_ = *std::move(e);
  }
  void TearDown() override {
    escalation_.reset();
    store_.reset();
  }

  // Writes one analysed dump of `agent` at `t` as escalation does: the DONE record, one report per
  // class (with a growth history of 240 points), and the summary.
  void PutAnalysedDump(const AgentId& agent, absl::Time t, const std::vector<std::string>& classes,
                       const std::string& raw_path = "") {
    v1::ExtendedDump d;
    d.set_agent(agent.value);
    d.set_dump_id(DumpIdFor(t));
    d.set_state(v1::EXTENDED_DUMP_STATE_DONE);
    proto::SetTimestamp(t, &d, &v1::ExtendedDump::mutable_requested_time);
    proto::SetTimestamp(t, &d, &v1::ExtendedDump::mutable_dump_time);
    proto::SetTimestamp(t + absl::Minutes(2), &d, &v1::ExtendedDump::mutable_finished_time);
    for (const std::string& c : classes) {
      d.add_suspect_classes(c);
      d.add_report_classes(c);
    }
    if (!raw_path.empty()) {
      d.set_raw_dump_kept(true);
      d.set_raw_dump_path(raw_path);
    }
    const std::string key = absl::StrCat(agent.value, "/", d.dump_id());
    records::v1::ExtendedDumpSummary summary;
    summary.set_agent(agent.value);
    summary.set_dump_id(d.dump_id());
    for (int i = 0; i < 60; ++i) {
      records::v1::DumpClassRow* row = summary.add_classes();
      row->set_class_name(absl::StrCat("com.example.pkg", i % 7, ".Class", i));
      row->set_instances(1000 + i);
      row->set_shallow_bytes(64000 + i);
      row->set_retained_bytes(640000 + i);
    }
    ASSERT_TRUE(store_->PutRecord("xsummary", key, summary.SerializeAsString()).ok());
    for (const std::string& c : classes) {
      v1::DrillDownReport r;
      r.set_agent(agent.value);
      r.set_class_name(c);
      for (int i = 0; i < 240; ++i) {
        v1::ClassSample* s = r.add_growth_history();
        proto::SetTimestamp(t - absl::Minutes(240 - i), s, &v1::ClassSample::mutable_time);
        s->set_bytes(1'000'000 + i * 1000);
        s->set_instances(10'000 + i * 10);
      }
      *r.mutable_dump() = d;
      ASSERT_TRUE(store_
                      ->PutRecord("xreport", absl::StrCat(agent.value, "/", c, "/", d.dump_id()),
                                  r.SerializeAsString())
                      .ok());
    }
    ASSERT_TRUE(store_->PutRecord("xdump", key, d.SerializeAsString()).ok());
  }

  // A live agent flagging `classes` (escalation disabled: only its view of live leaks matters).
  void MarkLive(const AgentId& agent, const std::vector<std::string>& classes) {
    EscalationTarget target;
    target.info.id = agent;
    std::vector<diff::Suspect> suspects;
    for (const std::string& c : classes) {
      diff::Suspect s;
      s.class_name = c;
      s.first_seen = kT0;
      suspects.push_back(s);
    }
    escalation_->OnCollection(target, suspects);
  }

  std::map<std::string, storage::KindUsage> Usage() {
    auto usage = store_->UsageByKind();
    EXPECT_TRUE(usage.ok()) << usage.status();
    std::map<std::string, storage::KindUsage> out;
    if (usage.ok()) {
      for (const auto& u : *usage) out[u.kind] = u;
    }
    return out;
  }

  // Every report has its DONE dump record, every DONE dump record its summary and reports.
  void ExpectConsistentGroups() {
    auto groups = LoadDumpRecordGroups(*store_);
    ASSERT_TRUE(groups.ok()) << groups.status();
    for (const DumpRecordGroup& g : *groups) {
      SCOPED_TRACE(absl::StrCat(g.agent.value, "/", g.dump_id));
      ASSERT_TRUE(g.has_dump_record);
      if (g.record.state() != v1::EXTENDED_DUMP_STATE_DONE) continue;
      EXPECT_TRUE(g.has_summary);
      EXPECT_EQ(g.report_keys.size(), static_cast<size_t>(g.record.report_classes_size()));
    }
  }

  Dir dir_;
  FakeClock clock_{kT0};
  Metrics metrics_;
  std::unique_ptr<storage::SnapshotStore> store_;
  std::unique_ptr<Escalation> escalation_;
};

TEST_F(RecordRetentionTest, MonthsOfHistoryStayUnderMaxBytesWithEveryKindAndTheLiveLeakReport) {
  constexpr uint64_t kMaxBytes = uint64_t{256} << 10;
  OpenStore(kMaxBytes);
  EscalationConfig config;
  config.enabled = false;
  StartEscalation(config);
  RecordRetentionPolicy policy;
  policy.max_bytes = kMaxBytes;

  // Day 0: the live leak's only dump. Then every day a dump per agent for other classes, a
  // snapshot every 2 hours, retention every 6 hours, for 120 days.
  const std::string leak_dump = DumpIdFor(kT0 + absl::Minutes(30));
  const std::string gone_leak_dump = DumpIdFor(kT0 + absl::Minutes(31));
  size_t aged = 0, over_share = 0, passes = 0, deliveries_deleted = 0;
  uint64_t max_used = 0;
  size_t max_delivery_records = 0;
  // A registered agent whose JVM restarts every day: each run has its own agent id (host-pid-start)
  // and leaves a delivery record, stored with each of its snapshots.
  auto run_of_day = [](int day) { return AgentId(absl::StrCat("node-1-", 4000 + day, "-", day)); };
  for (int hour = 0; hour < 24 * 120; hour += 2) {
    const absl::Time t = kT0 + absl::Hours(hour);
    const uint64_t sequence = hour / 2 + 1;
    clock_.Set(t);
    for (const AgentId& agent : {kLive, kGone}) {
      if (agent == kGone && hour >= 24 * 100) continue;  // app-2 exits after 100 days
      Snapshot s{agent, t, Histogram(agent == kLive ? 120 : 80, hour), {}};
      ASSERT_TRUE(store_->Append(s, {{kDelivery, agent.value, absl::StrCat(sequence)}}).ok());
    }
    const AgentId run = run_of_day(hour / 24);
    if (hour % 24 == 0 && hour > 0) escalation_->RemoveAgent(run_of_day(hour / 24 - 1));
    ASSERT_TRUE(store_
                    ->Append(Snapshot{run, t + absl::Seconds(1), Histogram(10, hour), {}},
                             {{kDelivery, run.value, absl::StrCat(hour % 24 / 2 + 1)}})
                    .ok());
    MarkLive(run, {});
    if (hour == 0) {
      MarkLive(kLive, {kLeakClass});
      MarkLive(kGone, {kLeakClass});
    }
    if (hour % 24 == 0) {
      clock_.Set(t + absl::Minutes(30));
      PutAnalysedDump(kLive, t + absl::Minutes(30),
                      hour == 0 ? std::vector<std::string>{kLeakClass}
                                : std::vector<std::string>{absl::StrCat("com.example.Day", hour),
                                                           "com.example.Cache"});
      if (hour < 24 * 100) {
        PutAnalysedDump(kGone, t + absl::Minutes(31),
                        hour == 0 ? std::vector<std::string>{kLeakClass}
                                  : std::vector<std::string>{"com.example.Other"});
      }
    }
    if (hour == 24 * 100) escalation_->RemoveAgent(kGone);  // its leak is no longer live
    if (hour % 6 == 0) {
      auto r1 = escalation_->EnforceRecordRetention(policy);
      ASSERT_TRUE(r1.ok()) << r1.status();
      ASSERT_TRUE(store_->EnforceRetention().ok());
      auto r2 = escalation_->EnforceRecordRetention(policy);
      ASSERT_TRUE(r2.ok()) << r2.status();
      aged += r1->aged_out + r2->aged_out;
      over_share += r1->over_share + r2->over_share;
      deliveries_deleted += r1->delivery_records_deleted + r2->delivery_records_deleted;
      ++passes;
      auto used = store_->UsedBytes();
      ASSERT_TRUE(used.ok());
      max_used = std::max(max_used, *used);
      ASSERT_LE(*used, kMaxBytes) << "after pass " << passes << " at hour " << hour;
      // Every delivery record left is of an agent with a snapshot, or of the live run.
      auto delivery = store_->ListRecords(kDelivery, "");
      ASSERT_TRUE(delivery.ok()) << delivery.status();
      max_delivery_records = std::max(max_delivery_records, delivery->size());
      for (const auto& [agent, sequence] : *delivery) {
        auto oldest = store_->OldestSnapshotTime(AgentId(agent));
        EXPECT_TRUE(AgentId(agent) == run || (oldest.ok() && oldest->has_value()))
            << agent << " at hour " << hour;
      }
    }
  }
  std::map<std::string, storage::KindUsage> usage = Usage();
  for (const char* kind : {"snapshots", "dictionary", "records/xdump", "records/xreport",
                           "records/xsummary", "records/agent_delivery"}) {
    EXPECT_GT(usage[kind].records, 0u) << kind;
  }
  // 122 agent ids delivered (two long-lived, 120 daily runs); the records of the runs whose
  // snapshots aged out went, those of the runs with history and of the live agent stayed.
  EXPECT_GT(deliveries_deleted, 60u);
  EXPECT_LT(usage["records/agent_delivery"].records, 40u);
  EXPECT_TRUE(store_->GetRecord(kDelivery, kLive.value).ok());
  EXPECT_TRUE(store_->GetRecord(kDelivery, run_of_day(119).value).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->GetRecord(kDelivery, run_of_day(0).value).status()));
  auto by_name = StoreUsage(*store_);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  ASSERT_EQ(by_name->size(), 11u);
  EXPECT_EQ(by_name->back().kind, "agent_delivery");
  EXPECT_EQ(by_name->back().records, usage["records/agent_delivery"].records);
  EXPECT_EQ((*by_name)[7].records, 0u);  // other_records: the delivery records are not there
  EXPECT_LE(usage["records/xdump"].bytes, policy.dump_record_share * kMaxBytes);
  EXPECT_LE(usage["records/xreport"].bytes, policy.report_share * kMaxBytes);
  EXPECT_LE(usage["records/xsummary"].bytes, policy.summary_share * kMaxBytes);
  uint64_t total = 0;
  for (const auto& [kind, u] : usage) total += u.bytes;
  EXPECT_EQ(total, *store_->UsedBytes());
  // Both rules did work.
  EXPECT_GT(aged, 0u);
  EXPECT_GT(over_share, 0u);
  // Records held to their shares leave the snapshots their room (without the shares, records push
  // them down to about a fifth of this).
  EXPECT_GT(usage["snapshots"].records, 400u);

  // The live leak's report (day 0) is kept, far older than the agent's oldest snapshot.
  auto oldest = store_->OldestSnapshotTime(kLive);
  ASSERT_TRUE(oldest.ok() && oldest->has_value());
  EXPECT_GT(**oldest, kT0 + absl::Hours(24 * 7));
  auto report = escalation_->GetReport(kLive, kLeakClass);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->dump().dump_id(), leak_dump);
  // The same leak of the agent that exited is no longer live: its report went.
  EXPECT_FALSE(escalation_->GetReport(kGone, kLeakClass).ok());
  ExpectConsistentGroups();
  std::cout << "passes " << passes << ", peak used " << max_used << " of " << kMaxBytes
            << " bytes, dumps deleted: " << aged << " aged out, " << over_share
            << " over share; snapshots kept " << usage["snapshots"].records << " ("
            << usage["snapshots"].bytes << " B), xreport " << usage["records/xreport"].records
            << " (" << usage["records/xreport"].bytes << " B), xsummary "
            << usage["records/xsummary"].records << ", xdump " << usage["records/xdump"].records
            << "; delivery records: " << deliveries_deleted << " deleted, at most "
            << max_delivery_records << " after a pass, " << usage["records/agent_delivery"].records
            << " at the end\n";
}

TEST(DeliveryRecordRetentionTest, PlanKeepsAgentsWithHistoryOrLive) {
  const AgentId with_history{"h-1-1"}, live{"h-2-2"}, gone{"h-3-3"}, live_with_history{"h-4-4"};
  const std::map<AgentId, absl::Time> history = {{with_history, kT0}, {live_with_history, kT0}};
  const std::set<AgentId> live_agents = {live, live_with_history};
  EXPECT_THAT(PlanDeliveryRecordRetention({gone, with_history, live, live_with_history, gone},
                                          history, live_agents),
              ::testing::ElementsAre(gone));
  EXPECT_THAT(PlanDeliveryRecordRetention({with_history, live}, {}, {}),
              ::testing::ElementsAre(with_history, live));
}

TEST_F(RecordRetentionTest, DeliveryRecordGoesWhenItsAgentHasNoHistoryAndIsNotLive) {
  OpenStore(uint64_t{1} << 30);
  EscalationConfig config;
  config.enabled = false;
  StartEscalation(config);
  const AgentId run1{"node-1-100-1"}, run2{"node-1-200-2"}, quiet{"node-1-300-3"};
  // run1's snapshot ages out; run2 has a snapshot within retention_age (30 days); quiet has
  // delivered live-set points only (no snapshot) and is live.
  ASSERT_TRUE(
      store_->Append(Snapshot{run1, kT0, Histogram(5, 0), {}}, {{kDelivery, run1.value, "4"}})
          .ok());
  ASSERT_TRUE(store_
                  ->Append(Snapshot{run2, kT0 + absl::Hours(24 * 20), Histogram(5, 1), {}},
                           {{kDelivery, run2.value, "9"}})
                  .ok());
  AgentInfo info;
  info.id = quiet;
  ASSERT_TRUE(store_->PutAgent(info).ok());
  ASSERT_TRUE(store_->PutRecord(kDelivery, quiet.value, "2").ok());
  MarkLive(run1, {});
  MarkLive(quiet, {});
  RecordRetentionPolicy policy;
  clock_.Set(kT0 + absl::Hours(24 * 40));
  ASSERT_TRUE(store_->EnforceRetention().ok());
  // run1's snapshot is gone (and its idle agent entry with it).
  auto oldest = store_->OldestSnapshotTime(run1);
  ASSERT_TRUE(absl::IsNotFound(oldest.status()) || (oldest.ok() && !oldest->has_value()));
  // run1 is still live: its record stays (a reconnect of the same JVM keeps its sequence).
  auto r = escalation_->EnforceRecordRetention(policy);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->delivery_records_deleted, 0u);
  EXPECT_EQ(*store_->GetRecord(kDelivery, run1.value), "4");
  // Its JVM exited: the record goes; run2 (history) and quiet (live) keep theirs.
  escalation_->RemoveAgent(run1);
  r = escalation_->EnforceRecordRetention(policy);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->delivery_records_deleted, 1u);
  EXPECT_TRUE(absl::IsNotFound(store_->GetRecord(kDelivery, run1.value).status()));
  EXPECT_EQ(*store_->GetRecord(kDelivery, run2.value), "9");
  EXPECT_EQ(*store_->GetRecord(kDelivery, quiet.value), "2");
  // quiet goes down too: no snapshot, not live.
  escalation_->RemoveAgent(quiet);
  r = escalation_->EnforceRecordRetention(policy);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->delivery_records_deleted, 1u);
  EXPECT_TRUE(absl::IsNotFound(store_->GetRecord(kDelivery, quiet.value).status()));
  EXPECT_EQ(*store_->GetRecord(kDelivery, run2.value), "9");
}

TEST_F(RecordRetentionTest, DumpsInProgressAndAgentsWithHistoryAreKept) {
  OpenStore(uint64_t{1} << 30);
  EscalationConfig config;
  config.enabled = false;
  StartEscalation(config);
  ASSERT_TRUE(store_->Append(Snapshot{kLive, kT0, Histogram(10, 0), {}}).ok());
  // Before the history: aged out. After: kept. In progress (written after Start, so not
  // recovered), before the history: kept.
  PutAnalysedDump(kLive, kT0 - absl::Hours(1), {"com.example.A"});
  PutAnalysedDump(kLive, kT0 + absl::Hours(1), {"com.example.B"});
  v1::ExtendedDump running;
  running.set_agent(kLive.value);
  running.set_dump_id(DumpIdFor(kT0 - absl::Hours(2)));
  running.set_state(v1::EXTENDED_DUMP_STATE_ANALYZING);
  ASSERT_TRUE(store_
                  ->PutRecord("xdump", absl::StrCat(kLive.value, "/", running.dump_id()),
                              running.SerializeAsString())
                  .ok());
  // A report without any dump record (left by a crash mid-write), before the history.
  ASSERT_TRUE(
      store_
          ->PutRecord("xreport",
                      absl::StrCat(kLive.value, "/com.example.C/", DumpIdFor(kT0 - absl::Hours(3))),
                      "x")
          .ok());
  RecordRetentionPolicy policy;
  auto r = escalation_->EnforceRecordRetention(policy);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dumps_deleted, 2u);
  auto dumps = escalation_->ListDumps(kLive);
  ASSERT_TRUE(dumps.ok());
  ASSERT_EQ(dumps->size(), 2u);
  EXPECT_EQ((*dumps)[0].dump_id(), DumpIdFor(kT0 + absl::Hours(1)));
  EXPECT_EQ((*dumps)[1].state(), v1::EXTENDED_DUMP_STATE_ANALYZING);
  auto reports = store_->ListRecords("xreport", "");
  ASSERT_TRUE(reports.ok());
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ((*reports)[0].first,
            absl::StrCat(kLive.value, "/com.example.B/", DumpIdFor(kT0 + absl::Hours(1))));
}

class RawDumpBudgetTest : public RecordRetentionTest {
 protected:
  // A kept raw dump of `mib` MiB at `t` (a real file where escalation writes dumps).
  std::string PutKeptRawDump(absl::Time t, int mib) {
    const std::string dir = absl::StrCat(dir_.path(), "/data/dumps/", getuid());
    fs::create_directories(dir);
    const std::string path = absl::StrCat(dir, "/", DumpIdFor(t), ".hprof.gz");
    std::ofstream(path) << std::string(static_cast<size_t>(mib) << 20, 'x');
    PutAnalysedDump(kLive, t, {"com.example.A"}, path);
    return path;
  }
  v1::ExtendedDump Record(absl::Time t) {
    v1::ExtendedDump d;
    auto v = store_->GetRecord("xdump", absl::StrCat(kLive.value, "/", DumpIdFor(t)));
    EXPECT_TRUE(v.ok()) << v.status();
    if (v.ok()) d.ParseFromString(*v);
    return d;
  }
};

TEST_F(RawDumpBudgetTest, KeptRawDumpsCountAgainstTheDiskBudgetOldestDeletedFirst) {
  OpenStore(uint64_t{1} << 30);
  std::vector<std::string> paths;
  for (int i = 0; i < 4; ++i) paths.push_back(PutKeptRawDump(kT0 + absl::Hours(i), 3));
  EscalationConfig config;
  config.keep_raw_dumps = true;
  config.max_dump_disk_bytes = uint64_t{10} << 20;
  config.join_window = absl::ZeroDuration();
  config.min_dump_interval = absl::Seconds(1);
  StartEscalation(config);
  // 12 MiB kept > 10 MiB: the oldest went at start.
  EXPECT_FALSE(fs::exists(paths[0]));
  EXPECT_TRUE(fs::exists(paths[1]) && fs::exists(paths[2]) && fs::exists(paths[3]));
  EXPECT_EQ(escalation_->KeptRawDumpBytes(), uint64_t{9} << 20);
  EXPECT_FALSE(Record(kT0).raw_dump_kept());
  EXPECT_EQ(Record(kT0).raw_dump_path(), "");
  EXPECT_TRUE(Record(kT0 + absl::Hours(1)).raw_dump_kept());

  // A new dump estimated at 2.4 MiB (1.2 x 2 MiB) needs room: the next oldest kept dump goes before
  // the JVM is paused. (The target is this test process, not a JVM: the dump itself then fails.)
  clock_.Set(kT0 + absl::Hours(5));
  EscalationTarget target;
  target.info.id = kLive;
  target.info.pid = getpid();
  target.jvm.pid = getpid();
  target.jvm.ns_pid = getpid();
  target.jvm.uid = getuid();
  target.jvm.gid = getgid();
  target.jvm.root_tmp_dir = "/tmp";
  target.heap_bytes = uint64_t{2} << 20;
  escalation_->OnCollection(target, {});
  auto dump = escalation_->Trigger(kLive);
  ASSERT_TRUE(dump.ok()) << dump.status();
  ASSERT_TRUE(WaitFor([&] {
    auto d = store_->GetRecord("xdump", absl::StrCat(kLive.value, "/", dump->dump_id()));
    v1::ExtendedDump r;
    return d.ok() && r.ParseFromString(*d) && r.state() == v1::EXTENDED_DUMP_STATE_FAILED;
  }));
  EXPECT_FALSE(fs::exists(paths[1]));
  EXPECT_TRUE(fs::exists(paths[2]) && fs::exists(paths[3]));
  EXPECT_EQ(escalation_->KeptRawDumpBytes(), uint64_t{6} << 20);

  // Record retention deleting a dump deletes its kept raw dump with it.
  ASSERT_TRUE(store_->Append(Snapshot{kLive, kT0 + absl::Hours(3), Histogram(5, 0), {}}).ok());
  RecordRetentionPolicy policy;
  auto r = escalation_->EnforceRecordRetention(policy);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(fs::exists(paths[2]));  // dump at +2 h, before the oldest snapshot (+3 h)
  EXPECT_TRUE(fs::exists(paths[3]));
  EXPECT_EQ(escalation_->KeptRawDumpBytes(), uint64_t{3} << 20);
}

}  // namespace
}  // namespace heapwatch::daemon
