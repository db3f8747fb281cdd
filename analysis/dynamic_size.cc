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
// stamps instead of clearing a visited array.
class ComponentDfs {
 public:
  explicit ComponentDfs(const Condensation& c)
      : c_(c), stamp_(c.component_count, std::numeric_limits<uint32_t>::max()) {}

  // Reachable bytes and objects of x. Adds the work units to `work` and stops early (returns
  // false) once `work` exceeds `limit`. Each x may be asked once per Reset().
  bool From(uint32_t x, uint64_t limit, uint64_t& work, uint64_t& bytes, uint64_t& objects) {
    bytes = objects = 0;
    stamp_[x] = x;
    stack_.assign(1, x);
    while (!stack_.empty()) {
      const uint32_t y = stack_.back();
      stack_.pop_back();
      bytes += c_.component_bytes[y];
      objects += c_.component_objects[y];
      const auto succ = c_.successors(ComponentId(y));
      work += 1 + succ.size();
      if (work > limit) return false;
      for (ObjectIndex z : succ) {
        if (stamp_[z.value] == x) continue;
        stamp_[z.value] = x;
        stack_.push_back(z.value);
      }
    }
    return true;
  }
  void Reset() { std::fill(stamp_.begin(), stamp_.end(), std::numeric_limits<uint32_t>::max()); }

 private:
  const Condensation& c_;
  std::vector<uint32_t> stamp_;
  std::vector<uint32_t> stack_;
};

// Every component by method 1; false (results incomplete) when it would do more than `limit` work
// units.
bool ExactByDfs(const Condensation& c, uint64_t limit, DynamicSizes& out) {
  ComponentDfs dfs(c);
  auto& bytes = DynamicSizesBuilder::bytes(out);
  auto& objects = DynamicSizesBuilder::objects(out);
  uint64_t work = 0;
  for (uint32_t x = 0; x < c.component_count; ++x) {
    uint64_t b, o;
    if (!dfs.From(x, limit, work, b, o)) return false;
    bytes[x] = b;
    objects[x] = static_cast<uint32_t>(o);
  }
  return true;
}

// Predicts method 1's work from a DFS out of kSamples components spread evenly over the ids;
// returns UINT64_MAX when the sample alone would cost more than `limit`.
uint64_t PredictDfsWork(const Condensation& c, uint64_t limit) {
  constexpr uint32_t kSamples = 256;
  const uint32_t count = c.component_count;
  if (count == 0) return 0;
  const uint32_t samples = std::min(count, kSamples);
  ComponentDfs dfs(c);
  uint64_t work = 0;
  for (uint32_t i = 0; i < samples; ++i) {
    const uint32_t x = static_cast<uint32_t>(uint64_t{i} * count / samples);
    uint64_t b, o;
    if (!dfs.From(x, limit, work, b, o)) return std::numeric_limits<uint64_t>::max();
  }
  return work / samples * count + work % samples * count / samples;
}

// Method 2 takes kTargets target components per pass, as kWords 64-bit words per component.
constexpr uint32_t kWords = 4;
constexpr uint32_t kTargets = 64 * kWords;

// Work units of method 2: every pass visits the components at or above its first target and
// their DAG edges.
uint64_t BitParallelCost(const Condensation& c) {
  const uint32_t count = c.component_count;
  const uint64_t edges = c.dag.edge_count();
  uint64_t cost = 0;
  for (uint64_t lo = 0; lo < count; lo += kTargets) {
    cost += (count - lo) + (edges - c.dag.offsets[lo]);
  }
  return cost;
}

