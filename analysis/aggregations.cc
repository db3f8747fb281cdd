#include "analysis/aggregations.h"

#include <algorithm>
#include <queue>
#include <regex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "analysis/retained_size.h"

namespace heapwatch::analysis {

// ---- ClassNamePatterns

struct ClassNamePatterns::Compiled {
  std::vector<std::regex> regexes;
};

ClassNamePatterns::ClassNamePatterns() : compiled_(std::make_unique<Compiled>()) {}
ClassNamePatterns::~ClassNamePatterns() = default;
ClassNamePatterns::ClassNamePatterns(ClassNamePatterns&&) noexcept = default;
ClassNamePatterns& ClassNamePatterns::operator=(ClassNamePatterns&&) noexcept = default;

StatusOr<ClassNamePatterns> ClassNamePatterns::Compile(std::span<const std::string> patterns) {
  ClassNamePatterns result;
  for (const std::string& pattern : patterns) {
    try {
      result.compiled_->regexes.emplace_back(pattern,
                                             std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "exclude pattern \"", pattern, "\" is not a valid regular expression: ", e.what()));
    }
    result.patterns_.push_back(pattern);
  }
  return result;
}

bool ClassNamePatterns::Matches(std::string_view class_name) const {
  for (const std::regex& re : compiled_->regexes) {
    if (std::regex_match(class_name.begin(), class_name.end(), re)) return true;
  }
  return false;
}

std::vector<std::string> DefaultExcludePatterns() {
  return {"java.*", "javax.*", "jdk.*", "sun.*", "com\\.sun\\..*"};
}

namespace {

Status CheckRetainedSizes(const DominatorTree& tree, const RetainedSizes& retained_sizes) {
  if (retained_sizes.size() != static_cast<size_t>(tree.object_count()) + 1) {
    return absl::InvalidArgumentError(absl::StrCat("retained sizes have ", retained_sizes.size(),
                                                   " entries, the dominator tree needs ",
                                                   tree.object_count() + 1));
  }
  return absl::OkStatus();
}

Status CheckObject(const DominatorTree& tree, ObjectIndex v) {
  if (!v.valid() || v.value > tree.object_count()) {
    return absl::InvalidArgumentError(absl::StrCat("object index ", v.value, " is out of range (",
                                                   tree.object_count(), " objects)"));
  }
  return absl::OkStatus();
}

bool InTree(const DominatorTree& tree, ObjectIndex v) {
  return v != tree.super_root() && tree.reachable(v);
}

}  // namespace

// ---- Class histogram with retained sizes

StatusOr<std::vector<ClassRetained>> ComputeClassRetainedSizes(
    const HeapGraph& graph, const DominatorTree& tree, const RetainedSizes& retained_sizes) {
  HW_RETURN_IF_ERROR(CheckRetainedSizes(tree, retained_sizes));
  if (graph.object_count() != tree.object_count()) {
    return absl::InvalidArgumentError("the dominator tree is not the tree of this heap graph");
  }
  std::vector<ClassRetained> result(graph.class_count());
  // active[c]: instances of class c on the current root-to-node path of the walk. An instance whose
  // class is already active is dominated by another instance of its class and is not counted again.
  std::vector<uint32_t> active(graph.class_count(), 0);
  struct Frame {
    ObjectIndex node;
    uint32_t next_child;
  };
  std::vector<Frame> stack;
  stack.push_back({tree.super_root(), 0});
  while (!stack.empty()) {
    Frame& top = stack.back();
    std::span<const ObjectIndex> children = tree.children(top.node);
    if (top.next_child < children.size()) {
      ObjectIndex child = children[top.next_child++];
      ClassId cls = graph.class_of(child);
      if (cls.valid()) {
        ClassRetained& row = result[cls.value];
        ++row.instances;
        row.shallow_bytes += graph.shallow_size(child);
        if (active[cls.value]++ == 0) row.retained_bytes += retained_sizes[child.value];
      }
      stack.push_back({child, 0});  // invalidates `top`
    } else {
      if (top.node != tree.super_root()) {
        ClassId cls = graph.class_of(top.node);
        if (cls.valid()) --active[cls.value];
      }
      stack.pop_back();
    }
  }
  return result;
}

// ---- Dominator tree grouped by class

