#include "analysis/dynamic_ranking.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/aggregations.h"

namespace heapwatch::analysis {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
// The thesis's Tab. 5.3 buckets (lower bounds; the last one has no upper bound).
constexpr uint64_t kBucketFrom[] = {0,         kKiB,      10 * kKiB, 100 * kKiB, kMiB,
                                    10 * kMiB, 25 * kMiB, 50 * kMiB, 75 * kMiB,  100 * kMiB};
constexpr size_t kBuckets = std::size(kBucketFrom);

int64_t Difference(uint64_t a, uint64_t b) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return static_cast<int64_t>(std::min(a, kMax)) - static_cast<int64_t>(std::min(b, kMax));
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

// The `capacity` distinct components with the largest keys among the objects offered, each with
// the object that offered its largest key (the first one on ties).
template <typename Key>
class TopComponents {
 public:
  explicit TopComponents(size_t capacity) : capacity_(capacity) {}

  void Offer(ComponentId c, const Key& key, ObjectIndex v) {
    auto it = best_.find(c.value);
    if (it != best_.end()) {
      if (!(it->second.key < key)) return;
      order_.erase({it->second.key, c.value});
      it->second = Entry{key, v};
      order_.insert({key, c.value});
      return;
    }
    if (order_.size() == capacity_) {
      auto smallest = order_.begin();
      if (!(smallest->first < key)) return;
      best_.erase(smallest->second);
      order_.erase(smallest);
    }
    best_.emplace(c.value, Entry{key, v});
    order_.insert({key, c.value});
  }

  // The representatives, largest key first.
  std::vector<ObjectIndex> Objects() const {
    std::vector<ObjectIndex> out;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it)
      out.push_back(best_.at(it->second).object);
    return out;
  }

 private:
  struct Entry {
    Key key;
    ObjectIndex object;
  };
  size_t capacity_;
  absl::flat_hash_map<uint32_t, Entry> best_;
  std::set<std::pair<Key, uint32_t>> order_;
};

// The `count` indices of `values` with the largest values (ties: lower index), largest first.
template <typename T>
std::vector<uint32_t> TopIndices(const std::vector<T>& values, const std::vector<bool>& eligible,
                                 size_t count) {
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < values.size(); ++i) {
    if (eligible[i]) order.push_back(i);
  }
  auto better = [&](uint32_t a, uint32_t b) {
    return values[a] != values[b] ? values[a] > values[b] : a < b;
  };
  count = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(count), order.end(),
                    better);
  order.resize(count);
  return order;
}

// Per-object figures gathered in one pass over the reachable objects.
struct Pass {
  std::vector<ObjectIndex> by_dynamic;  // candidates (component representatives)
  std::vector<ObjectIndex> by_shared;
  std::vector<uint64_t> class_max, class_sum, class_instances;  // per ClassId
  std::vector<SharedSizeBucket> histogram;
  uint64_t objects = 0, exact_estimates = 0, below_retained = 0;
};

Pass GatherEstimates(const HeapGraph& graph, const DominatorTree& tree,
                     const RetainedSizes& retained, const DynamicSizes& estimate, size_t rows) {
  Pass pass;
  const size_t classes = graph.class_count();
  pass.class_max.assign(classes, 0);
  pass.class_sum.assign(classes, 0);
  pass.class_instances.assign(classes, 0);
  for (size_t b = 0; b < kBuckets; ++b) {
    pass.histogram.push_back({kBucketFrom[b], b + 1 < kBuckets ? kBucketFrom[b + 1] : 0, 0});
  }
  TopComponents<std::pair<uint64_t, uint64_t>> by_dynamic(2 * rows);
  TopComponents<int64_t> by_shared(2 * rows);
  for (uint32_t i = 0; i < graph.object_count(); ++i) {
    const ObjectIndex v(i);
    if (!tree.reachable_from_gc_roots(v)) continue;
    ++pass.objects;
    const uint64_t dynamic = estimate.bytes(v);
    const uint64_t own = retained[i];
    if (estimate.exact(v)) ++pass.exact_estimates;
    const int64_t shared = Difference(dynamic, own);
    if (shared < 0) ++pass.below_retained;
    size_t bucket = 0;
    while (bucket + 1 < kBuckets && shared >= static_cast<int64_t>(kBucketFrom[bucket + 1]))
      ++bucket;
    ++pass.histogram[bucket].objects;
    const ComponentId c = estimate.component(v);
    by_dynamic.Offer(c, {dynamic, own}, v);
    by_shared.Offer(c, shared, v);
    const ClassId cls = graph.class_of(v);
    if (!cls.valid()) continue;
    pass.class_max[cls.value] = std::max(pass.class_max[cls.value], dynamic);
    pass.class_sum[cls.value] = SaturatingAdd(pass.class_sum[cls.value], dynamic);
    ++pass.class_instances[cls.value];
  }
  pass.by_dynamic = by_dynamic.Objects();
  pass.by_shared = by_shared.Objects();
  return pass;
}

