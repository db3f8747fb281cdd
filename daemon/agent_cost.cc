#include "daemon/agent_cost.h"

#include <utility>

namespace heapwatch::daemon {

AgentCost::AgentCost(const PauseBudgetOptions& options, absl::Duration gc_sample_interval,
                     absl::Time start)
    : gc_sample_interval_(gc_sample_interval), budget_(options, start) {}

PausePlan AgentCost::Plan(absl::Time now, absl::Time due_since, absl::Duration interval) const {
  return PlanAs(now, due_since, interval, /*confirmation=*/false);
}

PausePlan AgentCost::PlanConfirmation(absl::Time now, absl::Time due_since,
                                      absl::Duration interval) const {
  return PlanAs(now, due_since, interval, /*confirmation=*/true);
}

PausePlan AgentCost::PlanAs(absl::Time now, absl::Time due_since, absl::Duration interval,
                            bool confirmation) const {
  std::lock_guard<std::mutex> lock(mu_);
  const bool natural =
      natural_gc_at_ > last_start_ && now - natural_gc_at_ <= 2 * gc_sample_interval_;
  uint64_t post = 0, used = 0;
  if (const auto& c = tracker_.last_reading()) {
    post = c->post_gc_used;
    used = c->heap_used;
  }
  if (confirmation && !budget_.OverBudget(post, used)) {
    return budget_.PlanConfirmation(now, natural, post, used);
  }
  return budget_.Plan(now, due_since, interval, natural, post, used);
}

AgentCost::Observation AgentCost::Observe(absl::Time now, const collectors::GcCounters& counters,
                                          bool forced) {
  std::lock_guard<std::mutex> lock(mu_);
  Observation o;
  const std::optional<collectors::GcCounters> before = tracker_.last_reading();
  o.point = tracker_.Observe(now, counters, forced);
  if (before.has_value() && before->collectors.size() == counters.collectors.size() &&
      counters.Invocations(collectors::CollectorRole::kYoung) >
          before->Invocations(collectors::CollectorRole::kYoung) &&
      (!o.point.has_value() || o.point->source == LiveSetSource::kYoungUpperBound)) {
    o.after_young = UpperBoundReading{now, counters.post_gc_used, counters.heap_max};
  }
  o.natural_old_gc = tracker_.natural_old_gc();
  if (o.natural_old_gc) natural_gc_at_ = now;
  o.last_start = last_start_;
  if (o.point.has_value()) {
    o.published = o.point;
    if (o.point->source != LiveSetSource::kYoungUpperBound) {
      last_reclaim_ = o.point;
    } else if (last_reclaim_.has_value()) {
      // The gauge shows the newest reclaim; the upper bound only refreshes the sizes.
      o.published->live_bytes = last_reclaim_->live_bytes;
    }
  }
  return o;
}

AgentCost::Spent AgentCost::RecordHistogram(absl::Time now, absl::Time start, HistogramMode mode,
                                            absl::Duration pause,
                                            const collectors::GcCounters* after,
                                            absl::Duration interval) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_.Spend(now, mode, pause);
  last_start_ = start;
  const collectors::GcCounters* reading =
      after != nullptr ? after : (tracker_.last_reading() ? &*tracker_.last_reading() : nullptr);
  const uint64_t post = reading ? reading->post_gc_used : 0;
  const uint64_t used = reading ? reading->heap_used : 0;
  return Spent{budget_.total(), budget_.PlannedInterval(interval, post, used),
               budget_.OverBudget(post, used)};
}

absl::Duration AgentCost::RecordDump(absl::Time now, absl::Duration pause) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_.Spend(now, HistogramMode::kUnknown, pause);
  return budget_.total();
}

absl::Time AgentCost::last_start() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_start_;
}

bool AgentCost::ExchangeCountersFailing(bool failing) {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(counters_failing_, failing);
}

bool AgentCost::ExchangeLiveSetStoreFailing(bool failing) {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(live_set_store_failing_, failing);
}

}  // namespace heapwatch::daemon
