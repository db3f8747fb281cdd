// Lengauer-Tarjan dominators (TOPLAS 1(1):121-141, 1979), simple version, iterative, over typed
// 32-bit arrays that are reused between phases. Step numbers follow the paper (section 3):
//   Step 1: depth-first search numbering the objects (preorder DFS numbers).
//   Step 2: semidominators, in decreasing DFS number, with EVAL/LINK over a forest and path
//   compression. Step 3: implicit immediate dominators from the buckets. Step 4: explicit immediate
//   dominators, in increasing DFS number.
// Between steps 1 and 2 the references are classified once by DFS numbers: a reference v -> w with
// dfn(v) < dfn(w) makes v a semidominator candidate of w directly (v is a DFS ancestor of w), so
// only the references with dfn(v) > dfn(w) (back and cross references) are stored, grouped by
// target, for step 2.
#include "analysis/dominator_tree.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::analysis {
namespace {

// Position of a node in the depth-first preorder of the flow graph. 1 is the super root, objects
// get 2..N; 0 means "none" (an unvisited object, no forest ancestor, the end of a bucket list), so
// that a zero-filled array is a valid initial state.
struct DfsNumber {
  uint32_t value = 0;
  friend constexpr auto operator<=>(DfsNumber, DfsNumber) = default;
};
constexpr DfsNumber kNoDfs{0};
constexpr DfsNumber kSuperRootDfs{1};

// Plain uint32 storage for one array of the algorithm. Several phases reuse one buffer under
// different typed views (see Array below), so the storage itself is untyped and uninitialised until
// a phase writes it: pages that are never written (the tail of a buffer sized for all objects when
// only some are reachable) never count in the resident set.
class Buffer {
 public:
  explicit Buffer(size_t size) : data_(new uint32_t[size]), size_(size) {}
  uint32_t* data() { return data_.get(); }
  size_t size() const { return size_; }
  void Reset() { data_.reset(); }

 private:
  std::unique_ptr<uint32_t[]> data_;
  size_t size_;
};

// A typed view of a Buffer: index type I (ObjectIndex or DfsNumber), value type V (ObjectIndex,
// DfsNumber or a plain uint32_t count/offset). Keeps object indices and DFS numbers from being
// mixed up.
template <typename I, typename V>
class Array {
 public:
  explicit Array(Buffer& buffer) : data_(buffer.data()) {}
  V operator[](I i) const {
    if constexpr (std::is_same_v<V, uint32_t>) {
      return data_[i.value];
    } else {
      return V{data_[i.value]};
    }
  }
  void set(I i, V v) {
    if constexpr (std::is_same_v<V, uint32_t>) {
      data_[i.value] = v;
    } else {
      data_[i.value] = v.value;
    }
  }

 private:
  uint32_t* data_;
};

}  // namespace

// The Lengauer-Tarjan run for one ComputeDominatorTree call (a friend of DominatorTree).
class DominatorTreeBuilder {
 public:
  DominatorTreeBuilder(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                       const DominatorOptions& options)
      : graph_(graph),
        roots_(gc_roots),
        options_(options),
        n_(graph.node_count()),
        // DFS numbers run 1..n+1 and 0 is "none": n + 2 slots per array.
        buf_a_(size_t{n_} + 2),
        buf_vertex_(size_t{n_} + 2),
        buf_ancestor_(size_t{n_} + 2),
        buf_semi_(size_t{n_} + 2),
        buf_b_(size_t{n_} + 2) {}

  StatusOr<DominatorTree> Run(DominatorTree tree) {
    HW_RETURN_IF_ERROR(Step1DepthFirstSearch(tree));
    HW_RETURN_IF_ERROR(ClassifyReferences(tree));
    Steps2And3();
    Step4();
    Finish(tree);
    return tree;
  }

 private:
  // Calls fn(edge, target) for every followed reference of object v.
  template <typename Fn>
  void ForEachFollowed(ObjectIndex v, Fn fn) const {
    const uint64_t end = graph_.offsets[v.value + 1];
    for (uint64_t e = graph_.offsets[v.value]; e < end; ++e) {
      if (!options_.follow_weak_references && graph_.is_weak(e)) continue;
      fn(graph_.targets[e]);
    }
  }

