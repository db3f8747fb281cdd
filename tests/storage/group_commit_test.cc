// Group commit (storage/group_commit.cc): concurrent Appends of many threads share write
// transactions, each is stored exactly once with its delivery record, a failing Append fails only
// itself, and the other writers (records, retention) interleave safely. On the real disk (/tmp):
// batches only form when a commit (two fsyncs) takes long enough for other Appends to queue.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::ExpectSameSnapshot;
using testing::SyntheticSnapshot;
using testing::TempDir;
using testing::TestOptions;

constexpr int kThreads = 16;
constexpr int kPerThread = 25;
constexpr int kClasses = 150;

std::string AgentName(int t) { return absl::StrCat("agent-", t); }

TEST(GroupCommitTest, ConcurrentAppendsShareCommitsAndAreStoredOnce) {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path());
  options.max_cached_agents = 4;  // other agents' Appends evict entries while batches commit
  options.keyframe_interval = 4;  // key frames and deltas
  auto store = SnapshotStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  SnapshotStore& s = **store;
  const uint64_t commits_before = s.Commits();

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Snapshot snap = SyntheticSnapshot(AgentName(t), t, i, kClasses);
        Status st = s.Append(snap, {{"deliveries", AgentName(t), absl::StrCat(i + 1)}});
        if (!st.ok()) {
          ADD_FAILURE() << st;
          failures++;
        }
      }
    });
  }
  // Another writer meanwhile (one commit each): it waits for the Appends in flight.
  constexpr int kPuts = 20;
  threads.emplace_back([&] {
    for (int i = 0; i < kPuts; ++i) EXPECT_TRUE(s.PutRecord("other", absl::StrCat(i), "v").ok());
  });
  for (std::thread& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);

  const uint64_t appends = kThreads * kPerThread;
  const uint64_t commits = s.Commits() - commits_before - kPuts;
  EXPECT_LT(commits, appends) << "no Appends shared a transaction";
  std::printf("%llu appends in %llu commits\n", static_cast<unsigned long long>(appends),
              static_cast<unsigned long long>(commits));

  auto stats = s.Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->snapshots, appends);
  for (int t = 0; t < kThreads; ++t) {
    auto times =
        s.ListSnapshotTimes(AgentId(AgentName(t)), absl::InfinitePast(), absl::InfiniteFuture());
    ASSERT_TRUE(times.ok()) << times.status();
    ASSERT_EQ(times->size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) {
      Snapshot want = SyntheticSnapshot(AgentName(t), t, i, kClasses);
      auto got = s.ReadSnapshot(want.agent, want.time);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameSnapshot(*got, want);
    }
    auto record = s.GetRecord("deliveries", AgentName(t));
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(*record, absl::StrCat(kPerThread));
  }
  // And again after reopening (what was acknowledged is in the file).
  store->reset();
  auto reopened = SnapshotStore::Open(options);
  ASSERT_TRUE(reopened.ok());
  auto again = (*reopened)->Stats();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->snapshots, appends);
}

TEST(GroupCommitTest, FailingAppendFailsOnlyItself) {
  TempDir dir;
  auto store = SnapshotStore::Open(TestOptions(dir.path()));
  ASSERT_TRUE(store.ok());
  SnapshotStore& s = **store;
  // Each thread's odd steps repeat the time of the step before (AlreadyExists), interleaved with
  // the other threads' good Appends in the same batches.
  std::atomic<int> ok{0}, exists{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Snapshot snap = SyntheticSnapshot(AgentName(t), t, i / 2, kClasses);
        Status st = s.Append(snap, {{"deliveries", AgentName(t), absl::StrCat(i)}});
        if (st.ok()) {
          ok++;
        } else if (absl::IsAlreadyExists(st)) {
          exists++;
        } else {
          ADD_FAILURE() << st;
          other++;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok.load(), kThreads * ((kPerThread + 1) / 2));
  EXPECT_EQ(exists.load(), kThreads * (kPerThread / 2));
  for (int t = 0; t < kThreads; ++t) {
    for (int step = 0; step < (kPerThread + 1) / 2; ++step) {
      Snapshot want = SyntheticSnapshot(AgentName(t), t, step, kClasses);
      auto got = s.ReadSnapshot(want.agent, want.time);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameSnapshot(*got, want);
    }
    // The failed Appends' records were not written: the last stored is the last good step's.
    auto record = s.GetRecord("deliveries", AgentName(t));
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(*record, absl::StrCat(2 * ((kPerThread - 1) / 2)));
  }
}

TEST(GroupCommitTest, ConcurrentAppendsOfOneAgentInAnyOrder) {
  TempDir dir;
  StoreOptions options = TestOptions(dir.path());
  options.keyframe_interval = 4;
  options.retention_age = absl::Hours(24 * 365 * 100);  // keeps the synthetic 2023 snapshots
  auto store = SnapshotStore::Open(options);
  ASSERT_TRUE(store.ok());
  SnapshotStore& s = **store;
  // Four threads append interleaved steps of ONE agent (so some arrive out of time order), while
  // retention passes run (they wait for the Appends in flight, and Appends for them).
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(s.EnforceRetention().ok());
  });
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 60; i += 4) {
        EXPECT_TRUE(s.Append(SyntheticSnapshot("one", 7, i, kClasses)).ok());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int i = 0; i < 60; ++i) {
    Snapshot want = SyntheticSnapshot("one", 7, i, kClasses);
    auto got = s.ReadSnapshot(want.agent, want.time);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectSameSnapshot(*got, want);
  }
}

}  // namespace
}  // namespace heapwatch::storage
