#include "diff/trend_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "diff/grow.h"
#include "diff/saturating.h"
#include "diff/trend_stats.h"

namespace heapwatch::diff {
namespace {

constexpr size_t kMaxWindowSnapshots = 1024;
constexpr size_t kMaxLookbackSnapshots = 4096;
constexpr size_t kMaxSegments = 8;
// With recent_max_p_value > 0: the last min_snapshots values' slope must be at least this fraction
// of the window's, and their growth at least kRecentGrowthFraction of what test B asks of the
// window.
constexpr double kRecentSlopeFraction = 0.5;
constexpr double kRecentGrowthFraction = 0.25;
// With record_noise_sigmas > 0: the largest increment among the last min_snapshots values may be
// at most this share of their rise.
constexpr double kMaxIncrementShare = 0.5;

Status Bad(const char* field, const std::string& value, const char* range) {
  return absl::InvalidArgumentError(
      absl::StrFormat("TrendOptions.%s = %s not in %s", field, value, range));
}

}  // namespace

Status ValidateTrendOptions(const TrendOptions& o) {
  if (o.segments < 1 || o.segments > kMaxSegments) {
    return Bad("segments", absl::StrFormat("%d", o.segments), "[1, 8]");
  }
  const size_t min_min = std::max<size_t>(4, 2 * o.segments);
  if (o.min_snapshots < min_min) {
    return Bad("min_snapshots", absl::StrFormat("%d", o.min_snapshots),
               absl::StrFormat("[max(4, 2 * segments) = %d, window_snapshots]", min_min).c_str());
  }
  if (o.window_snapshots < o.min_snapshots || o.window_snapshots > kMaxWindowSnapshots) {
    return Bad("window_snapshots", absl::StrFormat("%d", o.window_snapshots),
               "[min_snapshots, 1024]");
  }
  if (o.recent_snapshots < 1 || o.recent_snapshots > o.min_snapshots / 2) {
    return Bad("recent_snapshots", absl::StrFormat("%d", o.recent_snapshots),
               "[1, min_snapshots / 2]");
  }
  if (o.peak_lookback_snapshots < o.window_snapshots ||
      o.peak_lookback_snapshots > kMaxLookbackSnapshots) {
    return Bad("peak_lookback_snapshots", absl::StrFormat("%d", o.peak_lookback_snapshots),
               "[window_snapshots, 4096]");
  }
  if (o.warmup < absl::ZeroDuration() || o.warmup == absl::InfiniteDuration()) {
    return Bad("warmup", absl::FormatDuration(o.warmup), "[0, infinity)");
  }
  if (!(o.max_p_value > 0 && o.max_p_value <= 0.5)) {
    return Bad("max_p_value", absl::StrFormat("%g", o.max_p_value), "(0, 0.5]");
  }
  if (!(o.min_growth_bytes_per_second >= 0) || !std::isfinite(o.min_growth_bytes_per_second)) {
    return Bad("min_growth_bytes_per_second", absl::StrFormat("%g", o.min_growth_bytes_per_second),
               "[0, infinity)");
  }
  if (!(o.min_relative_growth >= 0) || !std::isfinite(o.min_relative_growth)) {
    return Bad("min_relative_growth", absl::StrFormat("%g", o.min_relative_growth),
               "[0, infinity)");
  }
  if (!(o.min_step_fraction >= 0 && o.min_step_fraction <= 1)) {
    return Bad("min_step_fraction", absl::StrFormat("%g", o.min_step_fraction), "[0, 1]");
  }
  if (o.confirm_snapshots < 1) {
    return Bad("confirm_snapshots", absl::StrFormat("%d", o.confirm_snapshots), "[1, infinity)");
  }
  if (!(o.recent_max_p_value >= 0 && o.recent_max_p_value <= 0.5)) {
    return Bad("recent_max_p_value", absl::StrFormat("%g", o.recent_max_p_value), "[0, 0.5]");
  }
  if (!(o.record_noise_sigmas >= 0 && o.record_noise_sigmas <= 10)) {
    return Bad("record_noise_sigmas", absl::StrFormat("%g", o.record_noise_sigmas), "[0, 10]");
  }
  if (o.clear_snapshots < 1) {
    return Bad("clear_snapshots", absl::StrFormat("%d", o.clear_snapshots), "[1, infinity)");
  }
  return absl::OkStatus();
}

TrendDetector::TrendDetector(TrendOptions options, absl::Time agent_start)
    : options_(std::move(options)), agent_start_(agent_start) {
  HW_CHECK(ValidateTrendOptions(options_).ok());
  capacity_ = std::max(options_.window_snapshots, options_.peak_lookback_snapshots);
  times_.assign(capacity_, absl::InfinitePast());
  ring_seconds_.assign(capacity_, 0.0);
  window_seconds_.reserve(options_.window_snapshots);
  inverse_dt_.reserve(options_.window_snapshots * (options_.window_snapshots - 1) / 2);
  y_.reserve(options_.window_snapshots);
  scratch_.reserve(options_.window_snapshots * (options_.window_snapshots - 1) / 2);
  boundary_.resize(options_.segments + 2);
  prefix_max_.resize(options_.segments + 1);
  prefix_max_t_.resize(options_.segments + 1);
  part_start_t_.resize(options_.segments + 1);
  segment_max_.resize(options_.segments + 1);
  segment_max_t_.resize(options_.segments + 1);
}

StatusOr<TrendDetector> TrendDetector::Create(TrendOptions options, absl::Time agent_start) {
  HW_RETURN_IF_ERROR(ValidateTrendOptions(options));
  return TrendDetector(std::move(options), agent_start);
}

uint32_t TrendDetector::SlotFor(const std::string& class_name) {
  auto it = slot_of_.find(class_name);
  if (it != slot_of_.end()) return it->second;
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(states_.size());
    states_.emplace_back();
    GrowBy(bytes_, capacity_);
    GrowBy(instances_, capacity_);
  }
  ClassState& st = states_[slot];
  st = ClassState{};
  st.name = class_name;
  st.in_use = true;
  // A reused slot's samples were zeroed when it was freed; a new one is zero-initialised.
  slot_of_.emplace(class_name, slot);
  return slot;
}

