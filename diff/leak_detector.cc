#include "diff/leak_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "diff/saturating.h"
#include "diff/trend_stats.h"

namespace heapwatch::diff {
namespace {

// The cycle veto keeps, per class, the maximum of each slot of two rings: 64 slots of a minute (the
// last hour, so that short periods are recognised as soon as their previous peak is a minute old)
// and 104 slots of cycle_lookback / 104 (15 min at 26 h).
constexpr size_t kFineSlots = 64;
constexpr int64_t kFineSlotMicros = 60'000'000;
constexpr size_t kCoarseSlots = 104;
constexpr size_t kMaxEpisodes = 10'000;
// The typical collection interval is the median of this many most recent intervals.
constexpr size_t kIntervalHistory = 16;
// Classes that never reach min_growth_bytes / kTrackDivisor in a bucket are not given to that
// scale.
constexpr uint64_t kTrackDivisor = 4;
// A scale is used once its buckets hold at least this many snapshots on average (below that, its
// buckets repeat scale 0 and bring nothing but more evaluations).
constexpr double kMinSnapshotsPerBucket = 1.0;
// Grouping: two series whose increments have a median absolute deviation of at most this fraction
// of their median increment grow "evenly" (their increments cannot tell them apart).
constexpr double kEvenGrowthDispersion = 0.2;
// Bucketed scales' recent-trend test (TrendOptions::recent_max_p_value): rejects one-time steps
// inside their long windows.
constexpr double kScaleRecentMaxP = 0.05;
// The bucketed scales' records must beat noise by this many standard deviations
// (TrendOptions::record_noise_sigmas).
constexpr double kRecordNoiseSigmas = 2;
// Grouping by correlation looks at most at this many suspects (the fastest growing).
constexpr size_t kMaxCorrelated = 256;
// The cycle veto's margin above the past peak, as a fraction of G.
constexpr double kVetoMarginOfG = 0.25;
// Least number of increments for a correlation.
constexpr size_t kMinIncrements = 4;

Status Bad(const char* field, const std::string& value, const char* range) {
  return absl::InvalidArgumentError(
      absl::StrFormat("LeakOptions.%s = %s not in %s", field, value, range));
}

// floor(a / b) for b > 0.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && (a < 0)) --q;
  return q;
}

// FNV-1a, 64 bits: a stable hash for leak ids (std::hash is not stable across builds).
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}


// Kendall's tau-a between two equally long series: (concordant - discordant) / pairs. O(n^2).
double KendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 2) return 0;
  int64_t s = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double da = a[j] - a[i], db = b[j] - b[i];
      const int sa = (da > 0) - (da < 0), sb = (db > 0) - (db < 0);
      s += sa * sb;
    }
  }
  return static_cast<double>(s) / (static_cast<double>(n) * static_cast<double>(n - 1) / 2);
}

// True when increments are nearly all alike: MAD <= kEvenGrowthDispersion * median > 0.
bool EvenGrowth(const std::vector<double>& increments, std::vector<double>* scratch) {
  if (increments.empty()) return false;
  const double median = Median(increments, scratch);
  if (!(median > 0)) return false;
  std::vector<double> deviations(increments.size());
  for (size_t i = 0; i < increments.size(); ++i) deviations[i] = std::abs(increments[i] - median);
  return Median(deviations, scratch) <= kEvenGrowthDispersion * median;
}

// Union-find over suspects, with at most one accumulation point (object id) per component.
class Components {
 public:
  explicit Components(size_t n) : parent_(n), point_(n) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  size_t Find(size_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void SetPoint(size_t x, const std::string& id) { point_[Find(x)] = id; }
  // Joins unless both components name different accumulation points. Returns true when joined.
  bool Join(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return true;
    if (!point_[a].empty() && !point_[b].empty() && point_[a] != point_[b]) return false;
    if (b < a) std::swap(a, b);
    parent_[b] = a;
    if (point_[a].empty()) point_[a] = point_[b];
    return true;
  }

 private:
  std::vector<size_t> parent_;
  std::vector<std::string> point_;
};

}  // namespace

Status ValidateLeakOptions(const LeakOptions& o) {
  HW_RETURN_IF_ERROR(ValidateTrendOptions(o.trend));
  if (o.min_time_scale < absl::Seconds(1) || o.min_time_scale > absl::Hours(24)) {
    return Bad("min_time_scale", absl::FormatDuration(o.min_time_scale), "[1s, 24h]");
  }
  if (o.max_time_scale < o.min_time_scale || o.max_time_scale > absl::Hours(24 * 30)) {
    return Bad("max_time_scale", absl::FormatDuration(o.max_time_scale), "[min_time_scale, 720h]");
  }
  const size_t min_min = std::max<size_t>(4, 2 * o.trend.segments);
  if (o.scale_window_buckets < min_min || o.scale_window_buckets > kMannKendallExactMaxN) {
    return Bad("scale_window_buckets", absl::StrFormat("%d", o.scale_window_buckets),
               absl::StrFormat("[max(4, 2 * trend.segments) = %d, 40]", min_min).c_str());
  }
  if (o.scale_min_buckets < min_min || o.scale_min_buckets > o.scale_window_buckets) {
    return Bad("scale_min_buckets", absl::StrFormat("%d", o.scale_min_buckets),
               "[max(4, 2 * trend.segments), scale_window_buckets]");
  }
  if (o.trend.recent_snapshots > o.scale_min_buckets / 2) {
    return Bad("scale_min_buckets", absl::StrFormat("%d", o.scale_min_buckets),
               "[2 * trend.recent_snapshots, scale_window_buckets]");
  }
  if (o.scale_lookback_buckets < o.scale_window_buckets || o.scale_lookback_buckets > 4096) {
    return Bad("scale_lookback_buckets", absl::StrFormat("%d", o.scale_lookback_buckets),
               "[scale_window_buckets, 4096]");
  }
  if (o.cycle_lookback < absl::ZeroDuration() || o.cycle_lookback > absl::Hours(24 * 30)) {
    return Bad("cycle_lookback", absl::FormatDuration(o.cycle_lookback), "[0, 720h]");
  }
  if (!(o.group_min_correlation >= -1 && o.group_min_correlation <= 1)) {
    return Bad("group_min_correlation", absl::StrFormat("%g", o.group_min_correlation), "[-1, 1]");
  }
  return absl::OkStatus();
}

