#include "diff/trend_stats.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "common/status.h"

namespace heapwatch::diff {
namespace {

// Cumulative exact null distribution of the number of inversions of a random permutation of n
// elements (Mahonian numbers normalised to probabilities): cdf[n][k] = P(inversions <= k). For
// untied data, S = M - 2 * inversions with M = n(n-1)/2 (Kendall 1975 ch. 4). Built with the
// recurrence P_n(k) = (1/n) * sum_{j=0}^{min(k, n-1)} P_{n-1}(k - j) in doubles: every term is a
// probability, so there is no overflow (40! does not fit in 64 bits, its reciprocal fits in a
// double).
class ExactTable {
 public:
  ExactTable() {
    cdf_[0] = {1.0};
    std::vector<double> pmf_prev = {1.0};  // n = 1: one permutation, zero inversions
    cdf_[1] = {1.0};
    for (size_t n = 2; n <= kMannKendallExactMaxN; ++n) {
      const size_t max_inv = n * (n - 1) / 2;
      // prefix[k] = sum_{i<=k} pmf_prev[i]; a window sum is a difference of two prefix entries.
      std::vector<double> prefix(pmf_prev.size());
      double acc = 0;
      for (size_t i = 0; i < pmf_prev.size(); ++i) prefix[i] = (acc += pmf_prev[i]);
      std::vector<double> pmf(max_inv + 1);
      const size_t prev_max = pmf_prev.size() - 1;
      // The distribution is symmetric (pmf[k] == pmf[max_inv - k]); computing the lower half from
      // prefix sums and mirroring it keeps the small tail probabilities exact to relative precision
      // instead of leaving rounding residue of the prefix differences in the upper half.
      for (size_t k = 0; k <= max_inv / 2; ++k) {
        // Window of previous inversion counts k-(n-1) .. k, clipped to the previous support.
        const size_t lo = k >= n - 1 ? k - (n - 1) : 0;
        const size_t hi = std::min(k, prev_max);
        if (lo > hi) continue;
        const double sum = prefix[hi] - (lo > 0 ? prefix[lo - 1] : 0.0);
        pmf[k] = sum / static_cast<double>(n);
      }
      for (size_t k = max_inv / 2 + 1; k <= max_inv; ++k) pmf[k] = pmf[max_inv - k];
      std::vector<double> cdf(max_inv + 1);
      acc = 0;
      for (size_t k = 0; k <= max_inv; ++k) cdf[k] = (acc += pmf[k]);
      // Summation order makes the last entry 1 up to rounding; pin it so the tail never goes
      // negative.
      cdf.back() = 1.0;
      cdf_[n] = std::move(cdf);
      pmf_prev = std::move(pmf);
    }
  }

  // P(inversions <= k) for n elements.
  double Cdf(size_t n, int64_t k) const {
    const std::vector<double>& c = cdf_[n];
    if (k < 0) return 0.0;
    if (static_cast<size_t>(k) >= c.size()) return 1.0;
    return c[static_cast<size_t>(k)];
  }

