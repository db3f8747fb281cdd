// The escalation's typed record store (daemon/dump_records.h) on a real LMDB store: records read
// back typed, and an analysed dump's DONE record, summary and reports committed in one transaction:
// when the store cannot take all of them (its map is full), none of them appears.
#include "daemon/dump_records.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

namespace fs = std::filesystem;

const AgentId kAgent{"app-1"};
constexpr char kDumpId[] = "20231114T221320.000000Z";

class DumpRecordStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = fs::is_directory("/dev/shm") && access("/dev/shm", W_OK) == 0
                           ? std::string("/dev/shm")
                           : ::testing::TempDir();
    std::string tmpl = base + "/heapwatch-dump-records-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    storage::StoreOptions options;
    options.dir = dir_ + "/data";
    options.background_retention = false;
    options.clock = &clock_;
    // A small map that cannot grow: a commit of more than about 1 MiB fails.
    options.initial_map_bytes = 1 << 20;
    options.max_map_bytes = 1 << 20;
    auto store = storage::SnapshotStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    records_ = std::make_unique<DumpRecordStore>(store_.get());
  }
  void TearDown() override {
    records_.reset();
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static v1::ExtendedDump Dump(v1::ExtendedDumpState state) {
    v1::ExtendedDump d;
    d.set_agent(kAgent.value);
    d.set_dump_id(kDumpId);
    d.set_state(state);
    return d;
  }
  // A report of `class_name` of about `bytes` bytes (its growth history).
  static v1::DrillDownReport Report(const std::string& class_name, size_t bytes) {
    v1::DrillDownReport r;
    r.set_agent(kAgent.value);
    r.set_class_name(class_name);
    r.set_retained_bytes(4096);
    for (size_t i = 0; i * 12 < bytes; ++i) {
      v1::ClassSample* s = r.add_growth_history();
      s->set_bytes(1'000'000'000 + i);
      s->set_instances(1'000'000 + i);
    }
    return r;
  }
  static records::v1::ExtendedDumpSummary Summary() {
    records::v1::ExtendedDumpSummary s;
    s.set_agent(kAgent.value);
    s.set_dump_id(kDumpId);
    return s;
  }

  FakeClock clock_;
  std::string dir_;
  std::unique_ptr<storage::SnapshotStore> store_;
  std::unique_ptr<DumpRecordStore> records_;
};

TEST_F(DumpRecordStoreTest, RecordsReadBackTyped) {
  ASSERT_TRUE(records_->PutDump(Dump(v1::EXTENDED_DUMP_STATE_QUEUED)).ok());
  auto d = records_->GetDump(kAgent, kDumpId);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->state(), v1::EXTENDED_DUMP_STATE_QUEUED);
  EXPECT_EQ(records_->GetDump(kAgent, "20990101T000000.000000Z").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->PutRecord(kDumpRecordTable, DumpRecordKey(kAgent, "x"), "\xff\xff").ok());
  EXPECT_EQ(records_->GetDump(kAgent, "x").status().code(), absl::StatusCode::kDataLoss);
  auto all = records_->ListAllDumps();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_TRUE((*all)[0].parsed);
  EXPECT_FALSE((*all)[1].parsed);
  EXPECT_EQ((*all)[1].key, "app-1/x");
  auto listed = records_->ListDumps(kAgent);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u);  // the corrupt one is skipped
}

TEST_F(DumpRecordStoreTest, ADumpAndItsReportsAppearTogether) {
  ASSERT_TRUE(records_->PutDump(Dump(v1::EXTENDED_DUMP_STATE_ANALYZING)).ok());
  v1::ExtendedDump done = Dump(v1::EXTENDED_DUMP_STATE_DONE);
  done.add_report_classes("a.Node");
  done.add_report_classes("a.Entry");
  ASSERT_TRUE(
      records_->CommitAnalysis(done, Summary(), {Report("a.Node", 1000), Report("a.Entry", 1000)})
          .ok());
  EXPECT_EQ(records_->GetDump(kAgent, kDumpId)->state(), v1::EXTENDED_DUMP_STATE_DONE);
  EXPECT_TRUE(records_->GetSummary(kAgent, kDumpId).ok());
  EXPECT_EQ(records_->GetReport(kAgent, "a.Entry", kDumpId)->retained_bytes(), 4096u);
  auto of_class = records_->ListReportsOfClass(kAgent, "a.Node");
  ASSERT_TRUE(of_class.ok());
  EXPECT_EQ(of_class->size(), 1u);
}

TEST_F(DumpRecordStoreTest, ACommitThatFailsPartWayLeavesNothing) {
  ASSERT_TRUE(records_->PutDump(Dump(v1::EXTENDED_DUMP_STATE_ANALYZING)).ok());
  v1::ExtendedDump done = Dump(v1::EXTENDED_DUMP_STATE_DONE);
  // The first reports fit in the map, the last does not: 3 x 400 KB > 1 MiB.
  std::vector<v1::DrillDownReport> reports = {
      Report("a.Node", 400 << 10), Report("a.Entry", 400 << 10), Report("a.Value", 400 << 10)};
  Status s = records_->CommitAnalysis(done, Summary(), reports);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(records_->GetDump(kAgent, kDumpId)->state(), v1::EXTENDED_DUMP_STATE_ANALYZING);
  EXPECT_EQ(records_->GetSummary(kAgent, kDumpId).status().code(), absl::StatusCode::kNotFound);
  for (const char* c : {"a.Node", "a.Entry", "a.Value"}) {
    EXPECT_EQ(records_->GetReport(kAgent, c, kDumpId).status().code(), absl::StatusCode::kNotFound)
        << c;
  }
  // The store still takes a commit that fits.
  EXPECT_TRUE(records_->CommitAnalysis(done, Summary(), {Report("a.Node", 1000)}).ok());
  EXPECT_EQ(records_->GetDump(kAgent, kDumpId)->state(), v1::EXTENDED_DUMP_STATE_DONE);
}

TEST_F(DumpRecordStoreTest, ReportKeysTooLongForTheStoreAreToldApart) {
  EXPECT_TRUE(DumpRecordStore::ReportKeyFits(kAgent, "a.Node", kDumpId));
  const std::string longest(510 - 7 - kAgent.value.size() - 2 - sizeof(kDumpId) + 1, 'x');
  EXPECT_TRUE(DumpRecordStore::ReportKeyFits(kAgent, longest, kDumpId));
  EXPECT_FALSE(DumpRecordStore::ReportKeyFits(kAgent, longest + "x", kDumpId));
  // What fits is what the store takes.
  EXPECT_TRUE(
      store_->PutRecord(kReportRecordTable, ReportRecordKey(kAgent, longest, kDumpId), "").ok());
  EXPECT_FALSE(
      store_->PutRecord(kReportRecordTable, ReportRecordKey(kAgent, longest + "x", kDumpId), "")
          .ok());
}

}  // namespace
}  // namespace heapwatch::daemon
