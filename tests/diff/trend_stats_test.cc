// Mann-Kendall and Theil-Sen against hand-computed values and brute-force oracles.
#include "diff/trend_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace heapwatch::diff {
namespace {

TEST(MannKendallTest, StrictlyIncreasingFivePoints) {
  // S = 10 (every pair concordant), Var = 5*4*15/18, exact P(S >= 10) = 1/5! (one permutation of
  // 120).
  std::vector<double> scratch;
  const std::vector<double> y = {1, 2, 3, 4, 5};
  const MannKendallResult r = MannKendall(y, &scratch);
  EXPECT_EQ(r.n, 5u);
  EXPECT_EQ(r.s, 10);
  EXPECT_EQ(r.tied_pairs, 0);
  EXPECT_DOUBLE_EQ(r.variance, 300.0 / 18.0);
  EXPECT_DOUBLE_EQ(r.z, 9.0 / std::sqrt(300.0 / 18.0));
  EXPECT_TRUE(r.exact);
  EXPECT_NEAR(r.p_value, 1.0 / 120.0, 1e-15);
  EXPECT_DOUBLE_EQ(r.tau, 1.0);
}

TEST(MannKendallTest, HandComputedWithOneTie) {
  // y = 3 1 4 1 5. Pairs by first element: 3:(-,+,-,+)=0, 1:(+,0,+)=+2, 4:(-,+)=0, 1:(+)=+1 -> S
  // = 3. One tie group of size 2: Var = (5*4*15 - 2*1*9) / 18 = 282/18. Z = (3-1)/sqrt(282/18).
  std::vector<double> scratch;
  const std::vector<double> y = {3, 1, 4, 1, 5};
  const MannKendallResult r = MannKendall(y, &scratch);
  EXPECT_EQ(r.s, 3);
  EXPECT_EQ(r.tied_pairs, 1);
  EXPECT_DOUBLE_EQ(r.variance, 282.0 / 18.0);
  EXPECT_DOUBLE_EQ(r.z, 2.0 / std::sqrt(282.0 / 18.0));
  EXPECT_FALSE(r.exact);
  EXPECT_NEAR(r.p_value, 0.30667717797737337, 1e-12);
  EXPECT_DOUBLE_EQ(r.tau, 0.3);
}

TEST(MannKendallTest, TwoTieGroupsStep) {
  // 10 10 10 20 20 20: the 9 cross pairs are concordant, the 6 within-group pairs tied -> S = 9.
  // Tie groups of 3 and 3: Var = (6*5*17 - 2*(3*2*11)) / 18 = 378/18 = 21; Z = 8/sqrt(21).
  std::vector<double> scratch;
  const std::vector<double> y = {10, 10, 10, 20, 20, 20};
  const MannKendallResult r = MannKendall(y, &scratch);
  EXPECT_EQ(r.s, 9);
  EXPECT_EQ(r.tied_pairs, 6);
  EXPECT_DOUBLE_EQ(r.variance, 21.0);
  EXPECT_NEAR(r.p_value, 0.04042779918502615, 1e-12);
}

TEST(MannKendallTest, NegativeTrendHasLargeUpperTailPValue) {
  std::vector<double> scratch;
  const std::vector<double> y = {6, 5, 4, 3, 2, 1};
  const MannKendallResult r = MannKendall(y, &scratch);
  EXPECT_EQ(r.s, -15);
  EXPECT_DOUBLE_EQ(r.z, -14.0 / std::sqrt(6 * 5 * 17 / 18.0));
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);  // P(S >= -15) = 1
  EXPECT_DOUBLE_EQ(r.tau, -1.0);
}

TEST(MannKendallTest, DegenerateInputs) {
  std::vector<double> scratch;
  EXPECT_EQ(MannKendall(std::vector<double>{}, &scratch).p_value, 1.0);
  EXPECT_EQ(MannKendall(std::vector<double>{7}, &scratch).s, 0);
  const MannKendallResult flat = MannKendall(std::vector<double>{4, 4, 4, 4}, &scratch);
  EXPECT_EQ(flat.s, 0);
  EXPECT_EQ(flat.variance, 0.0);  // 4*3*13 - 4*3*13 = 0
  EXPECT_EQ(flat.p_value, 1.0);
}

TEST(MannKendallTest, NormalApproximationFarFromExactAtSmallN) {
  // The reason for using the exact distribution at short windows (see trend_stats.h): n = 6, S
  // = 15.
  EXPECT_NEAR(MannKendallExactUpperTail(6, 15), 1.0 / 720.0, 1e-16);
  EXPECT_NEAR(NormalUpperTail(14.0 / std::sqrt(6 * 5 * 17 / 18.0)), 0.00427, 5e-5);
}

// Oracle: enumerate all n! permutations and count those with S >= s.
std::vector<int64_t> BruteForceSCounts(size_t n) {
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  const int64_t m = static_cast<int64_t>(n * (n - 1) / 2);
  std::vector<int64_t> counts(static_cast<size_t>(2 * m + 1), 0);  // index s + m
  do {
    int64_t s = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) s += (perm[j] > perm[i]) - (perm[j] < perm[i]);
    ++counts[static_cast<size_t>(s + m)];
  } while (std::next_permutation(perm.begin(), perm.end()));
  return counts;
}

