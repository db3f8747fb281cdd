// When to collect the next class histogram of each agent: one per agent per interval, jittered,
// with per-agent exponential backoff after failures and at most one collection in flight per agent.
//
// The scheduler only decides times; the daemon's worker pool (bounded concurrency) asks it for due
// agents with TakeDue() and reports each outcome with Finish(). Times come from an injected Clock,
// so tests drive it with FakeClock.
//
// Rules (all delays are multiplied by a random factor in [1 - jitter, 1 + jitter]):
//   - a new agent is first due at now + U[0, jitter * interval] (spreads start-up load);
//   - after a success, the next collection is due `interval` after the start of the finished one (a
//   fixed
//     rate, not a fixed delay; if that is already past, it is due at once);
//   - after the n-th consecutive failure, it is due at now + max(interval, min(backoff_initial *
//   2^(n-1),
//     backoff_max)): a failing agent is never polled more often than a healthy one, and one that
//     keeps failing is retried at least every backoff_max (plus jitter).
//
// Thread-safety: thread-safe (one internal mutex); every method may be called from any thread.
#ifndef HEAPWATCH_DAEMON_SCHEDULER_H_
#define HEAPWATCH_DAEMON_SCHEDULER_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "absl/time/time.h"
#include "common/agent.h"
#include "common/clock.h"

namespace heapwatch::daemon {

struct SchedulerOptions {
  absl::Duration interval = absl::Seconds(60);
  double jitter = 0.1;  // in [0, 0.5]
  absl::Duration backoff_initial = absl::Seconds(10);
  absl::Duration backoff_max = absl::Minutes(10);
  uint64_t seed = 0;  // random seed for the jitter; 0 = seed from std::random_device
};

// The schedule of one agent.
struct AgentSchedule {
  absl::Time next_due;  // meaningful only while !in_flight
  uint32_t consecutive_failures = 0;
  bool in_flight = false;
  absl::Time started;  // start of the collection in flight (or of the last one)
  // When the agent first became due in this cycle (kept across Postpone; reset by Finish).
  absl::Time due_since = absl::InfinitePast();
  absl::Time previous_started;  // `started` before the TakeDue in flight (restored by Postpone)
};

class Scheduler {
 public:
  // `clock` must outlive the scheduler.
  Scheduler(const SchedulerOptions& options, const Clock* clock);

  // Starts scheduling `agent`. No effect if it is already scheduled.
  void Add(const AgentId& agent);
  // Stops scheduling `agent` (e.g. its JVM exited). A collection in flight may still call Finish(),
  // which is then ignored.
  void Remove(const AgentId& agent);
  bool Contains(const AgentId& agent) const;

  // Returns up to `max` agents that are due (next_due <= now) and not in flight, earliest due
  // first, and marks them in flight. Complexity: O(agents log agents).
  std::vector<AgentId> TakeDue(size_t max);
  // Reports the outcome of the collection of `agent` taken with TakeDue() and computes its next due
  // time.
  void Finish(const AgentId& agent, bool ok);

  // Gives back an agent taken with TakeDue() without collecting it (the pause budget does not
  // allow it yet): it is due again at `until`; failures, `started` and `due_since` are kept.
  void Postpone(const AgentId& agent, absl::Time until);
  // Makes an agent that is not in flight due now, if now >= not_before (the JVM just reclaimed its
  // old generation: the moment for a cheap histogram). Returns whether it did.
  bool Expedite(const AgentId& agent, absl::Time not_before);
  // Brings the next due time of an agent that is not in flight forward to `time` (now, if `time`
  // is past) when it is later. Returns whether it did. A leak being confirmed asks for histograms
  // sooner this way (daemon/agent_watch.h).
  bool DueBy(const AgentId& agent, absl::Time time);

  // Earliest next_due over agents not in flight; nullopt when there is none.
  std::optional<absl::Time> NextDue() const;
  std::optional<AgentSchedule> Get(const AgentId& agent) const;

  // The un-jittered delay after the n-th consecutive failure (n >= 1), as described above.
  static absl::Duration BackoffDelay(const SchedulerOptions& options, uint32_t failures);

 private:
  absl::Duration Jittered(absl::Duration d);  // REQUIRES: mu_ held

  const SchedulerOptions options_;
  const Clock* const clock_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  std::unordered_map<AgentId, AgentSchedule> agents_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_SCHEDULER_H_
