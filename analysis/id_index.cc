#include "analysis/id_index.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace heapwatch::analysis {
namespace {

// LSD radix sort of 32-bit keys with 11-bit digits; a digit pass is skipped when every key has the
// same digit (then the pass cannot change the order).
void RadixSort(std::vector<uint32_t>& keys) {
  if (keys.size() < 2 || std::is_sorted(keys.begin(), keys.end())) return;
  std::vector<uint32_t> tmp(keys.size());
  for (int shift = 0; shift < 32; shift += 11) {
    uint32_t count[2049] = {0};
    for (uint32_t k : keys) ++count[((k >> shift) & 2047) + 1];
    bool trivial = false;
    for (int d = 1; d <= 2048; ++d) {
      if (count[d] == keys.size()) trivial = true;
    }
    if (trivial) continue;
    for (int d = 1; d <= 2048; ++d) count[d] += count[d - 1];
    for (uint32_t k : keys) tmp[count[(k >> shift) & 2047]++] = k;
    keys.swap(tmp);
  }
}

}  // namespace

void IdIndex::Unpack() {
  packed_ = false;
  std::vector<uint16_t>().swap(deltas_);
  std::vector<Block>().swap(blocks_);
  std::vector<uint32_t>().swap(wide_keys_);
}

void IdIndex::Pack() {
  if (!compact_ || packed_) return;
  const size_t n = keys_.size();
  const size_t blocks = (n + kBlock - 1) / kBlock;
  deltas_.assign(n, 0);
  blocks_.assign(blocks, Block{0, kNarrow});
  wide_keys_.clear();
  for (size_t b = 0; b < blocks; ++b) {
    const size_t first = b * kBlock;
    const size_t end = std::min(n, first + kBlock);
    Block& block = blocks_[b];
    block.first = keys_[first];
    if (keys_[end - 1] - keys_[first] <= 0xffffu) {
      for (size_t v = first; v < end; ++v)
        deltas_[v] = static_cast<uint16_t>(keys_[v] - block.first);
    } else {
      block.wide = static_cast<uint32_t>(wide_keys_.size() / kBlock);
      for (size_t v = first; v < first + kBlock; ++v)
        wide_keys_.push_back(keys_[std::min(v, end - 1)]);
    }
  }
  wide_keys_.shrink_to_fit();
  std::vector<uint32_t>().swap(keys_);
  packed_ = true;
  // Directory over blocks: about one block per bucket.
  dir_shift_ = 0;
  const uint64_t max_buckets = std::max<uint64_t>(1, blocks);
  // (key >> shift) + 1 > max_buckets, without the overflow of a key near 2^64; at most 63.
  while (dir_shift_ < 63 && (max_key_ >> dir_shift_) >= max_buckets) ++dir_shift_;
  const uint64_t buckets = (max_key_ >> dir_shift_) + 1;
  std::vector<uint32_t>(buckets + 1, 0).swap(dir_);
  size_t j = 0;
  for (uint64_t bucket = 0; bucket < buckets; ++bucket) {
    while (j < blocks && (uint64_t{blocks_[j].first} >> dir_shift_) < bucket) ++j;
    dir_[bucket] = static_cast<uint32_t>(j);
  }
  dir_[buckets] = static_cast<uint32_t>(blocks);
}