TEST(MannKendallTest, ExactTailMatchesPermutationEnumeration) {
  for (size_t n = 1; n <= 8; ++n) {
    const std::vector<int64_t> counts = BruteForceSCounts(n);
    const int64_t m = static_cast<int64_t>(n * (n - 1) / 2);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    for (int64_t s = -m - 1; s <= m + 1; ++s) {
      double at_least = 0;
      for (int64_t t = std::max(s, -m); t <= m; ++t)
        at_least += static_cast<double>(counts[static_cast<size_t>(t + m)]);
      EXPECT_NEAR(MannKendallExactUpperTail(n, s), at_least / total, 1e-12)
          << "n=" << n << " s=" << s;
    }
  }
}

TEST(MannKendallTest, ExactTailKnownTableValues) {
  // Upper-tail probabilities as tabulated to three places for the Mann-Kendall test (Gilbert 1987,
  // Table A18): n = 4, S = 6 -> 0.042; n = 8, S = 16 -> 0.031; n = 10, S = 21 -> 0.036.
  EXPECT_NEAR(MannKendallExactUpperTail(4, 6), 1.0 / 24.0, 1e-15);
  EXPECT_NEAR(MannKendallExactUpperTail(8, 16), 0.031, 5e-4);
  EXPECT_NEAR(MannKendallExactUpperTail(10, 21), 0.036, 5e-4);
  // Symmetry: P(S >= s) + P(S >= -s + 2) = 1 for untied data (S takes every other integer).
  for (size_t n : {12u, 25u, 40u}) {
    const int64_t m = static_cast<int64_t>(n * (n - 1) / 2);
    for (int64_t s = -m; s <= m; s += 2) {
      EXPECT_NEAR(MannKendallExactUpperTail(n, s) + MannKendallExactUpperTail(n, -s + 2), 1.0,
                  1e-12);
    }
  }
}

TEST(MannKendallTest, NormalApproximationCloseToExactAtLargeN) {
  // Justifies switching to the normal approximation above n = 40: for p in [0.001, 0.05] the two
  // agree to within 4e-4 at n = 40 (at n = 6 the gap is 4e-3, three times the exact value).
  const size_t n = 40;
  const double var = n * (n - 1) * (2.0 * n + 5) / 18.0;
  int compared = 0;
  for (int64_t s = 2; s <= 780; s += 2) {  // S has the parity of n(n-1)/2 = 780
    const double exact = MannKendallExactUpperTail(n, s);
    if (exact > 0.05 || exact < 0.001) continue;
    ++compared;
    EXPECT_NEAR(NormalUpperTail((s - 1) / std::sqrt(var)), exact, 4e-4) << "s=" << s;
  }
  EXPECT_GT(compared, 20);
}

TEST(MannKendallTest, RandomSeriesMatchDirectDefinition) {
  std::mt19937_64 rng(42);
  std::vector<double> scratch;
  for (int iter = 0; iter < 500; ++iter) {
    const size_t n = 2 + rng() % 40;
    std::vector<double> y(n);
    for (double& v : y) v = static_cast<double>(rng() % 6);  // many ties
    int64_t s = 0, ties = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        s += (y[j] > y[i]) - (y[j] < y[i]);
        ties += y[j] == y[i];
      }
    double tie_term = 0;
    for (int v = 0; v < 6; ++v) {
      const double t = static_cast<double>(std::count(y.begin(), y.end(), v));
      tie_term += t * (t - 1) * (2 * t + 5);
    }
    const MannKendallResult r = MannKendall(y, &scratch);
    EXPECT_EQ(r.s, s);
    EXPECT_EQ(r.tied_pairs, ties);
    EXPECT_DOUBLE_EQ(r.variance, (n * (n - 1.0) * (2.0 * n + 5) - tie_term) / 18.0);
  }
}

TEST(TheilSenTest, HandComputedRegular) {
  // Slopes: (0,1)=2 (0,2)=0.5 (0,3)=4/3 (1,2)=-1 (1,3)=1 (2,3)=3; median of six = (1 + 4/3) / 2.
  std::vector<double> scratch;
  const std::vector<double> t = {0, 1, 2, 3};
  const std::vector<double> y = {1, 3, 2, 5};
  EXPECT_DOUBLE_EQ(TheilSenSlope(t, y, &scratch), (1.0 + 4.0 / 3.0) / 2.0);
}

