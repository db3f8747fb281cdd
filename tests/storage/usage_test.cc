// The store's use per kind, the atomic deletion of several records and the oldest snapshot of an
// agent (storage/usage.cc), against a real LMDB environment.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::SyntheticSnapshot;
using testing::T0;
using testing::TempDir;
using testing::TestOptions;

std::map<std::string, KindUsage> ByKind(const SnapshotStore& store) {
  auto usage = store.UsageByKind();
  EXPECT_TRUE(usage.ok()) << usage.status();
  std::map<std::string, KindUsage> out;
  if (usage.ok()) {
    for (const KindUsage& u : *usage) out[u.kind] = u;
  }
  return out;
}

TEST(UsageTest, KindsCountEntriesAndSumToUsedBytes) {
  TempDir tmp;
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, i, 50)).ok());
  ASSERT_TRUE(store->PutRecord("xdump", "a/1", "d").ok());
  ASSERT_TRUE(store->PutRecord("xreport", "a/C/1", std::string(20000, 'r')).ok());
  ASSERT_TRUE(store->PutRecord("xreport", "a/D/1", std::string(100, 'r')).ok());
  std::map<std::string, KindUsage> u = ByKind(*store);
  EXPECT_EQ(u["snapshots"].records, 3u);
  EXPECT_EQ(u["dictionary"].records, 50u);
  EXPECT_EQ(u["agents"].records, 1u);
  EXPECT_EQ(u["records/xdump"].records, 1u);
  EXPECT_EQ(u["records/xreport"].records, 2u);
  // The 20 KB report takes overflow pages: most of the records table is the reports'.
  EXPECT_GT(u["records/xreport"].bytes, 20000u);
  EXPECT_LT(u["records/xdump"].bytes, 4096u);
  uint64_t sum = 0;
  for (const auto& [kind, k] : u) sum += k.bytes;
  EXPECT_EQ(sum, *store->UsedBytes());
}

TEST(UsageTest, DeleteRecordsIsAllOrNothing) {
  TempDir tmp;
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  ASSERT_TRUE(store->PutRecord("xdump", "a/1", "d").ok());
  ASSERT_TRUE(store->PutRecord("xreport", "a/C/1", "r").ok());
  // A malformed reference: nothing is deleted.
  auto bad = store->DeleteRecords({{"xdump", "a/1"}, {"", "x"}});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_TRUE(store->GetRecord("xdump", "a/1").ok());
  auto n = store->DeleteRecords({{"xdump", "a/1"}, {"xreport", "a/C/1"}, {"xsummary", "a/1"}});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2u);  // the absent summary is skipped
  EXPECT_TRUE(absl::IsNotFound(store->GetRecord("xdump", "a/1").status()));
  EXPECT_TRUE(absl::IsNotFound(store->GetRecord("xreport", "a/C/1").status()));
}

TEST(UsageTest, OldestSnapshotTime) {
  TempDir tmp;
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  EXPECT_TRUE(absl::IsNotFound(store->OldestSnapshotTime(AgentId("a")).status()));
  AgentInfo info;
  info.id = AgentId("a");
  ASSERT_TRUE(store->PutAgent(info).ok());
  EXPECT_EQ(*store->OldestSnapshotTime(AgentId("a")), std::nullopt);
  for (int i : {3, 1, 2}) ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, i, 5)).ok());
  auto oldest = store->OldestSnapshotTime(AgentId("a"));
  ASSERT_TRUE(oldest.ok() && oldest->has_value());
  EXPECT_EQ(**oldest, SyntheticSnapshot("a", 1, 1, 5).time);
}

// The delivery records' deletion (daemon/record_retention.h rule 4): the snapshot check happens in
// the deleting transaction, so an agent that has a snapshot keeps its record whatever the caller
// planned.
TEST(UsageTest, DeleteRecordsOfAgentsWithoutSnapshotsKeepsAgentsWithSnapshots) {
  TempDir tmp;
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  // "with": a snapshot stored with its record; "without": known, no snapshot; "unknown": only a
  // record (its agent deleted by retention).
  ASSERT_TRUE(store->Append(SyntheticSnapshot("with", 1, 1, 5), {{"delivery", "with", "7"}}).ok());
  AgentInfo info;
  info.id = AgentId("without");
  ASSERT_TRUE(store->PutAgent(info).ok());
  for (const char* agent : {"without", "unknown"}) {
    ASSERT_TRUE(store->PutRecord("delivery", agent, "3").ok());
  }
  ASSERT_TRUE(store->PutRecord("other", "unknown", "x").ok());
  auto n = store->DeleteRecordsOfAgentsWithoutSnapshots(
      "delivery", {AgentId("with"), AgentId("without"), AgentId("unknown"), AgentId("absent"),
                   AgentId("bad/id")});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(*store->GetRecord("delivery", "with"), "7");
  EXPECT_TRUE(absl::IsNotFound(store->GetRecord("delivery", "without").status()));
  EXPECT_TRUE(absl::IsNotFound(store->GetRecord("delivery", "unknown").status()));
  EXPECT_EQ(*store->GetRecord("other", "unknown"), "x");  // only the named table
  // Once its snapshot is gone, the record of "with" goes too.
  ASSERT_TRUE(store->DeleteAgent(AgentId("with")).ok());
  n = store->DeleteRecordsOfAgentsWithoutSnapshots("delivery", {AgentId("with")});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1u);
  EXPECT_TRUE(absl::IsNotFound(store->GetRecord("delivery", "with").status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(store->DeleteRecordsOfAgentsWithoutSnapshots("", {}).status()));
}

}  // namespace
}  // namespace heapwatch::storage
