#include "analysis/dump_summary.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/aggregations.h"
#include "analysis/gc_root_paths.h"

namespace heapwatch::analysis {
namespace {

// BFS parent of an object: the referrer on its shortest path from a GC root.
constexpr uint32_t kUnseen = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kIsRoot = std::numeric_limits<uint32_t>::max() - 1;

// Shortest paths from the GC roots to every object, strong references first (see the header):
// parent[v] is the referrer of v on its path (kIsRoot for a GC root, kUnseen if unreachable) and
// weak_parent[v] says that the reference from parent[v] is held only by Reference.referent.
// 4 bytes per object for the parents, 1 bit for the weak flags, up to 4 bytes per object for the
// FIFO, 8 bytes per weak reference met.
struct GcRootForest {
  std::vector<uint32_t> parent;
  std::vector<bool> weak_parent;
};

GcRootForest ShortestPathForest(const HeapGraph& heap) {
  const CsrGraph& graph = heap.graph();
  const uint32_t n = graph.node_count();
  GcRootForest forest;
  forest.parent.assign(n, kUnseen);
  forest.weak_parent.assign(n, false);
  std::vector<uint32_t> queue;
  std::vector<std::pair<uint32_t, uint32_t>> weak_edges;  // (from, to), in the order found
  for (ObjectIndex root : heap.root_objects()) {
    if (forest.parent[root.value] != kUnseen) continue;
    forest.parent[root.value] = kIsRoot;
    queue.push_back(root.value);
  }
  // Layer by layer: a BFS over strong references, then the weak references out of the layer that
  // lead to objects not seen yet seed the next layer.
  while (!queue.empty()) {
    for (size_t head = 0; head < queue.size(); ++head) {
      const uint32_t v = queue[head];
      for (uint64_t e = graph.offsets[v]; e < graph.offsets[v + 1]; ++e) {
        const uint32_t t = graph.targets[e].value;
        if (forest.parent[t] != kUnseen) continue;
        if (graph.is_weak(e)) {
          weak_edges.emplace_back(v, t);
          continue;
        }
        forest.parent[t] = v;
        queue.push_back(t);
      }
    }
    queue.clear();
    for (const auto& [from, to] : weak_edges) {
      if (forest.parent[to] != kUnseen) continue;
      forest.parent[to] = from;
      forest.weak_parent[to] = true;
      queue.push_back(to);
    }
    weak_edges.clear();
  }
  return forest;
}

std::string ObjectClassName(const HeapGraph& graph, ObjectIndex v) {
  if (graph.kind(v) == ObjectKind::kClass) {
    ClassId described = graph.DescribedClass(v);
    if (described.valid()) return absl::StrCat("class ", graph.class_info(described).name);
  }
  ClassId cls = graph.class_of(v);
  return cls.valid() ? graph.class_info(cls).name : std::string("<unknown class>");
}

// The generalised name of the reference from `from` to `to` (see the header).
std::string GeneralisedReference(const HeapGraph& heap, ObjectIndex from, ObjectIndex to,
                                 bool weak) {
  const CsrGraph& graph = heap.graph();
  uint64_t edge = kNoEdge;
  for (uint64_t e = graph.offsets[from.value]; e < graph.offsets[from.value + 1]; ++e) {
    if (graph.targets[e] == to && graph.is_weak(e) == weak) {
      edge = e;
      break;
    }
  }
  HW_CHECK(edge != kNoEdge);  // the BFS followed this reference
  const ReferenceSlot slot = heap.ResolveReference(from, edge);
  std::string name;
  switch (slot.kind) {
    case ReferenceSlot::Kind::kField:
      name = absl::StrCat("field ", heap.DescribeSlot(from, slot));
      break;
    case ReferenceSlot::Kind::kArrayElement:
      name = "[*]";
      break;
    default:
      name = heap.DescribeSlot(from, slot);  // "static NAME", "<class>", ...
      break;
  }
  if (weak) absl::StrAppend(&name, " (weak)");
  return name;
}

std::vector<std::string> OwnerPath(const HeapGraph& heap, const GcRootForest& forest,
                                   const absl::flat_hash_map<uint32_t, GcRootKind>& root_kinds,
                                   ObjectIndex owner) {
  std::vector<uint32_t> chain;  // owner first
  uint32_t v = owner.value;
  while (v != kIsRoot && v != kUnseen && chain.size() <= forest.parent.size()) {
    chain.push_back(v);
    v = forest.parent[v];
  }
  if (v == kUnseen) return {"<no path from a GC root>"};
  HW_CHECK(v == kIsRoot);  // a BFS forest has no cycles
  std::reverse(chain.begin(), chain.end());
  std::vector<std::string> path;
  const ObjectIndex root(chain.front());
  auto kind = root_kinds.find(root.value);
  HW_CHECK(kind != root_kinds.end());
  path.push_back(
      absl::StrCat(std::string(GcRootKindName(kind->second)), " ", ObjectClassName(heap, root)));
  // References between two objects of the same class (list nodes, tree nodes, nested arrays): a
  // maximal run of them is one step naming the distinct references, so the key does not depend on
  // the depth in a recursive structure.
  for (size_t i = 1; i < chain.size();) {
    const ObjectIndex from(chain[i - 1]);
    const ObjectIndex to(chain[i]);
    std::string step = GeneralisedReference(heap, from, to, forest.weak_parent[chain[i]]);
    if (heap.class_of(from) != heap.class_of(to) || heap.kind(from) == ObjectKind::kClass ||
        heap.kind(to) == ObjectKind::kClass) {
      path.push_back(std::move(step));
      ++i;
      continue;
    }
    std::set<std::string> names = {std::move(step)};
    size_t j = i + 1;
    for (; j < chain.size() && heap.class_of(ObjectIndex(chain[j])) == heap.class_of(from) &&
           heap.kind(ObjectIndex(chain[j])) != ObjectKind::kClass;
         ++j) {
      names.insert(GeneralisedReference(heap, ObjectIndex(chain[j - 1]), ObjectIndex(chain[j]),
                                        forest.weak_parent[chain[j]]));
    }
    path.push_back(absl::StrCat(absl::StrJoin(names, "|"), " (recursive)"));
    i = j;
  }
  return path;
}

int64_t Delta(uint64_t before, uint64_t after) {
  return static_cast<int64_t>(after) - static_cast<int64_t>(before);
}

}  // namespace

StatusOr<DumpSummary> BuildDumpSummary(const HeapGraph& graph, const DominatorTree& tree,
                                       const RetainedSizes& retained,
                                       const DumpSummaryOptions& options) {
  if (tree.object_count() != graph.object_count() ||
      retained.size() != graph.object_count() + size_t{1}) {
    return absl::InvalidArgumentError(
        "dominator tree or retained sizes do not belong to this heap graph");
  }
  if (!(options.min_owner_share >= 0 && options.min_owner_share <= 1)) {
    return absl::InvalidArgumentError("min_owner_share must be in [0, 1]");
  }
  if (graph.object_count() >= kIsRoot) {
    return absl::InvalidArgumentError("too many objects for the GC-root path search");
  }
  DumpSummary summary;
  summary.totals = ComputeReportTotals(graph, tree);
  const ReportTotals& totals = summary.totals;

  // Class histogram by name.
  HW_ASSIGN_OR_RETURN(std::vector<ClassRetained> per_class,
                      ComputeClassRetainedSizes(graph, tree, retained));
  absl::flat_hash_map<std::string, size_t> class_row;
  for (uint32_t c = 0; c < per_class.size(); ++c) {
    if (per_class[c].instances == 0) continue;
    const std::string& name = graph.class_info(ClassId(c)).name;
    auto [it, inserted] = class_row.try_emplace(name, summary.classes.size());
    if (inserted) summary.classes.push_back(ClassRow{name, 0, 0, 0});
    ClassRow& row = summary.classes[it->second];
    row.instances += per_class[c].instances;
    row.shallow_bytes += per_class[c].shallow_bytes;
    row.retained_bytes += per_class[c].retained_bytes;
  }
  std::sort(summary.classes.begin(), summary.classes.end(),
            [](const ClassRow& a, const ClassRow& b) {
              return std::tie(b.retained_bytes, b.shallow_bytes, a.class_name) <
                     std::tie(a.retained_bytes, a.shallow_bytes, b.class_name);
            });

  // Owners: the biggest objects above the threshold, grouped by (class name, generalised path).
  const uint64_t threshold = std::max<uint64_t>(
      options.min_owner_bytes,
      static_cast<uint64_t>(options.min_owner_share *
                            static_cast<double>(totals.reachable_shallow_bytes)));
  std::vector<ObjectIndex> owners;
  for (ObjectIndex v : TopObjectsByRetainedSize(tree, retained, options.max_owners)) {
    if (retained[v.value] < threshold) break;  // descending
    owners.push_back(v);
  }
  if (owners.empty()) return summary;
  const GcRootForest forest = ShortestPathForest(graph);
  absl::flat_hash_map<uint32_t, GcRootKind> root_kinds;
  for (const GcRoot& root : graph.gc_roots()) root_kinds.try_emplace(root.object.value, root.kind);
  std::map<std::pair<std::string, std::vector<std::string>>, OwnerRow> grouped;
  // Owner -> its group, to find owners nested in an owner of the same group: their retained size is
  // already in the outer one's. Every dominator-tree ancestor of an owner retains at least as much,
  // so (but for ties at the max_owners cut) the ancestors are owners too and the climb stays within
  // the owners: O(owners^2) at worst.
  absl::flat_hash_map<uint32_t, OwnerRow*> group_of;
  for (ObjectIndex v : owners) {
    std::string class_name = ObjectClassName(graph, v);
    std::vector<std::string> path = OwnerPath(graph, forest, root_kinds, v);
    OwnerRow& row = grouped[{class_name, path}];
    if (row.path.empty()) {
      row.class_name = std::move(class_name);
      row.path = std::move(path);
    }
    group_of[v.value] = &row;
  }
  for (ObjectIndex v : owners) {
    OwnerRow& row = *group_of[v.value];
    ++row.objects;
    bool nested = false;
    for (ObjectIndex a = tree.immediate_dominator(v); a.valid() && a != tree.super_root();
         a = tree.immediate_dominator(a)) {
      auto it = group_of.find(a.value);
      if (it == group_of.end()) break;
      if (it->second == &row) {
        nested = true;
        break;
      }
    }
    if (!nested) row.retained_bytes += retained[v.value];
  }
  for (auto& [key, row] : grouped) summary.owners.push_back(std::move(row));
  std::stable_sort(summary.owners.begin(), summary.owners.end(),
                   [](const OwnerRow& a, const OwnerRow& b) {
                     return a.retained_bytes > b.retained_bytes;  // ties keep (name, path) order
                   });
  return summary;
}

DumpDiff DiffDumpSummaries(const DumpSummary& before, const DumpSummary& after) {
  DumpDiff diff;
  diff.before_reachable_bytes = before.totals.reachable_shallow_bytes;
  diff.after_reachable_bytes = after.totals.reachable_shallow_bytes;
  diff.delta_reachable_bytes = Delta(diff.before_reachable_bytes, diff.after_reachable_bytes);

  // Classes by name.
  std::map<std::string, std::pair<const ClassRow*, const ClassRow*>> classes;
  for (const ClassRow& row : before.classes) classes[row.class_name].first = &row;
  for (const ClassRow& row : after.classes) classes[row.class_name].second = &row;
  static const ClassRow kNone;
  for (const auto& [name, rows] : classes) {
    const ClassRow& b = rows.first ? *rows.first : kNone;
    const ClassRow& a = rows.second ? *rows.second : kNone;
    DumpClassDelta d;
    d.class_name = name;
    d.before_instances = b.instances;
    d.after_instances = a.instances;
    d.delta_instances = Delta(b.instances, a.instances);
    d.before_shallow_bytes = b.shallow_bytes;
    d.after_shallow_bytes = a.shallow_bytes;
    d.delta_shallow_bytes = Delta(b.shallow_bytes, a.shallow_bytes);
    d.before_retained_bytes = b.retained_bytes;
    d.after_retained_bytes = a.retained_bytes;
    d.delta_retained_bytes = Delta(b.retained_bytes, a.retained_bytes);
    if (!rows.first) {
      d.change = DumpClassChange::kNew;
    } else if (!rows.second) {
      d.change = DumpClassChange::kVanished;
    } else if (d.delta_instances == 0 && d.delta_shallow_bytes == 0 &&
               d.delta_retained_bytes == 0) {
      d.change = DumpClassChange::kUnchanged;
    } else {
      d.change = DumpClassChange::kChanged;
    }
    diff.classes.push_back(std::move(d));
  }
  std::stable_sort(diff.classes.begin(), diff.classes.end(),
                   [](const DumpClassDelta& a, const DumpClassDelta& b) {
                     return std::tie(b.delta_retained_bytes, b.delta_shallow_bytes) <
                            std::tie(a.delta_retained_bytes, a.delta_shallow_bytes);
                   });

  // Owners by (class name, path); per owner class.
  using Key = std::pair<std::string, std::vector<std::string>>;
  std::map<Key, OwnerDelta> owners;
  for (const OwnerRow& row : before.owners) {
    OwnerDelta& d = owners[Key{row.class_name, row.path}];
    d.before_retained_bytes += row.retained_bytes;
    d.before_objects += row.objects;
  }
  for (const OwnerRow& row : after.owners) {
    OwnerDelta& d = owners[Key{row.class_name, row.path}];
    d.after_retained_bytes += row.retained_bytes;
    d.after_objects += row.objects;
  }
  std::map<std::string, OwnerClassDelta> owner_classes;
  for (auto& [key, d] : owners) {
    d.class_name = key.first;
    d.path = key.second;
    d.delta_retained_bytes = Delta(d.before_retained_bytes, d.after_retained_bytes);
    OwnerClassDelta& c = owner_classes[key.first];
    c.class_name = key.first;
    c.before_retained_bytes += d.before_retained_bytes;
    c.after_retained_bytes += d.after_retained_bytes;
    c.before_objects += d.before_objects;
    c.after_objects += d.after_objects;
    diff.owners.push_back(std::move(d));
  }
  for (auto& [name, c] : owner_classes) {
    c.delta_retained_bytes = Delta(c.before_retained_bytes, c.after_retained_bytes);
    diff.owner_classes.push_back(std::move(c));
  }
  std::stable_sort(diff.owners.begin(), diff.owners.end(),
                   [](const OwnerDelta& a, const OwnerDelta& b) {
                     return a.delta_retained_bytes > b.delta_retained_bytes;
                   });
  std::stable_sort(diff.owner_classes.begin(), diff.owner_classes.end(),
                   [](const OwnerClassDelta& a, const OwnerClassDelta& b) {
                     return a.delta_retained_bytes > b.delta_retained_bytes;
                   });
  return diff;
}

}  // namespace heapwatch::analysis
