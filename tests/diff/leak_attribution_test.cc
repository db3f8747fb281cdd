#include "diff/leak_attribution.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace heapwatch::diff {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

// Class histograms of a service, one every `step`: 40 classes of 64-byte objects and byte[] whose
// bytes (and instances with them) jump around by up to +-`churn` bytes (garbage in -all
// histograms, caches, sessions); and, when `orders_per_second` > 0, a leak of com.example.Order
// objects (24 bytes), each holding a 528-byte payload (in byte[]) and a java.lang.String id (24
// bytes).
std::vector<Snapshot> Histograms(size_t n, absl::Duration step, double orders_per_second,
                                 uint64_t churn, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> jump(-static_cast<int64_t>(churn),
                                              static_cast<int64_t>(churn));
  std::vector<Snapshot> out;
  for (size_t i = 0; i < n; ++i) {
    Snapshot s;
    s.time = kT0 + step * static_cast<double>(i);
    const double t = absl::ToDoubleSeconds(step) * static_cast<double>(i);
    const uint64_t orders = static_cast<uint64_t>(orders_per_second * t);
    for (int c = 0; c < 40; ++c) {
      const uint64_t bytes = static_cast<uint64_t>(static_cast<int64_t>(8 * kMiB) + jump(rng));
      s.histogram.rows.push_back({"com.example.Churn" + std::to_string(c), "", bytes / 64, bytes});
    }
    const uint64_t churned = static_cast<uint64_t>(static_cast<int64_t>(50 * kMiB) + 4 * jump(rng));
    s.histogram.rows.push_back(
        {"byte[]", "java.base", churned / 200 + orders, churned + orders * 528});
    const uint64_t strings = static_cast<uint64_t>(static_cast<int64_t>(4 * kMiB) + jump(rng) / 8);
    s.histogram.rows.push_back(
        {"java.lang.String", "java.base", strings / 24 + orders, strings + orders * 24});
    if (orders > 0) s.histogram.rows.push_back({"com.example.Order", "", orders, orders * 24});
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> Names(const Attribution& a) {
  std::vector<std::string> out;
  for (const LeakClass& c : a.classes) out.push_back(c.class_name);
  std::sort(out.begin(), out.end());
  return out;
}

// A leak of 1,000 orders/s (576 KB/s) in live histograms (a full GC first: little churn).
TEST(LeakAttribution, NamesTheClassesThatCarryTheGrowthFromThreeHistograms) {
  auto h = Histograms(3, absl::Seconds(20), 1000, kMiB / 4, 1);
  auto a = AttributeLiveSetGrowth(h, 1000 * 576.0);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(Names(*a),
            (std::vector<std::string>{"byte[]", "com.example.Order", "java.lang.String"}));
  EXPECT_EQ(a->classes.front().class_name, "byte[]");  // by rate
  EXPECT_EQ(a->histograms, 3u);
  EXPECT_EQ(a->from, h.front().time);
  EXPECT_EQ(a->to, h.back().time);
  EXPECT_NEAR(a->explained, 1.0, 0.15);
  // Each named class carries its instances: the orders' 1,000/s, 40,000 in the newest histogram.
  ASSERT_EQ(a->instances.size(), a->classes.size());
  ASSERT_EQ(a->instances_per_second.size(), a->classes.size());
  for (size_t i = 0; i < a->classes.size(); ++i) {
    if (a->classes[i].class_name != "com.example.Order") continue;
    EXPECT_EQ(a->instances[i], 40000u);
    EXPECT_NEAR(a->instances_per_second[i], 1000, 1);
  }
}

struct ChurnRun {
  int named = 0, with_order = 0, churn_members = 0;
};

// 200 seeds of 4 histograms 20 s apart of a 1,000 orders/s leak whose classes churn by +-`churn`
// (byte[] by four times that). Expects that what is named is carried by the leak's own classes.
ChurnRun NameThroughChurn(uint64_t churn) {
  ChurnRun run;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    auto h = Histograms(4, absl::Seconds(20), 1000, churn, seed);
    auto a = AttributeLiveSetGrowth(h, 1000 * 576.0);
    if (!a.has_value()) continue;
    ++run.named;
    double leak_rate = 0;
    for (const LeakClass& c : a->classes) {
      if (c.class_name == "com.example.Order") ++run.with_order;
      if (c.class_name.starts_with("com.example.Churn")) {
        ++run.churn_members;
      } else {
        leak_rate += c.growth_bytes_per_second;
      }
    }
    EXPECT_GT(leak_rate, 0.5 * a->growth_bytes_per_second) << "seed " << seed;
  }
  std::printf("churn +-%.2f MiB: named %d of 200, with Order %d, churning members %d\n",
              static_cast<double>(churn) / kMiB, run.named, run.with_order, run.churn_members);
  return run;
}

// Live histograms (a full GC first, as the confirmation of a small heap takes them): classes churn
// by +-256 KiB, byte[] by +-1 MiB. The leak is always named by its own classes; byte[]'s churning
// instance counts hide com.example.Order's step in about a third of the seeds (measured: 200 of 200
// named, 138 with Order), and the main class is then byte[].
TEST(LeakAttribution, NamesTheLeakThroughModerateChurn) {
  const ChurnRun run = NameThroughChurn(kMiB / 4);
  EXPECT_GE(run.named, 190);
  EXPECT_GE(run.with_order, run.named * 6 / 10);
  EXPECT_LE(run.churn_members, run.named / 10);
}

// -all histograms full of garbage: classes churn by +-1 MiB (12 % of each), byte[] by +-4 MiB (a
// third of the leak's growth per interval). byte[]'s instance counts are then too noisy for the
// small classes to be seen in step with it: the leak is named by its bulk (byte[]), rarely with
// com.example.Order (measured: 129 of 200 named, 16 with Order). What is named is still carried
// by the leak's classes.
TEST(LeakAttribution, NamesTheBulkOfTheLeakThroughHeavyChurn) {
  const ChurnRun run = NameThroughChurn(kMiB);
  EXPECT_GE(run.named, 100);
  EXPECT_LE(run.churn_members, run.named / 10);
}

// Churn alone, with a live set said to grow 1 MiB/s that no class carries: over 500 seeds of 3 and
// 4 histograms, nothing is named in at least 99 % (the gate on the live set's trend keeps healthy
// JVMs from reaching this rule at all).
TEST(LeakAttribution, ChurnAloneIsAlmostNeverNamed) {
  int named = 0;
  for (uint32_t seed = 0; seed < 500; ++seed) {
    for (size_t n : {3, 4}) {
      auto h = Histograms(n, absl::Seconds(20), 0, kMiB, seed);
      if (AttributeLiveSetGrowth(h, 1.0 * kMiB).has_value()) ++named;
    }
  }
  std::printf("churn alone named in %d of 1000\n", named);
  EXPECT_LE(named, 10);
}

TEST(LeakAttribution, AClassThatShrinksInOneIntervalIsNotNamed) {
  auto h = Histograms(3, absl::Seconds(20), 1000, 0, 1);
  for (ClassHistogramRow& r : h[2].histogram.rows) {
    if (r.class_name == "com.example.Order") r.bytes = h[1].histogram.rows.back().bytes - 24;
  }
  auto a = AttributeLiveSetGrowth(h, 1000 * 576.0);
  if (a.has_value()) {
    for (const LeakClass& c : a->classes) EXPECT_NE(c.class_name, "com.example.Order");
  }
}

TEST(LeakAttribution, NoGrowthNoAttribution) {
  auto h = Histograms(3, absl::Seconds(20), 1000, 0, 1);
  EXPECT_FALSE(AttributeLiveSetGrowth(h, 0).has_value());
  EXPECT_FALSE(AttributeLiveSetGrowth(std::span<const Snapshot>(h).first(1), kMiB).has_value());
}

TEST(LeakAttribution, GrowthFarFromTheLiveSetsIsNotItsCause) {
  // The classes grow 576 KB/s, the live set 10 MiB/s: they carry 5 % of it.
  auto h = Histograms(3, absl::Seconds(20), 1000, 0, 1);
  EXPECT_FALSE(AttributeLiveSetGrowth(h, 10.0 * kMiB).has_value());
  // And 100 KB/s: six times more than the live set grows.
  EXPECT_FALSE(AttributeLiveSetGrowth(h, 100'000).has_value());
}

TEST(LeakAttribution, OneIntervalNeedsGrowthThatStandsOutOfTheHeap) {
  // 20 s at 576 KB/s = 11 MiB in a ~390 MiB heap: under 5 %, not named from one difference.
  auto small = Histograms(2, absl::Seconds(20), 1000, 0, 1);
  EXPECT_FALSE(AttributeLiveSetGrowth(small, 1000 * 576.0).has_value());
  // 300 s: 165 MiB: named.
  auto big = Histograms(2, absl::Seconds(300), 1000, kMiB / 4, 1);
  auto a = AttributeLiveSetGrowth(big, 1000 * 576.0);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(Names(*a),
            (std::vector<std::string>{"byte[]", "com.example.Order", "java.lang.String"}));
}

}  // namespace
}  // namespace heapwatch::diff
