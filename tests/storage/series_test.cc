// The per-agent time series kept beside the snapshots (tables live_set, class_loading and
// string_table), one typed test over the three kinds: round trips, read ranges and limits,
// persistence across reopen, the use per kind, bad input, what age and size retention and
// DeleteAgent delete with the snapshots, and corrupt values. What only one kind has (the live-set
// series' collection costs) is tested in its own file (live_set_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "storage/detail/codec.h"
#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::SyntheticSnapshot;
using testing::T0;
using testing::TempDir;
using testing::TestOptions;

// One series kind: its point type, a point per minute, the store's calls and its table's figures.
// Point(m) differs for every m in every field the codec stores, and is stamped T0 + m minutes.

// A live-set reading per minute: the source alternates over the three kinds of reading.
struct LiveSetSeries {
  using Point = LiveSetPoint;
  static constexpr std::string_view kKind = "live_set";
  static constexpr size_t kMaxValueBytes = 24;  // crc, version, source and three varints
  static Point At(int minute) {
    const uint64_t live = 1000 * static_cast<uint64_t>(minute + 1);
    const LiveSetSource source = minute % 3 == 0   ? LiveSetSource::kFullGc
                                 : minute % 3 == 1 ? LiveSetSource::kConcurrentCycle
                                                   : LiveSetSource::kYoungUpperBound;
    return Point{T0() + absl::Minutes(minute), source, live, 2 * live, 4 * live};
  }
  static Status Append(SnapshotStore& s, const AgentId& a, const Point& p) {
    return s.AppendLiveSet(a, p);
  }
  static StatusOr<std::vector<Point>> Read(const SnapshotStore& s, const AgentId& a,
                                           absl::Time from, absl::Time to, size_t limit) {
    return s.ReadLiveSet(a, from, to, limit);
  }
  static uint64_t Points(const StoreStats& s) { return s.live_set_points; }
  static uint64_t Bytes(const StoreStats& s) { return s.live_set_bytes; }
  static std::string Encode(const Point& p) { return detail::EncodeLiveSetPoint(p); }
  static StatusOr<Point> Decode(std::string_view v, int64_t micros, std::string_view what) {
    return detail::DecodeLiveSetPoint(v, micros, what);
  }
};

// A Tomcat-like reading: 2,600 classes plus 305 per minute, metaspace 14 MB plus 0.5 MB per minute.
struct ClassLoadingSeries {
  using Point = ClassLoadingPoint;
  static constexpr std::string_view kKind = "class_loading";
  static constexpr size_t kMaxValueBytes = 24;  // crc, version and five varints
  static Point At(int minute) {
    Point p;
    p.time = T0() + absl::Minutes(minute);
    p.loaded_classes = 2600 + 305 * static_cast<uint64_t>(minute);
    p.unloaded_classes = static_cast<uint64_t>(minute) / 3;
    p.metaspace_used_bytes = 14'000'000 + 500'000 * static_cast<uint64_t>(minute);
    p.metaspace_capacity_bytes = p.metaspace_used_bytes + 1'000'000;
    p.class_space_used_bytes = p.metaspace_used_bytes / 8;
    return p;
  }
  static Status Append(SnapshotStore& s, const AgentId& a, const Point& p) {
    return s.AppendClassLoading(a, p);
  }
  static StatusOr<std::vector<Point>> Read(const SnapshotStore& s, const AgentId& a,
                                           absl::Time from, absl::Time to, size_t limit) {
    return s.ReadClassLoading(a, from, to, limit);
  }
  static uint64_t Points(const StoreStats& s) { return s.class_loading_points; }
  static uint64_t Bytes(const StoreStats& s) { return s.class_loading_bytes; }
  static std::string Encode(const Point& p) { return detail::EncodeClassLoadingPoint(p); }
  static StatusOr<Point> Decode(std::string_view v, int64_t micros, std::string_view what) {
    return detail::DecodeClassLoadingPoint(v, micros, what);
  }
};