bool IsJdkClass(std::string_view name) {
  while (name.size() >= 2 && name.substr(name.size() - 2) == "[]") name.remove_suffix(2);
  static constexpr std::string_view kPrimitives[] = {"boolean", "byte", "char",  "short",
                                                     "int",     "long", "float", "double"};
  for (std::string_view p : kPrimitives) {
    if (name == p) return true;
  }
  static constexpr std::string_view kPrefixes[] = {"java.",    "javax.",   "jdk.",     "sun.",
                                                   "com.sun.", "org.w3c.", "org.xml.", "org.ietf."};
  for (std::string_view p : kPrefixes) {
    if (name.substr(0, p.size()) == p) return true;
  }
  return false;
}

struct LeakDetector::Impl {
  // A bucketed time scale: per-class minima of the open bucket, and the detector its closed buckets
  // feed.
  struct Scale {
    absl::Duration width;
    int64_t width_us = 0;
    std::unique_ptr<TrendDetector> detector;
    int64_t bucket = std::numeric_limits<int64_t>::min();  // index of the open bucket
    uint32_t bucket_snapshots = 0;        // snapshots accumulated into the open bucket
    std::vector<uint64_t> min_bytes;      // per class id
    std::vector<uint64_t> min_instances;  // per class id
    std::vector<uint32_t> present;        // per class id: snapshots of the bucket with objects
    bool active = false;
  };
  struct ClassInfo {
    std::string name;
    bool in_use = false;
    absl::Time last_seen = absl::InfinitePast();  // latest snapshot with objects
    uint64_t raw = 0;                             // latest raw bytes
    uint64_t value = 0;                           // latest value (after the -all minimum)
    uint64_t previous = 0;                        // the value before it
    // Its cycle maxima are 64-bit, in cycle_wide (one reached 2^32 bytes), not in cycle_max32.
    bool cycle_is_wide = false;
  };
  struct Member {
    Suspect suspect;
    size_t scale = 0;  // 0 = every snapshot, k >= 1 = scales[k - 1]
  };

  const LeakOptions& options;
  absl::Time agent_start;
  AgentId agent;
  TrendDetector scale0;
  std::vector<Scale> scales;
  absl::Time now = absl::InfinitePast();
  bool garbage = false;  // the latest snapshot was an -all histogram

  absl::flat_hash_map<std::string, uint32_t> id_of;
  std::vector<ClassInfo> classes;
  std::vector<uint32_t> free_ids;
  // Per row position of the last snapshot, its class's id (also the guess for the next snapshot's
  // row there). Every id in it stays in use until the next Observe (see the forgetting below).
  std::vector<uint32_t> id_hint;
  std::vector<uint64_t> current_bytes, current_instances;  // per id, this snapshot
  std::vector<absl::Duration> intervals;                   // ring of recent intervals
  size_t interval_pos = 0;

  // Cycle veto rings: in a ring, slot k covers [k * slot_us, (k + 1) * slot_us) and is stored at
  // position offset + k % slots.
  struct Ring {
    int64_t slot_us = 0;
    size_t slots = 0;
    size_t offset = 0;
    std::vector<int64_t> slot_at;  // per position: the slot index stored there (INT64_MIN = none)
  };
  std::vector<Ring> rings;  // empty while the veto is off
  size_t cycle_positions = 0;
  // The cycle maxima (bytes) of every class, position-major: the maximum of class `id` at slot
  // position `pos` (fine ring first) is cycle_max32[pos * cycle_stride + id], 32-bit while it fits
  // (4 bytes instead of 8 per maximum: 672 bytes per class at the defaults); all of a class's
  // maxima are in cycle_wide[id] instead once one reaches 2^32 (a class of 4 GiB or more; exact,
  // never saturated). Position-major because every snapshot updates one or two positions of every
  // class (a sequential sweep), while a class's maxima across positions are read only when it
  // passes every test of some scale (the veto). cycle_stride >= classes.size().
  std::vector<uint32_t> cycle_max32;
  size_t cycle_stride = 0;
  absl::flat_hash_map<uint32_t, std::vector<uint64_t>> cycle_wide;

  uint64_t CycleMax(uint32_t id, size_t pos) const {
    if (classes[id].cycle_is_wide) return cycle_wide.at(id)[pos];
    return cycle_max32[pos * cycle_stride + id];
  }
  void RaiseCycleMax(uint32_t id, size_t pos, uint64_t value) {
    ClassInfo& c = classes[id];
    if (!c.cycle_is_wide) {
      uint32_t& m = cycle_max32[pos * cycle_stride + id];
      if (value <= UINT32_MAX) {
        m = std::max(m, static_cast<uint32_t>(value));
        return;
      }
      // Widen: the class's maxima move to 64 bits for as long as it is known.
      std::vector<uint64_t>& wide = cycle_wide[id];
      wide.resize(cycle_positions);
      for (size_t p = 0; p < cycle_positions; ++p) {
        wide[p] = cycle_max32[p * cycle_stride + id];
        cycle_max32[p * cycle_stride + id] = 0;
      }
      c.cycle_is_wide = true;
    }
    uint64_t& m = cycle_wide[id][pos];
    m = std::max(m, value);
  }
  // Zeroes every class's maximum at `pos` (a new slot index replaces it).
  void ClearCyclePosition(size_t pos) {
    std::fill_n(cycle_max32.begin() + static_cast<ptrdiff_t>(pos * cycle_stride), cycle_stride, 0);
    for (auto& [id, wide] : cycle_wide) wide[pos] = 0;
  }
  void ClearCycleMax(uint32_t id) {
    for (size_t p = 0; p < cycle_positions; ++p) cycle_max32[p * cycle_stride + id] = 0;
    cycle_wide.erase(id);
    classes[id].cycle_is_wide = false;
  }
  // Room for class ids below `ids`: a wider stride (an eighth more than needed), maxima moved.
  void ReserveCycleIds(size_t ids) {
    if (ids <= cycle_stride || cycle_positions == 0) return;
    const size_t stride = ids + ids / 8;
    std::vector<uint32_t> wider(cycle_positions * stride, 0);
    for (size_t p = 0; p < cycle_positions; ++p) {
      std::copy_n(cycle_max32.begin() + static_cast<ptrdiff_t>(p * cycle_stride), cycle_stride,
                  wider.begin() + static_cast<ptrdiff_t>(p * stride));
    }
    cycle_max32 = std::move(wider);
    cycle_stride = stride;
  }