void TrendDetector::FreeSlot(uint32_t slot) {
  ClassState& st = states_[slot];
  slot_of_.erase(st.name);
  if (st.key != kNoKey) slot_of_key_.erase(st.key);
  std::fill_n(bytes_.begin() + static_cast<ptrdiff_t>(slot * capacity_), capacity_, 0);
  std::fill_n(instances_.begin() + static_cast<ptrdiff_t>(slot * capacity_), capacity_, 0);
  wide_.erase(slot);
  st = ClassState{};
  free_slots_.push_back(slot);
}

bool TrendDetector::Accept(absl::Time time, const AgentId& agent) {
  if (seq_ > 0) {
    if (time <= last_time_) return false;
    if (agent != agent_) return false;
  } else {
    agent_ = agent;
    first_time_ = time;
  }
  return true;
}

size_t TrendDetector::StartSnapshot(absl::Time time) {
  const size_t pos = static_cast<size_t>(seq_ % static_cast<int64_t>(capacity_));
  times_[pos] = time;
  // The column at `pos` still holds the values of capacity_ snapshots ago: a class's first row of
  // this snapshot overwrites its value (AddRow), and EndSnapshot zeroes the classes that had none.
  // (Not a zeroing pass here: the column is strided, a cache line per class, and the passes over
  // the rows and over the classes touch those lines anyway.)
  return pos;
}

void TrendDetector::SetSample(uint32_t slot, size_t pos, uint64_t bytes, uint64_t instances) {
  ClassState& st = states_[slot];
  if (!st.wide) {
    if (bytes <= UINT32_MAX && instances <= UINT32_MAX) {
      bytes_[slot * capacity_ + pos] = static_cast<uint32_t>(bytes);
      instances_[slot * capacity_ + pos] = static_cast<uint32_t>(instances);
      return;
    }
    // Widen: the slot's samples move to 64 bits for as long as the class is tracked.
    const auto from = static_cast<ptrdiff_t>(slot * capacity_);
    const auto to = from + static_cast<ptrdiff_t>(capacity_);
    WideSamples& w = wide_[slot];
    w.bytes.assign(bytes_.begin() + from, bytes_.begin() + to);
    w.instances.assign(instances_.begin() + from, instances_.begin() + to);
    std::fill(bytes_.begin() + from, bytes_.begin() + to, 0);
    std::fill(instances_.begin() + from, instances_.begin() + to, 0);
    st.wide = true;
  }
  WideSamples& w = wide_.at(slot);
  w.bytes[pos] = bytes;
  w.instances[pos] = instances;
}

TrendDetector::Samples TrendDetector::BytesOf(uint32_t slot) const {
  if (states_[slot].wide) return Samples{nullptr, wide_.at(slot).bytes.data()};
  return Samples{bytes_.data() + slot * capacity_, nullptr};
}