  // ---- Step 1: iterative DFS from the super root. ----
  //
  // Arrays written: dfn (buf_a_, ObjectIndex -> DfsNumber, zero = unvisited), vertex (DfsNumber ->
  // ObjectIndex), ancestor (DfsNumber -> DfsNumber: the DFS tree parent; step 2 links the forest in
  // place over it, see Eval). The explicit DFS stack lives in buf_semi_ (node) and buf_b_ (next
  // reference to scan, relative to the node's first reference), which are free until
  // ClassifyReferences.
  Status Step1DepthFirstSearch(DominatorTree& tree) {
    std::fill_n(buf_a_.data(), buf_a_.size(), 0u);
    Array<ObjectIndex, DfsNumber> dfn(buf_a_);
    Array<DfsNumber, ObjectIndex> vertex(buf_vertex_);
    Array<DfsNumber, DfsNumber> ancestor(buf_ancestor_);
    vertex.set(kSuperRootDfs, ObjectIndex(n_));
    ancestor.set(kSuperRootDfs, kNoDfs);
    next_dfn_ = 2;

    // Successors of the super root: the GC roots, in the given order.
    for (ObjectIndex root : roots_) {
      if (dfn[root] == kNoDfs) HW_RETURN_IF_ERROR(DepthFirstSearchFrom(root));
    }
    reached_from_roots_ = next_dfn_ - 2;
    tree.unreachable_count_ = n_ - reached_from_roots_;
    if (!options_.keep_unreachable || reached_from_roots_ == n_) return absl::OkStatus();

    // keep_unreachable: artificial roots. First the sources of the garbage (unreachable objects
    // that no unreachable object references), then whatever cyclic garbage is left.
    {
      std::vector<bool> referenced_by_garbage(n_);
      for (uint32_t o = 0; o < n_; ++o) {
        const ObjectIndex v(o);
        if (dfn[v] != kNoDfs) continue;
        HW_RETURN_IF_ERROR(CheckReferences(v));
        const uint64_t end = graph_.offsets[o + 1];
        for (uint64_t e = graph_.offsets[o]; e < end; ++e) {
          if (!options_.follow_weak_references && graph_.is_weak(e)) continue;
          const ObjectIndex t = graph_.targets[e];
          HW_RETURN_IF_ERROR(CheckTarget(v, e, t));
          if (t != v && dfn[t] == kNoDfs) referenced_by_garbage[t.value] = true;
        }
      }
      for (uint32_t o = 0; o < n_; ++o) {
        const ObjectIndex v(o);
        if (dfn[v] != kNoDfs || referenced_by_garbage[o]) continue;
        tree.artificial_roots_.push_back(v);
        HW_RETURN_IF_ERROR(DepthFirstSearchFrom(v));
      }
    }
    for (uint32_t o = 0; o < n_; ++o) {
      const ObjectIndex v(o);
      if (dfn[v] != kNoDfs) continue;
      tree.artificial_roots_.push_back(v);
      HW_RETURN_IF_ERROR(DepthFirstSearchFrom(v));
    }
    return absl::OkStatus();
  }

