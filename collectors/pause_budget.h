// The pause budget of one agent: how much stop-the-world time heapwatch may cause a JVM, and which
// kind of class histogram to take next under it (docs/collection-cost.md).
//
// Accounting (a token bucket in seconds of pause): credit accrues at `fraction` seconds per second
// of wall time, up to `fraction * credit_window`; every pause heapwatch causes (histograms and
// extended dumps alike) is subtracted and may drive the credit negative. A histogram starts only
// when the credit covers its estimated cost (or the whole cap, for a cost above the cap); the
// credit starts at 0 when the agent is first seen. Hence the pause heapwatch caused up to any time
// t is at most fraction * (t - start) + the pause of the last collection: the budget is never
// exceeded by more than one collection (an over-budget agent, below, excepted). Extended dumps are
// not held back by the budget (they are rare and asked for), but their pause is spent, so
// histograms wait longer after one.
//
// Mode choice when the agent is due (its interval has passed):
//   1. the JVM has just reclaimed its old generation by itself and `-all` fits: kAllAfterGc;
//   2. a live histogram (forced full GC) fits: kLive; one whose estimated pause exceeds the cap
//      (it never truly fits) only when it is not dearer than `-all`;
//   3. `-all` fits: wait for the JVM's own old-generation collection (rule 1) for up to one
//      interval as the budget stretches it (-all's estimated pause / fraction, at least
//      `interval`), then kAll; meanwhile a live histogram is taken as soon as it fits (rule 2);
//   4. nothing fits: postpone until the cheapest mode fits (the interval stretches).
// Costs are estimated per mode from this agent's measured pauses (an exponentially weighted mean
// that follows increases at once), before any measurement from the heap size with the per-GB
// figures of docs/collection-cost.md, and never below 10 ms before a measurement: a JVM whose heap
// has not been read yet (sizes 0) or that has not collected its old generation yet (post-GC
// occupancy 0; the heap in use stands in for it) would otherwise be estimated at 0 and get
// histograms back to back out of an empty budget.
//
// An agent is over budget when even the cheapest mode at `max_interval` would cost more than
// fraction * max_interval: it is then collected every max_interval regardless (it stays watched),
// and reported (AgentStatus, heapwatch_pause_budget_exceeded).
//
// Used by the daemon for attach agents (daemon/agent_cost.h) and by libheapwatch_agent.so's
// scheduler (agent/agent.cc) for registered agents: one budget, one mode choice for both kinds.
//
// Thread-safety: thread-compatible; the daemon guards each agent's budget with its mutex, the agent
// uses its budget on its JVM thread only.
#ifndef HEAPWATCH_COLLECTORS_PAUSE_BUDGET_H_
#define HEAPWATCH_COLLECTORS_PAUSE_BUDGET_H_

#include <array>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/gc.h"

namespace heapwatch::collectors {

struct PauseBudgetOptions {
  // Fraction of the JVM's wall time heapwatch may pause it (collection.pause_budget); 0.001 = 60 ms
  // per minute on average. In (0, 1].
  double fraction = 0.001;
  // Credit accrues for at most this long (collection.pause_budget_window): an idle period does not
  // buy a burst of pauses later.
  absl::Duration credit_window = absl::Minutes(10);
  // A leak being confirmed (PlanConfirmation) may spend this window's budget in advance
  // (collection.confirmation_window; 1 h at 0.1 % = 3.6 s): enough for one or two live histograms
  // of a 2 GiB heap, repaid before any later histogram. Never less than credit_window.
  absl::Duration confirmation_window = absl::Hours(1);
  // Longest time between two histograms (collection.max_interval); see "over budget" above.
  absl::Duration max_interval = absl::Hours(6);
  // Pause priors per GB of heap, used until a mode has been measured on this agent (seconds per
  // GiB): live from post-GC occupancy, -all from heap used.
  double live_seconds_per_gib = 1.5;
  double all_seconds_per_gib = 0.4;
};

// What to do with an agent that is due.
struct PausePlan {
  // The histogram to take now; nullopt: not now, ask again at `retry_at`.
  std::optional<HistogramMode> mode;
  absl::Time retry_at = absl::InfiniteFuture();
  // Why the agent waits longer than its interval or is over budget; empty otherwise.
  std::string note;
  bool over_budget = false;
};

class PauseBudget {
 public:
  // The budget starts empty at `start`: the first histogram too waits until its cost has accrued
  // (seconds for a small JVM, at most `credit_window` for any).
  PauseBudget(const PauseBudgetOptions& options, absl::Time start);

