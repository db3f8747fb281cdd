// Leak-suspect trend detection over a sliding window of class histograms (snapshots) of one agent.
//
// A class is a *suspect* when its shallow bytes keep growing. TrendDetector watches every class of
// one agent and, after each snapshot, decides per class with four tests on its bytes
// (docs/trend-detection.md explains each one, the defaults, and how caches, sawtooth buffers, flat
// noise and start-up growth are ruled out). The window is the most recent window_snapshots
// post-warm-up snapshots (n of them, n >= min_snapshots); times are real timestamps, so irregular
// intervals are fine.
//   A. significance: the one-sided Mann-Kendall test over the window (Mann 1945, Kendall 1975;
//      exact null distribution without ties, normal approximation with tie-corrected variance and
//      continuity correction otherwise, Gilbert 1987 ch. 16; see diff/trend_stats.h) has p <=
//      max_p_value.
//   B. magnitude: the Theil-Sen slope over the window (Theil 1950, Sen 1968) is positive and at
//      least min_growth_bytes_per_second, and the growth over the window, min(slope * window span,
//      window max - window min), is at least min_growth_bytes and (to become a suspect; not to stay
//      one, since a constant-rate leak grows ever less relative to its own size) at least
//      min_relative_growth times the Theil-Sen line's level at the window's start.
//   C. sustained: the last min_snapshots snapshots are split into `segments` parts, preceded by a
//      reference part as long as the first; each part's maximum must beat the maximum of everything
//      before the part preceding it (within the lookback), by at least min_step_fraction of what
//      the slope predicts. So the growth must span all of the last min_snapshots snapshots: a
//      one-time step (a buffer allocated once) or a cache that filled for fewer than
//      (min_snapshots - min_snapshots / segments) snapshots (6 at the defaults) fails, while a
//      noisy leak that stalls for one part does not.
//   D. still growing: the maximum of the last recent_snapshots snapshots beats the maximum of every
//      earlier snapshot within the last peak_lookback_snapshots (warm-up snapshots included: they
//      can only veto) by at least min_step_fraction of what the slope predicts since that earlier
//      maximum. A cache that has plateaued, or a sawtooth that never beats its previous peak, fails
//      this.
// Hysteresis: a class becomes a suspect after passing all four on confirm_snapshots consecutive
// snapshots. It stays one while it passes A, B without the relative part, and D (test C and
// relative growth guard entry only), and stops being one after failing those on clear_snapshots
// consecutive snapshots, or at once when it has no objects in the latest snapshot (vanished).
//
// Determinism: the state is a pure function of the options, the agent start time given to the
// constructor and the sequence of snapshots passed to Observe(); there is no randomness and no
// clock. After a restart, replaying the agent's whole stored history in time order reproduces the
// suspects, their first_seen times and every reported figure exactly. Replaying only the most
// recent snapshots reproduces every per-class statistic once warmup_snapshots +
// peak_lookback_snapshots snapshots have been replayed, but a suspect is restored only if it passes
// the entry conditions somewhere in the replayed span: one whose window growth has since fallen
// below min_relative_growth of its size (a leak that has run for a long time) stays cleared until
// then, and first_seen is the first time it passed in the replayed span.
//
// Memory: per tracked class, 8 bytes per snapshot of the ring (max(window_snapshots,
// peak_lookback_snapshots) = 36 at the defaults, so 288 bytes: bytes and instances in 32 bits each;
// a class whose bytes or instances reach 2^32 keeps 16 bytes per snapshot, exact) plus about 150
// bytes of state and the class name. A class with no objects in any snapshot of the ring, and not a
// suspect, is forgotten.
//
// Thread-safety: a TrendDetector is not thread-safe; one per agent, and the caller serialises calls
// (const methods other than Explain() may run concurrently with each other, but not with
// Observe(); Explain() reuses scratch space and must not run concurrently with anything).
#ifndef HEAPWATCH_DIFF_TREND_DETECTOR_H_
#define HEAPWATCH_DIFF_TREND_DETECTOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "common/histogram.h"
#include "common/status.h"

namespace heapwatch::diff {

// Every knob of the trend detector. Defaults are chosen to work unchanged at the daemon's 60 s
// histogram interval and at the 1-2 s intervals of tests: every threshold except
// min_growth_bytes_per_second (off by default) is expressed in snapshots or in growth over the
// window, not in absolute time. docs/trend-detection.md has the reasoning behind each default.
struct TrendOptions {
  // Number of most recent post-warm-up snapshots the tests run on. Latency and robustness grow with
  // it. Range [min_snapshots, 1024].
  size_t window_snapshots = 12;
  // Fewest post-warm-up snapshots in the window before any class can be a suspect (a leak running
  // since the agent started is flagged after warm-up plus this many snapshots at the earliest), and
  // the span that test C requires growth over. Range [max(4, 2 * segments), window_snapshots].
  size_t min_snapshots = 8;