  // Checks the CSR row of v (offsets in order, targets in range) before anything follows it.
  Status CheckReferences(ObjectIndex v) const {
    const uint64_t begin = graph_.offsets[v.value];
    const uint64_t end = graph_.offsets[v.value + 1];
    if (begin > end || end > graph_.targets.size() ||
        end - begin > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dominator tree: malformed CSR row of object %u: references [%u, %u) of %u", v.value,
          begin, end, graph_.targets.size()));
    }
    return absl::OkStatus();
  }

  Status CheckTarget(ObjectIndex v, uint64_t e, ObjectIndex t) const {
    if (t.value < n_) [[likely]]
      return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominator tree: reference %u of object %u targets object %u, but the graph has %u objects",
        e, v.value, t.value, n_));
  }

  // DFS from `start` (unvisited), which becomes a child of the super root in the DFS tree.
  Status DepthFirstSearchFrom(ObjectIndex start) {
    Array<ObjectIndex, DfsNumber> dfn(buf_a_);
    Array<DfsNumber, ObjectIndex> vertex(buf_vertex_);
    Array<DfsNumber, DfsNumber> ancestor(buf_ancestor_);
    uint32_t* stack_node = buf_semi_.data();  // DfsNumber of the node at each stack level
    uint32_t* stack_next = buf_b_.data();     // next reference of that node to scan (relative)
    size_t depth = 0;

    auto discover = [&](ObjectIndex v, DfsNumber parent) -> Status {
      HW_RETURN_IF_ERROR(CheckReferences(v));
      const DfsNumber d{next_dfn_++};
      dfn.set(v, d);
      vertex.set(d, v);
      ancestor.set(d, parent);
      stack_node[depth] = d.value;
      stack_next[depth] = 0;
      ++depth;
      return absl::OkStatus();
    };
    HW_RETURN_IF_ERROR(discover(start, kSuperRootDfs));
    while (depth > 0) {
      const DfsNumber d{stack_node[depth - 1]};
      const ObjectIndex v = vertex[d];
      const uint64_t begin = graph_.offsets[v.value];
      const uint32_t degree = static_cast<uint32_t>(graph_.offsets[v.value + 1] - begin);
      uint32_t i = stack_next[depth - 1];
      bool descended = false;
      while (i < degree) {
        const uint64_t e = begin + i++;
        if (!options_.follow_weak_references && graph_.is_weak(e)) continue;
        const ObjectIndex t = graph_.targets[e];
        HW_RETURN_IF_ERROR(CheckTarget(v, e, t));
        if (dfn[t] == kNoDfs) {
          stack_next[depth - 1] = i;
          HW_RETURN_IF_ERROR(discover(t, d));
          descended = true;
          break;
        }
      }
      if (!descended) --depth;
    }
    return absl::OkStatus();
  }

  // ---- Between steps 1 and 2: classify references by DFS numbers. ----
  //
  // semi (DfsNumber -> DfsNumber) starts as the smallest DFS number among the ancestors that
  // reference w directly (at least the DFS parent; the super root for GC roots). The back and cross
  // references v -> w (dfn(v) > dfn(w)) are stored in preds_, grouped by w in increasing order,
  // with a counting sort whose cursors live in buf_b_ (free until step 2 uses it for buckets and
  // idom): afterwards buf_b_[w] is the end of w's group, so w's group is [buf_b_[w - 1],
  // buf_b_[w]).
  Status ClassifyReferences(DominatorTree& tree) {
    last_dfn_ = DfsNumber{next_dfn_ - 1};
    const uint32_t last = last_dfn_.value;
    Array<ObjectIndex, DfsNumber> dfn(buf_a_);
    Array<DfsNumber, ObjectIndex> vertex(buf_vertex_);
    Array<DfsNumber, DfsNumber> ancestor(buf_ancestor_);
    Array<DfsNumber, DfsNumber> semi(buf_semi_);
    Array<DfsNumber, uint32_t> cursor(buf_b_);

    std::fill_n(buf_b_.data(), size_t{last} + 1, 0u);
    for (uint32_t w = 2; w <= last; ++w) semi.set(DfsNumber{w}, ancestor[DfsNumber{w}]);
    for (ObjectIndex root : roots_) semi.set(dfn[root], kSuperRootDfs);

    uint64_t stored = 0;
    for (uint32_t d = 2; d <= last; ++d) {
      const DfsNumber v{d};
      ForEachFollowed(vertex[v], [&](ObjectIndex t) {
        const DfsNumber w = dfn[t];
        if (w > v) {
          if (v < semi[w]) semi.set(w, v);
        } else if (w < v) {
          cursor.set(w, cursor[w] + 1);
          ++stored;
        }
      });
    }
    if (stored > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "dominator tree: %u back and cross references exceed the 2^32 - 1 supported", stored));
    }
    uint32_t running = 0;
    for (uint32_t w = 0; w <= last; ++w) {
      const uint32_t count = cursor[DfsNumber{w}];
      cursor.set(DfsNumber{w}, running);
      running += count;
    }
    preds_.reset(new uint32_t[stored]);
    for (uint32_t d = 2; d <= last; ++d) {
      const DfsNumber v{d};
      ForEachFollowed(vertex[v], [&](ObjectIndex t) {
        const DfsNumber w = dfn[t];
        if (w < v) {
          const uint32_t at = cursor[w];
          preds_[at] = v.value;
          cursor.set(w, at + 1);
        }
      });
    }

    if (options_.keep_unreachable) {
      tree.from_gc_roots_.assign(n_, false);
      for (uint32_t o = 0; o < n_; ++o) {
        const uint32_t d = dfn[ObjectIndex(o)].value;
        tree.from_gc_roots_[o] = d >= 2 && d < 2 + reached_from_roots_;
      }
    }
    // dfn is not needed any more: buf_a_ becomes `label` for steps 2 and 3.
    std::fill_n(buf_a_.data(), size_t{last} + 1, 0u);
    return absl::OkStatus();
  }

  // EVAL(v) of the simple version (paper, section 3, with COMPRESS): the vertex with the smallest
  // semidominator on the forest path from v up to, but excluding, the root of v's forest tree.
  //
  // The forest is implicit: while step 2 processes the vertex `current`, exactly the vertices with
  // a larger DFS number have been LINKed to their DFS parent, so "v is linked" is v > current, and
  // ancestor[v] starts as the DFS parent. COMPRESS, recursive in the paper, runs here in two passes
  // with pointer reversal instead of a stack: the climb points each visited ancestor entry back
  // down the path, the descent restores it to the compressed value (the root's child's ancestor).
  // REQUIRES: v > current (v is linked).
  DfsNumber Eval(DfsNumber v, DfsNumber current, Array<DfsNumber, DfsNumber>& ancestor,
                 Array<DfsNumber, DfsNumber>& label, const Array<DfsNumber, DfsNumber>& semi) {
    if (ancestor[v] <= current) return label[v];
    DfsNumber prev = kNoDfs;
    DfsNumber u = v;
    do {  // Climb while u's ancestor is linked too, i.e. u must be compressed.
      const DfsNumber up = ancestor[u];
      ancestor.set(u, prev);
      prev = u;
      u = up;
    } while (ancestor[u] > current);
    while (prev != kNoDfs) {  // Descend: u is the (already compressed) true ancestor of c.
      const DfsNumber c = prev;
      prev = ancestor[c];
      if (semi[label[u]] < semi[label[c]]) label.set(c, label[u]);
      ancestor.set(c, ancestor[u]);
      u = c;
    }
    return label[v];
  }

  // ---- Steps 2 and 3. ----
  //
  // For w = N down to 2 ("current" = w): first step 3 for the bucket of w (all v with semi(v) = w;
  // they were processed before w, and the forest path from each to w is linked now, which is when
  // the paper processes bucket(parent(w')) for w's last child w'), then step 2 for w, then w joins
  // bucket(semi(w)) and becomes linked when `current` moves below it.
  //
  // Arrays: label (buf_a_): for a linked vertex, the vertex with the smallest semi on its
  // compressed path; for a vertex not yet processed, the head of its bucket (0 = empty). idom
  // (buf_b_): for a vertex not yet processed, its preds_ group end (see ClassifyReferences); for a
  // vertex in a bucket, the next vertex of that bucket; after step 3, the relative dominator
  // (paper: dom).
  void Steps2And3() {
    const uint32_t last = last_dfn_.value;
    Array<DfsNumber, DfsNumber> ancestor(buf_ancestor_);
    Array<DfsNumber, DfsNumber> semi(buf_semi_);
    Array<DfsNumber, DfsNumber> label(buf_a_);
    Array<DfsNumber, DfsNumber> idom(buf_b_);
    Array<DfsNumber, uint32_t> group_end(buf_b_);

    auto process_bucket = [&](DfsNumber w) {
      DfsNumber v = label[w];
      while (v != kNoDfs) {
        const DfsNumber next = idom[v];
        const DfsNumber u = Eval(v, w, ancestor, label, semi);
        idom.set(v, semi[u] < semi[v] ? u : w);
        v = next;
      }
    };
    for (uint32_t i = last; i >= 2; --i) {
      const DfsNumber w{i};
      process_bucket(w);  // Step 3 for bucket(w).
      label.set(w, w);
      DfsNumber s = semi[w];  // Step 2: tree and forward references were folded in already.
      const uint32_t begin = group_end[DfsNumber{i - 1}];
      const uint32_t end = group_end[w];
      for (uint32_t k = begin; k < end; ++k) {
        const DfsNumber u = Eval(DfsNumber{preds_[k]}, w, ancestor, label, semi);
        if (semi[u] < s) s = semi[u];
      }
      semi.set(w, s);
      idom.set(w, label[s]);  // Add w to bucket(s).
      label.set(s, w);
    }
    process_bucket(kSuperRootDfs);
    preds_.reset();
  }

  // ---- Step 4: explicit immediate dominators in increasing DFS number. ----
  void Step4() {
    Array<DfsNumber, DfsNumber> semi(buf_semi_);
    Array<DfsNumber, DfsNumber> idom(buf_b_);
    idom.set(kSuperRootDfs, kNoDfs);
    for (uint32_t i = 2; i <= last_dfn_.value; ++i) {
      const DfsNumber w{i};
      if (idom[w] != semi[w]) idom.set(w, idom[idom[w]]);
    }
  }

  // Translates idom to object indices and builds the children CSR.
  void Finish(DominatorTree& tree) {
    buf_a_.Reset();
    buf_ancestor_.Reset();
    buf_semi_.Reset();
    Array<DfsNumber, ObjectIndex> vertex(buf_vertex_);
    Array<DfsNumber, DfsNumber> idom(buf_b_);
    tree.idom_.reset(new ObjectIndex[n_]);  // all kNoObject
    for (uint32_t i = 2; i <= last_dfn_.value; ++i) {
      const DfsNumber w{i};
      tree.idom_[vertex[w].value] = vertex[idom[w]];
    }
    tree.tree_object_count_ = last_dfn_.value - 1;
    buf_vertex_.Reset();
    buf_b_.Reset();
    HW_CHECK(tree.BuildChildren().ok());
  }

  const CsrGraph& graph_;
  std::span<const ObjectIndex> roots_;
  DominatorOptions options_;
  uint32_t n_;
  Buffer buf_a_;         // dfn (step 1), then label (steps 2-3)
  Buffer buf_vertex_;    // vertex
  Buffer buf_ancestor_;  // DFS parent / forest ancestor
  Buffer buf_semi_;      // DFS stack nodes (step 1), then semi
  Buffer buf_b_;         // DFS stack cursors (step 1), preds_ group cursors, bucket links, idom
  // Back and cross references v -> w as dfn(v), grouped by dfn(w) (see ClassifyReferences).
  std::unique_ptr<uint32_t[]> preds_;
  uint32_t next_dfn_ = 2;
  uint32_t reached_from_roots_ = 0;
  DfsNumber last_dfn_;
};

