#include "daemon/growth_probe.h"

#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kMax = 256 * kMiB;
const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

absl::Time At(double s) { return kT0 + absl::Seconds(s); }

LiveSetPoint Exact(double s, uint64_t bytes) {
  LiveSetPoint p;
  p.time = At(s);
  p.source = LiveSetSource::kFullGc;
  p.live_bytes = bytes;
  p.max_bytes = kMax;
  return p;
}

// Feeds upper bounds every 2 s from `from` for `n` readings, rising `step` bytes each.
void Rise(GrowthProbe& probe, double from, int n, uint64_t base, uint64_t step) {
  for (int i = 0; i < n; ++i) probe.ObserveUpperBound(At(from + 2 * i), base + i * step, kMax);
}

TEST(GrowthProbe, ARiseOfUpperBoundsAsksForOneProbe) {
  GrowthProbe probe;
  EXPECT_EQ(probe.Wants(At(0)), GrowthProbe::Want::kNothing);
  // Two readings are too few, three within 10 s too short; three over 10 s rising 5.12 MiB (2 %
  // of 256 MiB) suffice.
  probe.ObserveUpperBound(At(0), 20 * kMiB, kMax);
  probe.ObserveUpperBound(At(5), 24 * kMiB, kMax);
  EXPECT_EQ(probe.Wants(At(5)), GrowthProbe::Want::kNothing);
  probe.ObserveUpperBound(At(9), 26 * kMiB, kMax);
  EXPECT_EQ(probe.Wants(At(9)), GrowthProbe::Want::kNothing);
  probe.ObserveUpperBound(At(12), 27 * kMiB, kMax);
  EXPECT_EQ(probe.Wants(At(12)), GrowthProbe::Want::kProbe);
  EXPECT_EQ(probe.Describe(At(12)), "probing");
}

TEST(GrowthProbe, ASmallOrFlatRiseAsksForNothing) {
  GrowthProbe probe;
  Rise(probe, 0, 20, 20 * kMiB, kMiB / 8);  // 2.4 MiB in 38 s: under 2 % of the heap
  EXPECT_EQ(probe.Wants(At(40)), GrowthProbe::Want::kNothing);
  GrowthProbe sawtooth;
  // Up 8 MiB then back down: the newest is not above the middle one.
  for (int i = 0; i < 10; ++i) {
    sawtooth.ObserveUpperBound(At(2 * i), 20 * kMiB + (i < 5 ? i : 9 - i) * 2 * kMiB, kMax);
  }
  EXPECT_EQ(sawtooth.Wants(At(20)), GrowthProbe::Want::kNothing);
}

TEST(GrowthProbe, GarbageBacksOffAndTheBackOffDoubles) {
  GrowthProbe probe;
  probe.ObserveExact(Exact(0, 40 * kMiB));
  Rise(probe, 2, 8, 40 * kMiB, 2 * kMiB);
  EXPECT_EQ(probe.Wants(At(18)), GrowthProbe::Want::kProbe);
  probe.ObserveExact(Exact(20, 40 * kMiB));  // the probe: it was garbage
  Rise(probe, 22, 8, 40 * kMiB, 2 * kMiB);
  EXPECT_EQ(probe.Wants(At(40)), GrowthProbe::Want::kNothing);  // 5 min back-off
  EXPECT_EQ(probe.Wants(At(20 + 301)), GrowthProbe::Want::kProbe);
  probe.ObserveExact(Exact(330, 40 * kMiB));  // garbage again: 10 min
  Rise(probe, 332, 8, 40 * kMiB, 2 * kMiB);
  EXPECT_EQ(probe.Wants(At(330 + 599)), GrowthProbe::Want::kNothing);
  EXPECT_EQ(probe.Wants(At(330 + 601)), GrowthProbe::Want::kProbe);
}

TEST(GrowthProbe, RisingExactPointsAreConfirmedUntilTheyStopRising) {
  GrowthProbe probe;
  probe.ObserveExact(Exact(0, 40 * kMiB));
  probe.ObserveExact(Exact(15, 55 * kMiB));  // +15 MiB: a rise (5.12 MiB needed)
  EXPECT_EQ(probe.Wants(At(15)), GrowthProbe::Want::kConfirm);
  probe.ObserveExact(Exact(30, 70 * kMiB));
  EXPECT_EQ(probe.Wants(At(30)), GrowthProbe::Want::kConfirm);
  // Six points without a rise end the confirmation.
  for (int i = 1; i <= 5; ++i) {
    probe.ObserveExact(Exact(30 + 15 * i, 70 * kMiB));
    EXPECT_EQ(probe.Wants(At(30 + 15 * i)), GrowthProbe::Want::kConfirm) << i;
  }
  probe.ObserveExact(Exact(120, 70 * kMiB));
  EXPECT_EQ(probe.Wants(At(120)), GrowthProbe::Want::kNothing);
}

TEST(GrowthProbe, YoungUpperBoundPointsAreNotExact) {
  GrowthProbe probe;
  LiveSetPoint upper = Exact(0, 40 * kMiB);
  upper.source = LiveSetSource::kYoungUpperBound;
  probe.ObserveExact(upper);
  probe.ObserveExact(Exact(10, 40 * kMiB));
  probe.ObserveExact(Exact(20, 60 * kMiB));
  EXPECT_EQ(probe.Wants(At(20)), GrowthProbe::Want::kConfirm);
}

TEST(GrowthProbe, ARiseMustBeatTheRecentRecord) {
  GrowthProbe probe;
  probe.ObserveExact(Exact(0, 40 * kMiB));
  probe.ObserveExact(Exact(10, 50 * kMiB));  // a rise
  GrowthProbe noisy;
  noisy.ObserveExact(Exact(0, 50 * kMiB));
  noisy.ObserveExact(Exact(10, 42 * kMiB));
  noisy.ObserveExact(Exact(20, 54 * kMiB));  // +12 over the last, +4 over the record: noise
  EXPECT_EQ(noisy.Wants(At(20)), GrowthProbe::Want::kNothing);
  EXPECT_EQ(probe.Wants(At(10)), GrowthProbe::Want::kConfirm);
}

}  // namespace
}  // namespace heapwatch::daemon

namespace heapwatch::daemon {
namespace {

// Concurrent-cycle points restart the rise but neither confirm nor back off.
TEST(GrowthProbe, ConcurrentCyclePointsNeitherConfirmNorRefute) {
  GrowthProbe probe;
  probe.ObserveExact(Exact(0, 20 * kMiB));
  for (int i = 1; i <= 6; ++i) {
    LiveSetPoint p = Exact(10 * i, (20 + 10 * i) * kMiB);
    p.source = LiveSetSource::kConcurrentCycle;
    probe.ObserveExact(p);
    EXPECT_EQ(probe.Wants(At(10 * i)), GrowthProbe::Want::kNothing) << i;
  }
  Rise(probe, 62, 8, 80 * kMiB, 2 * kMiB);
  EXPECT_EQ(probe.Wants(At(80)), GrowthProbe::Want::kProbe);  // no back-off either
}

}  // namespace
}  // namespace heapwatch::daemon