  // Warm-up: snapshots taken before both limits have passed are left out of the window (tests A-C)
  // but still count as earlier maxima for test D, where they can only prevent a class from being
  // flagged. The first `warmup_snapshots` snapshots of the agent are ignored...
  size_t warmup_snapshots = 5;
  // ...and so is every snapshot taken less than `warmup` after the agent started (the agent start
  // time given to the constructor; the first snapshot's time when it is unknown). Non-negative,
  // finite.
  absl::Duration warmup = absl::ZeroDuration();

  // Test A: largest one-sided Mann-Kendall p-value accepted as significant growth. Range (0, 0.5].
  double max_p_value = 0.002;

  // Test B: smallest growth over the window in bytes (1 MiB). Also lets classes whose bytes varied
  // less than this over the window be skipped without computing any statistic.
  uint64_t min_growth_bytes = uint64_t{1} << 20;
  // Test B: smallest Theil-Sen slope in bytes per second; 0 disables it (the default, because an
  // absolute rate means very different things at 1 s and 60 s intervals; min_growth_bytes already
  // bounds it at min_growth_bytes / window span). Non-negative, finite.
  double min_growth_bytes_per_second = 0;
  // Test B, to become a suspect only: smallest growth over the window relative to the Theil-Sen
  // line's level at the window's start (0.10 = grew by 10%). A class that starts the window at zero
  // bytes passes. Non-negative, finite.
  double min_relative_growth = 0.10;

  // Test C: number of parts the last min_snapshots snapshots are split into (each must set a
  // record). Range [1, 8], and 2 * segments <= min_snapshots.
  size_t segments = 3;
  // Tests C and D: a new maximum must exceed the earlier one by at least this fraction of the
  // growth the Theil-Sen slope predicts between the two (0 only requires a strictly larger
  // maximum). Range [0, 1].
  double min_step_fraction = 0.25;
  // Test D: number of most recent snapshots that must hold a new maximum. Range
  // [1, min_snapshots/2]. 2 tolerates one low reading right after a record.
  size_t recent_snapshots = 2;
  // Test D: how many most recent snapshots (including the window and any warm-up ones) the earlier
  // maximum is taken over, so that a sawtooth whose period is longer than the window is still
  // recognised. Range [window_snapshots, 4096].
  size_t peak_lookback_snapshots = 36;

  // Hysteresis: consecutive passing evaluations before a class becomes a suspect (>= 1), and
  // consecutive failing evaluations before a suspect is cleared (>= 1).
  size_t confirm_snapshots = 1;
  size_t clear_snapshots = 3;

  // Test C, to become a suspect only: when > 0, the last min_snapshots values must also show a
  // significant upward trend on their own (one-sided Mann-Kendall p <= this). A one-time step
  // inside a long window gives the whole window a positive slope, and noise can then set the small
  // records C asks for; the last min_snapshots after a step are flat and fail this. With it, their
  // Theil-Sen slope must also be at least half the window's, and their growth (that slope times
  // their span) a quarter of the growth test B asks of the window. 0 (the default) disables all;
  // LeakDetector uses 0.05 on every scale. Range [0, 0.5].
  double recent_max_p_value = 0;
  // Test C, to become a suspect only: when > 0, every part's record must also beat the earlier
  // maximum by this many noise standard deviations, the noise estimated from the window's first
  // differences (1.4826 * MAD / sqrt(2)), and so must test D's record; and no single increment
  // among the last min_snapshots values may make more than half of their rise. Like
  // recent_max_p_value, it rejects a one-time step or a plateau whose flat values set noise-sized
  // records. 0 (the default) disables it; LeakDetector uses 2 on its bucketed scales. Range [0,
  // 10].
  double record_noise_sigmas = 0;
};

// Checks every field against the ranges documented on TrendOptions. Returns OK, or InvalidArgument
// whose message names the first offending field and its value (e.g. "TrendOptions.max_p_value = 0
// not in (0, 0.5]"). Complexity O(1).
Status ValidateTrendOptions(const TrendOptions& options);

// One class the detector currently believes is leaking.
struct Suspect {
  std::string class_name;
  // Confidence in [0, 1]: Kendall's tau-a of the window (1 = every later snapshot larger than every
  // earlier one) times min(1, window_size / window_snapshots) (less evidence, less confidence).
  double score = 0;
  // Time of the snapshot at which the class became a suspect in the current episode (an episode
  // ends when the class is cleared; a later one gets a new first_seen).
  absl::Time first_seen;
  // Theil-Sen slopes over the window: bytes per second and instances per second.
  double growth_bytes_per_second = 0;
  double growth_instances_per_second = 0;
  uint64_t bytes = 0;      // shallow bytes of the class in the latest snapshot
  uint64_t instances = 0;  // instances of the class in the latest snapshot
  double p_value = 1;      // Mann-Kendall one-sided p-value of the latest evaluation
  size_t window_size = 0;  // number of snapshots in the latest evaluation's window
  // Growth over the window in bytes, min(slope * window span, window max - window min), as used by
  // test B.
  double window_growth_bytes = 0;
  // Set by LeakDetector (diff/leak_detector.h), empty/zero from a bare TrendDetector: the time
  // scale whose figures these are (0 = every snapshot, else the bucket width) and the id of the
  // leak the class is grouped into.
  absl::Duration time_scale;
  std::string leak;

