#include "daemon/scheduler.h"

#include <algorithm>

namespace heapwatch::daemon {

Scheduler::Scheduler(const SchedulerOptions& options, const Clock* clock)
    : options_(options),
      clock_(clock),
      rng_(options.seed != 0 ? options.seed : std::random_device{}()) {}

absl::Duration Scheduler::Jittered(absl::Duration d) {
  if (options_.jitter <= 0) return d;
  std::uniform_real_distribution<double> factor(1 - options_.jitter, 1 + options_.jitter);
  return d * factor(rng_);
}

absl::Duration Scheduler::BackoffDelay(const SchedulerOptions& options, uint32_t failures) {
  absl::Duration backoff = options.backoff_initial;
  for (uint32_t i = 1; i < failures && backoff < options.backoff_max; ++i) backoff *= 2;
  backoff = std::min(backoff, options.backoff_max);
  return std::max(options.interval, backoff);
}

void Scheduler::Add(const AgentId& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  if (agents_.count(agent)) return;
  AgentSchedule s;
  std::uniform_real_distribution<double> spread(0, options_.jitter);
  s.next_due = clock_->Now() + options_.interval * spread(rng_);
  agents_.emplace(agent, s);
}

void Scheduler::Remove(const AgentId& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  agents_.erase(agent);
}

bool Scheduler::Contains(const AgentId& agent) const {
  std::lock_guard<std::mutex> lock(mu_);
  return agents_.count(agent) > 0;
}

std::vector<AgentId> Scheduler::TakeDue(size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_->Now();
  std::vector<std::pair<absl::Time, const AgentId*>> due;
  for (const auto& [id, s] : agents_) {
    if (!s.in_flight && s.next_due <= now) due.emplace_back(s.next_due, &id);
  }
  std::sort(due.begin(), due.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, *a.second) < std::tie(b.first, *b.second);
  });
  std::vector<AgentId> out;
  for (size_t i = 0; i < due.size() && out.size() < max; ++i) {
    AgentSchedule& s = agents_.at(*due[i].second);
    s.in_flight = true;
    if (s.due_since == absl::InfinitePast()) s.due_since = s.next_due;
    s.previous_started = s.started;
    s.started = now;
    out.push_back(*due[i].second);
  }
  return out;
}

void Scheduler::Finish(const AgentId& agent, bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(agent);
  if (it == agents_.end() || !it->second.in_flight) return;
  AgentSchedule& s = it->second;
  const absl::Time now = clock_->Now();
  s.in_flight = false;
  s.due_since = absl::InfinitePast();
  if (ok) {
    s.consecutive_failures = 0;
    s.next_due = std::max(now, s.started + Jittered(options_.interval));
  } else {
    ++s.consecutive_failures;
    s.next_due = now + Jittered(BackoffDelay(options_, s.consecutive_failures));
  }
}

void Scheduler::Postpone(const AgentId& agent, absl::Time until) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(agent);
  if (it == agents_.end() || !it->second.in_flight) return;
  AgentSchedule& s = it->second;
  s.in_flight = false;
  s.started = s.previous_started;
  s.next_due = until;
}

bool Scheduler::Expedite(const AgentId& agent, absl::Time not_before) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(agent);
  const absl::Time now = clock_->Now();
  if (it == agents_.end() || it->second.in_flight || now < not_before || it->second.next_due <= now) {
    return false;
  }
  it->second.next_due = now;
  return true;
}

bool Scheduler::DueBy(const AgentId& agent, absl::Time time) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(agent);
  if (it == agents_.end() || it->second.in_flight || it->second.next_due <= time) return false;
  it->second.next_due = std::max(time, clock_->Now());
  return true;
}

std::optional<absl::Time> Scheduler::NextDue() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<absl::Time> next;
  for (const auto& [id, s] : agents_) {
    if (!s.in_flight && (!next || s.next_due < *next)) next = s.next_due;
  }
  return next;
}

std::optional<AgentSchedule> Scheduler::Get(const AgentId& agent) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(agent);
  if (it == agents_.end()) return std::nullopt;
  return it->second;
}

}  // namespace heapwatch::daemon
