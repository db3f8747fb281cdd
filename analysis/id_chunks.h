// IdChunks: raw object ids (addresses) collected in file order by a dump reader's first pass, in
// fixed-size chunks of 2^20 ids, so that gathering tens of millions of ids never copies them on a
// reallocation. The reader hands them to BulkHeapGraphBuilder::IndexObjects
// (analysis/heap_graph_builder.h), which sorts them into the graph's object numbering and frees the
// chunks one by one as it converts them.
//
// Memory: 8 bytes per id, plus at most one partly filled chunk (8 MiB).
// Thread-safety: none (one reader fills it).
#ifndef HEAPWATCH_ANALYSIS_ID_CHUNKS_H_
#define HEAPWATCH_ANALYSIS_ID_CHUNKS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heapwatch::analysis {

class IdChunks {
 public:
  static constexpr size_t kChunk = 1 << 20;
  // Appends `id`. Amortised O(1); allocates a new chunk every kChunk ids.
  void push_back(uint64_t id) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(id);
    ++size_;
  }
  size_t size() const { return size_; }
  void clear() {
    chunks_.clear();
    size_ = 0;
  }
  std::vector<std::vector<uint64_t>>& chunks() { return chunks_; }

 private:
  std::vector<std::vector<uint64_t>> chunks_;
  size_t size_ = 0;
};

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_ID_CHUNKS_H_
