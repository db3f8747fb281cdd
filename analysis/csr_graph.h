// Typed object indices and the compressed-sparse-row (CSR) reference graph that every heap-graph
// algorithm in analysis/ works on.
//
// Objects of one heap dump are numbered densely 0..n-1 (ObjectIndex). References are stored as CSR:
// the references of object v are targets[offsets[v] .. offsets[v+1]), in the order the dump lists
// them (field order for instances, element order for arrays, static fields for classes), null
// references dropped, duplicates kept. The edge number e (an index into `targets`) is stable and
// can carry per-edge flags.
//
// Memory: 4 bytes per reference (targets) + 1 bit per reference (weak flags) + the offsets: 4 bytes
// per object while a graph is built (CsrOffsets' plain form), about 1.1 bytes per object once it is
// compacted (CsrOffsets::Compact; HeapGraph compacts its graph when it is finished). Offsets are
// 32-bit, so one graph holds at most kMaxCsrEdges (2^32 - 1) references; producers (the HPROF
// reader, HeapGraphBuilder) reject bigger graphs with ResourceExhausted. Objects are limited to
// 2^32 - 1 by ObjectIndex anyway; a dump with 4 billion non-null references is a heap of well over
// 100 GB. Thread-safety: immutable after construction; concurrent readers are safe.
#ifndef HEAPWATCH_ANALYSIS_CSR_GRAPH_H_
#define HEAPWATCH_ANALYSIS_CSR_GRAPH_H_

#include <algorithm>
#include <compare>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <memory>
#include <span>
#include <vector>

namespace heapwatch::analysis {

// Dense index of an object within one heap graph: 0..object_count-1. Distinct from raw dump ids
// (addresses), DFS numbers and class ids so they cannot be mixed up.
struct ObjectIndex {
  uint32_t value = std::numeric_limits<uint32_t>::max();
  constexpr ObjectIndex() = default;
  constexpr explicit ObjectIndex(uint32_t v) : value(v) {}
  friend constexpr auto operator<=>(ObjectIndex, ObjectIndex) = default;
  constexpr bool valid() const { return value != std::numeric_limits<uint32_t>::max(); }
};
// "No object": the parent of a root in a path, the dominator of an unreachable object, and so on.
inline constexpr ObjectIndex kNoObject{};

// Dense index of a class within one heap graph's class table: 0..class_count-1.
struct ClassId {
  uint32_t value = std::numeric_limits<uint32_t>::max();
  constexpr ClassId() = default;
  constexpr explicit ClassId(uint32_t v) : value(v) {}
  friend constexpr auto operator<=>(ClassId, ClassId) = default;
  constexpr bool valid() const { return value != std::numeric_limits<uint32_t>::max(); }
};
inline constexpr ClassId kNoClass{};

// Largest number of references (edges) a CsrGraph can hold: offsets are 32-bit.
inline constexpr uint64_t kMaxCsrEdges = std::numeric_limits<uint32_t>::max();

// The offsets of a CSR graph: node_count + 1 non-decreasing 32-bit values. Two forms, both read
// with operator[] (O(1), thread-safe for concurrent readers):
// - plain (the default; what producers build): a std::vector<uint32_t>, writable through
//   operator[], assign(), back() and plain();
// - compact (after Compact(), read-only): blocks of kBlock entries, each with a 32-bit base (its
//   first offset) and one byte per entry (offset - base) while the block's offsets span at most
//   255 references; blocks spanning more (an array with hundreds of elements) keep their kBlock
//   offsets in full in a side table. About 1.1 bytes per object instead of 4 on heap dumps (the 1
//   GB bench dump: 18.6 M objects, 39 wide blocks of 290 k, 74.3 -> 20.9 MB).
// A compact CsrOffsets must be read through const access (algorithms take `const CsrGraph&`): the
// non-const operator[], back(), assign() and plain() are for building and abort on a compact one
// (a broken invariant).
class CsrOffsets {
 public:
  static constexpr uint32_t kBlock = 64;

  CsrOffsets() = default;
  CsrOffsets(std::initializer_list<uint32_t> values) : plain_(values) {}
  CsrOffsets(const CsrOffsets& other) { *this = other; }
  CsrOffsets& operator=(const CsrOffsets& other) {
    if (this == &other) return *this;
    plain_ = other.plain_;
    compact_ = other.compact_;
    size_ = other.size_;
    blocks_.reset();
    rel_.reset();
    if (compact_) {
      const size_t blocks = BlockCount(size_);
      blocks_.reset(new Block[blocks]);
      std::copy_n(other.blocks_.get(), blocks, blocks_.get());
      rel_.reset(new uint8_t[size_]);
      std::copy_n(other.rel_.get(), size_, rel_.get());
    }
    wide_ = other.wide_;
    return *this;
  }
  CsrOffsets(CsrOffsets&&) = default;
  CsrOffsets& operator=(CsrOffsets&&) = default;

