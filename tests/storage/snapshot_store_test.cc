// SnapshotStore against a real LMDB environment in a temporary directory: round trips, interning,
// history, agents, records, reopening, map growth, corrupt values, concurrency.
#include "storage/snapshot_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "storage/detail/codec.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::ExpectSameSnapshot;
using ::testing::HasSubstr;
using testing::Peek;
using testing::Poke;
using testing::SyntheticSnapshot;
using testing::T0;
using testing::TempDir;
using testing::TestOptions;

std::unique_ptr<SnapshotStore> OpenOrDie(const StoreOptions& o) {
  auto s = SnapshotStore::Open(o);
  HW_CHECK(s.ok());
  return std::move(*s);
}

ClassHistogramRow Row(std::string name, uint64_t instances, uint64_t bytes,
                      std::string module = "") {
  return ClassHistogramRow{std::move(name), std::move(module), instances, bytes};
}

TEST(SnapshotStoreTest, OpenCreatesPrivateDirectory) {
  TempDir tmp;
  std::string dir = tmp.Sub("a/b/data");
  auto store = OpenOrDie(TestOptions(dir));
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(std::filesystem::exists(dir + "/data.mdb"));
}

TEST(SnapshotStoreTest, RoundTripsOneSnapshot) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  Snapshot s;
  s.agent = AgentId("jvm-1");
  s.time = T0() + absl::Nanoseconds(1234567);  // stored with microsecond precision
  s.histogram.rows = {Row("byte[]", 10, 4000, "java.base@17.0.15"),
                      Row("java.lang.String", 100, 2400), Row("com.acme.Foo$Bar", 3, 72),
                      Row("int[]", 0, 0)};
  s.histogram.total_instances = 113;
  s.histogram.total_bytes = 6472;
  ASSERT_TRUE(store->Append(s).ok());
  auto got = store->ReadSnapshot(s.agent, T0() + absl::Microseconds(1234));
  ASSERT_TRUE(got.ok()) << got.status();
  Snapshot want = s;
  want.time = T0() + absl::Microseconds(1234);
  ExpectSameSnapshot(*got, want);
}

TEST(SnapshotStoreTest, RowsComeBackInCanonicalOrderWithDuplicates) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  Snapshot s;
  s.agent = AgentId("jvm-1");
  s.time = T0();
  // Two rows with the same name and module (two class loaders), one with another module, ties on
  // bytes.
  s.histogram.rows = {Row("b.Dup", 2, 48), Row("a.Tie", 1, 48), Row("b.Dup", 5, 120),
                      Row("b.Dup", 1, 24, "m@1"), Row("b.Dup", 3, 48)};
  ASSERT_TRUE(store->Append(s).ok());
  auto got = store->ReadSnapshot(s.agent, s.time);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->histogram.rows.size(), 5u);
  EXPECT_EQ(got->histogram.rows[0], Row("b.Dup", 5, 120));
  EXPECT_EQ(got->histogram.rows[1], Row("a.Tie", 1, 48));
  EXPECT_EQ(got->histogram.rows[2], Row("b.Dup", 2, 48));
  EXPECT_EQ(got->histogram.rows[3], Row("b.Dup", 3, 48));
  EXPECT_EQ(got->histogram.rows[4], Row("b.Dup", 1, 24, "m@1"));
  auto history = store->ClassHistory(s.agent, "b.Dup", T0(), T0());
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].instances, 11u);  // every row named b.Dup, any module
  EXPECT_EQ((*history)[0].bytes, 240u);
}

TEST(SnapshotStoreTest, DuplicateRowsAppearingAndVanishingLater) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  std::vector<std::vector<ClassHistogramRow>> steps = {
      {Row("x.A", 1, 16), Row("x.B", 2, 32)},
      {Row("x.A", 1, 16), Row("x.A", 3, 48), Row("x.B", 2, 32)},  // a second loader of x.A
      {Row("x.A", 4, 64), Row("x.B", 2, 32), Row("x.B", 1, 16), Row("x.New", 1, 16),
       Row("x.New", 2, 32)},
      {Row("x.A", 5, 80)},
  };
  std::vector<Snapshot> written;
  for (size_t i = 0; i < steps.size(); ++i) {
    Snapshot s;
    s.agent = AgentId("a");
    s.time = T0() + absl::Minutes(i);
    s.histogram.rows = steps[i];
    written.push_back(s);
    ASSERT_TRUE(store->Append(s).ok());
  }
  for (const Snapshot& w : written) {
    auto got = store->ReadSnapshot(w.agent, w.time);
    ASSERT_TRUE(got.ok());
    ExpectSameSnapshot(*got, w);
  }
  EXPECT_EQ(store->Stats()->classes, 6u);  // A#0 A#1 B#0 B#1 New#0 New#1
  auto h = store->ClassHistory(AgentId("a"), "x.A", T0(), absl::InfiniteFuture());
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)[1].instances, 4u);
  EXPECT_EQ((*h)[3].instances, 5u);
}