TrendDetector::Samples TrendDetector::InstancesOf(uint32_t slot) const {
  if (states_[slot].wide) return Samples{nullptr, wide_.at(slot).instances.data()};
  return Samples{instances_.data() + slot * capacity_, nullptr};
}

void TrendDetector::AddRow(uint32_t slot, size_t pos, uint64_t bytes, uint64_t instances) {
  // The first row of the class with objects in this snapshot overwrites the old value; another
  // (several class loaders) adds to it. A row without objects leaves last_nonzero_seq: it writes 0,
  // which the next row may overwrite, as 0 + that row.
  ClassState& st = states_[slot];
  uint64_t b = bytes, i = instances;
  if (st.last_nonzero_seq == seq_) {
    b = SaturatingAdd(BytesOf(slot)[pos], bytes);
    i = SaturatingAdd(InstancesOf(slot)[pos], instances);
  }
  SetSample(slot, pos, b, i);
  if (b > 0 || i > 0) st.last_nonzero_seq = seq_;
}

bool TrendDetector::Observe(const Snapshot& snapshot) {
  HW_CHECK(!keyed_);  // one way of feeding per detector (see ObserveKeyed)
  if (!Accept(snapshot.time, snapshot.agent)) return false;
  const size_t pos = StartSnapshot(snapshot.time);
  // Rows usually come in the same order every snapshot: try the slot of the previous snapshot's
  // row at the same position (a string compare) before the hash map (hash, probe, compare).
  const auto& rows = snapshot.histogram.rows;
  slot_hint_.resize(rows.size(), UINT32_MAX);
  for (size_t r = 0; r < rows.size(); ++r) {
    const ClassHistogramRow& row = rows[r];
    const uint32_t hint = slot_hint_[r];
    const uint32_t slot =
        hint < states_.size() && states_[hint].in_use && states_[hint].name == row.class_name
            ? hint
            : SlotFor(row.class_name);
    slot_hint_[r] = slot;
    AddRow(slot, pos, row.bytes, row.instances);
  }
  EndSnapshot(pos, snapshot.time, snapshot.cost.mode);
  return true;
}

bool TrendDetector::ObserveKeyed(absl::Time time, const AgentId& agent, HistogramMode mode,
                                 std::span<const KeyedRow> rows) {
  HW_CHECK(keyed_ || seq_ == 0);  // one way of feeding per detector
  keyed_ = true;
  if (!Accept(time, agent)) return false;
  const size_t pos = StartSnapshot(time);
  // As Observe, with the keys compared instead of the names.
  slot_hint_.resize(rows.size(), UINT32_MAX);
  for (size_t r = 0; r < rows.size(); ++r) {
    const KeyedRow& row = rows[r];
    const uint32_t hint = slot_hint_[r];
    uint32_t slot;
    if (hint < states_.size() && states_[hint].in_use && states_[hint].key == row.key) {
      slot = hint;
    } else if (auto it = slot_of_key_.find(row.key); it != slot_of_key_.end()) {
      slot = it->second;
    } else {
      slot = SlotFor(std::string(row.name));
      ClassState& st = states_[slot];
      if (st.key != kNoKey) slot_of_key_.erase(st.key);  // the caller renumbered the class
      st.key = row.key;
      slot_of_key_[row.key] = slot;
    }
    slot_hint_[r] = slot;
    AddRow(slot, pos, row.bytes, row.instances);
  }
  EndSnapshot(pos, time, mode);
  return true;
}

bool TrendDetector::TracksKey(uint32_t key) const { return slot_of_key_.contains(key); }

