#include "collectors/pause_budget.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace heapwatch::collectors {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Weight of a new measurement in the estimate (an increase is taken at once).
constexpr double kEstimateWeight = 0.3;
// The smallest prior: no histogram is free (a safepoint and a walk over every loaded class). It
// also covers an agent whose heap has not been read yet (sizes 0): without it a new JVM's first
// histograms would all be estimated at 0, fit an empty budget, and run back to back.
constexpr absl::Duration kMinimumPrior = absl::Milliseconds(10);

std::string Seconds(absl::Duration d) { return absl::StrFormat("%.3gs", absl::ToDoubleSeconds(d)); }

}  // namespace

PauseBudget::PauseBudget(const PauseBudgetOptions& options, absl::Time start)
    : options_(options), credit_time_(start) {}

absl::Duration PauseBudget::Cap() const { return options_.credit_window * options_.fraction; }

absl::Duration PauseBudget::Advance() const {
  return std::max(options_.credit_window, options_.confirmation_window) * options_.fraction;
}

absl::Duration PauseBudget::Credit(absl::Time now) const {
  if (now <= credit_time_) return credit_;
  return std::min(Cap(), credit_ + (now - credit_time_) * options_.fraction);
}

void PauseBudget::Spend(absl::Time now, HistogramMode mode, absl::Duration pause) {
  credit_ = Credit(now) - pause;
  credit_time_ = std::max(now, credit_time_);
  total_ += pause;
  if (mode == HistogramMode::kUnknown) return;  // an extended dump: counted, not estimated
  const size_t i = static_cast<size_t>(mode);
  if (!measured_[i] || pause > estimate_[i]) {
    estimate_[i] = pause;
  } else {
    estimate_[i] = estimate_[i] * (1 - kEstimateWeight) + pause * kEstimateWeight;
  }
  measured_[i] = true;
}

bool PauseBudget::Measured(HistogramMode mode) const {
  return measured_[static_cast<size_t>(mode)];
}

absl::Duration PauseBudget::EstimatedCost(HistogramMode mode, uint64_t post_gc_bytes,
                                          uint64_t heap_used_bytes) const {
  const size_t i = static_cast<size_t>(mode);
  if (measured_[i]) return estimate_[i];
  // -all after a natural GC and plain -all walk the same objects; share their measurements.
  if (mode == HistogramMode::kAllAfterGc && measured_[static_cast<size_t>(HistogramMode::kAll)]) {
    return estimate_[static_cast<size_t>(HistogramMode::kAll)];
  }
  if (mode == HistogramMode::kAll && measured_[static_cast<size_t>(HistogramMode::kAllAfterGc)]) {
    return estimate_[static_cast<size_t>(HistogramMode::kAllAfterGc)];
  }
  // Before the JVM's first old-generation collection its post-GC occupancy reads 0; the heap in
  // use bounds the live set from above until then.
  const uint64_t live = post_gc_bytes > 0 ? post_gc_bytes : heap_used_bytes;
  double seconds;
  if (mode == HistogramMode::kLive) {
    seconds = options_.live_seconds_per_gib * static_cast<double>(live) / kGiB;
  } else {
    const uint64_t walked = mode == HistogramMode::kAllAfterGc ? live : heap_used_bytes;
    seconds = options_.all_seconds_per_gib * static_cast<double>(walked) / kGiB;
  }
  return std::max(kMinimumPrior, absl::Seconds(seconds));
}

absl::Time PauseBudget::FitsAt(absl::Time now, absl::Duration cost) const {
  const absl::Duration need = std::min(cost, Cap());
  const absl::Duration credit = Credit(now);
  if (credit >= need) return now;
  return now + (need - credit) / options_.fraction;
}

absl::Duration PauseBudget::CheapestCost(uint64_t post_gc_bytes, uint64_t heap_used_bytes) const {
  return std::min({EstimatedCost(HistogramMode::kAll, post_gc_bytes, heap_used_bytes),
                   EstimatedCost(HistogramMode::kAllAfterGc, post_gc_bytes, heap_used_bytes),
                   EstimatedCost(HistogramMode::kLive, post_gc_bytes, heap_used_bytes)});
}

absl::Duration PauseBudget::IntervalFor(absl::Duration cost, absl::Duration interval) const {
  return std::clamp(cost / options_.fraction, interval, std::max(interval, options_.max_interval));
}

bool PauseBudget::OverBudget(uint64_t post_gc_bytes, uint64_t heap_used_bytes) const {
  return CheapestCost(post_gc_bytes, heap_used_bytes) > options_.max_interval * options_.fraction;
}

absl::Duration PauseBudget::PlannedInterval(absl::Duration interval, uint64_t post_gc_bytes,
                                            uint64_t heap_used_bytes) const {
  return IntervalFor(CheapestCost(post_gc_bytes, heap_used_bytes), interval);
}

