#include "diff/snapshot_diff.h"

#include <limits>

#include "gtest/gtest.h"

namespace heapwatch::diff {
namespace {

Snapshot Make(int64_t unix_seconds, std::vector<ClassHistogramRow> rows) {
  Snapshot s;
  s.agent = AgentId("a");
  s.time = absl::FromUnixSeconds(unix_seconds);
  for (const auto& r : rows) {
    s.histogram.total_instances += r.instances;
    s.histogram.total_bytes += r.bytes;
  }
  s.histogram.rows = std::move(rows);
  return s;
}

TEST(DiffSnapshotsTest, ChangedNewVanishedUnchangedSortedByGrowth) {
  const Snapshot from = Make(100, {{"byte[]", "java.base", 10, 1000},
                                   {"java.lang.String", "java.base", 50, 1200},
                                   {"com.example.Gone", "", 3, 72},
                                   {"com.example.Same", "", 7, 112}});
  const Snapshot to = Make(160, {{"byte[]", "java.base", 12, 5000},
                                 {"java.lang.String", "java.base", 40, 960},
                                 {"com.example.Same", "", 7, 112},
                                 {"com.example.New", "", 2, 48}});
  const SnapshotDiff d = DiffSnapshots(from, to);
  EXPECT_EQ(d.from, absl::FromUnixSeconds(100));
  EXPECT_EQ(d.to, absl::FromUnixSeconds(160));
  ASSERT_EQ(d.classes.size(), 5u);
  // bytes_delta: byte[] +4000, New +48, Same 0, Gone -72, String -240.
  EXPECT_EQ(d.classes[0],
            (ClassDelta{"byte[]", 10, 12, 1000, 5000, 2, 4000, ClassChange::kChanged}));
  EXPECT_EQ(d.classes[1], (ClassDelta{"com.example.New", 0, 2, 0, 48, 2, 48, ClassChange::kNew}));
  EXPECT_EQ(d.classes[2],
            (ClassDelta{"com.example.Same", 7, 7, 112, 112, 0, 0, ClassChange::kUnchanged}));
  EXPECT_EQ(d.classes[3],
            (ClassDelta{"com.example.Gone", 3, 0, 72, 0, -3, -72, ClassChange::kVanished}));
  EXPECT_EQ(d.classes[4],
            (ClassDelta{"java.lang.String", 50, 40, 1200, 960, -10, -240, ClassChange::kChanged}));
  EXPECT_EQ(d.total_bytes_delta, 4000 + 48 - 72 - 240);
  EXPECT_EQ(d.total_instances_delta, 2 + 2 - 3 - 10);
}

TEST(DiffSnapshotsTest, TiesBrokenByName) {
  const SnapshotDiff d =
      DiffSnapshots(Make(1, {}), Make(2, {{"b.B", "", 1, 16}, {"a.A", "", 1, 16}}));
  ASSERT_EQ(d.classes.size(), 2u);
  EXPECT_EQ(d.classes[0].class_name, "a.A");
  EXPECT_EQ(d.classes[1].class_name, "b.B");
}

TEST(DiffSnapshotsTest, DuplicateClassNamesAreSummed) {
  // The same class loaded by two class loaders appears twice in a HotSpot histogram.
  const SnapshotDiff d = DiffSnapshots(Make(1, {{"x.Dup", "", 1, 10}, {"x.Dup", "", 2, 20}}),
                                       Make(2, {{"x.Dup", "", 4, 40}}));
  ASSERT_EQ(d.classes.size(), 1u);
  EXPECT_EQ(d.classes[0], (ClassDelta{"x.Dup", 3, 4, 30, 40, 1, 10, ClassChange::kChanged}));
}

TEST(DiffSnapshotsTest, InstancesOnlyChangeIsChanged) {
  const SnapshotDiff d = DiffSnapshots(Make(1, {{"x", "", 1, 16}}), Make(2, {{"x", "", 2, 16}}));
  EXPECT_EQ(d.classes[0].change, ClassChange::kChanged);
  EXPECT_EQ(d.classes[0].bytes_delta, 0);
  EXPECT_EQ(d.classes[0].instances_delta, 1);
}

TEST(DiffSnapshotsTest, EmptySnapshots) {
  const SnapshotDiff d = DiffSnapshots(Make(1, {}), Make(2, {}));
  EXPECT_TRUE(d.classes.empty());
  EXPECT_EQ(d.total_bytes_delta, 0);
  EXPECT_EQ(d.total_instances_delta, 0);
}

TEST(DiffSnapshotsTest, HugeValuesSaturateInsteadOfOverflowing) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const SnapshotDiff d =
      DiffSnapshots(Make(1, {{"x", "", 0, 0}}), Make(2, {{"x", "", kMax, kMax}}));
  EXPECT_EQ(d.classes[0].bytes_delta, std::numeric_limits<int64_t>::max());
  const SnapshotDiff back =
      DiffSnapshots(Make(1, {{"x", "", kMax, kMax}, {"x", "", 5, 5}}), Make(2, {{"x", "", 0, 0}}));
  EXPECT_EQ(back.classes[0].bytes_before, kMax);  // summing duplicates saturates too
  EXPECT_EQ(back.classes[0].bytes_delta, std::numeric_limits<int64_t>::min());
}

TEST(DiffSnapshotsTest, ChangeNames) {
  EXPECT_STREQ(ClassChangeName(ClassChange::kChanged), "changed");
  EXPECT_STREQ(ClassChangeName(ClassChange::kNew), "new");
  EXPECT_STREQ(ClassChangeName(ClassChange::kVanished), "vanished");
  EXPECT_STREQ(ClassChangeName(ClassChange::kUnchanged), "unchanged");
}

}  // namespace
}  // namespace heapwatch::diff