bool DominatorTree::reachable_from_gc_roots(ObjectIndex v) const {
  if (v.value == object_count_) return false;
  if (from_gc_roots_.empty()) return idom_[v.value] != kNoObject;
  return from_gc_roots_[v.value];
}

Status DominatorTree::BuildChildren() {
  const uint32_t n = object_count_;
  child_offsets_.reset(new uint32_t[size_t{n} + 2]);
  uint32_t* offsets = child_offsets_.get();
  std::fill_n(offsets, size_t{n} + 2, 0u);
  uint32_t in_tree = 0;
  for (uint32_t v = 0; v < n; ++v) {
    const ObjectIndex d = idom_[v];
    if (d == kNoObject) continue;
    if (d.value > n || d.value == v) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dominator tree: object %u has immediate dominator %u (super root is %u)",
                          v, d.value, n));
    }
    ++offsets[d.value + 1];
    ++in_tree;
  }
  for (uint32_t v = 0; v <= n; ++v) offsets[v + 1] += offsets[v];
  children_.reset(new ObjectIndex[in_tree]);
  // Fill with a moving cursor per parent (offsets[d] temporarily = next free slot of d), then
  // shift.
  for (uint32_t v = 0; v < n; ++v) {
    const ObjectIndex d = idom_[v];
    if (d == kNoObject) continue;
    children_[offsets[d.value]++] = ObjectIndex(v);
  }
  for (uint32_t v = n + 1; v > 0; --v) offsets[v] = offsets[v - 1];
  offsets[0] = 0;
  tree_object_count_ = in_tree;
  return absl::OkStatus();
}