  size_t size() const { return compact_ ? size_ : plain_.size(); }
  bool empty() const { return size() == 0; }
  bool compact() const { return compact_; }

  uint32_t operator[](size_t i) const {
    if (!compact_) [[likely]]
      return plain_[i];
    const Block& b = blocks_[i / kBlock];
    if (b.wide == kNarrow) [[likely]]
      return b.base + rel_[i];
    return wide_[size_t{b.wide} * kBlock + i % kBlock];
  }
  uint32_t front() const { return (*this)[0]; }
  uint32_t back() const { return (*this)[size() - 1]; }
  // Starts loading the memory that operator[](i) reads (a hint; no effect on results).
  void Prefetch(size_t i) const {
    if (!compact_) {
      __builtin_prefetch(plain_.data() + i);
    } else {
      __builtin_prefetch(rel_.get() + i);
    }
  }

  // Plain form only.
  uint32_t& operator[](size_t i) { return Plain()[i]; }
  uint32_t& back() { return Plain().back(); }
  void assign(size_t count, uint32_t value) { Plain().assign(count, value); }
  std::vector<uint32_t>& plain() { return Plain(); }
  const std::vector<uint32_t>& plain() const {
    if (compact_) std::abort();
    return plain_;
  }

  // Converts to the compact form (no-op if already compact). O(n); while it runs both forms are
  // held (the plain one is freed at the end). REQUIRES: non-decreasing values.
  void Compact() {
    if (compact_) return;
    size_ = plain_.size();
    const size_t blocks = BlockCount(size_);
    blocks_.reset(new Block[blocks]);
    rel_.reset(new uint8_t[size_]);
    wide_.clear();
    for (size_t b = 0; b < blocks; ++b) {
      const size_t first = b * kBlock;
      const size_t end = std::min(size_, first + kBlock);
      Block& block = blocks_[b];
      block.base = plain_[first];
      block.wide = kNarrow;
      if (plain_[end - 1] - block.base <= 0xffu) {
        for (size_t i = first; i < end; ++i) rel_[i] = static_cast<uint8_t>(plain_[i] - block.base);
      } else {
        block.wide = static_cast<uint32_t>(wide_.size() / kBlock);
        for (size_t i = first; i < first + kBlock; ++i) {
          rel_[std::min(i, size_ - 1)] = 0;
          wide_.push_back(plain_[std::min(i, size_ - 1)]);
        }
      }
    }
    wide_.shrink_to_fit();
    std::vector<uint32_t>().swap(plain_);
    compact_ = true;
  }

  // Bytes held by the values (either form).
  uint64_t MemoryUsage() const {
    if (!compact_) return plain_.size() * sizeof(uint32_t);
    return BlockCount(size_) * sizeof(Block) + size_ + wide_.size() * sizeof(uint32_t);
  }

  // Same values (whatever the forms).
  friend bool operator==(const CsrOffsets& a, const CsrOffsets& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

 private:
  static constexpr uint32_t kNarrow = 0xffffffffu;
  struct Block {
    uint32_t base;  // the block's first offset
    uint32_t wide;  // kNarrow, else the index of the block's row in wide_
  };
  static size_t BlockCount(size_t size) { return (size + kBlock - 1) / kBlock; }
  std::vector<uint32_t>& Plain() {
    if (compact_) std::abort();  // writing to a compact CsrOffsets
    return plain_;
  }

  std::vector<uint32_t> plain_{0};
  bool compact_ = false;
  size_t size_ = 0;  // compact form: number of values
  std::unique_ptr<Block[]> blocks_;
  std::unique_ptr<uint8_t[]> rel_;
  std::vector<uint32_t> wide_;
};

// Forward reference graph in CSR form. REQUIRES: offsets.size() == node_count + 1, offsets
// non-decreasing, offsets.front() == 0, offsets.back() == targets.size(), every target <
// node_count; weak.size() is either 0 (no weak references) or targets.size(); targets.size() <=
// kMaxCsrEdges.
struct CsrGraph {
  CsrOffsets offsets;
  std::vector<ObjectIndex> targets;
  // weak[e] is true when reference e is held only by java.lang.ref.Reference.referent (soft, weak,
  // phantom, final references). Algorithms that follow strong references first consult it.
  std::vector<bool> weak;

  uint32_t node_count() const { return static_cast<uint32_t>(offsets.size() - 1); }
  uint64_t edge_count() const { return targets.size(); }
  std::span<const ObjectIndex> successors(ObjectIndex v) const {
    return {targets.data() + offsets[v.value], targets.data() + offsets[v.value + 1]};
  }
  uint64_t first_edge(ObjectIndex v) const { return offsets[v.value]; }
  bool is_weak(uint64_t edge) const { return !weak.empty() && weak[edge]; }
};

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_CSR_GRAPH_H_