PausePlan PauseBudget::Plan(absl::Time now, absl::Time due_since, absl::Duration interval,
                            bool natural_gc, uint64_t post_gc_bytes,
                            uint64_t heap_used_bytes) const {
  PausePlan plan;
  const absl::Duration all = EstimatedCost(HistogramMode::kAll, post_gc_bytes, heap_used_bytes);
  const absl::Duration after_gc =
      EstimatedCost(HistogramMode::kAllAfterGc, post_gc_bytes, heap_used_bytes);
  const absl::Duration live = EstimatedCost(HistogramMode::kLive, post_gc_bytes, heap_used_bytes);
  // Over budget: even one histogram per max_interval costs more than the budget allows.
  if (OverBudget(post_gc_bytes, heap_used_bytes)) {
    plan.over_budget = true;
    plan.note = absl::StrFormat(
        "over budget: the cheapest histogram pauses %s, more than %.3g%% of the longest interval "
        "(%s); collected every %s regardless",
        Seconds(std::min({all, after_gc, live})), options_.fraction * 100,
        absl::FormatDuration(options_.max_interval), absl::FormatDuration(options_.max_interval));
    if (now - due_since + interval >= options_.max_interval) {
      plan.mode = natural_gc ? HistogramMode::kAllAfterGc : HistogramMode::kAll;
    } else {
      plan.retry_at = due_since - interval + options_.max_interval;
    }
    return plan;
  }
  if (natural_gc && FitsAt(now, after_gc) <= now) {
    plan.mode = HistogramMode::kAllAfterGc;
    return plan;
  }
  // A live histogram whose pause exceeds the cap never truly fits (FitsAt only waits for the cap):
  // it is taken only when no -all would be cheaper, or an 8 GiB heap would pay 10 s of full GC
  // where a 2-5 s -all does (docs/collection-cost.md).
  const bool live_eligible = live <= Cap() || live <= all;
  if (live_eligible && FitsAt(now, live) <= now) {
    plan.mode = HistogramMode::kLive;
    return plan;
  }
  const absl::Time all_fits = FitsAt(now, all);
  if (all_fits <= now) {
    // Wait for the JVM's own old-generation collection for up to one interval as the budget
    // stretches it (at least the configured one): the histogram rate stays within a factor of 2.
    const absl::Duration wait = IntervalFor(all, interval);
    if (now - due_since >= wait) {
      plan.mode = HistogramMode::kAll;  // no natural GC came in time
      return plan;
    }
    plan.retry_at = due_since + wait;
    if (live_eligible) plan.retry_at = std::min(plan.retry_at, FitsAt(now, live));
    plan.note = "waiting for the JVM's own old-generation collection to take -all after it";
    return plan;
  }
  plan.retry_at = all_fits;
  plan.note = absl::StrFormat(
      "interval stretched by the pause budget (%.3g%%): -all pauses about %s, live about %s",
      options_.fraction * 100, Seconds(all), Seconds(live));
  return plan;
}

PausePlan PauseBudget::PlanConfirmation(absl::Time now, bool natural_gc, uint64_t post_gc_bytes,
                                        uint64_t heap_used_bytes) const {
  PausePlan plan;
  const absl::Duration advance = Advance();
  const absl::Duration credit = Credit(now) + advance;  // the confirmation window in advance
  auto fits_at = [&](absl::Duration cost) {
    const absl::Duration need = std::min(cost, advance);
    return credit >= need ? now : now + (need - credit) / options_.fraction;
  };
  const absl::Duration all = EstimatedCost(HistogramMode::kAll, post_gc_bytes, heap_used_bytes);
  const absl::Duration after_gc =
      EstimatedCost(HistogramMode::kAllAfterGc, post_gc_bytes, heap_used_bytes);
  const absl::Duration live = EstimatedCost(HistogramMode::kLive, post_gc_bytes, heap_used_bytes);
  if (live <= advance && fits_at(live) <= now) {
    plan.mode = HistogramMode::kLive;
  } else if (natural_gc && fits_at(after_gc) <= now) {
    plan.mode = HistogramMode::kAllAfterGc;
  } else if (fits_at(all) <= now) {
    plan.mode = HistogramMode::kAll;
  } else {
    plan.retry_at =
        std::min(fits_at(all), live <= advance ? fits_at(live) : absl::InfiniteFuture());
    plan.note = absl::StrFormat(
        "confirming a leak: the next histogram waits for the pause budget (%.3g%%, %s of it "
        "spent in advance): -all pauses about %s, live about %s",
        options_.fraction * 100, Seconds(advance), Seconds(all), Seconds(live));
  }
  return plan;
}

}  // namespace heapwatch::collectors
