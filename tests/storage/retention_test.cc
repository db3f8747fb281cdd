// Retention by age (FakeClock) and by size, in the foreground and in the background thread.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "storage/detail/codec.h"
#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::ExpectSameSnapshot;
using testing::SyntheticSnapshot;
using testing::T0;
using testing::TempDir;
using testing::TestOptions;

std::vector<absl::Time> Times(SnapshotStore& store, const std::string& agent) {
  auto t = store.ListSnapshotTimes(AgentId(agent), absl::InfinitePast(), absl::InfiniteFuture());
  HW_CHECK(t.ok());
  return *t;
}

TEST(RetentionTest, ByAgeDeletesOldSnapshotsAndKeepsTheRestDecodable) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  o.keyframe_interval = 16;
  auto store = *SnapshotStore::Open(o);
  std::vector<Snapshot> written;
  for (int step = 0; step < 100; ++step) {  // one per minute for 100 minutes
    written.push_back(SyntheticSnapshot("a", 1, step, 100));
    ASSERT_TRUE(store->Append(written.back()).ok());
  }
  clock.Set(T0() + absl::Minutes(100));  // cutoff: minute 40
  ASSERT_TRUE(store->EnforceRetention().ok());
  std::vector<absl::Time> times = Times(*store, "a");
  ASSERT_EQ(times.size(), 60u);
  EXPECT_EQ(times.front(), T0() + absl::Minutes(40));
  // Minute 40 was a delta (key frames at 0, 16, 32, 48...): it was rewritten as a key frame, and
  // every remaining snapshot reads back exactly.
  for (int step = 40; step < 100; ++step) {
    auto got = store->ReadSnapshot(AgentId("a"), written[step].time);
    ASSERT_TRUE(got.ok()) << step << ": " << got.status();
    ExpectSameSnapshot(*got, written[step]);
  }
  // Appends continue on the cached chain.
  Snapshot next = SyntheticSnapshot("a", 1, 100, 100);
  ASSERT_TRUE(store->Append(next).ok());
  ExpectSameSnapshot(*store->ReadSnapshot(next.agent, next.time), next);
  auto history = store->ClassHistory(AgentId("a"), "com.example.pkg0.Class0", absl::InfinitePast(),
                                     absl::InfiniteFuture());
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), 61u);
}

TEST(RetentionTest, UnreadableSnapshotsAfterTheCutoffDoNotStopRetention) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  o.keyframe_interval = 4;  // key frames at minutes 0, 4, 8
  std::vector<Snapshot> written;
  {
    auto store = *SnapshotStore::Open(o);
    for (int step = 0; step < 12; ++step) {
      written.push_back(SyntheticSnapshot("a", 2, step, 40));
      ASSERT_TRUE(store->Append(written.back()).ok());
    }
  }
  // Corrupt the key frame at minute 4: minutes 5-7 are deltas on it.
  testing::Poke(tmp.path(), "snapshots",
                detail::SnapshotKey(detail::AgentNo{0}, absl::ToUnixMicros(written[4].time)),
                "bad");
  auto store = *SnapshotStore::Open(o);
  clock.Set(T0() + absl::Minutes(65));  // cutoff: minute 5
  ASSERT_TRUE(store->EnforceRetention().ok());
  std::vector<absl::Time> times = Times(*store, "a");
  ASSERT_EQ(times.size(), 4u);  // 5-7 could not be kept without their base
  EXPECT_EQ(times.front(), T0() + absl::Minutes(8));
  for (int step = 8; step < 12; ++step) {
    ExpectSameSnapshot(*store->ReadSnapshot(AgentId("a"), written[step].time), written[step]);
  }
}

TEST(RetentionTest, ByAgeDeletesIdleAgentsAndTheirDictionaries) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  auto store = *SnapshotStore::Open(o);
  AgentInfo gone, fresh;
  gone.id = AgentId("gone");
  fresh.id = AgentId("fresh");
  ASSERT_TRUE(store->PutAgent(gone).ok());
  for (int step = 0; step < 5; ++step) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("gone", 1, step, 50)).ok());
  }
  clock.Advance(absl::Hours(2));
  ASSERT_TRUE(store->PutAgent(fresh).ok());  // known, no snapshots yet, but recently updated
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto agents = store->ListAgents();
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ((*agents)[0].id, fresh.id);
  auto stats = store->Stats();
  EXPECT_EQ(stats->classes, 0u);
  EXPECT_EQ(stats->snapshots, 0u);
  // The same id coming back is a new agent with a fresh history.
  Snapshot again = SyntheticSnapshot("gone", 1, 200, 50);
  ASSERT_TRUE(store->Append(again).ok());
  ExpectSameSnapshot(*store->ReadSnapshot(again.agent, again.time), again);
  EXPECT_EQ(store->Stats()->classes, again.histogram.rows.size());
}