  // Grouping state.
  std::vector<Member> members;  // current suspects, by class name
  std::vector<Leak> leaks;
  absl::flat_hash_map<std::string, LeakDetector::AccumulationPoint> points;  // by suspect class
  absl::flat_hash_map<std::string, size_t> open_class_episode;
  absl::flat_hash_map<std::string, size_t> open_leak_episode;

  std::vector<double> scratch, ta, ya;
  // The rows given to the detectors by class id (scale 0's snapshot, a closed bucket); reused.
  std::vector<TrendDetector::KeyedRow> keyed_rows;

  static TrendOptions Scale0Options(const LeakOptions& o) {
    TrendOptions t = o.trend;
    // The recent-trend tests only: the noise floor on records costs scale 0's noisy leaks their
    // 10-snapshot latency (3% of them over 10 instead of 0.7%, heapwatch_trend_sweep), and the
    // bucketed scales, whose minima are less noisy, catch the steps it would reject.
    if (t.recent_max_p_value == 0) t.recent_max_p_value = kScaleRecentMaxP;
    return t;
  }

  Impl(const LeakOptions& o, absl::Time start)
      : options(o), agent_start(start), scale0(Scale0Options(o), start) {
    if (options.enable_time_scales) {
      for (absl::Duration w = options.min_time_scale; w <= options.max_time_scale; w *= 2) {
        Scale s;
        s.width = w;
        s.width_us = absl::ToInt64Microseconds(w);
        scales.push_back(std::move(s));
      }
    }
    if (options.cycle_lookback > absl::ZeroDuration()) {
      const int64_t coarse =
          std::max<int64_t>(1, absl::ToInt64Microseconds(options.cycle_lookback) /
                                   static_cast<int64_t>(kCoarseSlots));
      rings.push_back(Ring{std::min(kFineSlotMicros, coarse), kFineSlots, 0, {}});
      rings.push_back(Ring{coarse, kCoarseSlots, kFineSlots, {}});
      for (Ring& r : rings) r.slot_at.assign(r.slots, std::numeric_limits<int64_t>::min());
      cycle_positions = kFineSlots + kCoarseSlots;
    }
    scale0.SetEntryVeto([this](std::string_view name) { return Vetoed(name, 0); });
    for (Scale& s : scales) ResetScale(s);
  }

  TrendOptions ScaleOptions() const {
    TrendOptions t = options.trend;
    t.window_snapshots = options.scale_window_buckets;
    t.min_snapshots = options.scale_min_buckets;
    t.peak_lookback_snapshots = options.scale_lookback_buckets;
    // The first bucket is usually partial; one more lets the window start on a whole one.
    t.warmup_snapshots = 2;
    t.recent_max_p_value = kScaleRecentMaxP;
    t.record_noise_sigmas = kRecordNoiseSigmas;
    return t;
  }

  // A fresh detector for the scale (its history and suspects dropped), with the cycle veto.
  void ResetScale(Scale& s) {
    const size_t k = static_cast<size_t>(&s - scales.data());
    s.detector = std::make_unique<TrendDetector>(ScaleOptions(), agent_start);
    s.detector->SetEntryVeto([this, k](std::string_view name) { return Vetoed(name, k + 1); });
  }

  TrendDetector& DetectorOf(size_t scale) {
    return scale == 0 ? scale0 : *scales[scale - 1].detector;
  }
  const TrendDetector& DetectorOf(size_t scale) const {
    return scale == 0 ? scale0 : *scales[scale - 1].detector;
  }
  absl::Duration WidthOf(size_t scale) const {
    return scale == 0 ? absl::ZeroDuration() : scales[scale - 1].width;
  }

  uint32_t IdFor(const std::string& name) {
    auto it = id_of.find(name);
    if (it != id_of.end()) return it->second;
    uint32_t id;
    if (!free_ids.empty()) {
      id = free_ids.back();
      free_ids.pop_back();
    } else {
      id = static_cast<uint32_t>(classes.size());
      classes.emplace_back();
      ReserveCycleIds(classes.size());
      current_bytes.push_back(0);
      current_instances.push_back(0);
      for (Scale& s : scales) {
        s.min_bytes.push_back(0);
        s.min_instances.push_back(0);
        s.present.push_back(0);
      }
    }
    ClassInfo& c = classes[id];
    c = ClassInfo{};
    c.name = name;
    c.in_use = true;
    ClearCycleMax(id);
    id_of.emplace(name, id);
    return id;
  }

  void FreeId(uint32_t id) {
    id_of.erase(classes[id].name);
    ClearCycleMax(id);
    classes[id] = ClassInfo{};
    current_bytes[id] = current_instances[id] = 0;
    for (Scale& s : scales) {
      s.min_bytes[id] = s.min_instances[id] = 0;
      s.present[id] = 0;
    }
    free_ids.push_back(id);
  }

  // Highest cycle-slot maximum of the class in [now - cycle_lookback, now - exclude), whole slots
  // only; 0 when none.
  uint64_t PastPeak(uint32_t id, absl::Duration exclude) const {
    if (rings.empty()) return 0;
    const int64_t now_us = absl::ToUnixMicros(now);
    const int64_t from = now_us - absl::ToInt64Microseconds(options.cycle_lookback);
    const int64_t to = now_us - absl::ToInt64Microseconds(exclude);
    uint64_t peak = 0;
    for (const Ring& r : rings) {
      for (size_t p = 0; p < r.slots; ++p) {
        const int64_t k = r.slot_at[p];
        if (k == std::numeric_limits<int64_t>::min()) continue;
        if (k * r.slot_us >= from && (k + 1) * r.slot_us <= to) {
          peak = std::max(peak, CycleMax(id, r.offset + p));
        }
      }
    }
    return peak;
  }