StatusOr<DominatorTree> DominatorTree::FromImmediateDominators(
    std::vector<ObjectIndex> idom, const DominatorOptions& options,
    std::vector<ObjectIndex> artificial_roots, std::vector<bool> from_gc_roots) {
  if (idom.size() >= std::numeric_limits<uint32_t>::max() - 1) {
    return absl::InvalidArgumentError("dominator tree: too many objects");
  }
  DominatorTree tree;
  tree.object_count_ = static_cast<uint32_t>(idom.size());
  tree.options_ = options;
  tree.idom_.reset(new ObjectIndex[idom.size()]);
  std::copy(idom.begin(), idom.end(), tree.idom_.get());
  HW_RETURN_IF_ERROR(tree.BuildChildren());
  // Every object in the tree must be reached from the super root (no cycles).
  std::vector<ObjectIndex> order = tree.Preorder();
  if (order.size() != size_t{tree.tree_object_count_} + 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dominator tree: %u objects have an immediate dominator but only %u hang "
                        "from the super root "
                        "(the immediate dominators form a cycle)",
                        tree.tree_object_count_, order.size() - 1));
  }
  if (!options.keep_unreachable) {
    if (!artificial_roots.empty() || !from_gc_roots.empty()) {
      return absl::InvalidArgumentError(
          "dominator tree: artificial roots or reachability given without keep_unreachable");
    }
    tree.unreachable_count_ = tree.object_count_ - tree.tree_object_count_;
    return tree;
  }
  if (from_gc_roots.size() != idom.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominator tree: %u reachability flags for %u objects", from_gc_roots.size(), idom.size()));
  }
  for (ObjectIndex r : artificial_roots) {
    if (r.value >= tree.object_count_ || tree.idom_[r.value] != tree.super_root()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dominator tree: artificial root %u is not a child of the super root", r.value));
    }
  }
  tree.unreachable_count_ =
      static_cast<uint32_t>(std::count(from_gc_roots.begin(), from_gc_roots.end(), false));
  tree.artificial_roots_ = std::move(artificial_roots);
  tree.from_gc_roots_ = std::move(from_gc_roots);
  return tree;
}