TEST(RetentionTest, AgentWithHistoryOutsideTheWindowKeepsItsRecordWhileUpdated) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  auto store = *SnapshotStore::Open(o);
  ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, 0, 20)).ok());
  clock.Advance(absl::Hours(2));
  AgentInfo a;
  a.id = AgentId("a");
  ASSERT_TRUE(store->PutAgent(a).ok());
  ASSERT_TRUE(store->EnforceRetention().ok());
  EXPECT_TRUE(store->GetAgent(a.id).ok());
  EXPECT_TRUE(Times(*store, "a").empty());
  EXPECT_EQ(store->Stats()->classes, 0u);  // the dictionary went with the last snapshot
  Snapshot next = SyntheticSnapshot("a", 1, 130, 20);
  ASSERT_TRUE(store->Append(next).ok());
  ExpectSameSnapshot(*store->ReadSnapshot(next.agent, next.time), next);
}

TEST(RetentionTest, BySizeDeletesTheGloballyOldestFirst) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.retention_age = absl::InfiniteDuration();
  o.keyframe_interval = 8;
  auto store = *SnapshotStore::Open(o);
  // Three agents with interleaved times.
  std::map<std::pair<std::string, int>, Snapshot> written;
  for (int step = 0; step < 60; ++step) {
    for (int a = 0; a < 3; ++a) {
      std::string agent = "agent-" + std::to_string(a);
      Snapshot s = SyntheticSnapshot(agent, a + 1, step, 400);
      s.time += absl::Seconds(a * 20);
      written[{agent, step}] = s;
      ASSERT_TRUE(store->Append(s).ok());
    }
  }
  ASSERT_TRUE(store->PutRecord("reports", "kept", std::string(10000, 'r')).ok());
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  // About two thirds of the snapshots must go (dictionaries and records are a fixed cost).
  uint64_t target = stats->used_bytes - stats->snapshot_bytes * 2 / 3;
  store.reset();
  o.retention_bytes = target;
  store = *SnapshotStore::Open(o);
  for (int a = 0; a < 3; ++a) {  // fills the Append cache of every agent before retention runs
    std::string agent = "agent-" + std::to_string(a);
    Snapshot s = SyntheticSnapshot(agent, a + 1, 60, 400);
    s.time += absl::Seconds(a * 20);
    written[{agent, 60}] = s;
    ASSERT_TRUE(store->Append(s).ok());
  }
  ASSERT_TRUE(store->EnforceRetention().ok());
  uint64_t after = *store->UsedBytes();
  EXPECT_LE(after, target);
  // Whatever remains is a suffix of the global time order: every kept snapshot is newer than every
  // deleted one.
  absl::Time oldest_kept = absl::InfiniteFuture(), newest_deleted = absl::InfinitePast();
  size_t kept = 0;
  for (const auto& [key, s] : written) {
    auto got = store->ReadSnapshot(s.agent, s.time);
    if (got.ok()) {
      ExpectSameSnapshot(*got, s);
      oldest_kept = std::min(oldest_kept, s.time);
      ++kept;
    } else {
      ASSERT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();
      newest_deleted = std::max(newest_deleted, s.time);
    }
  }
  // It deleted what it had to, not everything.
  EXPECT_GT(kept, written.size() / 6);
  EXPECT_LT(kept, written.size() * 2 / 3);
  EXPECT_LT(newest_deleted, oldest_kept);
  EXPECT_EQ(store->GetRecord("reports", "kept")->size(), 10000u);  // records are not retained
  // The cache stayed consistent: appends go on and read back.
  Snapshot next = SyntheticSnapshot("agent-1", 2, 61, 400);
  next.time += absl::Seconds(20);
  ASSERT_TRUE(store->Append(next).ok());
  ExpectSameSnapshot(*store->ReadSnapshot(next.agent, next.time), next);
}

TEST(RetentionTest, BySizeBelowTheFixedCostDeletesAllSnapshotsAndStops) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.retention_bytes = 1;  // less than any store
  auto store = *SnapshotStore::Open(o);
  for (int step = 0; step < 10; ++step) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, step, 50)).ok());
  }
  ASSERT_TRUE(store->EnforceRetention().ok());
  EXPECT_EQ(store->Stats()->snapshots, 0u);
  EXPECT_EQ(store->Stats()->classes, 0u);
  EXPECT_TRUE(store->GetAgent(AgentId("a")).ok());  // updated recently: kept
}

TEST(RetentionTest, RunsInTheBackground) {
  TempDir tmp;
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Minutes(10);
  o.background_retention = true;
  o.retention_interval = absl::Milliseconds(20);
  auto store = *SnapshotStore::Open(o);
  for (int step = 0; step < 30; ++step) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, step, 30)).ok());
  }
  EXPECT_EQ(Times(*store, "a").size(), 30u);
  clock.Set(T0() + absl::Minutes(30));  // cutoff: minute 20
  absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (Times(*store, "a").size() != 10 && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(10));
  std::vector<absl::Time> times = Times(*store, "a");
  ASSERT_EQ(times.size(), 10u);
  EXPECT_EQ(times.front(), T0() + absl::Minutes(20));
}

}  // namespace
}  // namespace heapwatch::storage