  // The exclusion of the cycle veto on a scale: its window (plus one bucket, the open one).
  absl::Duration VetoExclusion(size_t scale) const {
    return DetectorOf(scale).window_span() + WidthOf(scale);
  }

  bool Vetoed(std::string_view name, size_t scale) const {
    if (rings.empty()) return false;
    auto it = id_of.find(absl::string_view(name.data(), name.size()));
    if (it == id_of.end()) return false;
    const ClassInfo& c = classes[it->second];
    const uint64_t level = std::min(c.value, c.previous);
    return static_cast<double>(level) <= VetoThreshold(it->second, scale);
  }

  // The level a class must exceed to pass the veto on `scale`: its past peak plus a quarter of G
  // (so that noise around an old peak does not count as a new record).
  double VetoThreshold(uint32_t id, size_t scale) const {
    const uint64_t peak = PastPeak(id, VetoExclusion(scale));
    if (peak == 0) return 0;
    const double g = std::max(static_cast<double>(options.trend.min_growth_bytes),
                              options.trend.min_relative_growth * static_cast<double>(peak));
    return static_cast<double>(peak) + kVetoMarginOfG * g;
  }

  absl::Duration TypicalInterval() const {
    if (intervals.empty()) return absl::InfiniteDuration();
    std::vector<absl::Duration> sorted = intervals;
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  }

  void CloseBucket(Scale& s) {
    const uint64_t track = options.trend.min_growth_bytes / kTrackDivisor;
    keyed_rows.clear();
    for (uint32_t id = 0; id < classes.size(); ++id) {
      if (!classes[id].in_use || s.present[id] != s.bucket_snapshots) continue;
      if (s.min_bytes[id] < track && !s.detector->TracksKey(id)) continue;
      keyed_rows.push_back({id, classes[id].name, s.min_bytes[id], s.min_instances[id]});
    }
    // The bucket as a snapshot of these rows (minima: no garbage filter on top), by class id.
    s.detector->ObserveKeyed(absl::FromUnixMicros(s.bucket * s.width_us + s.width_us / 2), agent,
                             HistogramMode::kLive, keyed_rows);
  }

  bool IsSuspect(std::string_view name) const {
    for (const Member& m : members) {
      if (m.suspect.class_name == name) return true;
    }
    return false;
  }

  bool Observe(const Snapshot& snapshot) {
    // The rules of TrendDetector::Observe, checked first so that the class values below (the cycle
    // veto's input) are updated before scale 0 evaluates.
    if (scale0.snapshots_observed() > 0 && (snapshot.time <= now || snapshot.agent != agent)) {
      return false;
    }
    const absl::Time previous_time = now;
    if (scale0.snapshots_observed() == 0) agent = snapshot.agent;
    now = snapshot.time;
    garbage = snapshot.cost.mode == HistogramMode::kAll ||
              snapshot.cost.mode == HistogramMode::kAllAfterGc;
    if (previous_time != absl::InfinitePast()) {
      const absl::Duration gap = snapshot.time - previous_time;
      if (intervals.size() < kIntervalHistory) {
        intervals.push_back(gap);
      } else {
        intervals[interval_pos] = gap;
        interval_pos = (interval_pos + 1) % kIntervalHistory;
      }
    }

    std::fill(current_bytes.begin(), current_bytes.end(), 0);
    std::fill(current_instances.begin(), current_instances.end(), 0);
    // As TrendDetector::Observe: the previous snapshot's id at the row's position, checked by
    // name, before the hash map.
    const auto& rows = snapshot.histogram.rows;
    id_hint.resize(rows.size(), UINT32_MAX);
    for (size_t r = 0; r < rows.size(); ++r) {
      const ClassHistogramRow& row = rows[r];
      const uint32_t hint = id_hint[r];
      const uint32_t id =
          hint < classes.size() && classes[hint].in_use && classes[hint].name == row.class_name
              ? hint
              : IdFor(row.class_name);
      id_hint[r] = id;
      current_bytes[id] = SaturatingAdd(current_bytes[id], row.bytes);
      current_instances[id] = SaturatingAdd(current_instances[id], row.instances);
    }

    // Cycle slots: a new slot index replaces the oldest position's maxima.
    size_t slot_pos[2] = {0, 0};
    for (size_t ri = 0; ri < rings.size(); ++ri) {
      Ring& r = rings[ri];
      const int64_t k = FloorDiv(absl::ToUnixMicros(now), r.slot_us);
      const int64_t n = static_cast<int64_t>(r.slots);
      const size_t p = static_cast<size_t>(((k % n) + n) % n);
      slot_pos[ri] = r.offset + p;
      if (r.slot_at[p] != k) {
        r.slot_at[p] = k;
        ClearCyclePosition(r.offset + p);
      }
    }
    for (uint32_t id = 0; id < classes.size(); ++id) {
      ClassInfo& c = classes[id];
      if (!c.in_use) continue;
      const uint64_t raw = current_bytes[id];
      // The -all minimum over two snapshots, as on scale 0 (not on the agent's first snapshot).
      const uint64_t value =
          garbage && previous_time != absl::InfinitePast() ? std::min(raw, c.raw) : raw;
      c.raw = raw;
      c.previous = c.value;
      c.value = value;
      if (raw > 0) c.last_seen = now;
      for (size_t ri = 0; ri < rings.size(); ++ri) {
        RaiseCycleMax(id, slot_pos[ri], value);
      }
    }

    // Scale 0 by class id: the rows as they came (ids from the loop above).
    keyed_rows.resize(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      keyed_rows[r] = {id_hint[r], rows[r].class_name, rows[r].bytes, rows[r].instances};
    }
    HW_CHECK(scale0.ObserveKeyed(snapshot.time, snapshot.agent, snapshot.cost.mode, keyed_rows));

    // Bucketed scales.
    const absl::Duration typical = TypicalInterval();
    const int64_t now_us = absl::ToUnixMicros(now);
    for (Scale& s : scales) {
      const int64_t b = FloorDiv(now_us, s.width_us);
      if (b != s.bucket) {
        if (s.active && s.bucket_snapshots > 0) CloseBucket(s);
        s.bucket = b;
        s.bucket_snapshots = 0;
        std::fill(s.present.begin(), s.present.end(), 0);
        // A scale is used once its buckets hold at least one snapshot on average; it stays in use
        // while they do (decided at bucket boundaries, so a bucket is never half-fed). A scale that
        // falls out of use starts afresh: its suspects would otherwise never be re-evaluated.
        const bool active =
            typical != absl::InfiniteDuration() && s.width >= kMinSnapshotsPerBucket * typical;
        if (s.active && !active) ResetScale(s);
        s.active = active;
      }
      if (!s.active) continue;
      for (uint32_t id = 0; id < classes.size(); ++id) {
        const uint64_t v = current_bytes[id];
        if (v == 0 && current_instances[id] == 0) continue;
        if (s.present[id] == 0 || v < s.min_bytes[id]) {
          s.min_bytes[id] = v;
          s.min_instances[id] = current_instances[id];
        }
        ++s.present[id];
      }
      ++s.bucket_snapshots;
    }

    // Forget classes that have had no objects for longer than any scale or the veto looks back and
    // that no detector tracks.
    if (scale0.snapshots_observed() % 64 == 0) {
      // The detectors forget their classes by themselves (checked below); the veto needs a class's
      // maxima for cycle_lookback, and an open bucket may still hold it.
      // A class with a row in this snapshot (one with no objects) is kept until the next one, so
      // that id_hint names classes in use (LatestClasses); forgetting it one snapshot later
      // changes nothing else: all its values and cycle maxima in the lookback are 0.
      absl::Duration horizon = options.cycle_lookback;
      if (!scales.empty()) horizon += scales.back().width;
      std::vector<bool> in_snapshot(classes.size(), false);
      for (uint32_t id : id_hint) in_snapshot[id] = true;
      for (uint32_t id = 0; id < classes.size(); ++id) {
        const ClassInfo& c = classes[id];
        if (!c.in_use || c.last_seen >= now - horizon || in_snapshot[id]) continue;
        bool tracked = scale0.TracksKey(id);
        for (const Scale& s : scales) tracked = tracked || s.detector->TracksKey(id);
        if (!tracked) FreeId(id);
      }
    }
    Regroup();
    return true;
  }

