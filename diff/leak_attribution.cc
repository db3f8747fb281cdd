#include "diff/leak_attribution.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace heapwatch::diff {
namespace {

struct Series {
  std::vector<uint64_t> bytes, instances;  // per histogram, 0 where the class has no row
};

struct Candidate {
  const std::string* name;
  const Series* series;
  double rate;  // bytes per second over the span
};

}  // namespace

std::optional<Attribution> AttributeLiveSetGrowth(std::span<const Snapshot> histograms,
                                                  double live_set_growth_bytes_per_second,
                                                  const AttributionOptions& options) {
  const double g = live_set_growth_bytes_per_second;
  if (histograms.size() < 2 || !(g > 0)) return std::nullopt;
  const double span = absl::ToDoubleSeconds(histograms.back().time - histograms.front().time);
  if (!(span > 0)) return std::nullopt;
  const size_t k = histograms.size() - 1;
  absl::flat_hash_map<std::string, Series> classes;
  uint64_t newest_total = 0;
  for (size_t i = 0; i < histograms.size(); ++i) {
    for (const ClassHistogramRow& row : histograms[i].histogram.rows) {
      auto [it, inserted] = classes.try_emplace(row.class_name);
      if (inserted) {
        it->second.bytes.assign(histograms.size(), 0);
        it->second.instances.assign(histograms.size(), 0);
      }
      it->second.bytes[i] += row.bytes;
      it->second.instances[i] += row.instances;
      if (i == k) newest_total += row.bytes;
    }
  }
  if (k == 1 && g * span < options.single_interval_min_growth * static_cast<double>(newest_total)) {
    return std::nullopt;  // one difference, and the growth does not stand out of the heap
  }
  std::vector<Candidate> candidates;
  for (const auto& [name, s] : classes) {
    bool grew = true;
    for (size_t i = 1; i <= k && grew; ++i) {
      grew = s.bytes[i] > s.bytes[i - 1] && s.instances[i] > s.instances[i - 1];
    }
    if (grew) candidates.push_back({&name, &s, static_cast<double>(s.bytes[k] - s.bytes[0]) / span});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.rate != b.rate ? a.rate > b.rate : *a.name < *b.name;
  });
  auto interval_rate = [&](const Series& s, size_t i) {
    const double dt = absl::ToDoubleSeconds(histograms[i].time - histograms[i - 1].time);
    return static_cast<double>(s.bytes[i] - s.bytes[i - 1]) / dt;
  };
  auto steady = [&](const Series& s) {
    double lo = interval_rate(s, 1), hi = lo;
    for (size_t i = 2; i <= k; ++i) {
      lo = std::min(lo, interval_rate(s, i));
      hi = std::max(hi, interval_rate(s, i));
    }
    return hi <= options.max_unsteadiness * lo;
  };
  // Whether c's instance increments are in step with the anchor's in every interval.
  auto in_step = [&](const Series& c, const Series& a) {
    if (&c == &a) return true;
    const double ratio = static_cast<double>(c.instances[k] - c.instances[0]) /
                         static_cast<double>(a.instances[k] - a.instances[0]);
    for (size_t i = 1; i <= k; ++i) {
      const double r = static_cast<double>(c.instances[i] - c.instances[i - 1]) /
                       static_cast<double>(a.instances[i] - a.instances[i - 1]);
      if (std::abs(r - ratio) > options.max_ratio_spread * ratio) return false;
    }
    return true;
  };
  // Big enough to be part of a leak of this growth (see the header).
  auto sizeable = [&](const Candidate& c) {
    return c.rate >= options.min_member_share * g &&
           (c.rate >= options.large_member_share * g ||
            c.rate * span >= options.min_member_relative_growth * static_cast<double>(c.series->bytes[0]));
  };
  const double needed = k == 1 ? options.min_explained_single : options.min_explained;
  // Every anchor's group that adds up; the one whose growth is closest to the live set's wins.
  std::optional<Attribution> best;
  double best_distance = 0;
  const size_t anchors = std::min(options.max_anchors, candidates.size());
  for (size_t a = 0; a < anchors; ++a) {
    const Candidate& anchor = candidates[a];
    if (anchor.rate < options.min_anchor_share * g) break;  // sorted: the rest are slower
    if (k >= 2 && !steady(*anchor.series)) continue;
    // The anchor's group: the sizeable candidates connected to it by being in step (an order's
    // String is in step with the order even where a churning byte[] blurs the payload's step).
    std::vector<const Candidate*> members{&anchor};
    std::vector<bool> taken(candidates.size(), false);
    taken[a] = true;
    for (size_t m = 0; m < members.size() && members.size() < options.max_classes; ++m) {
      for (size_t c = 0; c < candidates.size() && members.size() < options.max_classes; ++c) {
        if (taken[c] || !sizeable(candidates[c])) continue;
        if (k >= 2 && !in_step(*candidates[c].series, *members[m]->series)) continue;
        taken[c] = true;
        members.push_back(&candidates[c]);
      }
    }
    double sum = 0;
    for (const Candidate* c : members) sum += c->rate;
    std::sort(members.begin(), members.end(), [](const Candidate* x, const Candidate* y) {
      return x->rate != y->rate ? x->rate > y->rate : *x->name < *y->name;
    });
    if (sum < needed * g || sum > options.max_explained * g ||
        sum * span < static_cast<double>(options.min_growth_bytes)) {
      continue;
    }
    const double distance = std::abs(std::log(sum / g));
    if (best.has_value() && distance >= best_distance) continue;
    Attribution out;
    for (const Candidate* c : members) {
      out.classes.push_back({*c->name, c->series->bytes[k], c->rate});
      out.instances.push_back(c->series->instances[k]);
      out.instances_per_second.push_back(
          static_cast<double>(c->series->instances[k] - c->series->instances[0]) / span);
    }
    out.growth_bytes_per_second = sum;
    out.explained = sum / g;
    out.from = histograms.front().time;
    out.to = histograms.back().time;
    out.histograms = histograms.size();
    best = std::move(out);
    best_distance = distance;
  }
  return best;
}

}  // namespace heapwatch::diff