uint32_t IdIndex::FindPackedKey(uint64_t key) const {
  // The block holding `key` is the last one whose first key is <= key. Blocks before dir_[bucket]
  // start in earlier buckets (so below key), blocks from dir_[bucket + 1] on start above it.
  const uint64_t bucket = key >> dir_shift_;
  uint32_t lo = dir_[bucket] == 0 ? 0 : dir_[bucket] - 1;
  uint32_t hi = dir_[bucket + 1];  // exclusive
  if (lo >= hi || blocks_[lo].first > key) return kAbsent;
  while (hi - lo > 1) {  // invariant: blocks_[lo].first <= key, and every block >= hi is above key
    const uint32_t mid = lo + (hi - lo) / 2;
    if (blocks_[mid].first <= key) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  uint32_t a = lo * kBlock;
  uint32_t b = static_cast<uint32_t>(std::min<size_t>(deltas_.size(), size_t{a} + kBlock));
  while (b - a > 1) {  // invariant: CompactKey(a) <= key; keys from b on are above key
    const uint32_t mid = a + (b - a) / 2;
    if (CompactKey(mid) <= key) {
      a = mid;
    } else {
      b = mid;
    }
  }
  return CompactKey(a) == key ? a : kAbsent;
}

void IdIndex::Build(IdChunks&& ids, uint64_t* duplicates) {
  Unpack();
  *duplicates = 0;
  keys_.clear();
  wide_.clear();
  const size_t n = ids.size();
  uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  for (const auto& chunk : ids.chunks()) {
    for (uint64_t id : chunk) {
      lo = std::min(lo, id);
      hi = std::max(hi, id);
    }
  }
  if (n == 0) lo = hi = 0;
  uint64_t bits = 0;
  for (const auto& chunk : ids.chunks()) {
    for (uint64_t id : chunk) bits |= id - lo;
  }
  base_ = lo;
  shift_ = bits == 0 ? 0 : static_cast<uint32_t>(std::countr_zero(bits));
  compact_ = ((hi - lo) >> shift_) <= std::numeric_limits<uint32_t>::max();
  if (compact_) {
    keys_.reserve(n);
    for (auto& chunk : ids.chunks()) {
      for (uint64_t id : chunk) keys_.push_back(static_cast<uint32_t>((id - lo) >> shift_));
      std::vector<uint64_t>().swap(chunk);
    }
    RadixSort(keys_);
    auto last = std::unique(keys_.begin(), keys_.end());
    *duplicates = static_cast<uint64_t>(keys_.end() - last);
    keys_.erase(last, keys_.end());
    keys_.shrink_to_fit();
    max_key_ = keys_.empty() ? 0 : keys_.back();
  } else {
    shift_ = 0;
    wide_.reserve(n);
    for (auto& chunk : ids.chunks()) {
      wide_.insert(wide_.end(), chunk.begin(), chunk.end());
      std::vector<uint64_t>().swap(chunk);
    }
    if (!std::is_sorted(wide_.begin(), wide_.end())) std::sort(wide_.begin(), wide_.end());
    auto last = std::unique(wide_.begin(), wide_.end());
    *duplicates = static_cast<uint64_t>(wide_.end() - last);
    wide_.erase(last, wide_.end());
    wide_.shrink_to_fit();
    max_key_ = wide_.empty() ? 0 : wide_.back() - base_;
  }
  ids.clear();
  BuildDirectory();
}

void IdIndex::BuildFromParts(IdChunks&& main, bool main_ascending, IdChunks&& others,
                             uint64_t* duplicates) {
  Unpack();
  if (!main_ascending) {
    for (auto& chunk : others.chunks()) {
      for (uint64_t id : chunk) main.push_back(id);
      std::vector<uint64_t>().swap(chunk);
    }
    Build(std::move(main), duplicates);
    return;
  }
  *duplicates = 0;
  keys_.clear();
  wide_.clear();
  uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  for (IdChunks* part : {&main, &others}) {
    for (const auto& chunk : part->chunks()) {
      for (uint64_t id : chunk) {
        lo = std::min(lo, id);
        hi = std::max(hi, id);
      }
    }
  }
  const size_t n = main.size() + others.size();
  if (n == 0) lo = hi = 0;
  uint64_t bits = 0;
  for (IdChunks* part : {&main, &others}) {
    for (const auto& chunk : part->chunks()) {
      for (uint64_t id : chunk) bits |= id - lo;
    }
  }
  uint32_t shift = bits == 0 ? 0 : static_cast<uint32_t>(std::countr_zero(bits));
  if (((hi - lo) >> shift) > std::numeric_limits<uint32_t>::max()) {
    for (auto& chunk : others.chunks()) {
      for (uint64_t id : chunk) main.push_back(id);
    }
    others.clear();
    Build(std::move(main), duplicates);
    return;
  }
  compact_ = true;
  base_ = lo;
  shift_ = shift;
  std::vector<uint32_t> small;
  small.reserve(others.size());
  for (const auto& chunk : others.chunks()) {
    for (uint64_t id : chunk) small.push_back(static_cast<uint32_t>((id - lo) >> shift));
  }
  others.clear();
  std::sort(small.begin(), small.end());
  keys_.reserve(n);
  size_t j = 0;
  for (auto& chunk : main.chunks()) {
    for (uint64_t id : chunk) {
      uint32_t k = static_cast<uint32_t>((id - lo) >> shift);
      while (j < small.size() && small[j] <= k) keys_.push_back(small[j++]);
      keys_.push_back(k);
    }
    std::vector<uint64_t>().swap(chunk);
  }
  while (j < small.size()) keys_.push_back(small[j++]);
  main.clear();
  auto last = std::unique(keys_.begin(), keys_.end());
  *duplicates = static_cast<uint64_t>(keys_.end() - last);
  keys_.erase(last, keys_.end());
  keys_.shrink_to_fit();
  max_key_ = keys_.empty() ? 0 : keys_.back();
  BuildDirectory();
}

void IdIndex::BuildSorted(const std::vector<uint64_t>& ids) {
  IdChunks chunks;
  for (uint64_t id : ids) chunks.push_back(id);
  uint64_t duplicates = 0;
  Build(std::move(chunks), &duplicates);
}

void IdIndex::BuildDirectory() {
  const size_t n = size();
  dir_shift_ = 0;
  uint64_t max_buckets = std::max<uint64_t>(1, n / 4);
  // (key >> shift) + 1 > max_buckets, without the overflow of a key near 2^64; at most 63.
  while (dir_shift_ < 63 && (max_key_ >> dir_shift_) >= max_buckets) ++dir_shift_;
  uint64_t buckets = (max_key_ >> dir_shift_) + 1;
  dir_.assign(buckets + 1, 0);
  size_t j = 0;
  for (uint64_t b = 0; b < buckets; ++b) {
    while (j < n && (KeyAt(static_cast<uint32_t>(j)) >> dir_shift_) < b) ++j;
    dir_[b] = static_cast<uint32_t>(j);
  }
  dir_[buckets] = static_cast<uint32_t>(n);
}

uint32_t IdIndex::FindKey(uint64_t key) const {
  if (packed_) return FindPackedKey(key);
  uint64_t b = key >> dir_shift_;
  uint32_t lo = dir_[b];
  uint32_t hi = dir_[b + 1];
  while (hi - lo > 8) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (KeyAt(mid) <= key) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  for (uint32_t i = lo; i < hi; ++i) {
    uint64_t k = KeyAt(i);
    if (k == key) return i;
    if (k > key) break;
  }
  return kAbsent;
}

}  // namespace heapwatch::analysis