  // The increments of a class on a scale's window; false when the class has no window there.
  bool Increments(size_t scale, const std::string& name, std::vector<double>* t,
                  std::vector<double>* y, std::vector<double>* d) const {
    if (!DetectorOf(scale).Window(name, t, y) || y->size() < kMinIncrements + 1) return false;
    d->clear();
    for (size_t i = 1; i < y->size(); ++i) d->push_back((*y)[i] - (*y)[i - 1]);
    return true;
  }

  // Increments of suspect `i` on `scale`, computed once per Regroup (nullptr when it has no window
  // there), and whether they are even.
  struct CachedIncrements {
    bool ok = false;
    bool even = false;
    std::vector<double> d;
  };
  absl::flat_hash_map<uint64_t, CachedIncrements> increments_cache;

  const CachedIncrements& IncrementsOf(const std::vector<Member>& next, size_t i, size_t scale) {
    const uint64_t key = (static_cast<uint64_t>(i) << 8) | scale;
    auto it = increments_cache.find(key);
    if (it != increments_cache.end()) return it->second;
    CachedIncrements c;
    c.ok = Increments(scale, next[i].suspect.class_name, &ta, &ya, &c.d);
    if (c.ok) c.even = EvenGrowth(c.d, &scratch);
    return increments_cache.emplace(key, std::move(c)).first->second;
  }

  // Whether two suspects grow together (see the header): on the coarser of their scales, else the
  // finer.
  bool Correlated(const std::vector<Member>& next, size_t i, size_t j) {
    const size_t coarse = std::max(next[i].scale, next[j].scale);
    const size_t fine = std::min(next[i].scale, next[j].scale);
    for (size_t scale : {coarse, fine}) {
      // Both entries first: a lookup may insert and rehash, which moves the other one.
      IncrementsOf(next, i, scale);
      const CachedIncrements& b = IncrementsOf(next, j, scale);
      const CachedIncrements& a = IncrementsOf(next, i, scale);
      if (!a.ok) continue;
      if (!b.ok || a.d.size() != b.d.size()) continue;
      if (KendallTau(a.d, b.d) >= options.group_min_correlation) return true;
      return a.even && b.even;
    }
    return false;
  }

  // Per suspect of `next`: the accumulation point it is grouped by (null without one). A point
  // that is an instance of another suspect class B, with B's point equal to it or among its
  // dominators, lies inside B's growing structure: the suspect takes B's grouping point (followed
  // through at most next.size() such steps, so a cycle of nested points ends).
  std::vector<const LeakDetector::AccumulationPoint*> GroupPoints(
      const std::vector<Member>& next) const {
    std::vector<const LeakDetector::AccumulationPoint*> own(next.size(), nullptr);
    absl::flat_hash_map<std::string_view, size_t> index_of;
    for (size_t i = 0; i < next.size(); ++i) {
      index_of.emplace(next[i].suspect.class_name, i);
      auto p = points.find(next[i].suspect.class_name);
      if (p != points.end()) own[i] = &p->second;
    }
    // outer[i]: the suspect whose structure holds i's point, or i itself.
    std::vector<size_t> outer(next.size());
    for (size_t i = 0; i < next.size(); ++i) {
      outer[i] = i;
      if (own[i] == nullptr) continue;
      auto b = index_of.find(own[i]->object_class);
      if (b == index_of.end() || b->second == i || own[b->second] == nullptr) continue;
      const LeakDetector::AccumulationPoint& pb = *own[b->second];
      const auto& doms = own[i]->dominator_ids;
      if (pb.object_id == own[i]->object_id ||
          std::find(doms.begin(), doms.end(), pb.object_id) != doms.end()) {
        outer[i] = b->second;
      }
    }
    std::vector<const LeakDetector::AccumulationPoint*> out(next.size(), nullptr);
    for (size_t i = 0; i < next.size(); ++i) {
      size_t k = i;
      for (size_t steps = 0; steps < next.size() && outer[k] != k; ++steps) k = outer[k];
      out[i] = own[k];
    }
    return out;
  }

