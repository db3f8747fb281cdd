// Lengauer-Tarjan dominators (TOPLAS 1(1):121-141, 1979), simple version, iterative. Step numbers
// follow the paper (section 3):
//   Step 1: depth-first search numbering the objects (preorder DFS numbers).
//   Step 2: semidominators, in decreasing DFS number, with EVAL/LINK over a forest and path
//           compression.
//   Step 3: implicit immediate dominators from the buckets.
//   Step 4: explicit immediate dominators, in increasing DFS number.
// Between steps 1 and 2 the references are classified once by DFS numbers: a reference v -> w with
// dfn(v) < dfn(w) makes v a semidominator candidate of w directly (v is a DFS ancestor of w), so
// only the references with dfn(v) > dfn(w) (back and cross references) are stored, grouped by
// target, for step 2.
//
// Memory layout (n objects, N <= n + 1 DFS numbers; every array has n + 2 entries):
//   vertices DfsNumber -> VertexRecord {ancestor, slot, semi}, 12 bytes: the three fields EVAL
//            reads together share a cache line. The paper's separate semi(w) array is not needed:
//            before w is processed `semi` holds the smallest candidate found so far, afterwards
//            the semi of label(w) (EVAL compares only those), and step 4 reads a one-bit flag
//            instead. During step 1 and the classification, vertices[o].slot also holds dfn(o)
//            (ObjectIndex -> DfsNumber) and vertices[depth].semi the DFS stack.
//   aux      DfsNumber -> uint32: DFS stack cursors, then reference counts and group ends, then
//            bucket links and immediate dominators, finally DfsNumber -> ObjectIndex.
//   preds    one DfsNumber per back or cross reference.
// The mapping DfsNumber -> ObjectIndex is rebuilt at the end by replaying step 1's DFS.
#include "analysis/dominator_tree.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"
#include "analysis/root_inference.h"

namespace heapwatch::analysis {
namespace {

// Position of a node in the depth-first preorder of the flow graph. 1 is the super root, objects
// get 2..N; 0 means "none" (an unvisited object, no forest ancestor, the end of a bucket list), so
// that zero-filled memory is a valid initial state. Trivial, so arrays of it stay uninitialised
// until a phase writes them.
struct DfsNumber {
  uint32_t value;
  friend constexpr auto operator<=>(DfsNumber, DfsNumber) = default;
};
constexpr DfsNumber kNoDfs{0};
constexpr DfsNumber kSuperRootDfs{1};

// Per DFS number w.
struct VertexRecord {
  // Step 1: the DFS tree parent. Steps 2-3: the forest ancestor; w is linked iff w > the vertex
  // being processed, and EVAL compresses paths in place.
  DfsNumber ancestor;
  // Step 1 and the classification: indexed by ObjectIndex o, not by DFS number: dfn(o) (kNoDfs =
  // unvisited). Steps 2-3, before w is processed: the head of bucket(w) (kNoDfs = empty);
  // afterwards: label(w).
  uint32_t slot;
  // Step 1: the DFS stack, indexed by depth (the ObjectIndex of the node at depth w). From the
  // classification on, before w is processed: the smallest DFS number seen among w's
  // semidominator candidates. Afterwards: semi(label(w)).
  DfsNumber semi;

  DfsNumber label() const { return DfsNumber{slot}; }
  void set_label(DfsNumber d) { slot = d.value; }
};

template <typename T>
std::unique_ptr<T[]> Uninitialised(size_t size) {
  static_assert(std::is_trivially_default_constructible_v<T>);
  return std::unique_ptr<T[]>(new T[size]);
}

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
        vertices_(Uninitialised<VertexRecord>(size_t{n_} + 2)),
        aux_(Uninitialised<uint32_t>(size_t{n_} + 2)) {}

  StatusOr<DominatorTree> Run(DominatorTree tree) {
    HW_RETURN_IF_ERROR(Step1DepthFirstSearch(tree));
    HW_RETURN_IF_ERROR(ClassifyReferences(tree));
    Steps2And3();
    Step4();
    Finish(tree);
    return tree;
  }

 private:
  // Steps 1 and the classification only: the DFS number of object v lives in vertices_[v].slot
  // (see VertexRecord), so no separate n-entry array is held while `preds_` is built.
  DfsNumber& dfn(ObjectIndex v) { return *reinterpret_cast<DfsNumber*>(&vertices_[v.value].slot); }
  VertexRecord& vertex(DfsNumber d) { return vertices_[d.value]; }