StatusOr<std::vector<DominatorGroup>> GroupDominatedByClass(const HeapGraph& graph,
                                                            const DominatorTree& tree,
                                                            const RetainedSizes& retained_sizes,
                                                            std::span<const ObjectIndex> parents) {
  HW_RETURN_IF_ERROR(CheckRetainedSizes(tree, retained_sizes));
  absl::flat_hash_map<uint32_t, DominatorGroup> groups;
  absl::flat_hash_set<uint32_t> seen_parents;
  for (ObjectIndex parent : parents) {
    HW_RETURN_IF_ERROR(CheckObject(tree, parent));
    if (!seen_parents.insert(parent.value).second) continue;
    for (ObjectIndex child : tree.children(parent)) {
      ClassId cls = graph.class_of(child);
      DominatorGroup& group = groups[cls.value];
      group.class_id = cls;
      ++group.objects;
      group.shallow_bytes += graph.shallow_size(child);
      group.retained_bytes += retained_sizes[child.value];
    }
  }
  std::vector<DominatorGroup> result;
  result.reserve(groups.size());
  for (auto& [key, group] : groups) result.push_back(group);
  std::sort(result.begin(), result.end(), [](const DominatorGroup& a, const DominatorGroup& b) {
    if (a.retained_bytes != b.retained_bytes) return a.retained_bytes > b.retained_bytes;
    return a.class_id < b.class_id;
  });
  return result;
}

// ---- Immediate dominators grouped by class

std::string ClassKeyName(const HeapGraph& graph, const ClassKey& key) {
  if (key.root) return "<ROOT>";
  if (!key.class_id.valid() || key.class_id.value >= graph.class_count()) return "<unknown class>";
  const std::string& name = graph.class_info(key.class_id).name;
  return key.class_object ? absl::StrCat("class ", name) : name;
}

namespace {

ClassKey KeyOf(const HeapGraph& graph, const DominatorTree& tree, ObjectIndex v,
               bool class_objects_by_described_class = true) {
  if (v == tree.super_root()) return ClassKey{kNoClass, false, true};
  if (class_objects_by_described_class && graph.kind(v) == ObjectKind::kClass) {
    ClassId described = graph.DescribedClass(v);
    if (described.valid()) return ClassKey{described, true, false};
  }
  return ClassKey{graph.class_of(v), false, false};
}

// Memoises, per class key, whether an exclude pattern matches it (MAT's include/exclude class
// caches).
class ExcludeCache {
 public:
  ExcludeCache(const HeapGraph& graph, const ClassNamePatterns* patterns)
      : graph_(graph),
        patterns_(patterns),
        state_(2 * static_cast<size_t>(graph.class_count()), 0) {}

  bool Excluded(const ClassKey& key) {
    if (key.root || patterns_ == nullptr || !key.class_id.valid()) return false;
    size_t slot = 2 * static_cast<size_t>(key.class_id.value) + (key.class_object ? 1 : 0);
    if (state_[slot] == 0) {
      state_[slot] = patterns_->Matches(graph_.class_info(key.class_id).name) ? 1 : 2;
    }
    return state_[slot] == 1;
  }

 private:
  const HeapGraph& graph_;
  const ClassNamePatterns* patterns_;
  std::vector<uint8_t> state_;  // 0 unknown, 1 excluded, 2 kept
};

}  // namespace

