// Rank statistics for trend detection: the Mann-Kendall trend test and the Theil-Sen slope.
//
// These are the statistical building blocks of diff/trend_detector.h. They are public so that they
// can be tested against hand-computed values and reused (e.g. by reports), but most callers want
// TrendDetector.
//
// Sources:
//   - H. B. Mann, "Nonparametric tests against trend", Econometrica 13(3):245-259, 1945.
//   - M. G. Kendall, "Rank Correlation Methods", 4th ed., Griffin, London, 1975 (exact null
//     distribution of S for untied data, ch. 4; variance of S with ties, eq. 4.3).
//   - R. O. Gilbert, "Statistical Methods for Environmental Pollution Monitoring", Van Nostrand
//     Reinhold, 1987, ch. 16 (Mann-Kendall test: S, Var(S) with tie correction eq. 16.4, Z with
//     continuity correction eq. 16.5; Sen's slope estimator section 16.5).
//   - R. M. Hirsch, J. R. Slack, R. A. Smith, "Techniques of trend analysis for monthly water
//     quality data", Water Resources Research 18(1):107-121, 1982 (tie-corrected variance,
//     continuity correction).
//   - H. Theil, "A rank-invariant method of linear and polynomial regression analysis", Proc.
//     Koninklijke Nederlandse Akademie van Wetenschappen 53, 1950.
//   - P. K. Sen, "Estimates of the regression coefficient based on Kendall's tau", JASA
//     63:1379-1389, 1968.
//
// Thread-safety: every function here is a pure function of its arguments (the exact-distribution
// table is built once, on first use, under C++'s thread-safe static initialisation; medians use a
// thread_local partition buffer), so all of them may be called concurrently from any thread.
// Functions taking a `scratch` vector write only to that vector (and their thread's buffer).
#ifndef HEAPWATCH_DIFF_TREND_STATS_H_
#define HEAPWATCH_DIFF_TREND_STATS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace heapwatch::diff {

// Largest series length for which MannKendall() uses the exact null distribution of S (when the
// series has no ties). At n = 40 the normal approximation is within 4e-4 of the exact tail for p in
// [0.001, 0.05] (tested), good enough beyond it.
inline constexpr size_t kMannKendallExactMaxN = 40;

// Result of a one-sided (upward) Mann-Kendall trend test on a series y[0..n) in time order.
struct MannKendallResult {
  size_t n = 0;            // number of observations
  int64_t s = 0;           // S = sum over i<j of sign(y[j] - y[i]); in [-n(n-1)/2, n(n-1)/2]
  int64_t tied_pairs = 0;  // number of pairs i<j with y[i] == y[j]
  // Var(S) under H0 with the tie correction (Kendall 1975 eq. 4.3; Gilbert 1987 eq. 16.4).
  double variance = 0;
  // (S-1)/sqrt(Var) if S>0, (S+1)/sqrt(Var) if S<0, 0 if S==0 (Gilbert 1987 eq. 16.5).
  double z = 0;
  double p_value = 1;  // P(S' >= S | no trend): one-sided, upward alternative; in (0, 1]
  bool exact = false;  // true when p_value comes from the exact distribution (no ties, n <= 40)
  // Kendall's tau-a = S / (n(n-1)/2), in [-1, 1]; 0 when n < 2. 1 means every later value is
  // larger.
  double tau = 0;
};

// Runs the one-sided Mann-Kendall test for an upward trend on `values` (in time order; only their
// order matters, timestamps do not). Exactness: when the series has no ties and n <=
// kMannKendallExactMaxN, the p-value is the exact upper tail P(S >= s) of S's permutation
// distribution (Kendall 1975 ch. 4, computed from the number of permutations of n with k
// inversions), because at the short windows heapwatch uses (6-12 points) the normal approximation
// is off by a factor of up to 3 (n=6, S=15: exact 0.0014, normal 0.0043). With ties (or n > 40) it
// uses the normal approximation with the tie-corrected variance and the continuity correction
// (Gilbert 1987 eqs. 16.4-16.5), which is what Gilbert and Hirsch & Slack recommend; an exact
// tie-aware distribution would cost a permutation enumeration per series. n < 2 gives S = 0 and
// p_value = 1. If every value is tied, Var(S) = 0 and p_value = 1. `scratch` is reused to sort a
// copy of the values when there are ties (no allocation once it has grown). Complexity: O(n^2)
// comparisons, plus O(n log n) when there are ties. Values must not be NaN.
MannKendallResult MannKendall(std::span<const double> values, std::vector<double>* scratch);

// Exact upper tail P(S >= s) of the Mann-Kendall statistic for n untied observations under H0
// (every permutation equally likely). REQUIRES: 1 <= n <= kMannKendallExactMaxN. Returns 1 for s <=
// -n(n-1)/2 and 0 for s > n(n-1)/2. Complexity: O(1) after a one-time O(N^3) table build (N = 40:
// about 10^4 entries).
double MannKendallExactUpperTail(size_t n, int64_t s);

// Upper tail of the standard normal distribution, P(Z >= z) = erfc(z / sqrt(2)) / 2.
double NormalUpperTail(double z);

// Theil-Sen slope (Theil 1950, Sen 1968): the median of the pairwise slopes (y[j]-y[i]) /
// (t[j]-t[i]) over all pairs i<j with t[j] != t[i]; with an even number of slopes, the mean of the
// two middle ones. Units: units of y per unit of t (bytes per second when y is bytes and t
// seconds). `times` may be irregular (jittered, gaps) and need not be sorted, but must be finite.
// Returns 0 when there is no pair with distinct times (n < 2). REQUIRES: times.size() ==
// values.size(). Breakdown point ~29%: up to that share of arbitrary outliers cannot move the
// estimate arbitrarily. Complexity: O(n^2) time (slopes, then a quickselect); `scratch` holds the
// n(n-1)/2 slopes.
double TheilSenSlope(std::span<const double> times, std::span<const double> values,
                     std::vector<double>* scratch);

// Same as TheilSenSlope, but with the reciprocal time differences precomputed by the caller, which
// lets a caller evaluating many series at the same timestamps replace the divisions by
// multiplications. `inverse_dt` holds, in the order (0,1),(0,2)..(0,n-1),(1,2)..(n-2,n-1),
// 1/(t[j]-t[i]) for every pair i<j. REQUIRES: strictly increasing times (so every pair counts) and
// inverse_dt.size() == n(n-1)/2.
double TheilSenSlopePrecomputed(std::span<const double> inverse_dt, std::span<const double> values,
                                std::vector<double>* scratch);

// Median of `values` (the mean of the two middle values for an even count); 0 for an empty span.
// Complexity O(n) expected, O(n log n) worst case (quickselect on a copy in `scratch`).
double Median(std::span<const double> values, std::vector<double>* scratch);

// Theil-Sen intercept (Conover's estimator, as in Gilbert 1987 section 16.5): the median of
// y[i] - slope * t[i]. The fitted line is y = intercept + slope * t.
// REQUIRES: times.size() == values.size(). Complexity O(n) expected.
double TheilSenIntercept(std::span<const double> times, std::span<const double> values,
                         double slope, std::vector<double>* scratch);

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_TREND_STATS_H_
