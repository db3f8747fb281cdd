// ClassLoadingWatch (daemon/class_loading_watch.h) on synthetic class-loading series with fake
// times: a steady rise of classes and metaspace (redeploys that pin their loaders) is a class
// loader leak; start-up class loading, redeploys that unload, classes that rise while metaspace
// stays flat, and a one-time step are not.
#include "daemon/class_loading_watch.h"

#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

ClassLoadingPoint Point(int i, uint64_t loaded, uint64_t unloaded, uint64_t metaspace) {
  ClassLoadingPoint p;
  p.time = kStart + absl::Seconds(60 * (i + 1));
  p.loaded_classes = loaded;
  p.unloaded_classes = unloaded;
  p.metaspace_used_bytes = metaspace;
  p.metaspace_capacity_bytes = metaspace + (1 << 20);
  return p;
}

// Start-up: 2,000 classes over the first 3 readings (warm-up), then flat at 6,000.
uint64_t StartUp(int i) { return i < 3 ? 4000 + 700 * static_cast<uint64_t>(i) : 6000; }

TEST(ClassLoadingWatchTest, PinnedRedeploysAreAClassLoaderLeak) {
  ClassLoadingWatch watch(diff::LeakOptions{}, kStart);
  std::optional<diff::Leak> leak;
  int first_leak = -1;
  for (int i = 0; i < 40; ++i) {
    // From reading 5 on, one redeploy per reading: 300 classes and 1.5 MiB of metaspace stay.
    const uint64_t deploys = i < 5 ? 0 : static_cast<uint64_t>(i - 4);
    leak = watch.Observe(Point(i, StartUp(i) + 300 * deploys, 0, (30 << 20) + deploys * (3 << 19)));
    if (leak && first_leak < 0) first_leak = i;
  }
  ASSERT_TRUE(leak.has_value());
  EXPECT_EQ(leak->kind, kClassLoaderLeakKind);
  EXPECT_EQ(leak->main_class, kClassLoadingSeries);
  EXPECT_FALSE(leak->id.empty());
  EXPECT_GT(leak->growth_bytes_per_second, 0);
  EXPECT_NE(leak->detail.find("class loader leak: 16500 classes loaded and not unloaded"),
            std::string::npos)
      << leak->detail;
  // Not before warm-up (5 readings) and most of the detector's minimum window (8) have passed.
  EXPECT_GE(first_leak, 10);
  EXPECT_LE(first_leak, 25);
  ASSERT_TRUE(watch.last().has_value());
  EXPECT_EQ(watch.last()->live_classes(), 16500u);
}

TEST(ClassLoadingWatchTest, StartUpClassLoadingIsNotALeak) {
  ClassLoadingWatch watch(diff::LeakOptions{}, kStart);
  for (int i = 0; i < 40; ++i) {
    // Metaspace follows the classes.
    EXPECT_FALSE(watch.Observe(Point(i, StartUp(i), 0, StartUp(i) * 5000)).has_value()) << i;
  }
}

TEST(ClassLoadingWatchTest, RedeploysThatUnloadAreNotALeak) {
  ClassLoadingWatch watch(diff::LeakOptions{}, kStart);
  for (int i = 0; i < 40; ++i) {
    const uint64_t deploys = static_cast<uint64_t>(i);
    // Every redeploy loads 300 classes; the previous deployment's 300 are unloaded at the next GC
    // (a sawtooth of one deployment's worth).
    const uint64_t loaded = StartUp(i) + 300 * deploys;
    const uint64_t unloaded = deploys == 0 ? 0 : 300 * (deploys - 1) + (i % 2 == 0 ? 300 : 0);
    EXPECT_FALSE(
        watch.Observe(Point(i, loaded, std::min(unloaded, 300 * deploys), 30 << 20)).has_value())
        << i;
  }
}

TEST(ClassLoadingWatchTest, RisingClassesWithFlatMetaspaceAreNotALeak) {
  ClassLoadingWatch watch(diff::LeakOptions{}, kStart);
  bool suspect = false;
  for (int i = 0; i < 40; ++i) {
    EXPECT_FALSE(watch.Observe(Point(i, StartUp(i) + 300 * static_cast<uint64_t>(i), 0, 30 << 20))
                     .has_value());
    suspect |= watch.suspect().has_value();
  }
  // The count alone is flagged by the detector; the metaspace check keeps it from being a leak.
  EXPECT_TRUE(suspect);
}

TEST(ClassLoadingWatchTest, OneStepIsNotALeak) {
  ClassLoadingWatch watch(diff::LeakOptions{}, kStart);
  for (int i = 0; i < 40; ++i) {
    // A feature loaded lazily once, at reading 15: 3,000 classes, 15 MiB.
    const bool after = i >= 15;
    EXPECT_FALSE(watch
                     .Observe(Point(i, StartUp(i) + (after ? 3000 : 0), 0,
                                    (30 << 20) + (after ? 15 << 20 : 0)))
                     .has_value())
        << i;
  }
}

TEST(ClassLoadingWatchTest, GrowthBelowTheThresholdIsNotALeak) {
  ClassLoadingWatch watch(diff::LeakOptions{}, kStart);
  for (int i = 0; i < 40; ++i) {
    // 2 classes per reading: 78 in all, below min_class_growth (100) on every time scale.
    const uint64_t k = static_cast<uint64_t>(i);
    EXPECT_FALSE(watch.Observe(Point(i, StartUp(i) + 2 * k, 0, (30 << 20) + 4096 * k)).has_value())
        << i;
  }
}

TEST(ClassLoadingWatchTest, OlderReadingsAreIgnored) {
  ClassLoadingWatch watch(diff::LeakOptions{}, kStart);
  watch.Observe(Point(5, 100, 0, 1));
  watch.Observe(Point(4, 999, 0, 1));
  ASSERT_TRUE(watch.last().has_value());
  EXPECT_EQ(watch.last()->loaded_classes, 100u);
}

}  // namespace
}  // namespace heapwatch::daemon