  friend bool operator==(const Suspect&, const Suspect&) = default;
};

// One test's value and threshold, for explaining why a class is or is not a suspect.
struct TestExplanation {
  // "A significance", "B growth", "B relative growth", "B rate", "C sustained", "D still growing",
  // "cycle veto".
  std::string test;
  double value = 0;
  double threshold = 0;
  std::string op;  // "<=", ">=" or ">": the test passes when value <op> threshold
  bool pass = false;
  std::string unit;  // "p", "bytes", "bytes/s", "fraction"
  friend bool operator==(const TestExplanation&, const TestExplanation&) = default;
};

// Every test of one class on one time scale at the latest snapshot.
struct ScaleExplanation {
  absl::Duration time_scale;  // 0 = every snapshot, else the bucket width (set by LeakDetector)
  bool suspect = false;       // a suspect on this scale now
  size_t window_size = 0;     // snapshots (or buckets) in the window
  size_t min_window = 0;      // fewest before any verdict (min_snapshots)
  // Empty when the tests ran; otherwise why they did not.
  std::string not_evaluated;
  std::vector<TestExplanation> tests;
  friend bool operator==(const ScaleExplanation&, const ScaleExplanation&) = default;
};

// Trend detector for the classes of one agent. See the file comment for the tests it runs.
class TrendDetector {
 public:
  // REQUIRES: ValidateTrendOptions(options).ok() (HW_CHECKed; callers that build options from
  // configuration validate first, or use Create()). `agent_start` is when the agent (JVM) started,
  // the origin of the `warmup` duration; absl::InfinitePast() (or any non-finite time) means
  // unknown, and the first observed snapshot's time is used instead.
  explicit TrendDetector(TrendOptions options, absl::Time agent_start = absl::InfinitePast());

  // Like the constructor, but returns InvalidArgument (from ValidateTrendOptions) for bad options.
  static StatusOr<TrendDetector> Create(TrendOptions options,
                                        absl::Time agent_start = absl::InfinitePast());

  TrendDetector(TrendDetector&&) = default;
  TrendDetector& operator=(TrendDetector&&) = default;
  TrendDetector(const TrendDetector&) = delete;
  TrendDetector& operator=(const TrendDetector&) = delete;

  // Adds the next snapshot of the agent and re-evaluates every class. Snapshots must come in time
  // order: one whose time is older than or equal to the latest accepted one is ignored, and so is
  // one of another agent than the first accepted snapshot (returns false in both cases; nothing
  // changes). Rows with the same class name (one class loaded by several class loaders) are summed.
  // A class missing from the histogram has 0 instances and 0 bytes. Returns true when the snapshot
  // was accepted. Complexity: O(r + c * L) for r rows, c tracked classes and L =
  // peak_lookback_snapshots, plus O(w^2) (w = window_snapshots) for each class that passes the
  // cheap checks (varied by at least min_growth_bytes over the window, set the records of tests C
  // and D); no allocation once every class has been seen, except for new class names. Measured
  // (bench/diff, 5,000 classes, window 30): about 1.3 ms of CPU per snapshot for a typical
  // histogram, 22 ms when every class is a leaking suspect.
  bool Observe(const Snapshot& snapshot);