  void Regroup() {
    // Suspects on any scale; the finest scale's figures.
    std::vector<Member> next;
    absl::flat_hash_map<std::string, size_t> index;
    for (size_t scale = 0; scale <= scales.size(); ++scale) {
      for (Suspect& s : DetectorOf(scale).Suspects()) {
        if (index.contains(s.class_name)) continue;
        s.time_scale = WidthOf(scale);
        index.emplace(s.class_name, next.size());
        next.push_back(Member{std::move(s), scale});
      }
    }
    std::sort(next.begin(), next.end(), [](const Member& a, const Member& b) {
      return a.suspect.class_name < b.suspect.class_name;
    });
    // first_seen is when the class became a suspect on any scale: the time of that snapshot, not
    // the (earlier) midpoint of the bucket a scale emitted, and unchanged while it stays one on
    // some scale.
    {
      absl::flat_hash_map<std::string, absl::Time> previous;
      for (const Member& m : members) previous.emplace(m.suspect.class_name, m.suspect.first_seen);
      for (Member& m : next) {
        auto it = previous.find(m.suspect.class_name);
        m.suspect.first_seen = it != previous.end() ? it->second : now;
      }
    }

    // Each suspect's grouping point: its accumulation point, or for a point nested in another
    // suspect class's structure, that class's grouping point.
    const std::vector<const LeakDetector::AccumulationPoint*> group_point = GroupPoints(next);
    Components comp(next.size());
    for (size_t i = 0; i < next.size(); ++i) {
      if (group_point[i] != nullptr) comp.SetPoint(i, group_point[i]->object_id);
    }
    // Same accumulation point: one leak.
    for (size_t i = 0; i < next.size(); ++i) {
      if (group_point[i] == nullptr) continue;
      for (size_t j = i + 1; j < next.size(); ++j) {
        if (group_point[j] != nullptr && group_point[j]->object_id == group_point[i]->object_id) {
          comp.Join(i, j);
        }
      }
    }
    // Correlation, among the kMaxCorrelated suspects that grow fastest (O(s^2 w^2) otherwise; the
    // rest are leaks of their own unless an accumulation point groups them).
    std::vector<size_t> by_growth(next.size());
    std::iota(by_growth.begin(), by_growth.end(), 0);
    std::stable_sort(by_growth.begin(), by_growth.end(), [&](size_t a, size_t b) {
      return next[a].suspect.growth_bytes_per_second > next[b].suspect.growth_bytes_per_second;
    });
    by_growth.resize(std::min(by_growth.size(), kMaxCorrelated));
    std::sort(by_growth.begin(), by_growth.end());
    increments_cache.clear();
    for (size_t x = 0; x < by_growth.size(); ++x) {
      for (size_t y = x + 1; y < by_growth.size(); ++y) {
        const size_t i = by_growth[x], j = by_growth[y];
        if (comp.Find(i) == comp.Find(j)) continue;
        if (Correlated(next, i, j)) comp.Join(i, j);
      }
    }
    increments_cache.clear();

    // Groups, in order of their first member's name.
    std::vector<std::vector<size_t>> groups;
    absl::flat_hash_map<size_t, size_t> group_of_root;
    for (size_t i = 0; i < next.size(); ++i) {
      const size_t root = comp.Find(i);
      auto [it, inserted] = group_of_root.emplace(root, groups.size());
      if (inserted) groups.emplace_back();
      groups[it->second].push_back(i);
    }

    // Match every group to the previous leak it shares the most classes with.
    absl::flat_hash_map<std::string, size_t> previous_leak_of;  // class -> index in leaks
    for (size_t l = 0; l < leaks.size(); ++l) {
      for (const LeakClass& c : leaks[l].classes) previous_leak_of.emplace(c.class_name, l);
    }
    std::vector<size_t> order(groups.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return groups[a].size() > groups[b].size(); });
    std::vector<bool> taken(leaks.size(), false);
    std::vector<bool> inherited(groups.size(), false);
    std::vector<Leak> next_leaks(groups.size());
    for (size_t g : order) {
      std::vector<size_t> shared(leaks.size(), 0);
      for (size_t i : groups[g]) {
        auto it = previous_leak_of.find(next[i].suspect.class_name);
        if (it != previous_leak_of.end()) ++shared[it->second];
      }
      size_t best = leaks.size();
      for (size_t l = 0; l < leaks.size(); ++l) {
        if (taken[l] || shared[l] == 0) continue;
        if (best == leaks.size() || shared[l] > shared[best] ||
            (shared[l] == shared[best] && leaks[l].first_seen < leaks[best].first_seen)) {
          best = l;
        }
      }
      Leak& leak = next_leaks[g];
      leak.first_seen = absl::InfiniteFuture();
      leak.time_scale = absl::InfiniteDuration();
      for (size_t i : groups[g]) {
        const Member& m = next[i];
        leak.classes.push_back(
            LeakClass{m.suspect.class_name, m.suspect.bytes, m.suspect.growth_bytes_per_second});
        leak.bytes = SaturatingAdd(leak.bytes, m.suspect.bytes);
        leak.growth_bytes_per_second += m.suspect.growth_bytes_per_second;
        leak.score = std::max(leak.score, m.suspect.score);
        leak.first_seen = std::min(leak.first_seen, m.suspect.first_seen);
        leak.time_scale = std::min(leak.time_scale, m.suspect.time_scale);
        if (group_point[i] != nullptr && leak.accumulation_point.empty()) {
          leak.accumulation_point = group_point[i]->object_class;
        }
      }
      std::sort(leak.classes.begin(), leak.classes.end(),
                [](const LeakClass& a, const LeakClass& b) {
                  if (a.bytes != b.bytes) return a.bytes > b.bytes;
                  return a.class_name < b.class_name;
                });
      // Main class: the non-JDK member holding the most, else a non-JDK accumulation point's
      // class, else the member holding the most.
      leak.main_class = leak.classes.front().class_name;
      auto own = std::find_if(leak.classes.begin(), leak.classes.end(),
                              [](const LeakClass& c) { return !IsJdkClass(c.class_name); });
      if (own != leak.classes.end()) {
        leak.main_class = own->class_name;
      } else if (!leak.accumulation_point.empty() && !IsJdkClass(leak.accumulation_point)) {
        leak.main_class = leak.accumulation_point;
      }
      if (best < leaks.size()) {
        taken[best] = true;
        inherited[g] = true;
        leak.id = leaks[best].id;
        leak.first_seen = std::min(leak.first_seen, leaks[best].first_seen);
      } else {
        leak.id = LeakId(leak.main_class, leak.first_seen);
      }
    }
    // A new id can collide with an inherited one or another new one (same main class and
    // first_seen): inherited ids keep theirs, new ones are made distinct deterministically.
    absl::flat_hash_map<std::string, int> seen_ids;
    for (size_t g = 0; g < next_leaks.size(); ++g) {
      if (inherited[g]) seen_ids[next_leaks[g].id] = 1;
    }
    for (size_t g = 0; g < next_leaks.size(); ++g) {
      if (inherited[g]) continue;
      Leak& leak = next_leaks[g];
      for (int n = seen_ids[leak.id]++; n > 0; n = seen_ids[leak.id]++) {
        leak.id = LeakId(absl::StrFormat("%s#%d", leak.main_class, n), leak.first_seen);
      }
    }
    absl::flat_hash_map<std::string, std::string> leak_of_class;
    for (const Leak& leak : next_leaks) {
      for (const LeakClass& c : leak.classes) leak_of_class.emplace(c.class_name, leak.id);
    }
    for (Member& m : next) m.suspect.leak = leak_of_class[m.suspect.class_name];
    std::sort(next_leaks.begin(), next_leaks.end(), [](const Leak& a, const Leak& b) {
      if (a.growth_bytes_per_second != b.growth_bytes_per_second) {
        return a.growth_bytes_per_second > b.growth_bytes_per_second;
      }
      return a.id < b.id;
    });
    members = std::move(next);
    leaks = std::move(next_leaks);
    // Accumulation points of classes that are no longer suspects are dropped.
    for (auto it = points.begin(); it != points.end();) {
      auto copy = it++;
      if (!leak_of_class.contains(copy->first)) points.erase(copy);
    }
  }

  void RecordEpisodes(std::vector<Episode>* episodes) {
    // Classes.
    absl::flat_hash_map<std::string, const Member*> current;
    for (const Member& m : members) current.emplace(m.suspect.class_name, &m);
    for (auto it = open_class_episode.begin(); it != open_class_episode.end();) {
      auto copy = it++;
      if (!current.contains(copy->first)) {
        (*episodes)[copy->second].cleared = now;
        open_class_episode.erase(copy);
      }
    }
    for (const Member& m : members) {
      auto it = open_class_episode.find(m.suspect.class_name);
      if (it == open_class_episode.end()) {
        Episode e;
        e.kind = Episode::Kind::kClass;
        e.main_class = m.suspect.class_name;
        e.classes = {m.suspect.class_name};
        e.first_seen = m.suspect.first_seen;
        e.time_scale = m.suspect.time_scale;
        e.leak = m.suspect.leak;
        open_class_episode.emplace(m.suspect.class_name, episodes->size());
        episodes->push_back(std::move(e));
      } else {
        Episode& e = (*episodes)[it->second];
        e.leak = m.suspect.leak;
        e.time_scale = std::min(e.time_scale, m.suspect.time_scale);
      }
    }
    // Leaks.
    absl::flat_hash_map<std::string, const Leak*> current_leaks;
    for (const Leak& l : leaks) current_leaks.emplace(l.id, &l);
    for (auto it = open_leak_episode.begin(); it != open_leak_episode.end();) {
      auto copy = it++;
      if (!current_leaks.contains(copy->first)) {
        (*episodes)[copy->second].cleared = now;
        open_leak_episode.erase(copy);
      }
    }
    for (const Leak& l : leaks) {
      auto it = open_leak_episode.find(l.id);
      if (it == open_leak_episode.end()) {
        Episode e;
        e.kind = Episode::Kind::kLeak;
        e.leak = l.id;
        e.first_seen = l.first_seen;
        e.time_scale = l.time_scale;
        it = open_leak_episode.emplace(l.id, episodes->size()).first;
        episodes->push_back(std::move(e));
      }
      Episode& e = (*episodes)[it->second];
      e.main_class = l.main_class;
      e.time_scale = std::min(e.time_scale, l.time_scale);
      for (const LeakClass& c : l.classes) {
        if (std::find(e.classes.begin(), e.classes.end(), c.class_name) == e.classes.end()) {
          e.classes.push_back(c.class_name);
        }
      }
      std::sort(e.classes.begin(), e.classes.end());
    }
    if (episodes->size() > kMaxEpisodes) {
      // Drop the oldest closed episodes (open ones stay, so they can still be closed), then
      // re-index the open ones.
      size_t drop = episodes->size() - kMaxEpisodes + kMaxEpisodes / 10;
      std::vector<Episode> kept;
      kept.reserve(episodes->size());
      for (Episode& e : *episodes) {
        if (drop > 0 && e.cleared.has_value()) {
          --drop;
        } else {
          kept.push_back(std::move(e));
        }
      }
      *episodes = std::move(kept);
      open_class_episode.clear();
      open_leak_episode.clear();
      for (size_t i = 0; i < episodes->size(); ++i) {
        const Episode& e = (*episodes)[i];
        if (e.cleared.has_value()) continue;
        if (e.kind == Episode::Kind::kClass) {
          open_class_episode[e.main_class] = i;
        } else {
          open_leak_episode[e.leak] = i;
        }
      }
    }
  }
};

