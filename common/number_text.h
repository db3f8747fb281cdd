// Whole numbers as people read them in reports: "1,234,567".
// Header-only (heapwatch::common is an interface library). Pure, thread-safe.
#ifndef HEAPWATCH_COMMON_NUMBER_TEXT_H_
#define HEAPWATCH_COMMON_NUMBER_TEXT_H_

#include <cstdint>
#include <string>

namespace heapwatch {

// `n` in decimal with a comma between groups of three digits: 0 -> "0", 1234 -> "1,234",
// 18446744073709551615 -> "18,446,744,073,709,551,615". O(digits).
inline std::string GroupedDigits(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace heapwatch

#endif  // HEAPWATCH_COMMON_NUMBER_TEXT_H_
