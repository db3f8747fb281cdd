// Growing the per-class arrays of diff/ (internal to the module).
#ifndef HEAPWATCH_DIFF_GROW_H_
#define HEAPWATCH_DIFF_GROW_H_

#include <cstddef>
#include <vector>

namespace heapwatch::diff {

// Appends `n` zero elements to `v`, reserving at most an eighth more than needed when it must
// reallocate. The detectors' per-class arrays grow by one class at a time to megabytes per agent;
// std::vector's doubling would leave up to half of that allocated and unused. Amortized O(n) per
// call (geometric growth by 9/8).
template <typename T>
void GrowBy(std::vector<T>& v, size_t n) {
  const size_t size = v.size() + n;
  if (size > v.capacity()) v.reserve(size + size / 8);
  v.resize(size, T{});
}

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_GROW_H_
