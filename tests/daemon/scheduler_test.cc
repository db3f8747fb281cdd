#include "daemon/scheduler.h"

#include <set>

#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

SchedulerOptions NoJitter() {
  SchedulerOptions o;
  o.interval = absl::Seconds(60);
  o.jitter = 0;
  o.backoff_initial = absl::Seconds(10);
  o.backoff_max = absl::Minutes(10);
  o.seed = 1;
  return o;
}

const AgentId kA("a"), kB("b"), kC("c");

TEST(Scheduler, NewAgentIsDueAtOnceWithoutJitter) {
  FakeClock clock;
  Scheduler s(NoJitter(), &clock);
  s.Add(kA);
  EXPECT_EQ(s.NextDue(), clock.Now());
  EXPECT_EQ(s.TakeDue(10), std::vector<AgentId>{kA});
  EXPECT_TRUE(s.TakeDue(10).empty()) << "an agent in flight is never taken twice";
  EXPECT_EQ(s.NextDue(), std::nullopt);
}

// The pause budget gives an agent back without collecting it: it is due again when the budget says,
// and the collection that follows is scheduled from the previous real start, not the postponed one.
TEST(Scheduler, PostponeKeepsTheCycleAndTheLastStart) {
  FakeClock clock;
  Scheduler s(NoJitter(), &clock);
  s.Add(kA);
  const absl::Time first = clock.Now();
  ASSERT_EQ(s.TakeDue(1).size(), 1u);
  s.Finish(kA, true);
  clock.Advance(absl::Seconds(60));
  ASSERT_EQ(s.TakeDue(1).size(), 1u);
  EXPECT_EQ(s.Get(kA)->due_since, first + absl::Seconds(60));
  s.Postpone(kA, clock.Now() + absl::Seconds(100));
  EXPECT_FALSE(s.Get(kA)->in_flight);
  EXPECT_EQ(s.Get(kA)->started, first);
  EXPECT_EQ(s.Get(kA)->next_due, clock.Now() + absl::Seconds(100));
  clock.Advance(absl::Seconds(99));
  EXPECT_TRUE(s.TakeDue(1).empty());
  clock.Advance(absl::Seconds(1));
  ASSERT_EQ(s.TakeDue(1).size(), 1u);
  EXPECT_EQ(s.Get(kA)->due_since, first + absl::Seconds(60)) << "kept across the postponement";
  s.Finish(kA, true);
  EXPECT_EQ(s.Get(kA)->due_since, absl::InfinitePast());
  EXPECT_EQ(s.Get(kA)->consecutive_failures, 0u);
}

TEST(Scheduler, ExpediteMakesAnIdleAgentDueOnlyAfterNotBefore) {
  FakeClock clock;
  Scheduler s(NoJitter(), &clock);
  s.Add(kA);
  ASSERT_EQ(s.TakeDue(1).size(), 1u);
  EXPECT_FALSE(s.Expedite(kA, clock.Now())) << "in flight";
  s.Finish(kA, true);
  clock.Advance(absl::Seconds(30));
  EXPECT_FALSE(s.Expedite(kA, clock.Now() + absl::Seconds(24)));  // too early
  EXPECT_TRUE(s.TakeDue(1).empty());
  EXPECT_TRUE(s.Expedite(kA, clock.Now() - absl::Seconds(1)));
  EXPECT_EQ(s.TakeDue(1), std::vector<AgentId>{kA});
  EXPECT_FALSE(s.Expedite(kB, clock.Now())) << "unknown agent";
}

TEST(Scheduler, SuccessSchedulesOneIntervalAfterTheStart) {
  FakeClock clock;
  Scheduler s(NoJitter(), &clock);
  s.Add(kA);
  absl::Time start = clock.Now();
  ASSERT_EQ(s.TakeDue(1).size(), 1u);
  clock.Advance(absl::Seconds(5));  // the collection took 5 s
  s.Finish(kA, true);
  EXPECT_EQ(s.Get(kA)->next_due, start + absl::Seconds(60));
  clock.Advance(absl::Seconds(54));
  EXPECT_TRUE(s.TakeDue(1).empty());
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(s.TakeDue(1), std::vector<AgentId>{kA});
  // A collection that overran the interval makes the next one due at once, not in the past.
  clock.Advance(absl::Seconds(90));
  s.Finish(kA, true);
  EXPECT_EQ(s.Get(kA)->next_due, clock.Now());
}