StatusOr<std::vector<DominatorClassGroup>> ImmediateDominatorsByClass(
    const HeapGraph& graph, const DominatorTree& tree, const RetainedSizes& retained_sizes,
    std::span<const ObjectIndex> objects, const ImmediateDominatorsOptions& options) {
  HW_RETURN_IF_ERROR(CheckRetainedSizes(tree, retained_sizes));
  ExcludeCache exclude(graph, options.exclude);
  // climb_end[(own class, d)]: where the climb starting at dominator d ends for an object of `own
  // class` (the class matters only with skip_same_class). Every node of a climb is memoised, so
  // each ancestor is climbed through at most once per class.
  absl::flat_hash_map<uint64_t, uint32_t> climb_end;
  struct Row {
    DominatorClassGroup group;
    absl::flat_hash_set<uint32_t> dominator_set;
  };
  std::vector<Row> rows;
  absl::flat_hash_map<uint64_t, size_t> row_of;  // (class id, class_object, root) -> rows index
  absl::flat_hash_set<uint32_t> seen;
  std::vector<ObjectIndex> path;
  // Holders for name_excluded_root_holder: THREAD_OBJECT roots, and per class whether it is
  // java.lang.Thread or a subclass (0 unknown, 1 yes, 2 no).
  absl::flat_hash_set<uint32_t> thread_roots;
  absl::flat_hash_set<uint32_t> holder_ends;  // excluded holders that climbs end at
  std::vector<uint8_t> thread_class;
  if (options.name_excluded_root_holder) {
    for (const GcRoot& root : graph.gc_roots()) {
      if (root.kind == GcRootKind::kThreadObject) thread_roots.insert(root.object.value);
    }
    thread_class.assign(graph.class_count(), 0);
  }
  auto is_holder = [&](ObjectIndex v) {
    if (graph.kind(v) == ObjectKind::kClass) return graph.DescribedClass(v).valid();
    if (thread_roots.contains(v.value)) return true;
    ClassId cls = graph.class_of(v);
    if (!cls.valid()) return false;
    if (thread_class[cls.value] == 0) {
      bool thread = false;
      // The superclass chain is acyclic (HeapGraphBuilder requires supers to be added first);
      // bounded anyway.
      ClassId c = cls;
      for (int depth = 0; c.valid() && depth < 256; ++depth) {
        if (graph.class_info(c).name == "java.lang.Thread") {
          thread = true;
          break;
        }
        c = graph.class_info(c).super_class;
      }
      thread_class[cls.value] = thread ? 1 : 2;
    }
    return thread_class[cls.value] == 1;
  };
  for (ObjectIndex object : objects) {
    HW_RETURN_IF_ERROR(CheckObject(tree, object));
    if (!InTree(tree, object) || !seen.insert(object.value).second) continue;
    ClassId own = graph.class_of(object);
    uint64_t memo_class = options.skip_same_class ? uint64_t{own.value} << 32 : 0;
    ObjectIndex d = tree.immediate_dominator(object);
    path.clear();
    while (true) {
      auto memo = climb_end.find(memo_class | d.value);
      if (memo != climb_end.end()) {
        d = ObjectIndex(memo->second);
        break;
      }
      if (d == tree.super_root()) break;
      ClassKey key = KeyOf(graph, tree, d, options.class_objects_by_described_class);
      bool climb = exclude.Excluded(key) ||
                   (options.skip_same_class && !key.class_object && key.class_id == own);
      if (!climb) break;
      path.push_back(d);
      d = tree.immediate_dominator(d);
    }
    if (options.name_excluded_root_holder &&
        (d == tree.super_root() || holder_ends.contains(d.value))) {
      // The climb reached the super root (or a memoised climb that did). From the top of the climb
      // down: each climbed node ends at the nearest holder at or above it; the object itself at the
      // nearest holder above it.
      ObjectIndex holder = d;
      for (size_t i = path.size(); i-- > 0;) {
        if (is_holder(path[i])) {
          holder = path[i];
          holder_ends.insert(holder.value);
        }
        climb_end[memo_class | path[i].value] = holder.value;
      }
      d = holder;
    } else {
      for (ObjectIndex p : path) climb_end[memo_class | p.value] = d.value;
    }

    ClassKey key = KeyOf(graph, tree, d, options.class_objects_by_described_class);
    uint64_t row_key =
        (uint64_t{key.class_id.value} << 2) | (key.class_object ? 1 : 0) | (key.root ? 2 : 0);
    auto [it, inserted] = row_of.try_emplace(row_key, rows.size());
    if (inserted) {
      rows.emplace_back();
      rows.back().group.key = key;
    }
    Row& row = rows[it->second];
    ++row.group.dominated;
    row.group.dominated_shallow_bytes += graph.shallow_size(object);
    if (!key.root && row.dominator_set.insert(d.value).second) {
      row.group.dominators.push_back(d);
      row.group.dominator_shallow_bytes += graph.shallow_size(d);
    }
  }
  std::vector<DominatorClassGroup> result;
  result.reserve(rows.size());
  for (Row& row : rows) {
    if (!row.group.dominators.empty()) {
      HW_ASSIGN_OR_RETURN(row.group.dominator_retained_bytes,
                          MinimumRetainedSize(tree, retained_sizes, row.group.dominators));
    }
    result.push_back(std::move(row.group));
  }
  std::sort(result.begin(), result.end(),
            [](const DominatorClassGroup& a, const DominatorClassGroup& b) {
              if (a.dominated_shallow_bytes != b.dominated_shallow_bytes) {
                return a.dominated_shallow_bytes > b.dominated_shallow_bytes;
              }
              if (a.dominated != b.dominated) return a.dominated > b.dominated;
              return std::tie(a.key.root, a.key.class_id, a.key.class_object) <
                     std::tie(b.key.root, b.key.class_id, b.key.class_object);
            });
  return result;
}

