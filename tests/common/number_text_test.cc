// common/number_text.h: digit groups at every length, 0 and the largest value.
#include "common/number_text.h"

#include <gtest/gtest.h>

#include <limits>

namespace heapwatch {
namespace {

TEST(GroupedDigitsTest, CommasBetweenGroupsOfThree) {
  EXPECT_EQ(GroupedDigits(0), "0");
  EXPECT_EQ(GroupedDigits(7), "7");
  EXPECT_EQ(GroupedDigits(999), "999");
  EXPECT_EQ(GroupedDigits(1000), "1,000");
  EXPECT_EQ(GroupedDigits(1234), "1,234");
  EXPECT_EQ(GroupedDigits(99'938), "99,938");
  EXPECT_EQ(GroupedDigits(100'000), "100,000");
  EXPECT_EQ(GroupedDigits(1'234'567), "1,234,567");
  EXPECT_EQ(GroupedDigits(std::numeric_limits<uint64_t>::max()), "18,446,744,073,709,551,615");
}

}  // namespace
}  // namespace heapwatch