// Exact dynamic sizes per component, each computed once.
class ExactSizes {
 public:
  ExactSizes(const HeapGraph& graph, const DynamicSizes& estimate, const DynamicSizeOptions& refs)
      : graph_(graph), estimate_(estimate), refs_(refs) {}

  StatusOr<DynamicSize> Of(ObjectIndex v) {
    const uint32_t c = estimate_.component(v).value;
    if (auto it = done_.find(c); it != done_.end()) return it->second;
    const ObjectIndex one[] = {v};
    HW_ASSIGN_OR_RETURN(DynamicSize size, ComputeDynamicSize(graph_, one, refs_));
    done_.emplace(c, size);
    return size;
  }

 private:
  const HeapGraph& graph_;
  const DynamicSizes& estimate_;
  const DynamicSizeOptions& refs_;
  absl::flat_hash_map<uint32_t, DynamicSize> done_;
};

StatusOr<std::vector<DynamicObjectRow>> ObjectRows(const HeapGraph& graph,
                                                   const RetainedSizes& retained,
                                                   const DynamicSizes& estimate,
                                                   std::span<const ObjectIndex> candidates,
                                                   ExactSizes* exact) {
  std::vector<ObjectSummary> summaries = SummarizeObjects(graph, retained, candidates);
  std::vector<DynamicObjectRow> rows;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ObjectIndex v = candidates[i];
    HW_ASSIGN_OR_RETURN(DynamicSize size, exact->Of(v));
    DynamicObjectRow row;
    row.object = std::move(summaries[i]);
    row.object.dynamic_bytes = size.bytes;
    row.object.dynamic_objects = size.objects;
    row.estimated_dynamic_bytes = estimate.bytes(v);
    row.estimate_exact = estimate.exact(v);
    row.shared_bytes = Difference(size.bytes, retained[v.value]);
    rows.push_back(std::move(row));
  }
  return rows;
}

// Sorts by `key` descending (ties keep the candidates' order) and keeps the first `rows`.
template <typename Row, typename KeyFn>
void SortAndCut(std::vector<Row>* list, size_t rows, KeyFn key) {
  std::stable_sort(list->begin(), list->end(),
                   [&](const Row& a, const Row& b) { return key(a) > key(b); });
  if (list->size() > rows) list->resize(rows);
}

// Counts the members of the components of the listed objects (one pass over the objects).
void CountComponentMembers(const DynamicSizes& estimate, std::vector<DynamicObjectRow*> rows,
                           std::span<const ObjectIndex> representatives) {
  absl::flat_hash_map<uint32_t, uint64_t> members;
  for (ObjectIndex v : representatives) members[estimate.component(v).value] = 0;
  for (uint32_t i = 0; i < estimate.object_count(); ++i) {
    auto it = members.find(estimate.component(ObjectIndex(i)).value);
    if (it != members.end()) ++it->second;
  }
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i]->component_objects = members[estimate.component(representatives[i]).value];
}

