// The live-set series' own part, the per-snapshot collection costs: stored with their snapshot,
// deleted by retention and DeleteAgent with the snapshots and points, corrupt values. What every
// series has (round trips, ranges, retention, corrupt points) is in series_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <lmdb.h>

#include "storage/detail/codec.h"
#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::SyntheticSnapshot;
using testing::T0;
using testing::TempDir;
using testing::TestOptions;

LiveSetPoint Point(int minute, uint64_t live) {
  return LiveSetPoint{T0() + absl::Minutes(minute), LiveSetSource::kFullGc, live, 2 * live,
                      4 * live};
}

TEST(LiveSetTest, CostsAreStoredWithTheirSnapshot) {
  TempDir tmp;
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  Snapshot live = SyntheticSnapshot("a", 1, 0, 50);
  live.cost = CollectionCost{HistogramMode::kLive, absl::Microseconds(560123)};
  Snapshot after_gc = SyntheticSnapshot("a", 1, 1, 50);
  after_gc.cost = CollectionCost{HistogramMode::kAllAfterGc, absl::Microseconds(171)};
  Snapshot unknown = SyntheticSnapshot("a", 1, 2, 50);  // recorded by an older version
  for (const Snapshot* s : {&live, &after_gc, &unknown}) ASSERT_TRUE(store->Append(*s).ok());
  auto read = store->ReadSnapshots(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 3u);
  EXPECT_EQ((*read)[0].cost, live.cost);
  EXPECT_EQ((*read)[1].cost, after_gc.cost);
  EXPECT_EQ((*read)[2].cost, CollectionCost{});
  auto one = store->ReadSnapshot(AgentId("a"), after_gc.time);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->cost, after_gc.cost);
  auto history = store->ClassHistory(AgentId("a"), live.histogram.rows.front().class_name,
                                     absl::InfinitePast(), absl::InfiniteFuture());
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ((*history)[0].cost, live.cost);
  EXPECT_EQ((*history)[1].cost, after_gc.cost);
  EXPECT_EQ((*history)[2].cost.mode, HistogramMode::kUnknown);
}

TEST(LiveSetTest, RetentionAndDeleteAgentTakeThePointsAndCostsAlong) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  auto store = *SnapshotStore::Open(o);
  for (int m = 0; m < 100; ++m) {
    Snapshot s = SyntheticSnapshot("a", 1, m, 20);
    s.cost = CollectionCost{HistogramMode::kAll, absl::Milliseconds(m)};
    ASSERT_TRUE(store->Append(s).ok());
    ASSERT_TRUE(store->AppendLiveSet(AgentId("a"), Point(m, 100 + m)).ok());
  }
  clock.Set(T0() + absl::Minutes(100));  // cutoff: minute 40
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto points = store->ReadLiveSet(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 60u);
  EXPECT_EQ(points->front().time, T0() + absl::Minutes(40));
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->snapshots, 60u);
  // Costs left only for the remaining snapshots: their values read back.
  auto read = store->ReadSnapshots(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->front().cost.pause, absl::Milliseconds(40));
  ASSERT_TRUE(store->DeleteAgent(AgentId("a")).ok());
  stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->live_set_points, 0u);
  EXPECT_EQ(stats->live_set_bytes, 0u);  // the costs table is empty too
}

TEST(LiveSetTest, CorruptCostsAreDataLoss) {
  std::string c = detail::EncodeCollectionCost({HistogramMode::kLive, absl::Milliseconds(5)});
  auto cost = detail::DecodeCollectionCost(c, "costs[a]");
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->pause, absl::Milliseconds(5));
  c.back() ^= 0x01;
  EXPECT_TRUE(absl::IsDataLoss(detail::DecodeCollectionCost(c, "costs[a]").status()));
}

}  // namespace
}  // namespace heapwatch::storage