std::vector<ObjectIndex> DominatorTree::Preorder() const {
  std::vector<ObjectIndex> order;
  order.reserve(size_t{tree_object_count_} + 1);
  std::vector<ObjectIndex> stack{super_root()};
  while (!stack.empty()) {
    const ObjectIndex v = stack.back();
    stack.pop_back();
    order.push_back(v);
    const auto kids = children(v);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  return order;
}

std::vector<ObjectIndex> DominatorTree::Postorder() const {
  // Preorder with children visited right to left, reversed.
  std::vector<ObjectIndex> order;
  order.reserve(size_t{tree_object_count_} + 1);
  std::vector<ObjectIndex> stack{super_root()};
  while (!stack.empty()) {
    const ObjectIndex v = stack.back();
    stack.pop_back();
    order.push_back(v);
    for (ObjectIndex c : children(v)) stack.push_back(c);
  }
  std::reverse(order.begin(), order.end());
  return order;
}

std::vector<uint32_t> DominatorTree::Depths() const {
  std::vector<uint32_t> depth(size_t{object_count_} + 1, 0);
  for (ObjectIndex v : Preorder()) {
    if (v == super_root()) continue;
    depth[v.value] = depth[idom_[v.value].value] + 1;
  }
  return depth;
}

std::vector<ObjectIndex> DominatorTree::UnreachableObjects() const {
  std::vector<ObjectIndex> out;
  for (uint32_t v = 0; v < object_count_; ++v) {
    if (idom_[v] == kNoObject) out.push_back(ObjectIndex(v));
  }
  return out;
}

bool DominatorTree::DominatesOrEquals(ObjectIndex a, ObjectIndex b) const {
  for (ObjectIndex x = b; x != kNoObject; x = immediate_dominator(x)) {
    if (x == a) return true;
  }
  return false;
}

StatusOr<DominatorTree> ComputeDominatorTree(const CsrGraph& graph,
                                             std::span<const ObjectIndex> gc_roots,
                                             const DominatorOptions& options) {
  if (graph.offsets.empty() || graph.offsets.back() != graph.targets.size() ||
      (!graph.weak.empty() && graph.weak.size() != graph.targets.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominator tree: malformed CSR graph (%u offsets, %u targets, %u weak flags)",
        graph.offsets.size(), graph.targets.size(), graph.weak.size()));
  }
  if (graph.offsets.size() - 1 >= std::numeric_limits<uint32_t>::max() - 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominator tree: %u objects; at most 2^32 - 3 are supported", graph.offsets.size() - 1));
  }
  const uint32_t n = graph.node_count();
  for (size_t i = 0; i < gc_roots.size(); ++i) {
    if (gc_roots[i].value >= n) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dominator tree: GC root #%u is object %u, but the graph has %u objects",
                          i, gc_roots[i].value, n));
    }
  }
  DominatorTree tree;
  tree.object_count_ = n;
  tree.options_ = options;
  DominatorTreeBuilder algorithm(graph, gc_roots, options);
  return algorithm.Run(std::move(tree));
}

}  // namespace heapwatch::analysis
