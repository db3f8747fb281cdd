// The string-table series (table string_table): round trips, persistence across reopen, the use per
// kind, what age and size retention and DeleteAgent delete with the snapshots, corrupt values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "storage/detail/codec.h"
#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::SyntheticSnapshot;
using testing::T0;
using testing::TempDir;
using testing::TestOptions;

// A JVM interning 1,000 unique request ids a second, read once a minute: the figures follow
// VM.stringtable's (16-byte entries, about 65 bytes per literal).
StringTableStats Point(int minute) {
  StringTableStats p;
  p.time = T0() + absl::Minutes(minute);
  p.buckets = minute < 50 ? 65536 : 131072;
  p.bucket_bytes = p.buckets * 8;
  p.entries = 3871 + 60'000 * static_cast<uint64_t>(minute);
  p.entry_bytes = p.entries * 16;
  p.literals = p.entries;
  p.literal_bytes = p.entries * 65;
  p.footprint_bytes = p.bucket_bytes + p.entry_bytes + p.literal_bytes;
  p.max_bucket = 3 + static_cast<uint64_t>(minute) / 10;
  return p;
}

uint64_t UsageOf(const SnapshotStore& store, std::string_view kind, uint64_t* sum) {
  auto usage = store.UsageByKind();
  EXPECT_TRUE(usage.ok()) << usage.status();
  uint64_t records = 0;
  *sum = 0;
  for (const KindUsage& u : *usage) {
    *sum += u.bytes;
    if (u.kind == kind) records = u.records;
  }
  return records;
}

TEST(StringTableStoreTest, PointsRoundTripInTimeOrderAndSurviveReopen) {
  TempDir tmp;
  {
    auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
    AgentInfo info;
    info.id = AgentId("a");
    ASSERT_TRUE(store->PutAgent(info).ok());
    for (int m : {4, 0, 2, 1, 3})
      ASSERT_TRUE(store->AppendStringTable(AgentId("a"), Point(m)).ok());
    EXPECT_TRUE(absl::IsAlreadyExists(store->AppendStringTable(AgentId("a"), Point(2))));
  }
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  auto all = store->ReadStringTable(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  for (int m = 0; m < 5; ++m) EXPECT_EQ((*all)[m], Point(m));
  auto range =
      store->ReadStringTable(AgentId("a"), T0() + absl::Minutes(1), T0() + absl::Minutes(3), 0);
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->size(), 3u);
  EXPECT_EQ(range->front(), Point(1));
  auto last2 =
      store->ReadStringTable(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 2);
  ASSERT_TRUE(last2.ok());
  ASSERT_EQ(last2->size(), 2u);
  EXPECT_EQ(last2->front(), Point(3));
  auto empty = store->ReadStringTable(AgentId("a"), T0() + absl::Minutes(3), T0(), 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->string_table_points, 5u);
  EXPECT_GT(stats->string_table_bytes, 0u);
  EXPECT_EQ(stats->class_loading_points, 0u);  // a table of its own
  EXPECT_EQ(stats->live_set_points, 0u);
  uint64_t sum = 0;
  EXPECT_EQ(UsageOf(*store, "string_table", &sum), 5u);
  EXPECT_EQ(UsageOf(*store, "class_loading", &sum), 0u);
  EXPECT_EQ(sum, *store->UsedBytes());  // the new table is counted
}

TEST(StringTableStoreTest, UnknownAgentsAndBadInput) {
  TempDir tmp;
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  EXPECT_TRUE(absl::IsNotFound(store->AppendStringTable(AgentId("nobody"), Point(1))));
  EXPECT_TRUE(absl::IsNotFound(
      store->ReadStringTable(AgentId("nobody"), absl::InfinitePast(), absl::InfiniteFuture(), 0)
          .status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store->AppendStringTable(AgentId("bad id!"), Point(1))));
  EXPECT_TRUE(absl::IsInvalidArgument(
      store->ReadStringTable(AgentId("bad id!"), absl::InfinitePast(), absl::InfiniteFuture(), 0)
          .status()));
  ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, 0, 5)).ok());  // Append creates the agent
  StringTableStats p = Point(1);
  p.time = absl::InfiniteFuture();
  EXPECT_TRUE(absl::IsInvalidArgument(store->AppendStringTable(AgentId("a"), p)));
  EXPECT_TRUE(store->AppendStringTable(AgentId("a"), Point(1)).ok());
}