  // For a caller that has resolved the rows to its own class keys already (LeakDetector: one
  // name lookup per row for all its detectors). `name` is read only when the key is new to the
  // detector. A key must stand for one class name while TracksKey(key); the caller may give it to
  // another class once no detector tracks it.
  struct KeyedRow {
    uint32_t key = 0;
    std::string_view name;
    uint64_t bytes = 0;
    uint64_t instances = 0;
  };
  // Observe() of a snapshot of `agent` at `time` in `mode` whose rows are `rows` (in that order,
  // with those names): the same state and results, with keys compared instead of names (no name
  // compare, hash or copy except for a key new to the detector). A detector is fed either by
  // Observe() or by ObserveKeyed(), not both (HW_CHECKed). Same complexity as Observe().
  bool ObserveKeyed(absl::Time time, const AgentId& agent, HistogramMode mode,
                    std::span<const KeyedRow> rows);
  // True when the detector keeps history for the class of `key` (ObserveKeyed). O(1) expected.
  bool TracksKey(uint32_t key) const;

  // Current suspects, sorted by score descending, then class name ascending. O(s log s) for s
  // suspects.
  std::vector<Suspect> Suspects() const;

  // The suspect entry for `class_name`, or nullopt when that class is not a suspect now. O(1)
  // expected.
  std::optional<Suspect> SuspectFor(std::string_view class_name) const;

  // Every test's value and threshold for `class_name` at the latest snapshot, evaluated afresh with
  // no short-circuit (no state changes). O(w^2). A class without history gives not_evaluated.
  ScaleExplanation Explain(std::string_view class_name) const;

  // Entry veto: when set, a class that passes every test but is not a suspect yet becomes one only
  // if veto(class_name) is false. Called at most once per such class and snapshot, from Observe
  // (Explain leaves it to the caller). LeakDetector uses it for its daily-cycle veto. Empty = no
  // veto.
  void SetEntryVeto(std::function<bool(std::string_view class_name)> veto) {
    entry_veto_ = std::move(veto);
  }

  // True when the detector keeps history for `class_name`. O(1) expected.
  bool Tracks(std::string_view class_name) const;

  // The class's values (bytes, after the -all minimum) over the current window, oldest first, with
  // their times in seconds since the window's first snapshot. False (outputs cleared) when the
  // class is not tracked or there is no window yet (warm-up). O(w).
  bool Window(std::string_view class_name, std::vector<double>* seconds,
              std::vector<double>* bytes) const;

  // Span of the current window (time between its first and last snapshot); 0 before warm-up ends.
  absl::Duration window_span() const;

  const TrendOptions& options() const { return options_; }
  // Number of snapshots accepted so far (including warm-up).
  size_t snapshots_observed() const { return static_cast<size_t>(seq_); }
  // True once warm-up has ended (the latest accepted snapshot was past it).
  bool warmed_up() const { return warmup_end_seq_ >= 0; }
  // Number of classes the detector currently keeps history for.
  size_t tracked_classes() const { return slot_of_.size(); }

 private:
  // Everything the detector keeps per class besides its samples.
  static constexpr uint32_t kNoKey = UINT32_MAX;
  struct ClassState {
    std::string name;
    bool in_use = false;
    uint32_t key = kNoKey;  // the caller's key (ObserveKeyed), else kNoKey
    bool wide = false;      // samples in wide_ (a value reached 2^32), not bytes_/instances_
    int64_t last_nonzero_seq = -1;  // latest snapshot in which the class had a row with objects
    // The class's counts as the previous snapshot reported them (before the -all minimum below).
    uint64_t previous_raw_bytes = 0;
    uint64_t previous_raw_instances = 0;
    bool suspect = false;
    uint32_t pass_streak = 0;  // consecutive passing evaluations (while not a suspect)
    uint32_t fail_streak = 0;  // consecutive failing evaluations (while a suspect)
    absl::Time first_seen;
    // Latest full evaluation; meaningful while `suspect`.
    double score = 0;
    double p_value = 1;
    double slope_bytes = 0;
    double slope_instances = 0;
    double growth_bytes = 0;
    size_t window = 0;
  };
  // Outcome of tests A-D for one class at one snapshot.
  struct Evaluation {
    bool pass = false;
    double p_value = 1;
    double tau = 0;
    double slope_bytes = 0;
    double slope_instances = 0;  // computed only by full evaluations
    double growth_bytes = 0;
  };

