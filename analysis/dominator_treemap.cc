#include "analysis/dominator_treemap.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace heapwatch::analysis {
namespace {

// A group key: the canonical class (the first class of its name) plus whether the objects are
// class objects standing for it. kUnknown for objects without a (valid) class.
constexpr uint64_t kStaticsBit = uint64_t{1} << 32;
constexpr uint64_t kUnknown = 0xFFFFFFFFu;

class Grouper {
 public:
  explicit Grouper(const HeapGraph& graph) : graph_(graph), canonical_(graph.class_count()) {
    for (uint32_t c = 0; c < graph.class_count(); ++c) {
      const ClassId first = graph.FindClass(graph.class_info(ClassId(c)).name);
      canonical_[c] = first.valid() ? first.value : c;
    }
  }

  uint64_t Key(ObjectIndex v) const {
    if (graph_.kind(v) == ObjectKind::kClass) {
      const ClassId described = graph_.DescribedClass(v);
      if (described.valid() && described.value < canonical_.size()) {
        return kStaticsBit | canonical_[described.value];
      }
    }
    const ClassId c = graph_.class_of(v);
    if (!c.valid() || c.value >= canonical_.size()) return kUnknown;
    return canonical_[c.value];
  }

  TreemapCell Cell(uint64_t key) const {
    TreemapCell cell;
    const uint32_t c = static_cast<uint32_t>(key & 0xFFFFFFFFu);
    const std::string name =
        key == kUnknown ? std::string("<unknown class>") : graph_.class_info(ClassId(c)).name;
    if ((key & kStaticsBit) != 0) {
      cell.kind = TreemapCell::Kind::kStatics;
      cell.label = absl::StrCat("class ", name, " (statics)");
    } else {
      cell.kind = TreemapCell::Kind::kClass;
      cell.label = name;
    }
    return cell;
  }

 private:
  const HeapGraph& graph_;
  std::vector<uint32_t> canonical_;
};

struct Sum {
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

struct Level1 {
  Sum sum;
  uint64_t shallow = 0;
  absl::flat_hash_map<uint64_t, Sum> children;
};

bool BiggerFirst(const TreemapCell& a, const TreemapCell& b) {
  if (a.retained_bytes != b.retained_bytes) return a.retained_bytes > b.retained_bytes;
  return a.label < b.label;
}

// Sorts `cells` biggest first and sums those beyond `keep` into one kOther cell at the end.
void Bound(std::vector<TreemapCell>* cells, size_t keep) {
  std::sort(cells->begin(), cells->end(), BiggerFirst);
  if (cells->size() <= keep) return;
  TreemapCell other;
  other.kind = TreemapCell::Kind::kOther;
  other.label = "other";
  for (size_t i = keep; i < cells->size(); ++i) {
    other.objects += (*cells)[i].objects;
    other.retained_bytes += (*cells)[i].retained_bytes;
  }
  cells->resize(keep);
  cells->push_back(std::move(other));
}

TreemapCell* FindCell(std::vector<TreemapCell>& cells, const TreemapCell& like) {
  for (TreemapCell& c : cells) {
    if (c.kind == like.kind && c.label == like.label) return &c;
  }
  for (TreemapCell& c : cells) {
    if (c.kind == TreemapCell::Kind::kOther) return &c;
  }
  return nullptr;
}

}  // namespace

StatusOr<DominatorTreemap> BuildDominatorTreemap(const HeapGraph& graph, const DominatorTree& tree,
                                                 const RetainedSizes& retained,
                                                 const DominatorTreemapOptions& options) {
  if (options.top_cells == 0 || options.top_children == 0) {
    return absl::InvalidArgumentError("the treemap bounds must be at least 1");
  }
  if (tree.object_count() != graph.object_count() ||
      retained.size() != static_cast<size_t>(graph.object_count()) + 1) {
    return absl::InvalidArgumentError(
        "the dominator tree and retained sizes do not match the heap graph");
  }
  const Grouper grouper(graph);
  absl::flat_hash_map<uint64_t, Level1> groups;
  for (const ObjectIndex top : tree.children(tree.super_root())) {
    Level1& g = groups[grouper.Key(top)];
    ++g.sum.objects;
    g.sum.bytes += retained[top.value];
    g.shallow += graph.shallow_size(top);
    for (const ObjectIndex child : tree.children(top)) {
      Sum& s = g.children[grouper.Key(child)];
      ++s.objects;
      s.bytes += retained[child.value];
    }
  }
  DominatorTreemap out;
  out.total_bytes = retained.back();
  out.total_objects = tree.tree_object_count();
  out.cells.reserve(groups.size());
  for (auto& [key, g] : groups) {
    TreemapCell cell = grouper.Cell(key);
    cell.objects = g.sum.objects;
    cell.retained_bytes = g.sum.bytes;
    out.cells.push_back(std::move(cell));
  }
  Bound(&out.cells, options.top_cells);
  // Level 2 only for the cells kept (the groups' maps are looked up again by the cell's key).
  for (auto& [key, g] : groups) {
    const TreemapCell like = grouper.Cell(key);
    TreemapCell* cell = FindCell(out.cells, like);
    if (cell == nullptr || cell->kind == TreemapCell::Kind::kOther) continue;
    for (const auto& [child_key, s] : g.children) {
      TreemapCell child = grouper.Cell(child_key);
      child.objects = s.objects;
      child.retained_bytes = s.bytes;
      cell->children.push_back(std::move(child));
    }
    Bound(&cell->children, options.top_children);
    if (g.shallow > 0) {
      TreemapCell self;
      self.kind = TreemapCell::Kind::kSelf;
      self.label = "self";
      self.objects = g.sum.objects;
      self.retained_bytes = g.shallow;
      cell->children.push_back(std::move(self));
    }
  }
  return out;
}

void MarkAccumulationPoint(const HeapGraph& graph, const DominatorTree& tree, ObjectIndex point,
                           DominatorTreemap* treemap) {
  if (!point.valid() || point.value >= graph.object_count() || !tree.reachable(point)) return;
  // Climb to the top-level dominator, remembering the object one level below it.
  ObjectIndex top = point, below = kNoObject;
  for (;;) {
    const ObjectIndex up = tree.immediate_dominator(top);
    if (!up.valid() || up == tree.super_root()) break;
    below = top;
    top = up;
  }
  const Grouper grouper(graph);
  TreemapCell* cell = FindCell(treemap->cells, grouper.Cell(grouper.Key(top)));
  if (cell == nullptr) return;
  cell->accumulation_point = true;
  if (!below.valid()) return;
  if (TreemapCell* child = FindCell(cell->children, grouper.Cell(grouper.Key(below)));
      child != nullptr) {
    child->accumulation_point = true;
  }
}

}  // namespace heapwatch::analysis