 private:
  std::array<std::vector<double>, kMannKendallExactMaxN + 1> cdf_;
};

const ExactTable& Table() {
  static const ExactTable* table = new ExactTable();
  return *table;
}

// sum over tie groups of t(t-1)(2t+5), from sorted values.
double TieTerm(std::span<const double> sorted) {
  double term = 0;
  size_t i = 0;
  while (i < sorted.size()) {
    size_t j = i + 1;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    const double t = static_cast<double>(j - i);
    if (j - i > 1) term += t * (t - 1) * (2 * t + 5);
    i = j;
  }
  return term;
}

// Returns the k-th smallest value of v (0-based) and leaves v partitioned around it: every element
// before index k is <= v[k] (like std::nth_element). Quickselect with a median-of-3 pivot and a
// branchless three-way partition through `buffer`: each element is written to both ends of the
// buffer and the write cursors advance by the comparison results, so the loop has no data-dependent
// branch (std::nth_element's mispredicted branches dominated Theil-Sen's cost: about 2x slower on
// 435 slopes). After 64 rounds (adversarial input) it hands over to std::nth_element, so the worst
// case stays O(n log n).
double SelectKth(std::vector<double>& v, size_t k, std::vector<double>& buffer) {
  double* a = v.data();
  size_t lo = 0, hi = v.size();
  buffer.resize(v.size());
  double* b = buffer.data();
  for (int round = 0; hi - lo > 32; ++round) {
    if (round == 64) {
      std::nth_element(a + lo, a + k, a + hi);
      return a[k];
    }
    const double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
    const double pivot = std::max(std::min(x, y), std::min(std::max(x, y), z));
    const size_t len = hi - lo;
    size_t nl = 0, ng = 0;
    for (size_t i = lo; i < hi; ++i) {
      const double t = a[i];
      b[nl] = t;
      nl += static_cast<size_t>(t < pivot);
      b[len - 1 - ng] = t;
      ng += static_cast<size_t>(t > pivot);
    }
    // Lay the range out as [less | equal | greater].
    std::copy(b, b + nl, a + lo);
    std::fill(a + lo + nl, a + hi - ng, pivot);
    std::copy(b + len - ng, b + len, a + hi - ng);
    if (k < lo + nl) {
      hi = lo + nl;
    } else if (k < hi - ng) {
      return pivot;
    } else {
      lo = hi - ng;
    }
  }
  // Small range: insertion sort.
  for (size_t i = lo + 1; i < hi; ++i) {
    const double t = a[i];
    size_t j = i;
    for (; j > lo && a[j - 1] > t; --j) a[j] = a[j - 1];
    a[j] = t;
  }
  return a[k];
}

double MedianInPlace(std::vector<double>& v) {
  if (v.empty()) return 0.0;
  // The partition buffer is per thread: no allocation per call once it has grown, and the functions
  // stay safe to call concurrently.
  thread_local std::vector<double> buffer;
  const size_t mid = v.size() / 2;
  const double upper = SelectKth(v, mid, buffer);
  if (v.size() % 2 == 1) return upper;
  // The lower middle is the largest element of the first half after selection.
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

}  // namespace

double NormalUpperTail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double MannKendallExactUpperTail(size_t n, int64_t s) {
  HW_CHECK(n >= 1 && n <= kMannKendallExactMaxN);
  const int64_t m = static_cast<int64_t>(n * (n - 1) / 2);
  if (s > m) return 0.0;
  if (s <= -m) return 1.0;
  // S >= s  <=>  M - 2 inv >= s  <=>  inv <= (M - s) / 2 (floor; S and M have the same parity).
  const int64_t max_inv = (m - s) >= 0 ? (m - s) / 2 : -1;
  return Table().Cdf(n, max_inv);
}

MannKendallResult MannKendall(std::span<const double> values, std::vector<double>* scratch) {
  MannKendallResult r;
  const size_t n = values.size();
  r.n = n;
  if (n < 2) return r;
  int64_t s = 0;
  int64_t ties = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    const double yi = values[i];
    int64_t row = 0;
    int64_t row_ties = 0;
    for (size_t j = i + 1; j < n; ++j) {
      const double yj = values[j];
      row += static_cast<int64_t>(yj > yi) - static_cast<int64_t>(yj < yi);
      row_ties += static_cast<int64_t>(yj == yi);
    }
    s += row;
    ties += row_ties;
  }
  r.s = s;
  r.tied_pairs = ties;
  const double dn = static_cast<double>(n);
  const double pairs = dn * (dn - 1) / 2;
  r.tau = static_cast<double>(s) / pairs;
  double var = dn * (dn - 1) * (2 * dn + 5);
  if (ties > 0) {
    scratch->assign(values.begin(), values.end());
    std::sort(scratch->begin(), scratch->end());
    var -= TieTerm(*scratch);
  }
  var /= 18.0;
  r.variance = var;
  if (var <= 0) {  // every value tied: no evidence of anything
    r.z = 0;
    r.p_value = 1.0;
    return r;
  }
  const double sd = std::sqrt(var);
  r.z = s > 0 ? (static_cast<double>(s) - 1) / sd : s < 0 ? (static_cast<double>(s) + 1) / sd : 0.0;
  if (ties == 0 && n <= kMannKendallExactMaxN) {
    r.exact = true;
    r.p_value = MannKendallExactUpperTail(n, s);
  } else {
    r.p_value = NormalUpperTail(r.z);
  }
  return r;
}

double TheilSenSlope(std::span<const double> times, std::span<const double> values,
                     std::vector<double>* scratch) {
  HW_CHECK(times.size() == values.size());
  const size_t n = values.size();
  scratch->clear();
  for (size_t i = 0; i + 1 < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double dt = times[j] - times[i];
      if (dt == 0) continue;
      scratch->push_back((values[j] - values[i]) / dt);
    }
  }
  return MedianInPlace(*scratch);
}

double TheilSenSlopePrecomputed(std::span<const double> inverse_dt, std::span<const double> values,
                                std::vector<double>* scratch) {
  const size_t n = values.size();
  HW_CHECK(inverse_dt.size() == n * (n > 0 ? n - 1 : 0) / 2);
  scratch->resize(inverse_dt.size());
  double* out = scratch->data();
  size_t k = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    const double yi = values[i];
    for (size_t j = i + 1; j < n; ++j, ++k) out[k] = (values[j] - yi) * inverse_dt[k];
  }
  return MedianInPlace(*scratch);
}

double Median(std::span<const double> values, std::vector<double>* scratch) {
  scratch->assign(values.begin(), values.end());
  return MedianInPlace(*scratch);
}

double TheilSenIntercept(std::span<const double> times, std::span<const double> values,
                         double slope, std::vector<double>* scratch) {
  HW_CHECK(times.size() == values.size());
  scratch->resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) (*scratch)[i] = values[i] - slope * times[i];
  return MedianInPlace(*scratch);
}

}  // namespace heapwatch::diff