// A JVM interning 1,000 unique request ids a second, read once a minute: the figures follow
// VM.stringtable's (16-byte entries, about 65 bytes per literal).
struct StringTableSeries {
  using Point = StringTableStats;
  static constexpr std::string_view kKind = "string_table";
  static constexpr size_t kMaxValueBytes = 32;  // crc, version and eight varints
  static Point At(int minute) {
    Point p;
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
  static Status Append(SnapshotStore& s, const AgentId& a, const Point& p) {
    return s.AppendStringTable(a, p);
  }
  static StatusOr<std::vector<Point>> Read(const SnapshotStore& s, const AgentId& a,
                                           absl::Time from, absl::Time to, size_t limit) {
    return s.ReadStringTable(a, from, to, limit);
  }
  static uint64_t Points(const StoreStats& s) { return s.string_table_points; }
  static uint64_t Bytes(const StoreStats& s) { return s.string_table_bytes; }
  static std::string Encode(const Point& p) { return detail::EncodeStringTablePoint(p); }
  static StatusOr<Point> Decode(std::string_view v, int64_t micros, std::string_view what) {
    return detail::DecodeStringTablePoint(v, micros, what);
  }
};

// The records of `kind` in the use per kind; `sum` gets the bytes of every kind.
uint64_t UsageOf(const SnapshotStore& store, std::string_view kind, uint64_t* sum) {
  auto usage = store.UsageByKind();
  EXPECT_TRUE(usage.ok()) << usage.status();
  uint64_t records = 0;
  *sum = 0;
  if (!usage.ok()) return 0;
  for (const KindUsage& u : *usage) {
    *sum += u.bytes;
    if (u.kind == kind) records = u.records;
  }
  return records;
}

AgentInfo Agent(const char* id) {
  AgentInfo info;
  info.id = AgentId(id);
  return info;
}

template <typename S>
class SeriesStoreTest : public ::testing::Test {
 protected:
  static StatusOr<std::vector<typename S::Point>> ReadAll(const SnapshotStore& store,
                                                          const char* agent) {
    return S::Read(store, AgentId(agent), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  }
};

struct SeriesName {
  template <typename S>
  static std::string GetName(int) {
    return std::string(S::kKind);
  }
};

using SeriesKinds = ::testing::Types<LiveSetSeries, ClassLoadingSeries, StringTableSeries>;
TYPED_TEST_SUITE(SeriesStoreTest, SeriesKinds, SeriesName);

TYPED_TEST(SeriesStoreTest, PointsRoundTripInTimeOrderAndSurviveReopen) {
  using S = TypeParam;
  TempDir tmp(testing::MemoryTempBase());  // the subject is the series, not the disk
  {
    auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
    ASSERT_TRUE(store->PutAgent(Agent("a")).ok());
    // Out of order on purpose: reads come back by time.
    for (int m : {4, 0, 2, 1, 3}) ASSERT_TRUE(S::Append(*store, AgentId("a"), S::At(m)).ok());
    EXPECT_TRUE(absl::IsAlreadyExists(S::Append(*store, AgentId("a"), S::At(2))));
  }
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  auto all = this->ReadAll(*store, "a");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  for (int m = 0; m < 5; ++m) EXPECT_EQ((*all)[m], S::At(m)) << "minute " << m;
  auto range = S::Read(*store, AgentId("a"), T0() + absl::Minutes(1), T0() + absl::Minutes(3), 0);
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->size(), 3u);  // both ends included
  EXPECT_EQ(range->front(), S::At(1));
  EXPECT_EQ(range->back(), S::At(3));
  auto last2 = S::Read(*store, AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 2);
  ASSERT_TRUE(last2.ok());
  ASSERT_EQ(last2->size(), 2u);  // the newest two
  EXPECT_EQ(last2->front(), S::At(3));
  EXPECT_EQ(last2->back(), S::At(4));
  auto empty = S::Read(*store, AgentId("a"), T0() + absl::Minutes(3), T0(), 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(S::Points(*stats), 5u);
  EXPECT_GT(S::Bytes(*stats), 0u);
  // Each kind has a table of its own.
  const uint64_t all_points =
      stats->live_set_points + stats->class_loading_points + stats->string_table_points;
  EXPECT_EQ(all_points, 5u);
  uint64_t sum = 0;
  EXPECT_EQ(UsageOf(*store, S::kKind, &sum), 5u);
  EXPECT_EQ(sum, *store->UsedBytes());  // every table is counted
}

TYPED_TEST(SeriesStoreTest, UnknownAgentsAndBadInput) {
  using S = TypeParam;
  TempDir tmp(testing::MemoryTempBase());  // the subject is the series, not the disk
  auto store = *SnapshotStore::Open(TestOptions(tmp.path()));
  EXPECT_TRUE(absl::IsNotFound(S::Append(*store, AgentId("nobody"), S::At(1))));
  EXPECT_TRUE(absl::IsNotFound(this->ReadAll(*store, "nobody").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(S::Append(*store, AgentId("bad id!"), S::At(1))));
  EXPECT_TRUE(absl::IsInvalidArgument(this->ReadAll(*store, "bad id!").status()));
  ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, 0, 5)).ok());  // Append creates the agent
  typename S::Point p = S::At(1);
  p.time = absl::InfiniteFuture();
  EXPECT_TRUE(absl::IsInvalidArgument(S::Append(*store, AgentId("a"), p)));
  EXPECT_TRUE(S::Append(*store, AgentId("a"), S::At(1)).ok());
}

