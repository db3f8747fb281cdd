// The cost-of-watching state of one agent (docs/collection-cost.md): its live-set tracker
// (collectors/gc_counters.h) and its pause budget (collectors/pause_budget.h), and when the JVM last
// reclaimed its old generation by itself, behind one mutex. The daemon keeps one per watched agent
// and does the I/O (reading counters, the store, metrics) around these calls.
//
// Thread-safety: thread-safe; every method takes the object's mutex for a few microseconds and
// calls nothing outside it, so callers may hold their own locks.
#ifndef HEAPWATCH_DAEMON_AGENT_COST_H_
#define HEAPWATCH_DAEMON_AGENT_COST_H_

#include <mutex>
#include <optional>

#include "absl/time/time.h"
#include "collectors/gc_counters.h"
#include "common/gc.h"
#include "collectors/pause_budget.h"

namespace heapwatch::daemon {

// The budget lives in collectors/ so that libheapwatch_agent.so runs the same one.
using collectors::PauseBudget;
using collectors::PauseBudgetOptions;
using collectors::PausePlan;

class AgentCost {
 public:
  // `start`: when the agent was first seen (its budget starts empty then). A reclaim counts as
  // "just happened" for two gc_sample_intervals.
  AgentCost(const PauseBudgetOptions& options, absl::Duration gc_sample_interval, absl::Time start);

  // PauseBudget::Plan with what this object knows: whether the JVM reclaimed its old generation by
  // itself since the last histogram and recently, and its heap sizes from the newest reading.
  PausePlan Plan(absl::Time now, absl::Time due_since, absl::Duration interval) const;
  // PauseBudget::PlanConfirmation with the same knowledge (an over-budget agent: Plan).
  PausePlan PlanConfirmation(absl::Time now, absl::Time due_since, absl::Duration interval) const;

  // The heap left by a young collection (old generation and survivors): an upper bound of the live
  // set, at every reading that follows one (the stored series keeps one a minute).
  struct UpperBoundReading {
    absl::Time time;
    uint64_t bytes = 0;
    uint64_t max_bytes = 0;
  };
  // What one reading of the GC counters completed.
  struct Observation {
    std::optional<UpperBoundReading> after_young;  // a young collection only, since the last reading
    std::optional<LiveSetPoint> point;      // to store: what LiveSetTracker::Observe returned
    std::optional<LiveSetPoint> published;  // to show: `point`, but an upper bound keeps the
                                            // newest reclaim's live bytes once there is one
    bool natural_old_gc = false;            // the JVM reclaimed its old generation by itself
    absl::Time last_start = absl::InfinitePast();  // start of the last histogram
  };
  Observation Observe(absl::Time now, const collectors::GcCounters& counters, bool forced);

  // After a histogram that started at `start` and paused the JVM `pause`: spends it and returns
  // the totals to show. `after` is the reading taken right after it (nullptr if none).
  struct Spent {
    absl::Duration total = absl::ZeroDuration();  // every pause so far, dumps included
    absl::Duration planned_interval = absl::ZeroDuration();  // PauseBudget::PlannedInterval
    bool over_budget = false;                                // PauseBudget::OverBudget
  };
  Spent RecordHistogram(absl::Time now, absl::Time start, HistogramMode mode,
                        absl::Duration pause, const collectors::GcCounters* after,
                        absl::Duration interval);
  // After an extended dump: spends its pause; returns the total so far.
  absl::Duration RecordDump(absl::Time now, absl::Duration pause);

  // Start of the last histogram; InfinitePast before the first.
  absl::Time last_start() const;

  // State-change flags for logs: set the flag, return its previous value.
  bool ExchangeCountersFailing(bool failing);
  bool ExchangeLiveSetStoreFailing(bool failing);

 private:
  PausePlan PlanAs(absl::Time now, absl::Time due_since, absl::Duration interval,
                   bool confirmation) const;

  const absl::Duration gc_sample_interval_;
  mutable std::mutex mu_;
  collectors::LiveSetTracker tracker_;                   // guarded by mu_
  PauseBudget budget_;                                   // guarded by mu_
  absl::Time natural_gc_at_ = absl::InfinitePast();      // guarded by mu_
  absl::Time last_start_ = absl::InfinitePast();         // guarded by mu_
  std::optional<LiveSetPoint> last_reclaim_;             // guarded by mu_
  bool counters_failing_ = false;                        // guarded by mu_
  bool live_set_store_failing_ = false;                  // guarded by mu_
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_AGENT_COST_H_