StatusOr<std::vector<DynamicClassRow>> ClassRows(const HeapGraph& graph, const DominatorTree& tree,
                                                 const RetainedSizes& retained, const Pass& pass,
                                                 size_t rows, const DynamicSizeOptions& refs) {
  HW_ASSIGN_OR_RETURN(std::vector<ClassRetained> per_class,
                      ComputeClassRetainedSizes(graph, tree, retained));
  std::vector<bool> eligible(pass.class_instances.size());
  std::vector<int64_t> sum_minus_retained(pass.class_instances.size());
  for (size_t c = 0; c < eligible.size(); ++c) {
    eligible[c] = pass.class_instances[c] > 0;
    sum_minus_retained[c] = Difference(pass.class_sum[c], per_class[c].retained_bytes);
  }
  std::set<uint32_t> candidates;
  for (uint32_t c : TopIndices(pass.class_max, eligible, rows)) candidates.insert(c);
  for (uint32_t c : TopIndices(pass.class_sum, eligible, rows)) candidates.insert(c);
  for (uint32_t c : TopIndices(sum_minus_retained, eligible, rows)) candidates.insert(c);

  absl::flat_hash_map<uint32_t, std::vector<ObjectIndex>> instances;
  for (uint32_t c : candidates) instances[c];
  for (uint32_t i = 0; i < graph.object_count(); ++i) {
    const ObjectIndex v(i);
    const ClassId cls = graph.class_of(v);
    if (!cls.valid() || !tree.reachable_from_gc_roots(v)) continue;
    auto it = instances.find(cls.value);
    if (it != instances.end()) it->second.push_back(v);
  }
  std::vector<DynamicClassRow> out;
  for (uint32_t c : candidates) {
    std::vector<ObjectIndex>& members = instances[c];
    HW_ASSIGN_OR_RETURN(DynamicSize size, ComputeDynamicSize(graph, members, refs));
    std::vector<ObjectIndex>().swap(members);
    DynamicClassRow row;
    row.class_name = graph.class_info(ClassId(c)).name;
    row.instances = pass.class_instances[c];
    row.retained_bytes = per_class[c].retained_bytes;
    row.dynamic_bytes = size.bytes;
    row.dynamic_objects = size.objects;
    row.shared_bytes = Difference(size.bytes, row.retained_bytes);
    row.estimated_max_bytes = pass.class_max[c];
    row.estimated_sum_bytes = pass.class_sum[c];
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

StatusOr<DynamicRanking> RankByDynamicSize(const HeapGraph& graph, const DominatorTree& tree,
                                           const RetainedSizes& retained,
                                           const DynamicRankingOptions& options) {
  if (tree.object_count() != graph.object_count() ||
      retained.size() != graph.object_count() + size_t{1}) {
    return absl::InvalidArgumentError(
        "dominator tree or retained sizes do not belong to this heap graph");
  }
  if (options.rows == 0) return absl::InvalidArgumentError("rows must be at least 1");
  DynamicRanking ranking;
  ranking.all_references = options.references.all_references;
  ranking.sketch_size = options.estimate.sketch_size;

  auto start = Clock::now();
  HW_ASSIGN_OR_RETURN(DynamicSizes estimate,
                      EstimateDynamicSizes(graph, options.references, options.estimate));
  Pass pass = GatherEstimates(graph, tree, retained, estimate, options.rows);
  ranking.objects = pass.objects;
  ranking.exact_estimates = pass.exact_estimates;
  ranking.below_retained = pass.below_retained;
  ranking.shared_histogram = pass.histogram;
  ranking.estimate_seconds = SecondsSince(start);

  start = Clock::now();
  ExactSizes exact(graph, estimate, options.references);
  HW_ASSIGN_OR_RETURN(ranking.objects_by_dynamic,
                      ObjectRows(graph, retained, estimate, pass.by_dynamic, &exact));
  HW_ASSIGN_OR_RETURN(ranking.objects_by_shared,
                      ObjectRows(graph, retained, estimate, pass.by_shared, &exact));
  // Component sizes before sorting, while rows and candidates are still parallel.
  std::vector<DynamicObjectRow*> rows;
  std::vector<ObjectIndex> representatives;
  for (size_t i = 0; i < pass.by_dynamic.size(); ++i) {
    rows.push_back(&ranking.objects_by_dynamic[i]);
    representatives.push_back(pass.by_dynamic[i]);
  }
  for (size_t i = 0; i < pass.by_shared.size(); ++i) {
    rows.push_back(&ranking.objects_by_shared[i]);
    representatives.push_back(pass.by_shared[i]);
  }
  CountComponentMembers(estimate, rows, representatives);
  SortAndCut(&ranking.objects_by_dynamic, options.rows, [](const DynamicObjectRow& r) {
    return std::make_pair(r.object.dynamic_bytes, r.object.retained_bytes);
  });
  SortAndCut(&ranking.objects_by_shared, options.rows, [](const DynamicObjectRow& r) {
    return std::make_pair(r.shared_bytes, r.object.dynamic_bytes);
  });

  HW_ASSIGN_OR_RETURN(std::vector<DynamicClassRow> classes,
                      ClassRows(graph, tree, retained, pass, options.rows, options.references));
  ranking.classes_by_dynamic = classes;
  ranking.classes_by_shared = std::move(classes);
  SortAndCut(&ranking.classes_by_dynamic, options.rows, [](const DynamicClassRow& r) {
    return std::make_pair(r.dynamic_bytes, r.retained_bytes);
  });
  SortAndCut(&ranking.classes_by_shared, options.rows, [](const DynamicClassRow& r) {
    return std::make_pair(r.shared_bytes, r.dynamic_bytes);
  });
  ranking.exact_seconds = SecondsSince(start);
  return ranking;
}

}  // namespace heapwatch::analysis