TYPED_TEST(SeriesStoreTest, AgeRetentionAndDeleteAgentTakeThePointsAlong) {
  using S = TypeParam;
  TempDir tmp(testing::MemoryTempBase());  // the subject is the series, not the disk
  FakeClock clock(T0());
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  o.retention_age = absl::Hours(1);
  auto store = *SnapshotStore::Open(o);
  for (int m = 0; m < 100; ++m) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, m, 20)).ok());
    ASSERT_TRUE(S::Append(*store, AgentId("a"), S::At(m)).ok());
    ASSERT_TRUE(store->Append(SyntheticSnapshot("b", 2, m, 20)).ok());
    ASSERT_TRUE(S::Append(*store, AgentId("b"), S::At(m)).ok());
  }
  clock.Set(T0() + absl::Minutes(100));  // cutoff: minute 40
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto points = this->ReadAll(*store, "a");
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 60u);
  EXPECT_EQ(points->front(), S::At(40));
  EXPECT_EQ(points->back(), S::At(99));
  ASSERT_TRUE(store->DeleteAgent(AgentId("a")).ok());
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(S::Points(*stats), 60u);  // b's alone
  auto b = this->ReadAll(*store, "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 60u);
  ASSERT_TRUE(store->DeleteAgent(AgentId("b")).ok());
  stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(S::Points(*stats), 0u);
  EXPECT_EQ(S::Bytes(*stats), 0u);
}

TYPED_TEST(SeriesStoreTest, SizeRetentionDeletesThePointsOfTheDeletedSnapshots) {
  using S = TypeParam;
  TempDir tmp(testing::MemoryTempBase());  // the subject is the series, not the disk
  constexpr int kSteps = 200;
  FakeClock clock(T0() + absl::Minutes(kSteps));  // nothing is old enough for age retention
  auto o = TestOptions(tmp.path());
  o.clock = &clock;
  auto store = *SnapshotStore::Open(o);
  for (int m = 0; m < kSteps; ++m) {
    ASSERT_TRUE(store->Append(SyntheticSnapshot("a", 1, m, 300)).ok());
    ASSERT_TRUE(S::Append(*store, AgentId("a"), S::At(m)).ok());
  }
  auto before = store->Stats();
  ASSERT_TRUE(before.ok());
  // At most kMaxValueBytes of value plus 12 of key per point: 200 points fit in a few 4 KiB pages.
  EXPECT_LE(S::Bytes(*before), 4u * 4096);
  const uint64_t target = before->used_bytes - before->snapshot_bytes / 2;
  store.reset();
  o.retention_bytes = target;
  store = *SnapshotStore::Open(o);
  ASSERT_TRUE(store->EnforceRetention().ok());
  auto oldest = store->OldestSnapshotTime(AgentId("a"));
  ASSERT_TRUE(oldest.ok() && oldest->has_value());
  ASSERT_GT(**oldest, T0());  // some snapshots went
  auto points = this->ReadAll(*store, "a");
  ASSERT_TRUE(points.ok());
  ASSERT_FALSE(points->empty());
  // The points older than the oldest remaining snapshot went with the snapshots; the rest stayed.
  EXPECT_EQ(points->front().time, **oldest);
  EXPECT_EQ(points->back(), S::At(kSteps - 1));
}

TYPED_TEST(SeriesStoreTest, CorruptValuesAreDataLossNamingTheKey) {
  using S = TypeParam;
  const std::string good = S::Encode(S::At(7));
  EXPECT_LE(good.size(), S::kMaxValueBytes);
  auto ok = S::Decode(good, absl::ToUnixMicros(S::At(7).time), "x");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, S::At(7));
  EXPECT_TRUE(absl::IsDataLoss(S::Decode("xx", 0, "x").status()));
  const std::string key = std::string(S::kKind) + "[a @ t]";
  std::string flipped = good;
  flipped[6] ^= 0x40;  // a flipped bit: the checksum no longer matches
  auto bad = S::Decode(flipped, 0, key);
  ASSERT_TRUE(absl::IsDataLoss(bad.status()));
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr(key));
  // A value cut short or lengthened, or of a version this build does not know, with a correct
  // checksum over its bytes, is still refused.
  std::string v2 = good.substr(4);
  v2[0] = 2;
  for (const std::string& payload :
       {good.substr(4, good.size() - 6), good.substr(4) + '\x01', v2}) {
    std::string framed;
    detail::PutFixed32BE(&framed, detail::Crc32(payload));
    framed += payload;
    EXPECT_TRUE(absl::IsDataLoss(S::Decode(framed, 0, "x").status())) << payload.size();
  }
}

}  // namespace
}  // namespace heapwatch::storage