LeakDetector::LeakDetector(LeakOptions options, absl::Time agent_start)
    : options_(std::move(options)) {
  HW_CHECK(ValidateLeakOptions(options_).ok());
  impl_ = std::make_unique<Impl>(options_, agent_start);
}

LeakDetector::~LeakDetector() = default;

StatusOr<std::unique_ptr<LeakDetector>> LeakDetector::Create(LeakOptions options,
                                                             absl::Time agent_start) {
  HW_RETURN_IF_ERROR(ValidateLeakOptions(options));
  return std::make_unique<LeakDetector>(std::move(options), agent_start);
}

bool LeakDetector::Observe(const Snapshot& snapshot) {
  if (!impl_->Observe(snapshot)) return false;
  impl_->RecordEpisodes(&episodes_);
  return true;
}

std::vector<Suspect> LeakDetector::Suspects() const {
  std::vector<Suspect> out;
  out.reserve(impl_->members.size());
  for (const Impl::Member& m : impl_->members) out.push_back(m.suspect);
  std::sort(out.begin(), out.end(), [](const Suspect& a, const Suspect& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.class_name < b.class_name;
  });
  return out;
}

std::optional<Suspect> LeakDetector::SuspectFor(std::string_view class_name) const {
  for (const Impl::Member& m : impl_->members) {
    if (m.suspect.class_name == class_name) return m.suspect;
  }
  return std::nullopt;
}

