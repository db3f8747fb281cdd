// main() of the e2e test binaries, in place of gtest_main: it runs the tests like gtest_main and
// also fails when no test ran. ctest runs each e2e test as `<binary> --gtest_filter=Suite.Name`;
// gtest 1.12 (Debian 12) exits 0 when the filter selects nothing (--gtest_fail_if_no_test_selected
// only exists from gtest 1.17 on), so without this a renamed or deleted test would pass.
#include <iostream>

#include "gtest/gtest.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  // --gtest_list_tests runs nothing by design.
  if (GTEST_FLAG_GET(list_tests)) return result;
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::cerr << "FAIL: no test matches --gtest_filter=" << GTEST_FLAG_GET(filter)
              << " (renamed or deleted? the ctest registration names a test that does not exist)"
              << std::endl;
    return 1;
  }
  return result;
}