TEST(StringTableStoreTest, AgeRetentionAndDeleteAgentTakeThePointsAlong) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  auto store = *SnapshotStore::Open(o);
  for (int m = 0; m < 100; ++m) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, m, 20)).ok());
    ASSERT_TRUE(store->AppendStringTable(AgentId("a"), Point(m)).ok());
    ASSERT_TRUE(store->Append(SyntheticSnapshot("b", 2, m, 20)).ok());
    ASSERT_TRUE(store->AppendStringTable(AgentId("b"), Point(m)).ok());
  }
  clock.Set(T0() + absl::Minutes(100));  // cutoff: minute 40
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto points =
      store->ReadStringTable(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 60u);
  EXPECT_EQ(points->front(), Point(40));
  EXPECT_EQ(points->back(), Point(99));
  ASSERT_TRUE(store->DeleteAgent(AgentId("a")).ok());
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->string_table_points, 60u);  // b's alone
  auto b = store->ReadStringTable(AgentId("b"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 60u);
  ASSERT_TRUE(store->DeleteAgent(AgentId("b")).ok());
  stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->string_table_points, 0u);
  EXPECT_EQ(stats->string_table_bytes, 0u);
}

TEST(StringTableStoreTest, SizeRetentionDeletesThePointsOfTheDeletedSnapshots) {
  TempDir tmp;
  constexpr int kSteps = 200;
  FakeClock clock(T0() + absl::Minutes(kSteps));  // nothing is old enough for age retention
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  auto store = *SnapshotStore::Open(o);
  for (int m = 0; m < kSteps; ++m) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, m, 300)).ok());
    ASSERT_TRUE(store->AppendStringTable(AgentId("a"), Point(m)).ok());
  }
  auto before = store->Stats();
  ASSERT_TRUE(before.ok());
  // About 25 bytes of value plus 12 of key per point: 200 points fit in a few 4 KiB pages.
  EXPECT_LE(before->string_table_bytes, 4u * 4096);
  const uint64_t target = before->used_bytes - before->snapshot_bytes / 2;
  store.reset();
  o.retention_bytes = target;
  store = *SnapshotStore::Open(o);
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto oldest = store->OldestSnapshotTime(AgentId("a"));
  ASSERT_TRUE(oldest.ok() && oldest->has_value());
  ASSERT_GT(**oldest, T0());  // some snapshots went
  auto points =
      store->ReadStringTable(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(points.ok());
  ASSERT_FALSE(points->empty());
  // The points older than the oldest remaining snapshot went with the snapshots; the rest stayed.
  EXPECT_EQ(points->front().time, **oldest);
  EXPECT_EQ(points->back(), Point(kSteps - 1));
}

TEST(StringTableStoreTest, CorruptValuesAreDataLossNamingTheKey) {
  const std::string good = detail::EncodeStringTablePoint(Point(7));
  EXPECT_LE(good.size(), 32u);  // compact: crc, version and eight varints
  auto ok = detail::DecodeStringTablePoint(good, absl::ToUnixMicros(Point(7).time), "x");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, Point(7));
  EXPECT_TRUE(absl::IsDataLoss(detail::DecodeStringTablePoint("xx", 0, "x").status()));
  std::string flipped = good;
  flipped[6] ^= 0x40;
  auto bad = detail::DecodeStringTablePoint(flipped, 0, "string_table[a @ t]");
  ASSERT_TRUE(absl::IsDataLoss(bad.status()));
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("string_table[a @ t]"));
  // A value cut short or lengthened, with a correct checksum over its bytes, is still refused.
  for (std::string payload : {good.substr(4, good.size() - 6), good.substr(4) + '\x01'}) {
    std::string framed;
    detail::PutFixed32BE(&framed, detail::Crc32(payload));
    framed += payload;
    EXPECT_TRUE(absl::IsDataLoss(detail::DecodeStringTablePoint(framed, 0, "x").status()));
  }
  std::string v2 = good.substr(4);
  v2[0] = 2;  // a version this build does not know
  std::string framed;
  detail::PutFixed32BE(&framed, detail::Crc32(v2));
  framed += v2;
  EXPECT_TRUE(absl::IsDataLoss(detail::DecodeStringTablePoint(framed, 0, "x").status()));
}

}  // namespace
}  // namespace heapwatch::storage