// Exact, method 2: bit-parallel transitive closure, kTargets target components per pass.
void ExactByBitParallel(const Condensation& c, DynamicSizes& out) {
  const uint32_t count = c.component_count;
  auto& bytes = DynamicSizesBuilder::bytes(out);
  auto& objects = DynamicSizesBuilder::objects(out);
  std::fill(bytes.begin(), bytes.end(), 0);
  std::vector<uint64_t> objects64(count, 0);
  // Words kWords*x .. kWords*x + kWords - 1, bit i of word w: component x reaches target
  // lo + 64w + i. Zero below the current pass's lo.
  std::vector<uint64_t> mask(size_t{count} * kWords, 0);
  // Lookup tables: sum of the targets' bytes / objects for each value of mask byte b (8 per word).
  constexpr uint32_t kBytes = 8 * kWords;
  std::vector<uint64_t> table_bytes(size_t{kBytes} * 256), table_objects(size_t{kBytes} * 256);
  for (uint64_t chunk = 0; chunk < count; chunk += kTargets) {
    const uint32_t lo = static_cast<uint32_t>(chunk);
    const uint32_t hi = static_cast<uint32_t>(std::min<uint64_t>(chunk + kTargets, count));
    for (size_t b = 0; b < kBytes; ++b) {
      uint64_t* tb = &table_bytes[b * 256];
      uint64_t* to = &table_objects[b * 256];
      tb[0] = to[0] = 0;
      for (uint32_t m = 1; m < 256; ++m) {
        const uint64_t target = chunk + 8 * b + static_cast<uint32_t>(std::countr_zero(m));
        const bool in = target < hi;
        tb[m] = tb[m & (m - 1)] + (in ? c.component_bytes[target] : 0);
        to[m] = to[m & (m - 1)] + (in ? c.component_objects[target] : 0);
      }
    }
    for (uint32_t x = lo; x < count; ++x) {
      uint64_t m[kWords] = {};
      if (x < hi) m[(x - lo) / 64] = uint64_t{1} << ((x - lo) % 64);
      for (ObjectIndex y : c.successors(ComponentId(x))) {
        const uint64_t* my = &mask[size_t{y.value} * kWords];
        for (uint32_t w = 0; w < kWords; ++w) m[w] |= my[w];
      }
      uint64_t any = 0;
      for (uint32_t w = 0; w < kWords; ++w) {
        mask[size_t{x} * kWords + w] = m[w];
        any |= m[w];
      }
      if (any == 0) continue;
      uint64_t sb = 0, so = 0;
      for (uint32_t w = 0; w < kWords; ++w) {
        if (m[w] == 0) continue;
        for (uint32_t b = 0; b < 8; ++b) {
          const uint32_t index =
              (8 * w + b) * 256 + (static_cast<uint32_t>(m[w] >> (8 * b)) & 0xff);
          sb += table_bytes[index];
          so += table_objects[index];
        }
      }
      bytes[x] += sb;
      objects64[x] += so;
    }
    std::fill(mask.begin() + static_cast<ptrdiff_t>(size_t{lo} * kWords),
              mask.begin() + static_cast<ptrdiff_t>(size_t{hi} * kWords), 0);
  }
  for (uint32_t x = 0; x < count; ++x) objects[x] = static_cast<uint32_t>(objects64[x]);
}