// ---- Accumulation point

StatusOr<AccumulationResult> FindAccumulationPoints(const DominatorTree& tree,
                                                    const RetainedSizes& retained_sizes,
                                                    std::span<const ObjectIndex> set, double ratio,
                                                    size_t max_points, double min_share,
                                                    const HeapGraph* graph) {
  HW_RETURN_IF_ERROR(CheckRetainedSizes(tree, retained_sizes));
  if (graph != nullptr && graph->object_count() != tree.object_count()) {
    return absl::InvalidArgumentError(absl::StrCat("heap graph of ", graph->object_count(),
                                                   " objects for a dominator tree of ",
                                                   tree.object_count()));
  }
  if (!(ratio > 0 && ratio <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("accumulation ratio ", ratio, " is not in (0, 1]"));
  }
  absl::flat_hash_set<uint32_t> members;
  for (ObjectIndex v : set) {
    HW_RETURN_IF_ERROR(CheckObject(tree, v));
    if (InTree(tree, v)) members.insert(v.value);
  }
  AccumulationResult result;
  result.set_members = members.size();
  if (members.empty() || max_points == 0) return result;

  // Step 1: classify. below_member[v] for non-members climbed through: true if v has a member
  // ancestor. A member is "top-level" when no other member dominates it. Each ancestor is
  // classified once.
  absl::flat_hash_map<uint32_t, bool> below_member;
  std::vector<ObjectIndex> top_level;
  std::vector<ObjectIndex> path;
  const ObjectIndex super_root = tree.super_root();
  for (uint32_t m : members) {
    path.clear();
    ObjectIndex p = tree.immediate_dominator(ObjectIndex(m));
    bool has_member_ancestor = false;
    while (p != super_root) {
      if (members.contains(p.value)) {
        has_member_ancestor = true;
        break;
      }
      auto known = below_member.find(p.value);
      if (known != below_member.end()) {
        has_member_ancestor = known->second;
        break;
      }
      path.push_back(p);
      p = tree.immediate_dominator(p);
    }
    for (ObjectIndex q : path) below_member[q.value] = has_member_ancestor;
    if (!has_member_ancestor) top_level.push_back(ObjectIndex(m));
  }

  // Step 2: w(v) bottom-up over the ancestors of top-level members (the nodes classified `false`),
  // leaves first: a node is final when all of its children in this union have been added.
  struct Weight {
    uint64_t bytes = 0;
    uint64_t members = 0;
    uint32_t pending = 0;
  };
  absl::flat_hash_map<uint32_t, Weight> weight;
  weight[super_root.value];
  for (auto& [v, below] : below_member) {
    if (!below) weight[v];
  }
  for (ObjectIndex m : top_level) {
    Weight& w = weight[m.value];
    w.bytes = retained_sizes[m.value];
    w.members = 1;
  }
  for (auto& [v, w] : weight) {
    if (v == super_root.value) continue;
    auto parent = weight.find(tree.immediate_dominator(ObjectIndex(v)).value);
    HW_CHECK(parent != weight.end());  // every ancestor of a top-level member was classified above
    ++parent->second.pending;
  }
  std::vector<uint32_t> ready;
  for (auto& [v, w] : weight) {
    if (w.pending == 0 && v != super_root.value) ready.push_back(v);
  }
  while (!ready.empty()) {
    uint32_t v = ready.back();
    ready.pop_back();
    const Weight w = weight.at(v);
    uint32_t parent = tree.immediate_dominator(ObjectIndex(v)).value;
    Weight& pw = weight.at(parent);
    pw.bytes += w.bytes;
    pw.members += w.members;
    if (--pw.pending == 0 && parent != super_root.value) ready.push_back(parent);
  }
  const uint64_t total = weight.at(super_root.value).bytes;
  result.minimum_retained_bytes = total;

  // Step 3: walk down from the super root along the heaviest child.
  auto heaviest_child = [&](ObjectIndex v) {
    ObjectIndex best = kNoObject;
    uint64_t best_bytes = 0;
    for (ObjectIndex c : tree.children(v)) {
      auto it = weight.find(c.value);
      if (it == weight.end()) continue;
      if (!best.valid() || it->second.bytes > best_bytes) {
        best = c;
        best_bytes = it->second.bytes;
      }
    }
    return best;
  };
  auto point_of = [&](ObjectIndex v) {
    const Weight& w = weight.at(v.value);
    return AccumulationPoint{v, w.members, w.bytes};
  };
  ObjectIndex current = super_root;
  ObjectIndex best = kNoObject;
  while (true) {
    best = heaviest_child(current);
    if (!best.valid()) break;
    const uint64_t best_bytes = weight.at(best.value).bytes;
    const uint64_t current_bytes = weight.at(current.value).bytes;
    if (static_cast<double>(best_bytes) < ratio * static_cast<double>(current_bytes)) break;
    if (members.contains(best.value)) break;
    current = best;
  }
  if (current != super_root) {
    // Up a run of one class to its first object: every node between it and `current` was on the
    // walk (the walk came down through them), so its weight is known.
    if (graph != nullptr) {
      const ClassId run_class = graph->class_of(current);
      for (ObjectIndex up = tree.immediate_dominator(current);
           up != super_root && graph->class_of(up) == run_class;
           up = tree.immediate_dominator(up)) {
        current = up;
      }
    }
    result.points.push_back(point_of(current));
    return result;
  }
  if (best.valid() && members.contains(best.value) &&
      static_cast<double>(weight.at(best.value).bytes) >= ratio * static_cast<double>(total)) {
    result.points.push_back(point_of(best));
    return result;
  }
  // Spread over several GC roots: the heaviest top-level holders.
  std::vector<AccumulationPoint> candidates;
  for (ObjectIndex c : tree.children(super_root)) {
    if (weight.contains(c.value)) candidates.push_back(point_of(c));
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const AccumulationPoint& a, const AccumulationPoint& b) {
              if (a.set_bytes != b.set_bytes) return a.set_bytes > b.set_bytes;
              return a.object < b.object;
            });
  for (const AccumulationPoint& c : candidates) {
    if (result.points.size() >= max_points) break;
    if (!result.points.empty() &&
        static_cast<double>(c.set_bytes) < min_share * static_cast<double>(total)) {
      break;
    }
    result.points.push_back(c);
  }
  return result;
}

