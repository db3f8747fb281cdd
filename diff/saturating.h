// Saturating arithmetic for the byte and instance counts of diff/ (internal to the module).
#ifndef HEAPWATCH_DIFF_SATURATING_H_
#define HEAPWATCH_DIFF_SATURATING_H_

#include <cstdint>
#include <limits>

namespace heapwatch::diff {

// a + b, or UINT64_MAX when the sum overflows (a class summed over several class loaders, or a
// leak's bytes summed over its classes, never wraps around). O(1).
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  const uint64_t sum = a + b;
  return sum < a ? std::numeric_limits<uint64_t>::max() : sum;
}

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_SATURATING_H_