TEST(Scheduler, FailuresBackOffExponentiallyUpToTheMaximumAndResetOnSuccess) {
  FakeClock clock;
  SchedulerOptions o = NoJitter();
  o.interval = absl::Seconds(1);
  o.backoff_initial = absl::Seconds(10);
  o.backoff_max = absl::Seconds(60);
  Scheduler s(o, &clock);
  s.Add(kA);
  std::vector<absl::Duration> delays;
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(s.TakeDue(1), std::vector<AgentId>{kA}) << i;
    s.Finish(kA, false);
    auto sched = *s.Get(kA);
    EXPECT_EQ(sched.consecutive_failures, static_cast<uint32_t>(i + 1));
    delays.push_back(sched.next_due - clock.Now());
    // Not due one tick before the delay.
    clock.Advance(delays.back() - absl::Milliseconds(1));
    EXPECT_TRUE(s.TakeDue(1).empty()) << i;
    clock.Advance(absl::Milliseconds(1));
  }
  EXPECT_EQ(delays,
            (std::vector<absl::Duration>{absl::Seconds(10), absl::Seconds(20), absl::Seconds(40),
                                         absl::Seconds(60), absl::Seconds(60), absl::Seconds(60)}));
  ASSERT_EQ(s.TakeDue(1), std::vector<AgentId>{kA});
  absl::Time start = clock.Now();
  s.Finish(kA, true);
  EXPECT_EQ(s.Get(kA)->consecutive_failures, 0u);
  EXPECT_EQ(s.Get(kA)->next_due, start + absl::Seconds(1));
}

TEST(Scheduler, BackoffIsNeverShorterThanTheInterval) {
  SchedulerOptions o = NoJitter();
  o.interval = absl::Minutes(5);
  o.backoff_initial = absl::Seconds(10);
  o.backoff_max = absl::Minutes(10);
  EXPECT_EQ(Scheduler::BackoffDelay(o, 1), absl::Minutes(5));
  EXPECT_EQ(Scheduler::BackoffDelay(o, 5), absl::Minutes(5));  // 160 s
  EXPECT_EQ(Scheduler::BackoffDelay(o, 6), absl::Seconds(320));
  EXPECT_EQ(Scheduler::BackoffDelay(o, 7), absl::Minutes(10));
  EXPECT_EQ(Scheduler::BackoffDelay(o, 4'000'000'000u), absl::Minutes(10));
}

TEST(Scheduler, OneFailingAgentDoesNotDelayTheOthers) {
  FakeClock clock;
  SchedulerOptions o = NoJitter();
  o.interval = absl::Seconds(2);
  Scheduler s(o, &clock);
  s.Add(kA);
  s.Add(kB);
  int b_collections = 0;
  for (int step = 0; step < 100; ++step) {  // 100 s in 1 s steps
    for (const AgentId& id : s.TakeDue(2)) {
      if (id == kB) ++b_collections;
      s.Finish(id, id == kB);  // a always fails
    }
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(b_collections, 50);
  EXPECT_GE(s.Get(kA)->consecutive_failures, 4u);
}

TEST(Scheduler, TakeDueHonoursTheLimitEarliestFirst) {
  FakeClock clock;
  Scheduler s(NoJitter(), &clock);
  s.Add(kC);
  clock.Advance(absl::Seconds(1));
  s.Add(kA);
  s.Add(kB);
  clock.Advance(absl::Seconds(1));
  std::vector<AgentId> first = s.TakeDue(2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0], kC);
  EXPECT_EQ(s.TakeDue(2).size(), 1u);
  EXPECT_TRUE(s.TakeDue(2).empty());
}

TEST(Scheduler, RemovedAgentIsForgottenEvenIfInFlight) {
  FakeClock clock;
  Scheduler s(NoJitter(), &clock);
  s.Add(kA);
  ASSERT_EQ(s.TakeDue(1).size(), 1u);
  s.Remove(kA);
  s.Finish(kA, true);  // ignored
  EXPECT_FALSE(s.Contains(kA));
  EXPECT_EQ(s.NextDue(), std::nullopt);
  s.Add(kA);  // a new agent with the same id starts afresh
  EXPECT_EQ(s.Get(kA)->consecutive_failures, 0u);
}

TEST(Scheduler, JitterStaysWithinBoundsAndVaries) {
  FakeClock clock;
  SchedulerOptions o = NoJitter();
  o.jitter = 0.1;
  o.seed = 42;
  Scheduler s(o, &clock);
  s.Add(kA);
  auto first = s.Get(kA)->next_due - clock.Now();
  EXPECT_GE(first, absl::ZeroDuration());
  EXPECT_LE(first, absl::Seconds(6));
  clock.Advance(first);
  std::set<int64_t> distinct;
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(s.TakeDue(1).size(), 1u) << i;
    absl::Time start = clock.Now();
    s.Finish(kA, true);
    absl::Duration d = s.Get(kA)->next_due - start;
    EXPECT_GE(d, absl::Seconds(54)) << i;
    EXPECT_LE(d, absl::Seconds(66)) << i;
    distinct.insert(absl::ToInt64Milliseconds(d));
    clock.Advance(d);
  }
  EXPECT_GT(distinct.size(), 100u);
}

}  // namespace
}  // namespace heapwatch::daemon