StatusOr<DynamicSizes> Exact(const Condensation& c, std::vector<ComponentId> component_of,
                             const ExactDynamicSizesOptions& options) {
  DynamicSizes out = DynamicSizesBuilder::Make(std::move(component_of), c.component_count);
  const uint64_t bit_parallel_cost = BitParallelCost(c);
  bool try_dfs = options.method == ExactDynamicSizesOptions::Method::kComponentDfs;
  if (options.method == ExactDynamicSizesOptions::Method::kAuto) {
    // A sample of DFSs predicts method 1's cost; the sample may use up to 1/8 of method 2's cost
    // and of the budget.
    try_dfs =
        PredictDfsWork(c, std::min(bit_parallel_cost, options.max_work) / 8) < bit_parallel_cost;
  }
  if (try_dfs) {
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

// An estimate rounded to whole bytes / objects (counts saturate at 2^32 - 1).
uint64_t RoundBytes(double v) { return static_cast<uint64_t>(std::llround(std::max(0.0, v))); }
uint32_t RoundCount(double v) {
  return static_cast<uint32_t>(std::llround(std::clamp(v, 0.0, 4294967295.0)));
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
// per size class s. A block can be shared by several components whose sketches are equal (a
// component whose own entry and other successors do not change a successor's full sketch takes it
// over without a copy); it is freed when its last holder lets go. For a full block (k + 1 entries)
// the pool also keeps the estimator's sum over its k smallest entries.
class SketchPool {
 public:
  struct Handle {
    uint32_t block = 0;
    uint32_t length = 0;  // 0: none
  };
  struct Sums {
    double bytes = 0;
    double objects = 0;
  };

  explicit SketchPool(uint32_t cap) : classes_(std::bit_width(cap - 1) + 1) {}

  // Stores `len` entries (1 <= len <= cap) with one holder.
  Handle Store(const uint64_t* data, uint32_t len, Sums sums) {
    Class& cls = classes_[ClassOf(len)];
    const size_t block_size = size_t{1} << ClassOf(len);
    uint32_t block;
    if (!cls.free.empty()) {
      block = cls.free.back();
      cls.free.pop_back();
    } else {
      block = static_cast<uint32_t>(cls.holders.size());
      cls.entries.resize(cls.entries.size() + block_size);
      cls.holders.push_back(0);
      cls.sums.emplace_back();
      entry_bytes_ += block_size * sizeof(uint64_t) + sizeof(uint32_t) + sizeof(Sums);
    }
    std::copy_n(data, len, cls.entries.data() + block * block_size);
    cls.holders[block] = 1;
    cls.sums[block] = sums;
    return {block, len};
  }
  const uint64_t* Get(Handle h) const {
    return classes_[ClassOf(h.length)].entries.data() + (size_t{h.block} << ClassOf(h.length));
  }
  const Sums& GetSums(Handle h) const { return classes_[ClassOf(h.length)].sums[h.block]; }
  void Hold(Handle h) { ++classes_[ClassOf(h.length)].holders[h.block]; }
  void Release(Handle h) {
    Class& cls = classes_[ClassOf(h.length)];
    if (--cls.holders[h.block] == 0) cls.free.push_back(h.block);
  }
  // Bytes of blocks ever allocated (blocks are reused, never returned): the pool's peak.
  uint64_t bytes() const { return entry_bytes_; }

 private:
  static uint32_t ClassOf(uint32_t len) { return static_cast<uint32_t>(std::bit_width(len - 1)); }
  struct Class {
    std::vector<uint64_t> entries;
    std::vector<uint32_t> holders;
    std::vector<Sums> sums;
    std::vector<uint32_t> free;
  };
  std::vector<Class> classes_;
  uint64_t entry_bytes_ = 0;
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

  // Predecessors still to come, per component; a sketch is let go when this reaches 0.
  std::vector<uint32_t> waiting(count, 0);
  for (ObjectIndex y : c.dag.targets) ++waiting[y.value];
  std::vector<SketchPool::Handle> sketch(count);
  SketchPool pool(cap);
  std::vector<uint64_t> acc(cap), tmp(cap);

  for (uint32_t x = 0; x < count; ++x) {
    const double u =
        static_cast<double>((SplitMix64(options.seed ^ SplitMix64(x)) >> 11) + 1) * 0x1p-53;
    const uint64_t own = Key(static_cast<float>(u / SamplingWeight(c.component_bytes[x])), x);
    // The sketch of x so far: a stored one (`shared`, held) or acc[0..len).
    SketchPool::Handle shared;
    acc[0] = own;
    size_t len = 1;
    for (ObjectIndex yi : c.successors(ComponentId(x))) {
      const uint32_t y = yi.value;
      const SketchPool::Handle hy = sketch[y];
      if (hy.length != 0) {
        const uint64_t* sy = pool.Get(hy);
        const uint64_t last = shared.length != 0 ? pool.Get(shared)[cap - 1] : acc[len - 1];
        const bool full = shared.length != 0 || len == cap;
        if (full && sy[0] > last) {
          // Nothing of y's sketch enters the k + 1 smallest.
        } else if (shared.length == 0 && len == 1 && hy.length == cap && own > sy[cap - 1]) {
          shared = hy;  // x's sketch is y's
          pool.Hold(shared);
        } else {
          const uint64_t* a = shared.length != 0 ? pool.Get(shared) : acc.data();
          const size_t na = shared.length != 0 ? shared.length : len;
          len = MergeSketches(a, na, sy, hy.length, tmp.data(), cap);
          acc.swap(tmp);
          if (shared.length != 0) {
            pool.Release(shared);
            shared = {};
          }
        }
      }
      if (--waiting[y] == 0 && hy.length != 0) {
        pool.Release(hy);
        sketch[y] = {};
      }
    }
    SketchPool::Sums sums;
    if (shared.length != 0) {
      // x's own entry is not among the k + 1 smallest.
      const SketchPool::Sums& s = pool.GetSums(shared);
      out_bytes[x] = RoundBytes(static_cast<double>(c.component_bytes[x]) + s.bytes);
      out_objects[x] = RoundCount(static_cast<double>(c.component_objects[x]) + s.objects);
      out_exact[x] = false;
    } else if (len <= k) {
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
      // DLT's estimator for the reachable set minus x (x's own share is certain): the sum over
      // the k smallest entries of b_i * max(1, tau / w_i), tau = 1 / (the (k+1)-th rank).
      const double tau = 1.0 / KeyRank(acc[k]);
      double own_b = 0, own_o = 0;
      for (size_t i = 0; i < k; ++i) {
        const uint32_t z = KeyComponent(acc[i]);
        const double scale = std::max(1.0, tau / SamplingWeight(c.component_bytes[z]));
        const double b = static_cast<double>(c.component_bytes[z]) * scale;
        const double o = static_cast<double>(c.component_objects[z]) * scale;
        sums.bytes += b;
        sums.objects += o;
        if (z == x) {
          own_b = b;
          own_o = o;
        }
      }
      const double b = static_cast<double>(c.component_bytes[x]) + sums.bytes - own_b;
      const double o = static_cast<double>(c.component_objects[x]) + sums.objects - own_o;
      out_bytes[x] = RoundBytes(b);
      out_objects[x] = RoundCount(o);
      out_exact[x] = false;
    }
    if (waiting[x] == 0) {
      if (shared.length != 0) pool.Release(shared);
    } else if (shared.length != 0) {
      sketch[x] = shared;  // keeps the hold taken above
    } else {
      sketch[x] = pool.Store(acc.data(), static_cast<uint32_t>(len), sums);
      if (pool.bytes() > options.max_sketch_bytes) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "dynamic size estimate: the sketches waiting for a predecessor need more than %u bytes "
            "(at component %u of %u); use a smaller sketch_size",
            options.max_sketch_bytes, x, count));
      }
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