std::vector<ClassTotal> LeakDetector::LatestClasses(size_t top,
                                                    const std::vector<std::string>& also) const {
  const Impl& m = *impl_;
  // The distinct classes of the latest snapshot's rows (current_bytes holds their sums).
  std::vector<bool> seen(m.classes.size(), false);
  std::vector<uint32_t> ids;
  ids.reserve(m.id_hint.size());
  for (uint32_t id : m.id_hint) {
    if (!seen[id]) {
      seen[id] = true;
      ids.push_back(id);
    }
  }
  top = std::min(top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(top), ids.end(),
                    [&](uint32_t a, uint32_t b) {
                      if (m.current_bytes[a] != m.current_bytes[b]) {
                        return m.current_bytes[a] > m.current_bytes[b];
                      }
                      return m.classes[a].name < m.classes[b].name;
                    });
  std::vector<ClassTotal> out;
  out.reserve(top + also.size());
  auto add = [&](uint32_t id) {
    out.push_back(ClassTotal{m.classes[id].name, m.current_bytes[id], m.current_instances[id]});
  };
  std::vector<bool> added(m.classes.size(), false);
  for (size_t i = 0; i < top; ++i) {
    added[ids[i]] = true;
    add(ids[i]);
  }
  for (const std::string& name : also) {
    auto it = m.id_of.find(name);
    if (it == m.id_of.end() || !seen[it->second] || added[it->second]) continue;
    added[it->second] = true;
    add(it->second);
  }
  return out;
}

std::vector<Leak> LeakDetector::Leaks() const { return impl_->leaks; }

std::optional<Leak> LeakDetector::LeakFor(std::string_view leak_id) const {
  for (const Leak& l : impl_->leaks) {
    if (l.id == leak_id) return l;
  }
  return std::nullopt;
}

Explanation LeakDetector::Explain(std::string_view class_name) const {
  Explanation out;
  out.class_name = std::string(class_name);
  auto it = impl_->id_of.find(absl::string_view(class_name.data(), class_name.size()));
  out.known = it != impl_->id_of.end();
  if (std::optional<Suspect> s = SuspectFor(class_name)) {
    out.suspect = true;
    out.leak = s->leak;
  }
  for (size_t scale = 0; scale <= impl_->scales.size(); ++scale) {
    if (scale > 0 && !impl_->scales[scale - 1].active &&
        !impl_->scales[scale - 1].detector->Tracks(class_name)) {
      continue;  // a scale not in use (its buckets would hold less than one snapshot on average)
    }
    ScaleExplanation e = impl_->DetectorOf(scale).Explain(class_name);
    e.time_scale = impl_->WidthOf(scale);
    if (out.known && !impl_->rings.empty() && e.not_evaluated.empty()) {
      // The cycle veto as this scale applies it (its exclusion is this scale's window).
      const Impl::ClassInfo& c = impl_->classes[it->second];
      const double level = static_cast<double>(std::min(c.value, c.previous));
      const double threshold = impl_->VetoThreshold(it->second, scale);
      e.tests.push_back(
          TestExplanation{"cycle veto", level, threshold, ">", level > threshold, "bytes"});
    }
    out.scales.push_back(std::move(e));
  }
  if (out.known && !impl_->rings.empty()) {
    const Impl::ClassInfo& c = impl_->classes[it->second];
    const double level = static_cast<double>(std::min(c.value, c.previous));
    const double threshold = impl_->VetoThreshold(it->second, 0);
    out.cycle_veto =
        TestExplanation{"cycle veto", level, threshold, ">", level > threshold, "bytes"};
  }
  return out;
}

void LeakDetector::SetAccumulationPoints(const std::vector<AccumulationPoint>& points) {
  impl_->points.clear();
  for (const AccumulationPoint& p : points) {
    if (!impl_->IsSuspect(p.suspect_class)) continue;
    impl_->points[p.suspect_class] = p;
  }
  impl_->Regroup();
  impl_->RecordEpisodes(&episodes_);
}

size_t LeakDetector::snapshots_observed() const { return impl_->scale0.snapshots_observed(); }

std::vector<absl::Duration> LeakDetector::time_scales() const {
  std::vector<absl::Duration> out;
  for (const Impl::Scale& s : impl_->scales) {
    if (s.active) out.push_back(s.width);
  }
  return out;
}

std::string LeakId(std::string_view main_class, absl::Time first_seen) {
  const uint64_t h = Fnv1a(absl::StrFormat("%s@%d", main_class, absl::ToUnixMicros(first_seen)));
  return absl::StrFormat("L%012x", h & 0xffffffffffffull);
}

}  // namespace heapwatch::diff
