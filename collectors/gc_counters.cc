#include "collectors/gc_counters.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace heapwatch::collectors {
namespace {

// Collectors and generations HotSpot publishes: at most 3 collectors (G1: young, full, concurrent)
// and 2 generations today; a few more are read in case a later JDK adds some.
constexpr int kMaxCollectors = 8;
constexpr int kMaxGenerations = 4;
constexpr int kMaxSpaces = 8;
// G1MixedGCCountTarget's default: a mixed phase has at most about this many collections.
constexpr int kMaxMixedCollections = 8;

uint64_t NonNegative(std::optional<int64_t> v) {
  return v.has_value() && *v > 0 ? static_cast<uint64_t>(*v) : 0;
}

}  // namespace

absl::Duration GcCounters::SafepointTime() const {
  if (hrt_frequency <= 0) return absl::ZeroDuration();
  return absl::Seconds(static_cast<double>(safepoint_time_ticks + safepoint_sync_ticks) /
                       static_cast<double>(hrt_frequency));
}

int64_t GcCounters::Invocations(CollectorRole role) const {
  int64_t n = 0;
  for (size_t i = 0; i < collectors.size(); ++i) {
    if (roles[i] == role) n += collectors[i].invocations;
  }
  return n;
}

CollectorRole ClassifyCollector(std::string_view policy, std::string_view name_in) {
  std::string name(name_in);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (policy.find("Shenandoah") != std::string_view::npos) {
    // Shenandoah counts the pauses of its concurrent cycles under "Shenandoah full" (and degenerated
    // cycles under "partial"): every one belongs to a whole-heap cycle.
    return CollectorRole::kConcurrentCycle;
  }
  if (absl::StartsWith(name, "z ")) return CollectorRole::kConcurrentCycle;  // "Z concurrent cycle pauses"
  if (absl::StrContains(name, "concurrent cycle")) return CollectorRole::kG1ConcurrentCycle;
  if (absl::StrContains(name, "full")) return CollectorRole::kFull;
  if (absl::StrContains(name, "young") || absl::StrContains(name, "scavenge") ||
      absl::StrContains(name, "copy")) {
    return CollectorRole::kYoung;
  }
  return CollectorRole::kOther;
}

bool IsForcedByDiagnostics(std::string_view cause) {
  return cause == "Heap Inspection Initiated GC" || cause == "Heap Dump Initiated GC";
}

StatusOr<GcCounters> ReadGcCounters(const PerfData& perf) {
  GcCounters c;
  auto freq = perf.GetLong("sun.os.hrt.frequency");
  if (!freq.has_value() || *freq <= 0) {
    return absl::FailedPreconditionError(
        "hsperfdata: no usable sun.os.hrt.frequency (GC counters unavailable)");
  }
  c.hrt_frequency = *freq;
  auto safepoint_time = perf.GetLong("sun.rt.safepointTime");
  if (!safepoint_time.has_value()) {
    return absl::FailedPreconditionError("hsperfdata: no sun.rt.safepointTime counter");
  }
  c.safepoint_time_ticks = *safepoint_time;
  c.safepoint_sync_ticks = perf.GetLong("sun.rt.safepointSyncTime").value_or(0);
  c.safepoints = perf.GetLong("sun.rt.safepoints").value_or(0);
  c.policy = perf.GetString("sun.gc.policy.name").value_or("");
  c.last_cause = perf.GetString("sun.gc.lastCause").value_or("");
  for (int i = 0; i < kMaxCollectors; ++i) {
    const std::string prefix = absl::StrCat("sun.gc.collector.", i, ".");
    auto invocations = perf.GetLong(prefix + "invocations");
    if (!invocations.has_value()) {
      // ZGC publishes only collector 2; keep the indices aligned with the JVM's.
      c.collectors.push_back({});
      c.roles.push_back(CollectorRole::kOther);
      continue;
    }
    GcCollectorCounters col;
    col.name = perf.GetString(prefix + "name").value_or("");
    col.invocations = *invocations;
    col.time_ticks = perf.GetLong(prefix + "time").value_or(0);
    c.roles.push_back(ClassifyCollector(c.policy, col.name));
    c.collectors.push_back(std::move(col));
  }
  while (!c.collectors.empty() && c.collectors.back().name.empty()) {
    c.collectors.pop_back();
    c.roles.pop_back();
  }
  if (c.collectors.empty()) {
    return absl::FailedPreconditionError("hsperfdata: no sun.gc.collector counters");
  }
  const bool g1 = c.policy == "GarbageFirst";
  bool any_generation = false;
  for (int g = 0; g < kMaxGenerations; ++g) {
    const std::string gen = absl::StrCat("sun.gc.generation.", g, ".");
    auto capacity = perf.GetLong(gen + "capacity");
    if (!capacity.has_value()) continue;
    any_generation = true;
    c.heap_capacity += NonNegative(capacity);
    const uint64_t max = NonNegative(perf.GetLong(gen + "maxCapacity"));
    // G1 reports the whole heap's maximum as the maximum of each generation.
    c.heap_max = g1 ? std::max(c.heap_max, max) : c.heap_max + max;
    const int64_t spaces = std::clamp<int64_t>(perf.GetLong(gen + "spaces").value_or(0), 0, kMaxSpaces);
    for (int s = 0; s < spaces; ++s) {
      const std::string space = absl::StrCat(gen, "space.", s, ".");
      const uint64_t used = NonNegative(perf.GetLong(space + "used"));
      c.heap_used += used;
      if (perf.GetString(space + "name").value_or("") == "eden") {
        c.eden_used += used;
      } else {
        c.post_gc_used += used;
      }
    }
  }
  if (!any_generation) {
    return absl::FailedPreconditionError("hsperfdata: no sun.gc.generation counters");
  }
  return c;
}

