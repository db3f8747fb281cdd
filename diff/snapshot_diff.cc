#include "diff/snapshot_diff.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "diff/saturating.h"

namespace heapwatch::diff {
namespace {

// after - before, clamped to the int64 range.
int64_t SaturatingDelta(uint64_t before, uint64_t after) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (after >= before) {
    const uint64_t d = after - before;
    return d > kMax ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(d);
  }
  const uint64_t d = before - after;
  return d > kMax ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(d);
}

int64_t SaturatingSum(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

}  // namespace

const char* ClassChangeName(ClassChange change) {
  switch (change) {
    case ClassChange::kChanged:
      return "changed";
    case ClassChange::kNew:
      return "new";
    case ClassChange::kVanished:
      return "vanished";
    case ClassChange::kUnchanged:
      return "unchanged";
  }
  return "unknown";
}

SnapshotDiff DiffSnapshots(const Snapshot& from, const Snapshot& to) {
  SnapshotDiff diff;
  diff.from = from.time;
  diff.to = to.time;

  // Index of each class name in diff.classes. The keys view strings owned by the two snapshots,
  // which outlive this function's use of the map.
  absl::flat_hash_map<std::string_view, size_t> index;
  index.reserve(from.histogram.rows.size() + to.histogram.rows.size());
  std::vector<bool> in_from, in_to;
  auto slot = [&](const std::string& name) -> size_t {
    auto [it, inserted] = index.try_emplace(name, diff.classes.size());
    if (inserted) {
      diff.classes.push_back(ClassDelta{.class_name = name});
      in_from.push_back(false);
      in_to.push_back(false);
    }
    return it->second;
  };
  for (const ClassHistogramRow& row : from.histogram.rows) {
    const size_t i = slot(row.class_name);
    ClassDelta& d = diff.classes[i];
    d.instances_before = SaturatingAdd(d.instances_before, row.instances);
    d.bytes_before = SaturatingAdd(d.bytes_before, row.bytes);
    in_from[i] = true;
  }
  for (const ClassHistogramRow& row : to.histogram.rows) {
    const size_t i = slot(row.class_name);
    ClassDelta& d = diff.classes[i];
    d.instances_after = SaturatingAdd(d.instances_after, row.instances);
    d.bytes_after = SaturatingAdd(d.bytes_after, row.bytes);
    in_to[i] = true;
  }

  for (size_t i = 0; i < diff.classes.size(); ++i) {
    ClassDelta& d = diff.classes[i];
    d.instances_delta = SaturatingDelta(d.instances_before, d.instances_after);
    d.bytes_delta = SaturatingDelta(d.bytes_before, d.bytes_after);
    if (!in_from[i]) {
      d.change = ClassChange::kNew;
    } else if (!in_to[i]) {
      d.change = ClassChange::kVanished;
    } else if (d.instances_delta == 0 && d.bytes_delta == 0) {
      d.change = ClassChange::kUnchanged;
    } else {
      d.change = ClassChange::kChanged;
    }
    diff.total_bytes_delta = SaturatingSum(diff.total_bytes_delta, d.bytes_delta);
    diff.total_instances_delta = SaturatingSum(diff.total_instances_delta, d.instances_delta);
  }

  std::sort(diff.classes.begin(), diff.classes.end(), [](const ClassDelta& a, const ClassDelta& b) {
    if (a.bytes_delta != b.bytes_delta) return a.bytes_delta > b.bytes_delta;
    return a.class_name < b.class_name;
  });
  return diff;
}

}  // namespace heapwatch::diff
