#include "analysis/dynamic_size.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "analysis/reference_view_internal.h"

namespace heapwatch::analysis {

// Fills the private fields of DynamicSizes.
class DynamicSizesBuilder {
 public:
  static DynamicSizes Make(std::vector<ComponentId> component_of, uint32_t component_count) {
    DynamicSizes out;
    out.component_of_ = std::move(component_of);
    out.bytes_.assign(component_count, 0);
    out.objects_.assign(component_count, 0);
    out.exact_.assign(component_count, true);
    return out;
  }
  static std::vector<uint64_t>& bytes(DynamicSizes& s) { return s.bytes_; }
  static std::vector<uint32_t>& objects(DynamicSizes& s) { return s.objects_; }
  static std::vector<bool>& exact(DynamicSizes& s) { return s.exact_; }
};

namespace {

using internal::ReferenceView;

// ---------------------------------------------------------------------------------------------
// Dynamic size of a set: DFS with a bitmap.

template <typename SizeFn>
StatusOr<DynamicSize> Reach(const ReferenceView& view, SizeFn shallow_size,
                            std::span<const ObjectIndex> objects) {
  const uint32_t n = view.node_count();
  for (ObjectIndex v : objects) {
    if (v.value >= n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dynamic size: object %u is out of range (the graph has %u objects)", v.value, n));
    }
  }
  DynamicSize out;
  if (objects.empty()) return out;
  std::vector<uint64_t> seen((size_t{n} + 63) / 64, 0);
  std::vector<uint32_t> stack;
  auto enter = [&](uint32_t w) {
    uint64_t& word = seen[w >> 6];
    const uint64_t bit = uint64_t{1} << (w & 63);
    if (word & bit) return;
    word |= bit;
    stack.push_back(w);
    out.bytes += shallow_size(ObjectIndex(w));
    ++out.objects;
  };
  for (ObjectIndex v : objects) enter(v.value);
  const bool implicit = view.has_implicit_edges();
  while (!stack.empty()) {
    const uint32_t v = stack.back();
    stack.pop_back();
    if (implicit) {
      const ObjectIndex c = view.Implicit(v);
      if (c.valid()) enter(c.value);
    }
    const uint64_t end = view.end(v);
    for (uint64_t e = view.begin(v); e < end; ++e) {
      if (!view.followed(e)) continue;
      const uint32_t w = view.target(e).value;
      if (w >= n) {
        return absl::InvalidArgumentError(
            absl::StrFormat("dynamic size: reference %u of object %u targets object %u, but the "
                            "graph has %u objects",
                            e, v, w, n));
      }
      enter(w);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Checks that a caller's condensation can be read without going out of bounds.

Status CheckCondensation(const Condensation& c) {
  const uint32_t count = c.component_count;
  if (c.component_bytes.size() != count || c.component_objects.size() != count ||
      c.dag.node_count() != count || c.dag.offsets.empty() || c.dag.offsets[0] != 0 ||
      c.dag.offsets[count] != c.dag.targets.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dynamic size: inconsistent condensation (%u components, %u sizes, %u counts, DAG of %u "
        "nodes)",
        count, c.component_bytes.size(), c.component_objects.size(), c.dag.node_count()));
  }
  for (ComponentId id : c.component_of) {
    if (id.value >= count) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dynamic size: component %u out of range (%u components)", id.value, count));
    }
  }
  for (uint32_t x = 0; x < count; ++x) {
    if (c.dag.offsets[x] > c.dag.offsets[x + 1]) {
      return absl::InvalidArgumentError("dynamic size: DAG offsets decrease");
    }
    for (ObjectIndex y : c.successors(ComponentId(x))) {
      if (y.value >= x) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "dynamic size: DAG edge %u -> %u does not go to a lower component", x, y.value));
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Exact, method 1: a DFS over the DAG from every component (thesis: SimpleCompDynamicSize), with
// stamps. Returns false (results incomplete) when it would do more than `limit` work units.

bool ExactByDfs(const Condensation& c, uint64_t limit, DynamicSizes& out) {
  const uint32_t count = c.component_count;
  std::vector<uint32_t> stamp(count, std::numeric_limits<uint32_t>::max());
  std::vector<uint32_t> stack;
  auto& bytes = DynamicSizesBuilder::bytes(out);
  auto& objects = DynamicSizesBuilder::objects(out);
  uint64_t work = 0;
  for (uint32_t x = 0; x < count; ++x) {
    uint64_t b = 0, o = 0;
    stamp[x] = x;
    stack.push_back(x);
    while (!stack.empty()) {
      const uint32_t y = stack.back();
      stack.pop_back();
      b += c.component_bytes[y];
      o += c.component_objects[y];
      const auto succ = c.successors(ComponentId(y));
      work += 1 + succ.size();
      if (work > limit) {
        stack.clear();
        return false;
      }
      for (ObjectIndex z : succ) {
        if (stamp[z.value] == x) continue;
        stamp[z.value] = x;
        stack.push_back(z.value);
      }
    }
    bytes[x] = b;
    objects[x] = static_cast<uint32_t>(o);
  }
  return true;
}

// Work units of method 2: every pass visits the components at or above its first target and
// their DAG edges.
uint64_t BitParallelCost(const Condensation& c) {
  const uint32_t count = c.component_count;
  const uint64_t edges = c.dag.edge_count();
  uint64_t cost = 0;
  for (uint64_t lo = 0; lo < count; lo += 64) {
    cost += (count - lo) + (edges - c.dag.offsets[lo]);
  }
  return cost;
}

// Exact, method 2: bit-parallel transitive closure, 64 target components per pass.
void ExactByBitParallel(const Condensation& c, DynamicSizes& out) {
  const uint32_t count = c.component_count;
  auto& bytes = DynamicSizesBuilder::bytes(out);
  auto& objects = DynamicSizesBuilder::objects(out);
  std::fill(bytes.begin(), bytes.end(), 0);
  std::vector<uint64_t> objects64(count, 0);
  // mask[x] bit i: component x reaches target lo + i. Zero below the current pass's lo.
  std::vector<uint64_t> mask(count, 0);
  // Lookup tables: sum of the targets' bytes / objects for each value of mask byte b.
  std::vector<uint64_t> table_bytes(8 * 256), table_objects(8 * 256);
  for (uint32_t lo = 0; lo < count; lo = lo + 64 < count ? lo + 64 : count) {
    const uint32_t hi = count - lo > 64 ? lo + 64 : count;
    for (uint32_t b = 0; b < 8; ++b) {
      uint64_t* tb = &table_bytes[b * 256];
      uint64_t* to = &table_objects[b * 256];
      tb[0] = to[0] = 0;
      for (uint32_t m = 1; m < 256; ++m) {
        const uint32_t target = lo + 8 * b + static_cast<uint32_t>(std::countr_zero(m));
        const bool in = target < hi;
        tb[m] = tb[m & (m - 1)] + (in ? c.component_bytes[target] : 0);
        to[m] = to[m & (m - 1)] + (in ? c.component_objects[target] : 0);
      }
    }
    for (uint32_t x = lo; x < count; ++x) {
      uint64_t m = x < hi ? uint64_t{1} << (x - lo) : 0;
      for (ObjectIndex y : c.successors(ComponentId(x))) m |= mask[y.value];
      mask[x] = m;
      if (m == 0) continue;
      uint64_t sb = 0, so = 0;
      for (uint32_t b = 0; b < 8; ++b) {
        const uint32_t byte = static_cast<uint32_t>(m >> (8 * b)) & 0xff;
        sb += table_bytes[b * 256 + byte];
        so += table_objects[b * 256 + byte];
      }
      bytes[x] += sb;
      objects64[x] += so;
    }
    std::fill(mask.begin() + lo, mask.begin() + hi, 0);
  }
  for (uint32_t x = 0; x < count; ++x) objects[x] = static_cast<uint32_t>(objects64[x]);
}

StatusOr<DynamicSizes> Exact(const Condensation& c, std::vector<ComponentId> component_of,
                             const ExactDynamicSizesOptions& options) {
  DynamicSizes out = DynamicSizesBuilder::Make(std::move(component_of), c.component_count);
  const uint64_t bit_parallel_cost = BitParallelCost(c);
  if (options.method != ExactDynamicSizesOptions::Method::kBitParallel) {
    const uint64_t dfs_limit = options.method == ExactDynamicSizesOptions::Method::kComponentDfs
                                   ? options.max_work
                                   : std::min(options.max_work, bit_parallel_cost);
    if (ExactByDfs(c, dfs_limit, out)) return out;
    if (options.method == ExactDynamicSizesOptions::Method::kComponentDfs) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "exact dynamic sizes: the DFS from every component needs more than %u work units",
          options.max_work));
    }
  }
  if (bit_parallel_cost > options.max_work) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "exact dynamic sizes: %u components and %u DAG edges need more than %u work units by DFS "
        "and %u by bit-parallel closure (budget %u); use the estimate",
        c.component_count, c.dag.edge_count(), options.max_work, bit_parallel_cost,
        options.max_work));
  }
  ExactByBitParallel(c, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Estimate: priority sampling / bottom-k sketches over the DAG.

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Sketch entries: (rank as float bits) << 32 | component, so that uint64 order is rank order (ties
// broken by component) and equal entries are the same component.
inline uint64_t Key(float rank, uint32_t component) {
  return (uint64_t{std::bit_cast<uint32_t>(rank)} << 32) | component;
}
inline uint32_t KeyComponent(uint64_t key) { return static_cast<uint32_t>(key); }
inline double KeyRank(uint64_t key) {
  return std::bit_cast<float>(static_cast<uint32_t>(key >> 32));
}

// The sampling weight: the component's bytes, at least 1 so that 0-byte components are sampled too
// (their objects count) with a tiny probability.
inline double SamplingWeight(uint64_t bytes) {
  return bytes == 0 ? 1.0 : static_cast<double>(bytes);
}

// Merges sorted `a` and `b` into `out` (distinct entries, at most `cap`). Returns the length.
size_t MergeSketches(const uint64_t* a, size_t na, const uint64_t* b, size_t nb, uint64_t* out,
                     size_t cap) {
  size_t i = 0, j = 0, o = 0;
  while (o < cap && i < na && j < nb) {
    if (a[i] < b[j]) {
      out[o++] = a[i++];
    } else if (b[j] < a[i]) {
      out[o++] = b[j++];
    } else {
      out[o++] = a[i++];
      ++j;
    }
  }
  while (o < cap && i < na) out[o++] = a[i++];
  while (o < cap && j < nb) out[o++] = b[j++];
  return o;
}

// Storage for the sketches that still wait for a predecessor: blocks of 2^s entries, one free list
// per size class s.
class SketchPool {
 public:
  explicit SketchPool(uint32_t cap) : classes_(std::bit_width(cap - 1) + 1) {}
  // Stores `len` entries (1 <= len <= cap); returns the block number in the size class of len.
  uint32_t Store(const uint64_t* data, uint32_t len) {
    Class& cls = classes_[ClassOf(len)];
    const size_t block_size = size_t{1} << ClassOf(len);
    uint32_t block;
    if (!cls.free.empty()) {
      block = cls.free.back();
      cls.free.pop_back();
    } else {
      block = static_cast<uint32_t>(cls.entries.size() / block_size);
      cls.entries.resize(cls.entries.size() + block_size);
    }
    std::copy_n(data, len, cls.entries.data() + block * block_size);
    return block;
  }
  const uint64_t* Get(uint32_t block, uint32_t len) const {
    return classes_[ClassOf(len)].entries.data() + (size_t{block} << ClassOf(len));
  }
  void Free(uint32_t block, uint32_t len) { classes_[ClassOf(len)].free.push_back(block); }
  uint64_t MemoryUsage() const {
    uint64_t total = 0;
    for (const Class& c : classes_) total += c.entries.capacity() * 8 + c.free.capacity() * 4;
    return total;
  }

 private:
  static uint32_t ClassOf(uint32_t len) { return static_cast<uint32_t>(std::bit_width(len - 1)); }
  struct Class {
    std::vector<uint64_t> entries;
    std::vector<uint32_t> free;
  };
  std::vector<Class> classes_;
};

Status CheckSketchOptions(const DynamicSizeSketchOptions& options) {
  if (options.sketch_size >= 2 && options.sketch_size <= 65534) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "dynamic size estimate: sketch size %u is out of range (2..65534)", options.sketch_size));
}