// ---- Biggest objects

std::vector<ObjectIndex> TopObjectsByRetainedSize(const DominatorTree& tree,
                                                  const RetainedSizes& retained_sizes, size_t count,
                                                  bool top_level_only) {
  if (count == 0 || retained_sizes.size() != static_cast<size_t>(tree.object_count()) + 1)
    return {};
  // Min-heap of the best `count` so far; the worst candidate is on top.
  using Entry = std::pair<uint64_t, uint32_t>;  // (retained size, object index)
  auto better = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(better)> heap(better);
  auto consider = [&](ObjectIndex v) {
    Entry e{retained_sizes[v.value], v.value};
    if (heap.size() < count) {
      heap.push(e);
    } else if (better(e, heap.top())) {
      heap.pop();
      heap.push(e);
    }
  };
  if (top_level_only) {
    for (ObjectIndex v : tree.children(tree.super_root())) consider(v);
  } else {
    for (uint32_t v = 0; v < tree.object_count(); ++v) {
      if (tree.reachable(ObjectIndex(v))) consider(ObjectIndex(v));
    }
  }
  std::vector<ObjectIndex> result(heap.size());
  for (size_t i = heap.size(); i-- > 0;) {
    result[i] = ObjectIndex(heap.top().second);
    heap.pop();
  }
  return result;
}

std::vector<ObjectIndex> InstancesOf(const HeapGraph& graph, const DominatorTree& tree,
                                     std::span<const ClassId> classes) {
  std::vector<bool> wanted(graph.class_count(), false);
  for (ClassId c : classes) {
    if (c.valid() && c.value < graph.class_count()) wanted[c.value] = true;
  }
  std::vector<ObjectIndex> result;
  for (uint32_t v = 0; v < graph.object_count(); ++v) {
    ClassId c = graph.class_of(ObjectIndex(v));
    if (c.valid() && wanted[c.value] && InTree(tree, ObjectIndex(v)))
      result.push_back(ObjectIndex(v));
  }
  return result;
}

}  // namespace heapwatch::analysis
