// IdIndex: the raw object ids (addresses) of one heap graph, sorted, with O(1) expected lookup id
// -> dense index. Internal to HeapGraph and its producers (analysis/heap_graph_internal.h).
//
// Storage: when every id is base + k * 2^shift with k < 2^32 (HotSpot and Android heaps: 8-byte
// aligned addresses spanning less than 32 GiB), ids are kept as 32-bit keys k (4 bytes per object);
// otherwise as full 64-bit ids. Lookup goes through an address-bucket directory with about four ids
// per bucket (1 byte per object): dir[b] = first index whose key >> dir_shift >= b; then a short
// scan.
//
// Pack() (HeapGraph::Rep::Finish calls it once the graph is built and lookups become rare) stores
// the 32-bit keys in blocks of 64: the block's first key (4 bytes) and a 16-bit delta per id (2
// bytes), or, for the rare block whose keys span more than 65535 units (an array of more than 512
// KiB in it), its 64 keys in full; the directory then maps address buckets to blocks (about 1/64
// byte per id). About 2.2 bytes per id instead of 5. Id() stays O(1); Find() becomes two short
// binary searches (expected O(1): about one block per directory bucket, then 64 keys).
//
// Building sorts with an LSD radix sort on the keys (11-bit digits, digit passes that cannot change
// the order skipped), so a nearly sorted heap-dump order costs a few linear passes; the 64-bit
// fallback uses std::sort. Peak memory while building: the unsorted ids (8 bytes per id, in 1 Mi-id
// chunks freed as they are converted) then 8 bytes per id for the keys and the radix buffer.
//
// Thread-safety: immutable after Build; concurrent lookups are safe.
#ifndef HEAPWATCH_ANALYSIS_ID_INDEX_H_
#define HEAPWATCH_ANALYSIS_ID_INDEX_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/id_chunks.h"

namespace heapwatch::analysis {

class IdIndex {
 public:
  static constexpr uint32_t kAbsent = 0xffffffffu;

  // Sorts `ids` (consumed), drops duplicates (their number is returned in *duplicates) and builds
  // the directory. O(n) for the 32-bit case, O(n log n) otherwise.
  void Build(IdChunks&& ids, uint64_t* duplicates);
  // As Build, for ids gathered in two parts: `main` (ascending when `main_ascending`) and `others`
  // (any order, e.g. the class objects of a dump). When `main` is ascending and the ids fit 32-bit
  // keys, `others` alone is sorted and merged in: O(n + m log m).
  void BuildFromParts(IdChunks&& main, bool main_ascending, IdChunks&& others,
                      uint64_t* duplicates);
  // Builds from ids that are already sorted and unique (REQUIRES).
  void BuildSorted(const std::vector<uint64_t>& ids);

  // Packs the 32-bit keys (see the file comment); no-op for 64-bit ids or when already packed.
  // O(n); frees the unpacked keys. Build* unpack again.
  void Pack();

  size_t size() const {
    return compact_ ? (packed_ ? deltas_.size() : keys_.size()) : wide_.size();
  }
  bool empty() const { return size() == 0; }
  uint64_t Id(uint32_t v) const {
    return compact_ ? base_ + (static_cast<uint64_t>(CompactKey(v)) << shift_) : wide_[v];
  }
  // The index of `id`, or kAbsent.
  uint32_t Find(uint64_t id) const {
    uint64_t key;
    if (!KeyOf(id, &key)) return kAbsent;
    return FindKey(key);
  }
  // As Find, but tries `hint` (the expected index) first: O(1) for ids met in ascending order.
  uint32_t FindNear(uint64_t id, uint32_t hint) const {
    if (hint < size() && Id(hint) == id) return hint;
    return Find(id);
  }
  uint64_t MemoryUsage() const {
    return keys_.capacity() * 4 + wide_.capacity() * 8 + dir_.capacity() * 4 +
           deltas_.capacity() * 2 + blocks_.capacity() * sizeof(Block) + wide_keys_.capacity() * 4;
  }
  bool compact() const { return compact_; }

 private:
  bool KeyOf(uint64_t id, uint64_t* key) const {
    if (id < base_) return false;
    uint64_t d = id - base_;
    if (compact_) {
      if (d & ((uint64_t{1} << shift_) - 1)) return false;
      d >>= shift_;
    }
    if (d > max_key_) return false;
    *key = d;
    return true;
  }
  static constexpr uint32_t kBlock = 64;
  static constexpr uint32_t kNarrow = 0xffffffffu;
  struct Block {
    uint32_t first;  // key of the block's first id
    uint32_t wide;   // kNarrow: keys are first + deltas_[v]; else row in wide_keys_
  };
  uint32_t CompactKey(uint32_t v) const {
    if (!packed_) return keys_[v];
    const Block& b = blocks_[v / kBlock];
    if (b.wide == kNarrow) [[likely]]
      return b.first + deltas_[v];
    return wide_keys_[size_t{b.wide} * kBlock + v % kBlock];
  }
  uint64_t KeyAt(uint32_t v) const { return compact_ ? CompactKey(v) : wide_[v] - base_; }
  uint32_t FindKey(uint64_t key) const;
  uint32_t FindPackedKey(uint64_t key) const;
  void BuildDirectory();
  void Unpack();

  bool compact_ = true;
  uint64_t base_ = 0;
  uint32_t shift_ = 0;
  uint64_t max_key_ = 0;
  std::vector<uint32_t> keys_;
  std::vector<uint64_t> wide_;
  uint32_t dir_shift_ = 0;
  // Unpacked: dir_[b] = first index whose key >> dir_shift_ >= b. Packed: the same over blocks'
  // first keys (first block index).
  std::vector<uint32_t> dir_;
  bool packed_ = false;
  std::vector<uint16_t> deltas_;
  std::vector<Block> blocks_;
  std::vector<uint32_t> wide_keys_;
};

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_ID_INDEX_H_