StatusOr<GcCounters> ReadGcCountersFile(const std::string& path) {
  HW_ASSIGN_OR_RETURN(PerfData perf, PerfData::ReadFile(path));
  return ReadGcCounters(perf);
}

absl::Duration SafepointTimeBetween(const GcCounters& before, const GcCounters& after) {
  if (before.hrt_frequency != after.hrt_frequency ||
      after.safepoint_time_ticks < before.safepoint_time_ticks ||
      after.safepoint_sync_ticks < before.safepoint_sync_ticks) {
    return absl::ZeroDuration();
  }
  return after.SafepointTime() - before.SafepointTime();
}

std::optional<LiveSetPoint> LiveSetTracker::Emit(absl::Time time, const GcCounters& c,
                                                 LiveSetSource source, uint64_t live_bytes) {
  LiveSetPoint p;
  p.time = time;
  p.source = source;
  p.live_bytes = live_bytes;
  p.capacity_bytes = c.heap_capacity;
  p.max_bytes = c.heap_max;
  last_point_ = p;
  return p;
}

std::optional<LiveSetPoint> LiveSetTracker::Observe(absl::Time time, const GcCounters& c,
                                                    bool forced) {
  natural_old_gc_ = false;
  if (!last_.has_value() || last_->collectors.size() != c.collectors.size() ||
      last_->policy != c.policy) {
    // Baseline (or a JVM whose counters changed shape: start again).
    last_ = c;
    in_mixed_phase_ = false;
    return std::nullopt;
  }
  const GcCounters prev = *std::move(last_);
  last_ = c;
  auto delta = [&](CollectorRole role) { return c.Invocations(role) - prev.Invocations(role); };
  const int64_t full = delta(CollectorRole::kFull);
  const int64_t young = delta(CollectorRole::kYoung);
  const int64_t g1_cycle = delta(CollectorRole::kG1ConcurrentCycle);
  const int64_t cycle = delta(CollectorRole::kConcurrentCycle);

  if (full > 0) {
    in_mixed_phase_ = false;
    natural_old_gc_ = !forced && !IsForcedByDiagnostics(c.last_cause);
    return Emit(time, c, LiveSetSource::kFullGc, c.post_gc_used);
  }
  if (cycle > 0) {
    natural_old_gc_ = !forced;
    return Emit(time, c, LiveSetSource::kConcurrentCycle, c.post_gc_used);
  }
  if (g1_cycle > 0 && !in_mixed_phase_) {
    in_mixed_phase_ = true;
    mixed_collections_ = 0;
    mixed_min_ = c.post_gc_used;
    mixed_prev_post_ = c.post_gc_used;
    if (young == 0) return std::nullopt;
  }
  if (young <= 0) return std::nullopt;
  if (in_mixed_phase_) {
    mixed_collections_ += static_cast<int>(young);
    const bool shrank = c.post_gc_used < mixed_prev_post_;
    mixed_min_ = std::min(mixed_min_, c.post_gc_used);
    mixed_prev_post_ = c.post_gc_used;
    if (!shrank || mixed_collections_ >= kMaxMixedCollections) {
      in_mixed_phase_ = false;
      natural_old_gc_ = !forced;
      return Emit(time, c, LiveSetSource::kConcurrentCycle, mixed_min_);
    }
    return std::nullopt;
  }
  if (!last_point_.has_value() || time - last_point_->time >= upper_bound_interval_) {
    return Emit(time, c, LiveSetSource::kYoungUpperBound, c.post_gc_used);
  }
  return std::nullopt;
}

}  // namespace heapwatch::collectors