void TrendDetector::EndSnapshot(size_t pos, absl::Time time, HistogramMode mode) {
  // Garbage in `-all` histograms (taken without a GC) only ever adds to a class: such a snapshot
  // counts, per class, the smaller of its own value and the previous snapshot's raw value (a
  // minimum over buckets of two snapshots), which removes most garbage spikes and lags a steady
  // growth by one snapshot without changing its slope (docs/trend-detection.md).
  // Both -all modes: right after the JVM's own old-generation collection the old generation is
  // clean, but the young generation has refilled with garbage by the time the histogram runs.
  const bool has_garbage = mode == HistogramMode::kAll || mode == HistogramMode::kAllAfterGc;
  for (size_t s = 0; s < states_.size(); ++s) {
    ClassState& st = states_[s];
    if (!st.in_use) continue;
    const uint32_t slot = static_cast<uint32_t>(s);
    // No row with objects: 0 (the column still held old values; see StartSnapshot).
    if (st.last_nonzero_seq != seq_) SetSample(slot, pos, 0, 0);
    const uint64_t raw_b = BytesOf(slot)[pos], raw_i = InstancesOf(slot)[pos];
    if (has_garbage && seq_ > 0) {
      // Never larger than the raw values: stays in the slot's width.
      SetSample(slot, pos, std::min(raw_b, st.previous_raw_bytes),
                std::min(raw_i, st.previous_raw_instances));
    }
    st.previous_raw_bytes = raw_b;
    st.previous_raw_instances = raw_i;
  }
  const int64_t current = seq_;
  ++seq_;
  last_time_ = time;

  if (warmup_end_seq_ < 0) {
    const absl::Time origin =
        (agent_start_ != absl::InfinitePast() && agent_start_ != absl::InfiniteFuture())
            ? agent_start_
            : first_time_;
    if (current >= static_cast<int64_t>(options_.warmup_snapshots) &&
        time >= origin + options_.warmup) {
      warmup_end_seq_ = current;
    }
  }

  if (warmup_end_seq_ >= 0) {
    const size_t post = static_cast<size_t>(seq_ - warmup_end_seq_);
    window_n_ = std::min(options_.window_snapshots, post);
    // Test D's earlier maximum also looks at warm-up snapshots: they are real observations of the
    // class, and a peak seen during warm-up (e.g. a sawtooth's previous tooth) must veto, never
    // flag.
    lookback_n_ = std::min(options_.peak_lookback_snapshots, static_cast<size_t>(seq_));
    // Window times in seconds since the window's first snapshot, and the reciprocal pair
    // differences shared by every class's Theil-Sen slope.
    const int64_t window_start = seq_ - static_cast<int64_t>(window_n_);
    const absl::Time t0 =
        times_[static_cast<size_t>(window_start % static_cast<int64_t>(capacity_))];
    // Seconds since the window start of every snapshot in the ring (negative before the window),
    // shared by every class's evaluation.
    for (size_t p = 0; p < capacity_; ++p) ring_seconds_[p] = absl::ToDoubleSeconds(times_[p] - t0);
    window_seconds_.resize(window_n_);
    window_pos_.resize(window_n_);
    for (size_t k = 0; k < window_n_; ++k) {
      const size_t p = static_cast<size_t>((window_start + static_cast<int64_t>(k)) %
                                           static_cast<int64_t>(capacity_));
      window_pos_[k] = p;
      window_seconds_[k] = ring_seconds_[p];
    }
    inverse_dt_.clear();
    for (size_t i = 0; i + 1 < window_n_; ++i) {
      for (size_t j = i + 1; j < window_n_; ++j) {
        inverse_dt_.push_back(1.0 / (window_seconds_[j] - window_seconds_[i]));
      }
    }

    for (uint32_t slot = 0; slot < states_.size(); ++slot) {
      ClassState& st = states_[slot];
      if (!st.in_use) continue;
      const bool was_suspect = st.suspect;
      Evaluation e = Evaluate(slot, /*full=*/was_suspect);
      // A class with no objects in this snapshot has vanished: it stops being a suspect at once.
      const bool vanished = st.last_nonzero_seq != current;
      if (st.suspect) {
        st.fail_streak = e.pass ? 0 : st.fail_streak + 1;
        if (st.fail_streak >= options_.clear_snapshots || vanished) {
          st.suspect = false;
          st.pass_streak = 0;
          st.fail_streak = 0;
        }
      } else {
        if (e.pass && !vanished && entry_veto_ && entry_veto_(st.name)) e.pass = false;
        st.pass_streak = e.pass && !vanished ? st.pass_streak + 1 : 0;
        if (st.pass_streak >= options_.confirm_snapshots) {
          st.suspect = true;
          st.first_seen = time;
          st.pass_streak = 0;
          st.fail_streak = 0;
        }
      }
      if (st.suspect) {
        // A class that just became a suspect was evaluated with short-circuiting: complete its
        // figures.
        const Evaluation full = was_suspect ? e : Evaluate(slot, /*full=*/true);
        st.score = std::max(0.0, full.tau) *
                   std::min(1.0, static_cast<double>(window_n_) /
                                     static_cast<double>(options_.window_snapshots));
        st.p_value = full.p_value;
        st.slope_bytes = full.slope_bytes;
        st.slope_instances = full.slope_instances;
        st.growth_bytes = full.growth_bytes;
        st.window = window_n_;
      }
    }
  }

  // Forget classes that had no objects during the whole ring and are not suspects.
  for (uint32_t slot = 0; slot < states_.size(); ++slot) {
    const ClassState& st = states_[slot];
    if (st.in_use && !st.suspect && st.last_nonzero_seq < seq_ - static_cast<int64_t>(capacity_)) {
      FreeSlot(slot);
    }
  }
}