TEST(TheilSenTest, HandComputedIrregularTimes) {
  // t = 0 1 3 4, y = 0 2 3 7. Slopes: 2, 1, 1.75, 0.5, 5/3, 4 -> median (5/3 + 1.75) / 2.
  std::vector<double> scratch;
  const std::vector<double> t = {0, 1, 3, 4};
  const std::vector<double> y = {0, 2, 3, 7};
  EXPECT_DOUBLE_EQ(TheilSenSlope(t, y, &scratch), (5.0 / 3.0 + 1.75) / 2.0);
  // Same through the precomputed-reciprocal entry point.
  std::vector<double> inv;
  for (size_t i = 0; i < t.size(); ++i)
    for (size_t j = i + 1; j < t.size(); ++j) inv.push_back(1.0 / (t[j] - t[i]));
  EXPECT_NEAR(TheilSenSlopePrecomputed(inv, y, &scratch), (5.0 / 3.0 + 1.75) / 2.0, 1e-12);
}

TEST(TheilSenTest, OddCountAndIntercept) {
  // t = 0 2 5, y = 1 5 4: slopes 2, 0.6, -1/3 -> median 0.6; intercept median(1, 3.8, 1) = 1.
  std::vector<double> scratch;
  const std::vector<double> t = {0, 2, 5};
  const std::vector<double> y = {1, 5, 4};
  const double slope = TheilSenSlope(t, y, &scratch);
  EXPECT_DOUBLE_EQ(slope, 0.6);
  EXPECT_DOUBLE_EQ(TheilSenIntercept(t, y, slope, &scratch), 1.0);
}

TEST(TheilSenTest, EqualTimesSkipped) {
  std::vector<double> scratch;
  const std::vector<double> t = {0, 0, 1};
  const std::vector<double> y = {0, 1, 3};
  EXPECT_DOUBLE_EQ(TheilSenSlope(t, y, &scratch), 2.5);  // pairs (0,2)=3 and (1,2)=2
  EXPECT_DOUBLE_EQ(TheilSenSlope(std::vector<double>{5}, std::vector<double>{1}, &scratch), 0.0);
}

TEST(TheilSenTest, RobustToOutliers) {
  // 20 points on y = 100 + 7t with 5 wild outliers (25%, under the ~29% breakdown point).
  std::vector<double> scratch, t, y;
  for (int i = 0; i < 20; ++i) {
    t.push_back(i * 1.5);
    y.push_back(100 + 7 * i * 1.5);
  }
  for (int i : {2, 7, 11, 15, 19}) y[i] = i % 2 ? 1e9 : -1e9;
  EXPECT_NEAR(TheilSenSlope(t, y, &scratch), 7.0, 0.8);
}

TEST(TheilSenTest, MatchesSortedMedianOnRandomData) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-100, 100);
  std::vector<double> scratch;
  for (int iter = 0; iter < 300; ++iter) {
    const size_t n = 2 + rng() % 30;
    std::vector<double> t(n), y(n);
    double now = 0;
    for (size_t i = 0; i < n; ++i) {
      now += 0.1 + (u(rng) + 100) / 50;
      t[i] = now;
      y[i] = u(rng);
    }
    std::vector<double> slopes;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) slopes.push_back((y[j] - y[i]) / (t[j] - t[i]));
    std::sort(slopes.begin(), slopes.end());
    const size_t m = slopes.size();
    const double median = m % 2 ? slopes[m / 2] : (slopes[m / 2 - 1] + slopes[m / 2]) / 2;
    EXPECT_DOUBLE_EQ(TheilSenSlope(t, y, &scratch), median);
  }
}

TEST(MedianTest, MatchesSortOnLargeInputsWithDuplicatesAndAdversarialOrders) {
  // Exercises the quickselect (ranges above 32 elements), its three-way partition (many equal
  // values) and its fallback (sorted, reversed and organ-pipe orders).
  std::mt19937_64 rng(99);
  std::vector<double> scratch;
  for (int iter = 0; iter < 2000; ++iter) {
    const size_t n = 1 + rng() % 700;
    std::vector<double> v(n);
    const int kind = iter % 5;
    for (size_t i = 0; i < n; ++i) {
      switch (kind) {
        case 0:
          v[i] = static_cast<double>(rng() % 1000000);
          break;
        case 1:
          v[i] = static_cast<double>(rng() % 3);
          break;  // heavy ties
        case 2:
          v[i] = static_cast<double>(i);
          break;  // sorted
        case 3:
          v[i] = static_cast<double>(n - i);
          break;  // reversed
        default:
          v[i] = static_cast<double>(std::min(i, n - i));
          break;  // organ pipe
      }
    }
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const double expected =
        n % 2 ? sorted[n / 2] : sorted[n / 2 - 1] + (sorted[n / 2] - sorted[n / 2 - 1]) / 2;
    EXPECT_EQ(Median(v, &scratch), expected) << "n=" << n << " kind=" << kind;
  }
}

TEST(MedianTest, EvenOddEmpty) {
  std::vector<double> scratch;
  EXPECT_EQ(Median(std::vector<double>{}, &scratch), 0.0);
  EXPECT_EQ(Median(std::vector<double>{3, 1, 2}, &scratch), 2.0);
  EXPECT_EQ(Median(std::vector<double>{4, 1, 3, 2}, &scratch), 2.5);
}

}  // namespace
}  // namespace heapwatch::diff