  // Calls fn(target) for every followed reference of object v.
  template <typename Fn>
  void ForEachFollowed(ObjectIndex v, Fn fn) const {
    const uint64_t end = graph_.offsets[v.value + 1];
    for (uint64_t e = graph_.offsets[v.value]; e < end; ++e) {
      if (!options_.follow_weak_references && graph_.is_weak(e)) continue;
      fn(graph_.targets[e]);
    }
  }

  // Checks the CSR row of v (offsets in order and in range) before anything follows it.
  Status CheckRow(ObjectIndex v) const {
    const uint64_t begin = graph_.offsets[v.value];
    const uint64_t end = graph_.offsets[v.value + 1];
    if (begin <= end && end <= graph_.targets.size() &&
        end - begin <= std::numeric_limits<uint32_t>::max()) [[likely]] {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("dominator tree: malformed CSR row of object %u: references [%u, %u) of %u",
                        v.value, begin, end, graph_.targets.size()));
  }

  Status CheckTarget(ObjectIndex v, uint64_t e, ObjectIndex t) const {
    if (t.value < n_) [[likely]] {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominator tree: reference %u of object %u targets object %u, but the graph has %u "
        "objects",
        e, v.value, t.value, n_));
  }

  // ---- Step 1: iterative DFS from the super root. ----
  // Writes dfn and vertices[].ancestor (the DFS parent).
  Status Step1DepthFirstSearch(DominatorTree& tree) {
    for (size_t i = 0; i < size_t{n_} + 2; ++i) vertices_[i].slot = kNoDfs.value;
    vertex(kSuperRootDfs).ancestor = kNoDfs;
    next_dfn_ = 2;

    // Successors of the super root: the GC roots, in the given order.
    for (ObjectIndex root : roots_) {
      if (dfn(root) == kNoDfs) HW_RETURN_IF_ERROR(DepthFirstSearchFrom(root));
    }
    reached_from_roots_ = next_dfn_ - 2;
    tree.unreachable_count_ = n_ - reached_from_roots_;
    if (!options_.keep_unreachable || reached_from_roots_ == n_) return absl::OkStatus();

    // keep_unreachable: the roots root inference gives the garbage (analysis/root_inference.h):
    // its pure roots, then the lowest object of each garbage cycle that no pure root reaches.
    // Each is unvisited when its turn comes (no inferred root reaches another one).
    std::vector<bool> reached(n_);
    for (uint32_t o = 0; o < n_; ++o) reached[o] = dfn(ObjectIndex(o)) != kNoDfs;
    HW_ASSIGN_OR_RETURN(
        InferredRoots inferred,
        InferRootsOfUnreached(graph_, reached,
                              {.follow_weak_references = options_.follow_weak_references}));
    std::vector<bool>().swap(reached);
    for (const auto* list : {&inferred.pure_roots, &inferred.artificial_roots}) {
      for (ObjectIndex v : *list) {
        tree.artificial_roots_.push_back(v);
        HW_RETURN_IF_ERROR(DepthFirstSearchFrom(v));
      }
    }
    return absl::OkStatus();
  }