TEST(SnapshotStoreTest, InternsClassesOncePerAgentAcrossSnapshots) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.keyframe_interval = 8;
  auto store = OpenOrDie(o);
  std::vector<Snapshot> written;
  for (int step = 0; step < 40; ++step) {
    written.push_back(SyntheticSnapshot("agent-a", 1, step, 300));
    ASSERT_TRUE(store->Append(written.back()).ok());
  }
  // A second agent with the same class names gets its own dictionary.
  Snapshot b = SyntheticSnapshot("agent-b", 1, 0, 300);
  ASSERT_TRUE(store->Append(b).ok());
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->classes, 300u + b.histogram.rows.size());
  EXPECT_EQ(stats->snapshots, 41u);
  EXPECT_EQ(stats->agents, 2u);
  // Every snapshot reads back, across key frames and deltas.
  for (const Snapshot& w : written) {
    auto got = store->ReadSnapshot(w.agent, w.time);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectSameSnapshot(*got, w);
  }
  auto all =
      store->ReadSnapshots(AgentId("agent-a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) ExpectSameSnapshot((*all)[i], written[i]);
}

TEST(SnapshotStoreTest, NewAndVanishedClassesAcrossDeltas) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  std::vector<Snapshot> written;
  for (int step = 0; step < 10; ++step) {
    Snapshot s;
    s.agent = AgentId("a");
    s.time = T0() + absl::Seconds(step);
    s.histogram.rows.push_back(Row("always", 10 + step, 160 + 16 * step));
    if (step % 2 == 0) s.histogram.rows.push_back(Row("even", 1, 16));
    if (step >= 5) s.histogram.rows.push_back(Row("late$Lambda$" + std::to_string(step), 1, 16));
    written.push_back(s);
    ASSERT_TRUE(store->Append(s).ok());
  }
  for (const Snapshot& w : written) {
    auto got = store->ReadSnapshot(w.agent, w.time);
    ASSERT_TRUE(got.ok());
    ExpectSameSnapshot(*got, w);
  }
}

TEST(SnapshotStoreTest, OutOfOrderAppendsKeepEveryChainIntact) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  std::vector<int> order = {0, 1, 2, 5, 6, 7, 3, 4, 9, 8, -1};
  std::map<int, Snapshot> written;
  for (int step : order) {
    Snapshot s = SyntheticSnapshot("a", 3, step + 1, 50);
    s.time = T0() + absl::Minutes(step);
    written[step] = s;
    ASSERT_TRUE(store->Append(s).ok()) << step;
    for (const auto& [k, w] : written) {  // everything written so far still decodes
      auto got = store->ReadSnapshot(w.agent, w.time);
      ASSERT_TRUE(got.ok()) << "after " << step << ": " << got.status();
      ExpectSameSnapshot(*got, w);
    }
  }
  // And appending in order continues correctly after the out-of-order ones.
  Snapshot s = SyntheticSnapshot("a", 3, 100, 50);
  s.time = T0() + absl::Minutes(10);
  ASSERT_TRUE(store->Append(s).ok());
  auto got = store->ReadSnapshot(s.agent, s.time);
  ASSERT_TRUE(got.ok());
  ExpectSameSnapshot(*got, s);
}