TrendDetector::Evaluation TrendDetector::Evaluate(uint32_t slot, bool full,
                                                  ScaleExplanation* explain) const {
  Evaluation e;
  const size_t n = window_n_;
  if (n < options_.min_snapshots) return e;
  // Explaining evaluates everything; the entry conditions count unless the class is a suspect.
  const bool entry = !full;
  if (explain != nullptr) full = true;
  const size_t cap = capacity_;
  const int64_t icap = static_cast<int64_t>(cap);
  const Samples samples = BytesOf(slot);

  // Gather the window (oldest first) and its range.
  y_.resize(n);
  double wmin = std::numeric_limits<double>::infinity();
  double wmax = -wmin;
  for (size_t k = 0; k < n; ++k) {
    const double v = static_cast<double>(samples[window_pos_[k]]);
    y_[k] = v;
    wmin = std::min(wmin, v);
    wmax = std::max(wmax, v);
  }
  const double range = wmax - wmin;
  const double min_growth = static_cast<double>(options_.min_growth_bytes);
  if (!full && range < min_growth) return e;

  // Tests C and D look for records: maxima that beat every earlier snapshot within the lookback
  // (warm-up included: it can only veto). One forward scan over the lookback collects what both
  // need; times are in window seconds (negative before the window).
  //
  // Test C splits the last m = min_snapshots snapshots into `segments` parts; boundary[g] is the
  // first sequence number of part g (1-based), and boundary[0] = boundary[1] - |part 1| starts a
  // reference part just before them. Part g must hold a record over everything before boundary[g -
  // 1]: so growth must span all parts (a cache that filled only in the last few snapshots, or a
  // one-time step, fails), while a stall as long as one part in a noisy leak is tolerated. Test D:
  // the maximum of the last r = recent_snapshots snapshots must beat everything before them.
  const int64_t lookback_start = seq_ - static_cast<int64_t>(lookback_n_);
  const size_t m = options_.min_snapshots;
  const size_t segments = options_.segments;
  const int64_t last_m_start = seq_ - static_cast<int64_t>(m);
  for (size_t g = 1; g <= segments; ++g) {
    boundary_[g] = last_m_start + static_cast<int64_t>((g - 1) * m / segments);
  }
  boundary_[0] = boundary_[1] - static_cast<int64_t>(m / segments);
  boundary_[segments + 1] = seq_;
  const int64_t recent_start = seq_ - static_cast<int64_t>(options_.recent_snapshots);
  double running_max = -std::numeric_limits<double>::infinity();
  double running_max_t = 0;
  double before_recent_max = running_max, before_recent_t = 0;
  double recent_max = running_max;
  size_t next_boundary = 0;
  // The reference part may start before the lookback (too little history): nothing before it to
  // beat.
  while (boundary_[next_boundary] < lookback_start) {
    prefix_max_[next_boundary] = -std::numeric_limits<double>::infinity();
    prefix_max_t_[next_boundary] = 0;
    part_start_t_[next_boundary] = -std::numeric_limits<double>::infinity();
    ++next_boundary;
  }
  for (int64_t q = lookback_start; q < seq_; ++q) {
    while (next_boundary <= segments && q == boundary_[next_boundary]) {
      prefix_max_[next_boundary] = running_max;
      prefix_max_t_[next_boundary] = running_max_t;
      if (next_boundary >= 1) {
        segment_max_[next_boundary] = -std::numeric_limits<double>::infinity();
        segment_max_t_[next_boundary] = 0;
      }
      ++next_boundary;
    }
    const size_t p = static_cast<size_t>(q % icap);
    const double v = static_cast<double>(samples[p]);
    const double t = ring_seconds_[p];
    if (next_boundary > 0 && q == boundary_[next_boundary - 1])
      part_start_t_[next_boundary - 1] = t;
    if (q == recent_start) {
      before_recent_max = running_max;
      before_recent_t = running_max_t;
    }
    if (q >= recent_start) recent_max = std::max(recent_max, v);
    if (next_boundary >= 2 && v >= segment_max_[next_boundary - 1]) {
      segment_max_[next_boundary - 1] = v;
      segment_max_t_[next_boundary - 1] = t;
    }
    if (v >= running_max) {
      running_max = v;
      running_max_t = t;
    }
  }
  bool records = true;
  for (size_t g = 1; g <= segments; ++g) {
    if (!(segment_max_[g] > prefix_max_[g - 1])) records = false;
  }
  if (!full && !records) return e;
  if (!full && !(recent_max > before_recent_max)) return e;

  // Test A: Mann-Kendall.
  const MannKendallResult mk = MannKendall(y_, &scratch_);
  e.p_value = mk.p_value;
  e.tau = mk.tau;
  const bool pass_a = mk.s > 0 && mk.p_value <= options_.max_p_value;
  if (!full && !pass_a) return e;

  // Test B: Theil-Sen slope and growth over the window.
  const double slope = TheilSenSlopePrecomputed(inverse_dt_, y_, &scratch_);
  const double span = window_seconds_[n - 1];
  const double growth = std::min(slope * span, range);
  e.slope_bytes = slope;
  e.growth_bytes = growth;
  const double start_level = TheilSenIntercept(window_seconds_, y_, slope, &scratch_);
  // Relative growth gates becoming a suspect only: a leak of constant rate grows less and less
  // relative to its own size, and must not be dropped for that once flagged.
  const bool relative_ok =
      !entry || start_level <= 0 || growth >= options_.min_relative_growth * start_level;
  const bool pass_b = slope > 0 && growth >= min_growth &&
                      slope >= options_.min_growth_bytes_per_second && relative_ok;

  // Tests C and D with their margins: each record must beat the earlier maximum by at least a
  // fraction of what the slope predicts over the time between the two. For test C that time is
  // counted from no earlier than the start of the previous part: the earlier maximum may be an old
  // noise peak from before the growth began, and the slope says nothing about how much a leak grew
  // before it started.
  const double f = options_.min_step_fraction;
  // Noise floor of a record (entry only, when record_noise_sigmas > 0): the window's noise level
  // from its first differences, sigma = 1.4826 * MAD(diff) / sqrt(2), robust to the one large
  // difference of a step. A step inside the window inflates the slope, and so the margins above
  // stay small while the flat values after the step keep setting noise-sized records.
  double noise_floor = 0;
  if (entry && options_.record_noise_sigmas > 0 && (records || explain != nullptr)) {
    std::vector<double>& d = noise_scratch_;
    d.resize(n - 1);
    for (size_t k = 0; k + 1 < n; ++k) d[k] = y_[k + 1] - y_[k];
    const double median_d = Median(d, &scratch_);
    for (double& v : d) v = std::abs(v - median_d);
    noise_floor = options_.record_noise_sigmas * 1.4826 * Median(d, &scratch_) / std::sqrt(2.0);
  }
  bool pass_c = records;
  double c_worst_noise = std::numeric_limits<double>::infinity();
  for (size_t g = 1; g <= segments && pass_c; ++g) {
    const double rise = segment_max_[g] - prefix_max_[g - 1];
    const double since = std::max(prefix_max_t_[g - 1], part_start_t_[g - 1]);
    if (rise < f * slope * (segment_max_t_[g] - since)) pass_c = false;
    c_worst_noise = std::min(c_worst_noise, rise);
  }
  const bool pass_c_records = pass_c;  // records and their slope margins alone (explanations)
  // Spread (with the noise floor): no single increment among the last m values (and the one
  // before them) may make more than kMaxIncrementShare of their rise. A step is one increment.
  double largest_share = 0;
  if (entry && options_.record_noise_sigmas > 0 && (records || explain != nullptr)) {
    for (size_t g = 1; g <= segments; ++g) {
      c_worst_noise = std::min(c_worst_noise, segment_max_[g] - prefix_max_[g - 1]);
    }
    if (!(c_worst_noise >= noise_floor)) pass_c = false;
    const size_t from = n > m ? n - m - 1 : 0;
    double lo = y_[from], hi = y_[from], largest = 0;
    for (size_t k = from + 1; k < n; ++k) {
      largest = std::max(largest, y_[k] - y_[k - 1]);
      lo = std::min(lo, y_[k]);
      hi = std::max(hi, y_[k]);
    }
    largest_share = hi > lo ? largest / (hi - lo) : 1;
    if (largest_share > kMaxIncrementShare) pass_c = false;
  }
  // Recent trend (entry only): the last m values trend on their own, and their Theil-Sen slope is
  // at least kRecentSlopeFraction of the window's. After a step, the pairs among the flat values
  // after it outnumber those across it, so their median slope is about 0.
  // Their growth (slope times their span) must also be a quarter of the growth test B asks of the
  // whole window: when a step is less than half-way into the window, the window's own slope is
  // noise-sized too, and so is half of it.
  double recent_p = 0, recent_slope_ratio = 0, recent_growth = 0;
  const double needed_growth = std::max(min_growth, options_.min_relative_growth * start_level);
  if (options_.recent_max_p_value > 0 && (entry && (pass_c || explain != nullptr))) {
    const std::span<const double> recent = std::span<const double>(y_).subspan(n - m);
    const std::span<const double> recent_t =
        std::span<const double>(window_seconds_).subspan(n - m);
    recent_p = MannKendall(recent, &scratch_).p_value;
    const double recent_slope = TheilSenSlope(recent_t, recent, &scratch_);
    recent_slope_ratio = slope > 0 ? recent_slope / slope : 0;
    recent_growth = recent_slope * (recent_t.back() - recent_t.front());
    if (recent_p > options_.recent_max_p_value || recent_slope_ratio < kRecentSlopeFraction ||
        recent_growth < kRecentGrowthFraction * needed_growth) {
      pass_c = false;
    }
  }
  const double rise = recent_max - before_recent_max;
  // With a noise floor, a new record must also clear the noise (entry only), like test C's.
  const bool pass_d =
      rise > 0 && rise >= f * slope * (span - before_recent_t) && (!entry || rise >= noise_floor);

  // Test C, like relative growth, gates becoming a suspect: it rejects steps and short fills. A
  // suspect stays one while its growth is significant, large enough and still setting records (A,
  // B, D); C would otherwise clear a leak that was flagged early while its growth does not yet span
  // min_snapshots.
  e.pass = pass_a && pass_b && (!entry || pass_c) && pass_d;
  if (explain != nullptr) {
    auto add = [&](const char* test, double value, const char* op, double threshold, bool pass,
                   const char* unit) {
      explain->tests.push_back(TestExplanation{test, value, threshold, op, pass, unit});
    };
    add("A significance", mk.p_value, "<=", options_.max_p_value, pass_a, "p");
    add("B growth", growth, ">=", min_growth, slope > 0 && growth >= min_growth, "bytes");
    if (entry) {
      add("B relative growth", start_level > 0 ? growth / start_level : 0,
          ">=", options_.min_relative_growth, relative_ok, "fraction");
    }
    if (options_.min_growth_bytes_per_second > 0) {
      add("B rate", slope, ">=", options_.min_growth_bytes_per_second,
          slope >= options_.min_growth_bytes_per_second, "bytes/s");
    }
    if (entry) {
      // The weakest part's rise relative to what the slope predicts for it.
      double worst = std::numeric_limits<double>::infinity();
      for (size_t g = 1; g <= segments; ++g) {
        const double part_rise = segment_max_[g] - prefix_max_[g - 1];
        const double since = std::max(prefix_max_t_[g - 1], part_start_t_[g - 1]);
        const double predicted = slope * (segment_max_t_[g] - since);
        const double ratio = predicted > 0   ? part_rise / predicted
                             : part_rise > 0 ? std::numeric_limits<double>::infinity()
                                             : 0;
        worst = std::min(worst, std::isfinite(part_rise) ? ratio : 0.0);
      }
      add("C sustained", std::isfinite(worst) ? worst : 1e9, ">=", f, pass_c_records, "fraction");
      if (options_.record_noise_sigmas > 0) {
        add("C above noise", std::isfinite(c_worst_noise) ? c_worst_noise : 0, ">=", noise_floor,
            c_worst_noise >= noise_floor, "bytes");
      }
      if (options_.record_noise_sigmas > 0) {
        add("C spread", largest_share, "<=", kMaxIncrementShare,
            largest_share <= kMaxIncrementShare, "fraction");
      }
      if (options_.recent_max_p_value > 0) {
        add("C recent trend", recent_p, "<=", options_.recent_max_p_value,
            recent_p <= options_.recent_max_p_value, "p");
        add("C recent slope", recent_slope_ratio, ">=", kRecentSlopeFraction,
            recent_slope_ratio >= kRecentSlopeFraction, "fraction");
        add("C recent growth", recent_growth, ">=", kRecentGrowthFraction * needed_growth,
            recent_growth >= kRecentGrowthFraction * needed_growth, "bytes");
      }
    }
    const double predicted_d = slope * (span - before_recent_t);
    add("D still growing",
        predicted_d > 0 && std::isfinite(rise) ? rise / predicted_d : (rise > 0 ? 1e9 : 0), ">=", f,
        pass_d, "fraction");
  }
  if (full) {
    // Instances slope. Theil-Sen is scale-equivariant, so when bytes are the same multiple of
    // instances in every snapshot of the window (every class whose objects all have one size, i.e.
    // every non-array class), it is the bytes slope divided by that size; only arrays need their
    // own pass.
    const Samples inst = InstancesOf(slot);
    uint64_t object_size = 0;
    bool proportional = true;
    for (size_t k = 0; k < n && proportional; ++k) {
      const size_t p = window_pos_[k];
      if (inst[p] == 0) {
        proportional = samples[p] == 0;
      } else if (object_size == 0) {
        proportional = samples[p] % inst[p] == 0;
        object_size = samples[p] / inst[p];
      } else {
        proportional = samples[p] == object_size * inst[p];
      }
    }
    if (proportional && object_size > 0) {
      e.slope_instances = slope / static_cast<double>(object_size);
    } else {
      for (size_t k = 0; k < n; ++k) y_[k] = static_cast<double>(inst[window_pos_[k]]);
      e.slope_instances = TheilSenSlopePrecomputed(inverse_dt_, y_, &scratch_);
    }
  }
  return e;
}