  // DFS from `start` (unvisited), which becomes a child of the super root in the DFS tree. The
  // explicit stack lives in vertices[depth].semi (the object) and aux[depth] (the next reference
  // to scan, relative to the object's first one): both are free until step 1 ends, and the depth
  // never exceeds the number of DFS numbers handed out.
  Status DepthFirstSearchFrom(ObjectIndex start) {
    size_t depth = 0;
    auto discover = [&](ObjectIndex v, DfsNumber parent) -> Status {
      HW_RETURN_IF_ERROR(CheckRow(v));
      const DfsNumber d{next_dfn_++};
      dfn(v) = d;
      vertex(d).ancestor = parent;
      vertices_[depth].semi = DfsNumber{v.value};
      aux_[depth] = 0;
      ++depth;
      return absl::OkStatus();
    };
    HW_RETURN_IF_ERROR(discover(start, kSuperRootDfs));
    while (depth > 0) {
      const ObjectIndex v(vertices_[depth - 1].semi.value);
      const uint64_t begin = graph_.offsets[v.value];
      const uint32_t degree = static_cast<uint32_t>(graph_.offsets[v.value + 1] - begin);
      uint32_t i = aux_[depth - 1];
      if (i == 0) {
        // First visit: start loading the DFS numbers and CSR rows of the targets at once (they are
        // scattered over memory; the scan below would otherwise wait for them one by one).
        for (uint32_t k = 0; k < degree && k < 16; ++k) {
          __builtin_prefetch(&vertices_[graph_.targets[begin + k].value]);
          graph_.offsets.Prefetch(graph_.targets[begin + k].value);
        }
      }
      bool descended = false;
      while (i < degree) {
        const uint64_t e = begin + i++;
        if (!options_.follow_weak_references && graph_.is_weak(e)) continue;
        const ObjectIndex t = graph_.targets[e];
        HW_RETURN_IF_ERROR(CheckTarget(v, e, t));
        if (dfn(t) == kNoDfs) {
          aux_[depth - 1] = i;
          HW_RETURN_IF_ERROR(discover(t, dfn(v)));
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
  // vertices[w].semi starts as the smallest DFS number among the ancestors that reference w
  // directly (at least the DFS parent; the super root for GC roots). The back and cross references
  // v -> w (dfn(v) > dfn(w)) are stored in preds_, grouped by w in increasing order, by a counting
  // sort whose cursors live in aux; afterwards aux[w] is the end of w's group, so w's group is
  // [aux[w - 1], aux[w]). Both passes scan the objects in index order, i.e. the CSR
  // sequentially.
  Status ClassifyReferences(DominatorTree& tree) {
    last_dfn_ = DfsNumber{next_dfn_ - 1};
    const uint32_t last = last_dfn_.value;
    for (uint32_t d = 1; d <= last; ++d) vertices_[d].semi = vertices_[d].ancestor;
    for (ObjectIndex root : roots_) vertex(dfn(root)).semi = kSuperRootDfs;
    std::fill_n(aux_.get(), size_t{last} + 1, 0u);

    uint64_t stored = 0;
    for (uint32_t o = 0; o < n_; ++o) {
      const DfsNumber v = dfn(ObjectIndex(o));
      if (v == kNoDfs) continue;
      ForEachFollowed(ObjectIndex(o), [&](ObjectIndex t) {
        const DfsNumber w = dfn(t);
        if (w > v) {
          DfsNumber& s = vertex(w).semi;
          s = std::min(s, v);
        } else if (w < v) {
          ++aux_[w.value];
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
      const uint32_t count = aux_[w];
      aux_[w] = running;
      running += count;
    }
    preds_ = Uninitialised<DfsNumber>(stored);
    for (uint32_t o = 0; o < n_; ++o) {
      const DfsNumber v = dfn(ObjectIndex(o));
      if (v == kNoDfs) continue;
      ForEachFollowed(ObjectIndex(o), [&](ObjectIndex t) {
        const DfsNumber w = dfn(t);
        if (w < v) preds_[aux_[w.value]++] = v;
      });
    }

    if (options_.keep_unreachable) {
      tree.from_gc_roots_.assign(n_, false);
      for (uint32_t o = 0; o < n_; ++o) {
        const uint32_t d = dfn(ObjectIndex(o)).value;
        tree.from_gc_roots_[o] = d >= 2 && d < 2 + reached_from_roots_;
      }
    }
    // The DFS numbers are dropped here (Finish replays the DFS); `slot` becomes the bucket heads.
    for (size_t i = 0; i < size_t{n_} + 2; ++i) vertices_[i].slot = kNoDfs.value;  // empty
    return absl::OkStatus();
  }

  // EVAL(v) of the simple version (paper, section 3, with COMPRESS): afterwards label(v) is the
  // vertex with the smallest semidominator on the forest path from v up to, but excluding, the
  // root of v's forest tree, and vertices[v].semi is that smallest semidominator.
  //
  // The forest is implicit: while steps 2-3 process the vertex `current`, exactly the vertices with
  // a larger DFS number have been LINKed to their DFS parent, so "x is linked" is x > current.
  // COMPRESS, recursive in the paper, runs here in two passes with pointer reversal instead of a
  // stack: the climb points each ancestor field back down the path, the descent restores it to the
  // compressed value (the forest root).
  // REQUIRES: v > current (v is linked).
  void Eval(DfsNumber v, DfsNumber current) {
    if (vertex(v).ancestor <= current) return;
    DfsNumber prev = kNoDfs;
    DfsNumber u = v;
    do {  // Climb while u's ancestor is linked too, i.e. u must be compressed.
      VertexRecord& ru = vertex(u);
      const DfsNumber up = ru.ancestor;
      ru.ancestor = prev;
      prev = u;
      u = up;
    } while (vertex(u).ancestor > current);
    while (prev != kNoDfs) {  // Descend: u is the (already compressed) true ancestor of c.
      const VertexRecord& ru = vertex(u);
      VertexRecord& rc = vertex(prev);
      const DfsNumber c = prev;
      prev = rc.ancestor;
      if (ru.semi < rc.semi) {
        rc.semi = ru.semi;
        rc.slot = ru.slot;
      }
      rc.ancestor = ru.ancestor;
      u = c;
    }
  }

  // ---- Steps 2 and 3. ----
  //
  // For w = N down to 2 ("current" = w): first step 3 for the bucket of w (all v with
  // semi(v) = w; they were processed before w, and the forest path from each to w is linked now,
  // which is when the paper processes bucket(parent(w')) for w's last child w'), then step 2 for
  // w, then w joins bucket(semi(w)) and becomes linked when `current` moves below it.
  //
  // aux[w]: before w is processed, its preds_ group end (see ClassifyReferences); while w waits in
  // a bucket, the next vertex of that bucket; after step 3, the relative dominator (paper: dom).
  // relative_[w] is set when that relative dominator is not semi(w) and step 4 must fix it.
  void Steps2And3() {
    const uint32_t last = last_dfn_.value;
    relative_.assign(size_t{last} + 1, false);
    auto process_bucket = [&](DfsNumber w) {
      DfsNumber v = vertex(w).label();
      while (v != kNoDfs) {
        const DfsNumber next{aux_[v.value]};
        Eval(v, w);
        const VertexRecord& rv = vertex(v);
        if (rv.semi < w) {  // semi(label(v)) < semi(v) = w
          aux_[v.value] = rv.slot;
          relative_[v.value] = true;
        } else {
          aux_[v.value] = w.value;
        }
        v = next;
      }
    };
    for (uint32_t i = last; i >= 2; --i) {
      const DfsNumber w{i};
      process_bucket(w);             // Step 3 for bucket(w).
      DfsNumber s = vertex(w).semi;  // Step 2: tree and forward references are folded in.
      const uint32_t begin = aux_[i - 1];
      const uint32_t end = aux_[i];
      if (i > 10) {  // Start loading the records of a group a few vertices ahead.
        for (uint32_t k = aux_[i - 9]; k < aux_[i - 8]; ++k) {
          __builtin_prefetch(&vertices_[preds_[k].value]);
        }
      }
      for (uint32_t k = begin; k < end; ++k) {
        const DfsNumber p = preds_[k];
        Eval(p, w);
        s = std::min(s, vertex(p).semi);
      }
      VertexRecord& rw = vertex(w);
      rw.set_label(w);
      rw.semi = s;
      VertexRecord& rs = vertex(s);  // Add w to bucket(s).
      aux_[i] = rs.slot;
      rs.slot = i;
    }
    process_bucket(kSuperRootDfs);
    preds_.reset();
    vertices_.reset();
  }

  // ---- Step 4: explicit immediate dominators in increasing DFS number. ----
  void Step4() {
    aux_[kSuperRootDfs.value] = kNoDfs.value;
    for (uint32_t w = 2; w <= last_dfn_.value; ++w) {
      if (relative_[w]) aux_[w] = aux_[aux_[w]];
    }
    relative_ = {};
  }

  // Translates the immediate dominators to object indices and builds the children CSR. The DFS
  // numbers were not kept through steps 2-4 (they would cost 4 bytes per object at the peak), so
  // step 1's DFS is replayed: same starts in the same order (the GC roots, then the artificial
  // roots), same reference order, hence the same numbers. When object o gets number d, aux[d]
  // (its immediate dominator as a DFS number, read once) is parked in idom_[o] and aux[d] is
  // overwritten with o, so aux becomes DfsNumber -> ObjectIndex; one last pass translates idom_.
  // Memory: aux and idom_ (4 bytes per object each), a visited bitmap and the replay's stack (8
  // bytes per level of DFS depth).
  void Finish(DominatorTree& tree) {
    tree.idom_.reset(new ObjectIndex[n_]);  // all kNoObject
    {
      std::vector<bool> visited(n_, false);
      std::vector<std::pair<uint32_t, uint32_t>> stack;  // (object, next reference to scan)
      uint32_t next = 2;
      auto discover = [&](uint32_t o) {
        visited[o] = true;
        tree.idom_[o] = ObjectIndex(aux_[next]);
        aux_[next++] = o;
        stack.push_back({o, 0});
      };
      auto replay = [&](ObjectIndex start) {
        discover(start.value);
        while (!stack.empty()) {
          const uint32_t v = stack.back().first;
          const uint64_t begin = graph_.offsets[v];
          const uint32_t degree = static_cast<uint32_t>(graph_.offsets[v + 1] - begin);
          uint32_t i = stack.back().second;
          bool descended = false;
          while (i < degree) {
            const uint64_t e = begin + i++;
            if (!options_.follow_weak_references && graph_.is_weak(e)) continue;
            const uint32_t t = graph_.targets[e].value;
            if (!visited[t]) {
              stack.back().second = i;
              discover(t);
              descended = true;
              break;
            }
          }
          if (!descended) stack.pop_back();
        }
      };
      for (ObjectIndex root : roots_) {
        if (!visited[root.value]) replay(root);
      }
      for (ObjectIndex root : tree.artificial_roots_) replay(root);
      HW_CHECK(next == last_dfn_.value + 1);
      aux_[kSuperRootDfs.value] = n_;  // the super root
      for (uint32_t o = 0; o < n_; ++o) {
        if (visited[o]) tree.idom_[o] = ObjectIndex(aux_[tree.idom_[o].value]);
      }
    }
    aux_.reset();
    HW_CHECK(tree.BuildChildren().ok());
  }

  const CsrGraph& graph_;
  std::span<const ObjectIndex> roots_;
  DominatorOptions options_;
  uint32_t n_;
  // DfsNumber -> VertexRecord; in step 1 and the classification also ObjectIndex -> DfsNumber in
  // the `slot` fields (see dfn()).
  std::unique_ptr<VertexRecord[]> vertices_;
  std::unique_ptr<uint32_t[]> aux_;  // DfsNumber -> stack cursor / count / link / idom
  // Back and cross references v -> w as dfn(v), grouped by dfn(w) (see ClassifyReferences).
  std::unique_ptr<DfsNumber[]> preds_;
  std::vector<bool> relative_;
  uint32_t next_dfn_ = 2;
  uint32_t reached_from_roots_ = 0;
  DfsNumber last_dfn_{0};
};

bool DominatorTree::reachable_from_gc_roots(ObjectIndex v) const {
  if (v.value == object_count_) return false;
  if (from_gc_roots_.empty()) return idom_[v.value] != kNoObject;
  return from_gc_roots_[v.value];
}

Status DominatorTree::BuildChildren() {
  const uint32_t n = object_count_;
  // Plain offsets first (4 bytes per node, freed at the end), then the blocked form.
  std::unique_ptr<uint32_t[]> offsets_storage(new uint32_t[size_t{n} + 2]);
  uint32_t* offsets = offsets_storage.get();
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

  const size_t count = size_t{n} + 2;
  const size_t blocks = (count + kChildBlock - 1) / kChildBlock;
  child_blocks_.reset(new ChildBlock[blocks]);
  child_rel_.reset(new uint8_t[count]);
  wide_child_offsets_.clear();
  for (size_t b = 0; b < blocks; ++b) {
    const size_t first = b * kChildBlock;
    const size_t end = std::min(count, first + kChildBlock);
    const uint32_t base = offsets[first];
    ChildBlock& block = child_blocks_[b];
    block.base = base;
    if (offsets[end - 1] - base <= 0xffu) {
      for (size_t v = first; v < end; ++v) child_rel_[v] = static_cast<uint8_t>(offsets[v] - base);
    } else {
      block.wide = static_cast<uint32_t>(wide_child_offsets_.size() / kChildBlock);
      for (size_t v = first; v < first + kChildBlock; ++v) {
        child_rel_[std::min(v, count - 1)] = 0;
        wide_child_offsets_.push_back(offsets[std::min(v, count - 1)]);
      }
    }
  }
  wide_child_offsets_.shrink_to_fit();
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
  StatusOr<DominatorTree> result;
  {
    DominatorTreeBuilder algorithm(graph, gc_roots, options);
    result = algorithm.Run(std::move(tree));
  }
#if defined(__GLIBC__)
  // The builder's scratch is freed; hand pages glibc keeps below its trim threshold back to the
  // kernel so the RSS drops to the graph plus the tree.
  malloc_trim(0);
#endif
  return result;
}

}  // namespace heapwatch::analysis
