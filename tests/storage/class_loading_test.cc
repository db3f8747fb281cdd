// The class-loading series (table class_loading): round trips, persistence across reopen, what age
// and size retention and DeleteAgent delete with the snapshots, the per-point size, corrupt values.
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

AgentInfo Agent(const char* id) {
  AgentInfo info;
  info.id = AgentId(id);
  return info;
}

// A Tomcat-like reading: 2,600 classes plus 305 per minute, metaspace 14 MB plus 0.5 MB per minute.
ClassLoadingPoint Point(int minute) {
  ClassLoadingPoint p;
  p.time = T0() + absl::Minutes(minute);
  p.loaded_classes = 2600 + 305 * static_cast<uint64_t>(minute);
  p.unloaded_classes = static_cast<uint64_t>(minute) / 3;
  p.metaspace_used_bytes = 14'000'000 + 500'000 * static_cast<uint64_t>(minute);
  p.metaspace_capacity_bytes = p.metaspace_used_bytes + 1'000'000;
  p.class_space_used_bytes = p.metaspace_used_bytes / 8;
  return p;
}

TEST(ClassLoadingStoreTest, PointsRoundTripInTimeOrderAndSurviveReopen) {
  TempDir tmp;
  {
    auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
    ASSERT_TRUE(store->PutAgent(Agent("a")).ok());
    for (int m : {4, 0, 2, 1, 3})
      ASSERT_TRUE(store->AppendClassLoading(AgentId("a"), Point(m)).ok());
    EXPECT_TRUE(absl::IsAlreadyExists(store->AppendClassLoading(AgentId("a"), Point(2))));
  }
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  auto all = store->ReadClassLoading(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  for (int m = 0; m < 5; ++m) EXPECT_EQ((*all)[m], Point(m));
  auto range =
      store->ReadClassLoading(AgentId("a"), T0() + absl::Minutes(1), T0() + absl::Minutes(3), 0);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->size(), 3u);
  auto last2 =
      store->ReadClassLoading(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 2);
  ASSERT_TRUE(last2.ok());
  ASSERT_EQ(last2->size(), 2u);
  EXPECT_EQ(last2->front(), Point(3));
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->class_loading_points, 5u);
  EXPECT_GT(stats->class_loading_bytes, 0u);
  EXPECT_EQ(stats->live_set_points, 0u);  // a table of its own
  auto usage = store->UsageByKind();
  ASSERT_TRUE(usage.ok());
  uint64_t sum = 0, points = 0;
  for (const KindUsage& u : *usage) {
    sum += u.bytes;
    if (u.kind == "class_loading") points = u.records;
  }
  EXPECT_EQ(points, 5u);
  EXPECT_EQ(sum, *store->UsedBytes());  // the new table is counted
}

TEST(ClassLoadingStoreTest, UnknownAgentsAndBadInput) {
  TempDir tmp;
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  EXPECT_TRUE(absl::IsNotFound(store->AppendClassLoading(AgentId("nobody"), Point(1))));
  EXPECT_TRUE(absl::IsNotFound(
      store->ReadClassLoading(AgentId("nobody"), absl::InfinitePast(), absl::InfiniteFuture(), 0)
          .status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store->AppendClassLoading(AgentId("bad id!"), Point(1))));
  ASSERT_TRUE(store->PutAgent(Agent("a")).ok());
  ClassLoadingPoint p = Point(1);
  p.time = absl::InfiniteFuture();
  EXPECT_TRUE(absl::IsInvalidArgument(store->AppendClassLoading(AgentId("a"), p)));
}

TEST(ClassLoadingStoreTest, AgeRetentionAndDeleteAgentTakeThePointsAlong) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  auto store = *SnapshotStore::Open(o);
  for (int m = 0; m < 100; ++m) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, m, 20)).ok());
    ASSERT_TRUE(store->AppendClassLoading(AgentId("a"), Point(m)).ok());
  }
  clock.Set(T0() + absl::Minutes(100));  // cutoff: minute 40
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto points =
      store->ReadClassLoading(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 60u);
  EXPECT_EQ(points->front(), Point(40));
  EXPECT_EQ(points->back(), Point(99));
  ASSERT_TRUE(store->DeleteAgent(AgentId("a")).ok());
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->class_loading_points, 0u);
  EXPECT_EQ(stats->class_loading_bytes, 0u);
}

TEST(ClassLoadingStoreTest, SizeRetentionDeletesThePointsOfTheDeletedSnapshots) {
  TempDir tmp;
  constexpr int kSteps = 200;
  FakeClock clock(T0() + absl::Minutes(kSteps));  // nothing is old enough for age retention
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  auto store = *SnapshotStore::Open(o);
  for (int m = 0; m < kSteps; ++m) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, m, 300)).ok());
    ASSERT_TRUE(store->AppendClassLoading(AgentId("a"), Point(m)).ok());
  }
  auto before = store->Stats();
  ASSERT_TRUE(before.ok());
  // About 14 bytes of value plus 12 of key per point: 200 points fit in a few 4 KiB pages.
  EXPECT_LE(before->class_loading_bytes, 4u * 4096);
  const uint64_t target = before->used_bytes - before->snapshot_bytes / 2;
  store.reset();
  o.retention_bytes = target;
  store = *SnapshotStore::Open(o);
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto oldest = store->OldestSnapshotTime(AgentId("a"));
  ASSERT_TRUE(oldest.ok() && oldest->has_value());
  ASSERT_GT(**oldest, T0());  // some snapshots went
  auto points =
      store->ReadClassLoading(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(points.ok());
  ASSERT_FALSE(points->empty());
  // The points older than the oldest remaining snapshot went with the snapshots; the rest stayed.
  EXPECT_EQ(points->front().time, **oldest);
  EXPECT_EQ(points->back(), Point(kSteps - 1));
}

TEST(ClassLoadingStoreTest, CorruptValuesAreDataLossNamingTheKey) {
  const std::string good = detail::EncodeClassLoadingPoint(Point(7));
  EXPECT_LE(good.size(), 24u);  // compact: crc, version and five varints
  auto ok = detail::DecodeClassLoadingPoint(good, absl::ToUnixMicros(Point(7).time), "x");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, Point(7));
  EXPECT_TRUE(absl::IsDataLoss(detail::DecodeClassLoadingPoint("xx", 0, "x").status()));
  std::string flipped = good;
  flipped[6] ^= 0x40;
  auto bad = detail::DecodeClassLoadingPoint(flipped, 0, "class_loading[a @ t]");
  ASSERT_TRUE(absl::IsDataLoss(bad.status()));
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("class_loading[a @ t]"));
  // A value cut short, with a correct checksum over what is left, is still refused.
  std::string payload = good.substr(4, good.size() - 6);
  std::string truncated;
  detail::PutFixed32BE(&truncated, detail::Crc32(payload));
  truncated += payload;
  EXPECT_TRUE(absl::IsDataLoss(detail::DecodeClassLoadingPoint(truncated, 0, "x").status()));
}

}  // namespace
}  // namespace heapwatch::storage