StatusOr<DynamicSizes> Estimate(const Condensation& c, std::vector<ComponentId> component_of,
                                const DynamicSizeSketchOptions& options) {
  HW_RETURN_IF_ERROR(CheckSketchOptions(options));
  const uint32_t k = options.sketch_size;
  const uint32_t cap = k + 1;
  const uint32_t count = c.component_count;
  DynamicSizes out = DynamicSizesBuilder::Make(std::move(component_of), count);
  auto& out_bytes = DynamicSizesBuilder::bytes(out);
  auto& out_objects = DynamicSizesBuilder::objects(out);
  auto& out_exact = DynamicSizesBuilder::exact(out);

  // Predecessors still to come, per component; a sketch is freed when this reaches 0.
  std::vector<uint32_t> waiting(count, 0);
  for (ObjectIndex y : c.dag.targets) ++waiting[y.value];
  std::vector<uint32_t> block(count, 0);
  std::vector<uint16_t> length(count, 0);  // 0: no sketch stored
  SketchPool pool(cap);
  std::vector<uint64_t> acc(cap), tmp(cap);

  for (uint32_t x = 0; x < count; ++x) {
    const double u =
        static_cast<double>((SplitMix64(options.seed ^ SplitMix64(x)) >> 11) + 1) * 0x1p-53;
    acc[0] = Key(static_cast<float>(u / SamplingWeight(c.component_bytes[x])), x);
    size_t len = 1;
    for (ObjectIndex yi : c.successors(ComponentId(x))) {
      const uint32_t y = yi.value;
      if (length[y] != 0) {
        len = MergeSketches(acc.data(), len, pool.Get(block[y], length[y]), length[y], tmp.data(),
                            cap);
        acc.swap(tmp);
      }
      if (--waiting[y] == 0 && length[y] != 0) {
        pool.Free(block[y], length[y]);
        length[y] = 0;
      }
    }
    if (len <= k) {
      // The sketch holds the whole reachable set.
      uint64_t b = 0, o = 0;
      for (size_t i = 0; i < len; ++i) {
        const uint32_t z = KeyComponent(acc[i]);
        b += c.component_bytes[z];
        o += c.component_objects[z];
      }
      out_bytes[x] = b;
      out_objects[x] = static_cast<uint32_t>(o);
    } else {
      // DLT's estimator for the reachable set minus x (x's own share is certain).
      const double tau = 1.0 / KeyRank(acc[k]);
      double b = static_cast<double>(c.component_bytes[x]);
      double o = static_cast<double>(c.component_objects[x]);
      for (size_t i = 0; i < k; ++i) {
        const uint32_t z = KeyComponent(acc[i]);
        if (z == x) continue;
        const double scale = std::max(1.0, tau / SamplingWeight(c.component_bytes[z]));
        b += static_cast<double>(c.component_bytes[z]) * scale;
        o += static_cast<double>(c.component_objects[z]) * scale;
      }
      out_bytes[x] = static_cast<uint64_t>(std::llround(b));
      out_objects[x] = static_cast<uint32_t>(
          std::min<double>(std::llround(o), std::numeric_limits<uint32_t>::max()));
      out_exact[x] = false;
    }
    if (waiting[x] != 0) {
      block[x] = pool.Store(acc.data(), static_cast<uint32_t>(len));
      length[x] = static_cast<uint16_t>(len);
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

StrongComponentsOptions ReferencesFor(const DynamicSizeOptions& options) {
  StrongComponentsOptions out;
  out.follow_weak_references = options.all_references;
  out.follow_class_edges = options.all_references;
  return out;
}

StatusOr<DynamicSize> ComputeDynamicSize(const HeapGraph& graph,
                                         std::span<const ObjectIndex> objects,
                                         const DynamicSizeOptions& options) {
  return Reach(
      ReferenceView(graph, options.all_references, options.all_references),
      [&](ObjectIndex v) { return graph.shallow_size(v); }, objects);
}

StatusOr<DynamicSize> ComputeDynamicSize(const CsrGraph& graph, ShallowSizeFn shallow_size,
                                         std::span<const ObjectIndex> objects,
                                         const DynamicSizeOptions& options) {
  return Reach(ReferenceView(graph, options.all_references), shallow_size, objects);
}

std::vector<uint64_t> DynamicSizes::BytesVector() const {
  std::vector<uint64_t> out(component_of_.size());
  for (size_t v = 0; v < out.size(); ++v) out[v] = bytes_[component_of_[v].value];
  return out;
}

uint64_t DynamicSizes::MemoryUsage() const {
  return component_of_.capacity() * sizeof(ComponentId) + bytes_.capacity() * sizeof(uint64_t) +
         objects_.capacity() * sizeof(uint32_t) + exact_.capacity() / 8;
}

StatusOr<DynamicSizes> ComputeExactDynamicSizes(const HeapGraph& graph,
                                                const DynamicSizeOptions& references,
                                                const ExactDynamicSizesOptions& options) {
  HW_ASSIGN_OR_RETURN(Condensation c, CondenseStrongComponents(graph, ReferencesFor(references)));
  std::vector<ComponentId> component_of = std::move(c.component_of);
  return Exact(c, std::move(component_of), options);
}

StatusOr<DynamicSizes> ComputeExactDynamicSizes(const Condensation& condensation,
                                                const ExactDynamicSizesOptions& options) {
  HW_RETURN_IF_ERROR(CheckCondensation(condensation));
  return Exact(condensation, condensation.component_of, options);
}

StatusOr<DynamicSizes> EstimateDynamicSizes(const HeapGraph& graph,
                                            const DynamicSizeOptions& references,
                                            const DynamicSizeSketchOptions& options) {
  HW_RETURN_IF_ERROR(CheckSketchOptions(options));
  HW_ASSIGN_OR_RETURN(Condensation c, CondenseStrongComponents(graph, ReferencesFor(references)));
  std::vector<ComponentId> component_of = std::move(c.component_of);
  return Estimate(c, std::move(component_of), options);
}

StatusOr<DynamicSizes> EstimateDynamicSizes(const Condensation& condensation,
                                            const DynamicSizeSketchOptions& options) {
  HW_RETURN_IF_ERROR(CheckCondensation(condensation));
  return Estimate(condensation, condensation.component_of, options);
}

}  // namespace heapwatch::analysis