  // New options (the daemon pushed another configuration): the credit and the measured estimates
  // are kept; a smaller window caps the credit from now on. O(1).
  void set_options(const PauseBudgetOptions& options) { options_ = options; }
  const PauseBudgetOptions& options() const { return options_; }

  // Credit at `now` (negative after a pause larger than the credit). O(1).
  absl::Duration Credit(absl::Time now) const;
  // Records a pause heapwatch caused at `now` (a histogram of `mode`, or an extended dump with
  // mode kUnknown, which does not update the estimates). O(1).
  void Spend(absl::Time now, HistogramMode mode, absl::Duration pause);
  // Estimated pause of `mode` given the heap's current post-GC and total occupancy in bytes (0 when
  // not known yet): the measured estimate, else the prior (see the file comment; at least 10 ms).
  absl::Duration EstimatedCost(HistogramMode mode, uint64_t post_gc_bytes,
                               uint64_t heap_used_bytes) const;
  // Whether `mode` has been measured on this agent.
  bool Measured(HistogramMode mode) const;

  // Decides for an agent whose interval has passed. `natural_gc` is true when the JVM has just
  // reclaimed its old generation by itself; `due_since` is when the interval passed (for the wait
  // in rule 3). O(1).
  PausePlan Plan(absl::Time now, absl::Time due_since, absl::Duration interval, bool natural_gc,
                 uint64_t post_gc_bytes, uint64_t heap_used_bytes) const;

  // Decides for an agent whose leak is being confirmed (a growing live set whose classes are not
  // named yet, docs/trend-detection.md): like Plan, but the histogram may start as soon as the
  // credit plus one window's credit (the cap) covers it, i.e. heapwatch may spend up to one window
  // of budget in advance, repaid before any later histogram. The pause caused up to any time t then
  // stays below fraction * (t - start) + cap + the last collection's pause. Mode: kAllAfterGc right
  // after a natural reclaim, else kLive when it fits and costs at most the cap (a full GC leaves
  // live objects only, the best evidence), else kAll. An over-budget agent is planned by Plan.
  // O(1).
  PausePlan PlanConfirmation(absl::Time now, bool natural_gc, uint64_t post_gc_bytes,
                             uint64_t heap_used_bytes) const;

  // The time between histograms the budget allows on average now: the configured interval, or
  // longer when the cheapest mode's estimated pause / fraction exceeds it; at most max_interval.
  absl::Duration PlannedInterval(absl::Duration interval, uint64_t post_gc_bytes,
                                 uint64_t heap_used_bytes) const;

  // Whether even the cheapest mode every max_interval exceeds the budget (see the file comment).
  bool OverBudget(uint64_t post_gc_bytes, uint64_t heap_used_bytes) const;

  // Total pause spent so far.
  absl::Duration total() const { return total_; }
  double fraction() const { return options_.fraction; }

 private:
  absl::Duration Cap() const;
  // What a confirmation may spend in advance (see PlanConfirmation).
  absl::Duration Advance() const;
  // The smallest estimated pause over the modes.
  absl::Duration CheapestCost(uint64_t post_gc_bytes, uint64_t heap_used_bytes) const;
  // The interval at which one pause of `cost` a time keeps the budget, within [interval,
  // max(interval, max_interval)].
  absl::Duration IntervalFor(absl::Duration cost, absl::Duration interval) const;
  // Earliest time at which the credit reaches min(cost, cap).
  absl::Time FitsAt(absl::Time now, absl::Duration cost) const;

  PauseBudgetOptions options_;
  absl::Duration credit_ = absl::ZeroDuration();
  absl::Time credit_time_;
  absl::Duration total_ = absl::ZeroDuration();
  // Per HistogramMode value: estimated pause, valid when measured_.
  std::array<absl::Duration, 4> estimate_{};
  std::array<bool, 4> measured_{};
};

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_PAUSE_BUDGET_H_