  uint32_t SlotFor(const std::string& class_name);
  void FreeSlot(uint32_t slot);
  // Observe's steps: the time-order and agent check (first snapshot: takes its agent), the ring
  // position of the new snapshot (its column zeroed), one row added to a slot, and everything
  // after the rows (-all minimum, warm-up, evaluation, forgetting).
  bool Accept(absl::Time time, const AgentId& agent);
  size_t StartSnapshot(absl::Time time);
  void AddRow(uint32_t slot, size_t pos, uint64_t bytes, uint64_t instances);
  void EndSnapshot(size_t pos, absl::Time time, HistogramMode mode);
  // A slot's samples, 32- or 64-bit (see bytes_).
  struct Samples {
    const uint32_t* narrow = nullptr;
    const uint64_t* wide = nullptr;
    uint64_t operator[](size_t pos) const { return wide != nullptr ? wide[pos] : narrow[pos]; }
  };
  Samples BytesOf(uint32_t slot) const;
  Samples InstancesOf(uint32_t slot) const;
  // Stores one snapshot's values of a slot, widening the slot when one does not fit in 32 bits.
  void SetSample(uint32_t slot, size_t pos, uint64_t bytes, uint64_t instances);
  // Runs tests A-D for one class. `full` is true for a current suspect: every figure is computed
  // (no short-circuit) and the entry-only conditions (test C, the relative part of test B) are
  // skipped. With `explain`, nothing is short-circuited, the entry conditions are evaluated too
  // (for a class that is not a suspect), and every test is recorded there.
  Evaluation Evaluate(uint32_t slot, bool full, ScaleExplanation* explain = nullptr) const;
  Suspect MakeSuspect(const ClassState& state, uint32_t slot) const;

  TrendOptions options_;
  absl::Time agent_start_;
  AgentId agent_;
  size_t capacity_ = 0;    // ring length in snapshots: max(window, peak lookback)
  size_t window_n_ = 0;    // snapshots in the current window (set by Observe)
  size_t lookback_n_ = 0;  // snapshots in the current lookback of test D (>= window_n_)
  int64_t seq_ = 0;        // number of accepted snapshots; the next one gets this sequence number
  int64_t warmup_end_seq_ = -1;  // sequence number of the first post-warm-up snapshot, -1 before
  absl::Time first_time_ = absl::InfinitePast();
  absl::Time last_time_ = absl::InfinitePast();
  std::vector<absl::Time> times_;  // ring of snapshot times, index seq % capacity_

  // Per-class history, slot-major: samples of slot s are [s * capacity_, (s + 1) * capacity_),
  // indexed by seq % capacity_. Zero for snapshots in which the class had no row (or before it was
  // first seen). 32-bit while every value of the slot fits (8 bytes per snapshot and class instead
  // of 16); a slot whose bytes or instances reach 2^32 (a class of 4 GiB or more) keeps all its
  // samples in wide_ from then on, exactly (never saturated or cut).
  std::vector<uint32_t> bytes_;
  std::vector<uint32_t> instances_;
  struct WideSamples {
    std::vector<uint64_t> bytes, instances;  // capacity_ each, indexed like the narrow rings
  };
  absl::flat_hash_map<uint32_t, WideSamples> wide_;  // by slot
  std::vector<ClassState> states_;
  std::vector<uint32_t> free_slots_;  // LIFO, so that slot reuse is deterministic
  absl::flat_hash_map<std::string, uint32_t> slot_of_;
  // Per row position of the last snapshot, the slot of its class (a guess for the next snapshot's
  // row there, checked by name; UINT32_MAX = none).
  std::vector<uint32_t> slot_hint_;
  // ObserveKeyed: the caller's key -> slot, for the classes tracked.
  absl::flat_hash_map<uint32_t, uint32_t> slot_of_key_;
  bool keyed_ = false;  // fed by ObserveKeyed

  std::function<bool(std::string_view)> entry_veto_;

  // Per ring position: seconds since the window start (set by Observe for the latest snapshot).
  std::vector<double> ring_seconds_;
  // Times of the window's snapshots, seconds since the window start.
  std::vector<double> window_seconds_;
  std::vector<size_t> window_pos_;  // ring position of each window snapshot, oldest first
  std::vector<double> inverse_dt_;  // 1 / (t[j] - t[i]) for window pairs i < j

  // Scratch space reused by every evaluation (no allocation per class once grown). Mutable: const
  // evaluations (Explain) reuse it; the class is not thread-safe anyway.
  mutable std::vector<double> y_;  // the class's bytes (or instances) over the window
  // Test C, indexed by part (0 = the reference part before the last min_snapshots snapshots):
  mutable std::vector<int64_t> boundary_;  // first sequence number of each part; [segments+1]=seq_
  mutable std::vector<double>
      prefix_max_;  // maximum over the lookback before boundary_[g], and time
  mutable std::vector<double> prefix_max_t_;
  mutable std::vector<double> part_start_t_;  // time of boundary_[g]
  mutable std::vector<double> segment_max_;   // maximum within part g (g >= 1), and its time
  mutable std::vector<double> segment_max_t_;
  mutable std::vector<double> scratch_;
  mutable std::vector<double> noise_scratch_;
};

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_TREND_DETECTOR_H_