Suspect TrendDetector::MakeSuspect(const ClassState& st, uint32_t slot) const {
  const size_t pos = static_cast<size_t>((seq_ - 1) % static_cast<int64_t>(capacity_));
  Suspect s;
  s.class_name = st.name;
  s.score = st.score;
  s.first_seen = st.first_seen;
  s.growth_bytes_per_second = st.slope_bytes;
  s.growth_instances_per_second = st.slope_instances;
  s.bytes = BytesOf(slot)[pos];
  s.instances = InstancesOf(slot)[pos];
  s.p_value = st.p_value;
  s.window_size = st.window;
  s.window_growth_bytes = st.growth_bytes;
  return s;
}

ScaleExplanation TrendDetector::Explain(std::string_view class_name) const {
  ScaleExplanation out;
  out.window_size = window_n_;
  out.min_window = options_.min_snapshots;
  auto it = slot_of_.find(absl::string_view(class_name.data(), class_name.size()));
  if (it == slot_of_.end()) {
    out.not_evaluated = "no history for the class on this scale";
    return out;
  }
  const ClassState& st = states_[it->second];
  out.suspect = st.suspect;
  if (warmup_end_seq_ < 0) {
    out.window_size = 0;
    out.not_evaluated = "warm-up";
    return out;
  }
  if (window_n_ < options_.min_snapshots) {
    out.not_evaluated = absl::StrFormat("window has %d of %d", window_n_, options_.min_snapshots);
    return out;
  }
  Evaluate(it->second, st.suspect, &out);  // the caller (LeakDetector) explains its entry veto
  return out;
}