TEST(SnapshotStoreTest, RejectsBadInput) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  Snapshot s = SyntheticSnapshot("ok", 1, 0, 5);
  ASSERT_TRUE(store->Append(s).ok());
  EXPECT_EQ(store->Append(s).code(), absl::StatusCode::kAlreadyExists);
  Snapshot bad = s;
  bad.time += absl::Seconds(1);
  bad.agent = AgentId("has space");
  EXPECT_EQ(store->Append(bad).code(), absl::StatusCode::kInvalidArgument);
  bad.agent = AgentId(std::string(129, 'x'));
  EXPECT_EQ(store->Append(bad).code(), absl::StatusCode::kInvalidArgument);
  bad.agent = AgentId("");
  EXPECT_EQ(store->Append(bad).code(), absl::StatusCode::kInvalidArgument);
  bad.agent = AgentId("ok");
  bad.histogram.rows.push_back(Row("", 1, 1));
  EXPECT_EQ(store->Append(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = s;
  bad.time = absl::InfiniteFuture();
  EXPECT_EQ(store->Append(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ReadSnapshot(AgentId("nobody"), T0()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->ReadSnapshot(AgentId("ok"), T0() + absl::Seconds(1)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->ListSnapshotTimes(AgentId("nobody"), T0(), T0()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->GetAgent(AgentId("bad/id")).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SnapshotStoreTest, RangeQueries) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  std::vector<Snapshot> written;
  for (int step = 0; step < 20; ++step) {
    written.push_back(SyntheticSnapshot("a", 2, step, 40));
    ASSERT_TRUE(store->Append(written.back()).ok());
  }
  ASSERT_TRUE(store->Append(SyntheticSnapshot("b", 2, 0, 40)).ok());
  AgentId a("a");
  auto times = store->ListSnapshotTimes(a, T0() + absl::Minutes(3), T0() + absl::Minutes(6));
  ASSERT_TRUE(times.ok());
  EXPECT_THAT(*times, ::testing::ElementsAre(T0() + absl::Minutes(3), T0() + absl::Minutes(4),
                                             T0() + absl::Minutes(5), T0() + absl::Minutes(6)));
  auto none = store->ListSnapshotTimes(a, T0() + absl::Minutes(6), T0() + absl::Minutes(3));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  auto latest = store->ReadLatestAtOrBefore(a, T0() + absl::Minutes(7) + absl::Seconds(30));
  ASSERT_TRUE(latest.ok() && latest->has_value());
  ExpectSameSnapshot(**latest, written[7]);
  latest = store->ReadLatestAtOrBefore(a, absl::InfiniteFuture());
  ASSERT_TRUE(latest.ok() && latest->has_value());
  ExpectSameSnapshot(**latest, written[19]);
  latest = store->ReadLatestAtOrBefore(a, T0() - absl::Seconds(1));
  ASSERT_TRUE(latest.ok());
  EXPECT_FALSE(latest->has_value());

  // Most recent max_count in range, oldest first.
  auto last3 = store->ReadSnapshots(a, T0() + absl::Minutes(2), T0() + absl::Minutes(10), 3);
  ASSERT_TRUE(last3.ok());
  ASSERT_EQ(last3->size(), 3u);
  for (int i = 0; i < 3; ++i) ExpectSameSnapshot((*last3)[i], written[8 + i]);
  auto few = store->ReadSnapshots(a, T0() + absl::Minutes(2), T0() + absl::Minutes(3), 10);
  ASSERT_TRUE(few.ok());
  ASSERT_EQ(few->size(), 2u);
  ExpectSameSnapshot((*few)[0], written[2]);
}

TEST(SnapshotStoreTest, ClassHistoryHasOnePointPerSnapshotWithZerosWhereAbsent) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  AgentId a("a");
  for (int step = 0; step < 6; ++step) {
    Snapshot s;
    s.agent = a;
    s.time = T0() + absl::Minutes(step);
    s.histogram.rows.push_back(Row("filler", 1, 16));
    if (step != 2 && step != 3)
      s.histogram.rows.push_back(Row("com.Leak", 100 * step, 2400 * step));
    ASSERT_TRUE(store->Append(s).ok());
  }
  auto h = store->ClassHistory(a, "com.Leak", T0() + absl::Minutes(1), absl::InfiniteFuture());
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<ClassSample> want = {{T0() + absl::Minutes(1), 100, 2400},
                                   {T0() + absl::Minutes(2), 0, 0},
                                   {T0() + absl::Minutes(3), 0, 0},
                                   {T0() + absl::Minutes(4), 400, 9600},
                                   {T0() + absl::Minutes(5), 500, 12000}};
  EXPECT_EQ(*h, want);
  EXPECT_EQ(store->ClassHistory(a, "com.Never", T0(), absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->ClassHistory(AgentId("b"), "com.Leak", T0(), T0()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SnapshotStoreTest, Agents) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  AgentInfo info;
  info.id = AgentId("host:42:1700000000");
  info.kind = AgentKind::kLocalAttach;
  info.host = "host";
  info.pid = 42;
  info.main_class = "org.example.App";
  info.jvm_version = "17.0.15+6-Debian-1deb12u1";
  info.start_time = absl::FromUnixMicros(1'700'000'000'123'456);
  info.uid = 1000;
  info.gid = 1000;
  ASSERT_TRUE(store->PutAgent(info).ok());
  auto got = store->GetAgent(info.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, info);
  info.jvm_version = "21";
  ASSERT_TRUE(store->PutAgent(info).ok());  // upsert
  // An agent first seen through Append has only its id.
  ASSERT_TRUE(store->Append(SyntheticSnapshot("a-bare", 1, 0, 3)).ok());
  auto all = store->ListAgents();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, AgentId("a-bare"));
  EXPECT_EQ((*all)[0].host, "");
  EXPECT_EQ((*all)[1], info);
  EXPECT_EQ(store->GetAgent(AgentId("nobody")).status().code(), absl::StatusCode::kNotFound);
  // PutAgent after Append keeps the history.
  AgentInfo bare;
  bare.id = AgentId("a-bare");
  bare.host = "h2";
  ASSERT_TRUE(store->PutAgent(bare).ok());
  EXPECT_EQ(store->ListSnapshotTimes(bare.id, T0(), T0())->size(), 1u);
  ASSERT_TRUE(store->DeleteAgent(bare.id).ok());
  EXPECT_EQ(store->GetAgent(bare.id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Stats()->classes, 0u);
  EXPECT_EQ(store->Stats()->snapshots, 0u);
  EXPECT_EQ(store->DeleteAgent(bare.id).code(), absl::StatusCode::kNotFound);
}

TEST(SnapshotStoreTest, Records) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  std::string binary("\0\xff\x01", 3);
  ASSERT_TRUE(store->PutRecord("reports", "agent-1/com.Leak", "report-1").ok());
  ASSERT_TRUE(store->PutRecord("reports", "agent-1/com.Other", binary).ok());
  ASSERT_TRUE(store->PutRecord("reports", "agent-2/com.Leak", "report-3").ok());
  ASSERT_TRUE(store->PutRecord("reportsX", "agent-1/zzz", "other table").ok());
  ASSERT_TRUE(store->PutRecord("reports", "agent-1/com.Leak", "report-1b").ok());  // overwrite
  EXPECT_EQ(*store->GetRecord("reports", "agent-1/com.Leak"), "report-1b");
  EXPECT_EQ(*store->GetRecord("reports", "agent-1/com.Other"), binary);
  auto list = store->ListRecords("reports", "agent-1/");
  ASSERT_TRUE(list.ok());
  using P = std::pair<std::string, std::string>;
  EXPECT_THAT(*list, ::testing::ElementsAre(P{"agent-1/com.Leak", "report-1b"},
                                            P{"agent-1/com.Other", binary}));
  EXPECT_EQ(store->ListRecords("reports", "")->size(), 3u);
  EXPECT_EQ(store->ListRecords("nothing", "")->size(), 0u);
  ASSERT_TRUE(store->DeleteRecord("reports", "agent-1/com.Leak").ok());
  EXPECT_EQ(store->GetRecord("reports", "agent-1/com.Leak").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteRecord("reports", "agent-1/com.Leak").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->PutRecord("", "k", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutRecord("t", std::string(510, 'k'), "v").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->PutRecord("t", std::string(509, 'k'), "v").ok());
  std::string big(3 << 20, 'x');  // larger than the initial map: grows it
  ASSERT_TRUE(store->PutRecord("blobs", "big", big).ok());
  EXPECT_EQ(*store->GetRecord("blobs", "big"), big);
}

TEST(SnapshotStoreTest, ReopenKeepsEverythingAndContinuesDeltas) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  std::vector<Snapshot> written;
  for (int round = 0; round < 3; ++round) {
    auto store = OpenOrDie(o);
    // Everything from earlier rounds is there.
    for (const Snapshot& w : written) {
      auto got = store->ReadSnapshot(w.agent, w.time);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameSnapshot(*got, w);
    }
    for (int i = 0; i < 7; ++i) {
      written.push_back(SyntheticSnapshot("a", 5, written.size(), 200));
      ASSERT_TRUE(store->Append(written.back()).ok());
    }
    ASSERT_TRUE(store->PutRecord("t", "round" + std::to_string(round), "x").ok());
  }
  auto store = OpenOrDie(o);
  auto all = store->ReadSnapshots(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 21u);
  for (size_t i = 0; i < written.size(); ++i) ExpectSameSnapshot((*all)[i], written[i]);
  EXPECT_EQ(store->ListRecords("t", "")->size(), 3u);
  EXPECT_EQ(store->Stats()->classes, 200u);  // the dictionary was reloaded, not re-interned
}

TEST(SnapshotStoreTest, SecondOpenOfTheSameDirectoryFails) {
  TempDir tmp;
  auto store = OpenOrDie(TestOptions(tmp.path()));
  auto second = SnapshotStore::Open(TestOptions(tmp.path()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  store.reset();
  EXPECT_TRUE(SnapshotStore::Open(TestOptions(tmp.path())).ok());
}

TEST(SnapshotStoreTest, MapGrowsFromATinyInitialMap) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.initial_map_bytes = 64 << 10;
  auto store = OpenOrDie(o);
  uint64_t initial = store->MapBytes();
  EXPECT_LE(initial, 1u << 20);
  std::vector<Snapshot> written;
  for (int step = 0; step < 60; ++step) {
    written.push_back(SyntheticSnapshot("a", 9, step, 3000));
    ASSERT_TRUE(store->Append(written.back()).ok()) << step;
  }
  EXPECT_GT(store->MapBytes(), 4 * initial);
  for (const Snapshot& w : written) {
    auto got = store->ReadSnapshot(w.agent, w.time);
    ASSERT_TRUE(got.ok());
    ExpectSameSnapshot(*got, w);
  }
}

TEST(SnapshotStoreTest, MapFullAtMaxIsResourceExhaustedAndChangesNothing) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.initial_map_bytes = 256 << 10;
  o.max_map_bytes = 512 << 10;
  auto store = OpenOrDie(o);
  Status last;
  int appended = 0;
  for (int step = 0; step < 1000; ++step) {
    last = store->Append(SyntheticSnapshot("a", 4, step, 2000));
    if (!last.ok()) break;
    ++appended;
  }
  ASSERT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_THAT(last.message(), HasSubstr("max_map_bytes"));
  ASSERT_GT(appended, 0);
  auto times = store->ListSnapshotTimes(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture());
  ASSERT_TRUE(times.ok());
  EXPECT_EQ(times->size(), static_cast<size_t>(appended));
  auto got = store->ReadSnapshot(AgentId("a"), times->back());
  ASSERT_TRUE(got.ok());
  ExpectSameSnapshot(*got, SyntheticSnapshot("a", 4, appended - 1, 2000));
}

// Agents that start together do not write their key frames in the same second: an agent's first
// chain ends keyframe_interval - (agent number mod keyframe_interval) snapshots after its first
// key frame, every later chain after keyframe_interval. Agent 0 keeps the plain schedule.
TEST(SnapshotStoreTest, AgentsStartingTogetherStaggerTheirKeyFrames) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.keyframe_interval = 4;
  const std::vector<std::string> agents = {"a", "b", "c", "d", "e"};  // agent numbers 0..4
  constexpr int kSteps = 12;
  {
    auto store = OpenOrDie(o);
    for (int step = 0; step < kSteps; ++step) {
      for (const std::string& agent : agents) {
        ASSERT_TRUE(store->Append(SyntheticSnapshot(agent, 6, step, 30)).ok());
      }
    }
  }
  // Key frames (depth 0) per agent, by step.
  const std::vector<std::vector<int>> want = {
      {0, 4, 8},      // a: 4 - 0 % 4 = 4
      {0, 3, 7, 11},  // b: first chain 3
      {0, 2, 6, 10},  // c: 2
      {0, 1, 5, 9},   // d: 1
      {0, 4, 8},      // e: 4 - 4 % 4 = 4
  };
  for (size_t a = 0; a < agents.size(); ++a) {
    std::vector<int> key_frames;
    for (int step = 0; step < kSteps; ++step) {
      const Snapshot s = SyntheticSnapshot(agents[a], 6, step, 30);
      const std::string value =
          Peek(tmp.path(), "snapshots",
               detail::SnapshotKey(detail::AgentNo{static_cast<uint32_t>(a)},
                                   absl::ToUnixMicros(s.time)));
      auto sv = detail::ParseSnapshotValue(value, "test");
      ASSERT_TRUE(sv.ok()) << agents[a] << " step " << step << ": " << sv.status();
      if (sv->kind == detail::SnapshotKind::kFull) key_frames.push_back(step);
    }
    EXPECT_EQ(key_frames, want[a]) << "agent " << agents[a];
  }
  // Every snapshot reads back.
  auto store = OpenOrDie(o);
  for (const std::string& agent : agents) {
    for (int step = 0; step < kSteps; ++step) {
      const Snapshot want_snapshot = SyntheticSnapshot(agent, 6, step, 30);
      auto got = store->ReadSnapshot(want_snapshot.agent, want_snapshot.time);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameSnapshot(*got, want_snapshot);
    }
  }
}

TEST(SnapshotStoreTest, CorruptValuesAreDataLossNamingTheKey) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.keyframe_interval = 4;
  std::vector<Snapshot> written;
  {
    auto store = OpenOrDie(o);
    for (int step = 0; step < 8; ++step) {
      written.push_back(SyntheticSnapshot("a", 6, step, 30));
      ASSERT_TRUE(store->Append(written.back()).ok());
    }
    ASSERT_TRUE(store->Append(SyntheticSnapshot("b", 6, 0, 30)).ok());
  }
  // Agent "a" is agent number 0; its snapshot 4 is a key frame (interval 4), 5..7 deltas on it.
  std::string key4 = detail::SnapshotKey(detail::AgentNo{0}, absl::ToUnixMicros(written[4].time));
  Poke(tmp.path(), "snapshots", key4, std::string("\x12\x34\x56\x78\x01\x05", 6));
  auto store = OpenOrDie(o);
  auto got = store->ReadSnapshot(AgentId("a"), written[4].time);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("snapshots[a @ 2023-11-14T22:17:20.000000Z]"));
  EXPECT_THAT(got.status().message(), HasSubstr("checksum"));
  // The deltas built on it are DataLoss too; the earlier chain and the other agent are fine.
  EXPECT_EQ(store->ReadSnapshot(AgentId("a"), written[6].time).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_TRUE(store->ReadSnapshot(AgentId("a"), written[3].time).ok());
  EXPECT_TRUE(store->ReadSnapshot(AgentId("b"), T0()).ok());
  EXPECT_EQ(
      store->ClassHistory(AgentId("a"), "com.example.pkg0.Class0", T0(), absl::InfiniteFuture())
          .status()
          .code(),
      absl::StatusCode::kDataLoss);
  // Collection goes on: the next snapshot of "a" cannot be a delta on the corrupt chain, so it is a
  // key frame, and reads back.
  Snapshot next = SyntheticSnapshot("a", 6, 8, 30);
  ASSERT_TRUE(store->Append(next).ok());
  got = store->ReadSnapshot(next.agent, next.time);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameSnapshot(*got, next);
  EXPECT_TRUE(store->Append(SyntheticSnapshot("b", 6, 1, 30)).ok());

  // A corrupt dictionary entry.
  store.reset();
  Poke(tmp.path(), "classes", detail::ClassKey(detail::AgentNo{1}, detail::ClassNo{0}), "garbage");
  store = OpenOrDie(o);
  got = store->ReadSnapshot(AgentId("b"), T0());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("classes[b #0]"));

  // A corrupt agent record.
  store.reset();
  Poke(tmp.path(), "agents", "b", std::string("\0\0\0\0\x09", 5));
  store = OpenOrDie(o);
  EXPECT_EQ(store->GetAgent(AgentId("b")).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store->ListAgents().status().code(), absl::StatusCode::kDataLoss);
}

TEST(SnapshotStoreTest, UnknownFormatVersionIsDataLoss) {
  TempDir tmp;
  { auto store = OpenOrDie(TestOptions(tmp.path())); }
  Poke(tmp.path(), "meta", "format_version", std::string("\0\0\0\x02", 4));
  auto store = SnapshotStore::Open(TestOptions(tmp.path()));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr("meta/format_version is 2"));
}

TEST(SnapshotStoreTest, ConcurrentReadersWhileTheWriterGrowsTheMap) {
  TempDir tmp;
  auto o = TestOptions(tmp.path());
  o.initial_map_bytes = 64 << 10;
  auto store = OpenOrDie(o);
  ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 8, 0, 1000)).ok());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, failures{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        auto latest = store->ReadLatestAtOrBefore(AgentId("a"), absl::InfiniteFuture());
        if (!latest.ok() || !latest->has_value()) {
          failures.fetch_add(1);
          continue;
        }
        // Whatever snapshot we saw must be exactly what was written for its step.
        int step = static_cast<int>(((*latest)->time - T0()) / absl::Minutes(1));
        Snapshot want = SyntheticSnapshot("a", 8, step, 1000);
        if (want.histogram == (*latest)->histogram) {
          reads.fetch_add(1);
        } else {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (int step = 1; step < 80; ++step) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 8, step, 1000)).ok());
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_GT(store->MapBytes(), 64u << 10);
}

}  // namespace
}  // namespace heapwatch::storage