bool TrendDetector::Tracks(std::string_view class_name) const {
  return slot_of_.contains(absl::string_view(class_name.data(), class_name.size()));
}

bool TrendDetector::Window(std::string_view class_name, std::vector<double>* seconds,
                           std::vector<double>* bytes) const {
  seconds->clear();
  bytes->clear();
  auto it = slot_of_.find(absl::string_view(class_name.data(), class_name.size()));
  if (it == slot_of_.end() || warmup_end_seq_ < 0 || window_n_ == 0) return false;
  const int64_t icap = static_cast<int64_t>(capacity_);
  const int64_t window_start = seq_ - static_cast<int64_t>(window_n_);
  const Samples samples = BytesOf(it->second);
  for (size_t k = 0; k < window_n_; ++k) {
    const size_t p = static_cast<size_t>((window_start + static_cast<int64_t>(k)) % icap);
    seconds->push_back(window_seconds_[k]);
    bytes->push_back(static_cast<double>(samples[p]));
  }
  return true;
}

absl::Duration TrendDetector::window_span() const {
  if (window_n_ == 0) return absl::ZeroDuration();
  return absl::Seconds(window_seconds_[window_n_ - 1]);
}

std::vector<Suspect> TrendDetector::Suspects() const {
  std::vector<Suspect> out;
  for (uint32_t slot = 0; slot < states_.size(); ++slot) {
    const ClassState& st = states_[slot];
    if (st.in_use && st.suspect) out.push_back(MakeSuspect(st, slot));
  }
  std::sort(out.begin(), out.end(), [](const Suspect& a, const Suspect& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.class_name < b.class_name;
  });
  return out;
}

std::optional<Suspect> TrendDetector::SuspectFor(std::string_view class_name) const {
  // Debian's Abseil has its own string_view type, distinct from std::string_view.
  auto it = slot_of_.find(absl::string_view(class_name.data(), class_name.size()));
  if (it == slot_of_.end()) return std::nullopt;
  const ClassState& st = states_[it->second];
  if (!st.suspect) return std::nullopt;
  return MakeSuspect(st, it->second);
}

}  // namespace heapwatch::diff
