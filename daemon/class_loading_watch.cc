#include "daemon/class_loading_watch.h"

#include <string>

#include "absl/strings/str_format.h"

namespace heapwatch::daemon {
namespace {

std::string Mebibytes(uint64_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

uint64_t LiveClasses(const ClassLoadingPoint& p) { return p.live_classes(); }

// A suspect is a class loader leak while metaspace grew over the window too (or is not published).
std::optional<diff::Leak> ClassLoaderLeak(const ScalarTrend& trend, const diff::Suspect& suspect,
                                          const ClassLoadingPoint& first,
                                          const ClassLoadingPoint& last) {
  const bool metaspace_known = last.metaspace_used_bytes > 0;
  if (metaspace_known && last.metaspace_used_bytes <= first.metaspace_used_bytes) {
    return std::nullopt;
  }
  diff::Leak leak = trend.LeakFrom(kClassLoaderLeakKind, suspect);
  leak.bytes = last.metaspace_used_bytes;
  const double span = absl::ToDoubleSeconds(last.time - first.time);
  if (span > 0 && metaspace_known) {
    leak.growth_bytes_per_second = (static_cast<double>(last.metaspace_used_bytes) -
                                    static_cast<double>(first.metaspace_used_bytes)) /
                                   span;
  }
  leak.classes.push_back(
      {std::string(kClassLoadingSeries), last.metaspace_used_bytes, leak.growth_bytes_per_second});
  const int64_t class_growth =
      static_cast<int64_t>(last.live_classes()) - static_cast<int64_t>(first.live_classes());
  leak.detail = absl::StrFormat(
      "class loader leak: %d classes loaded and not unloaded (%+d in %s, %.2f classes/s), "
      "metaspace %s",
      last.live_classes(), class_growth, absl::FormatDuration(last.time - first.time),
      suspect.growth_bytes_per_second,
      metaspace_known ? absl::StrFormat("%s (%+.1f MiB)", Mebibytes(last.metaspace_used_bytes),
                                        (static_cast<double>(last.metaspace_used_bytes) -
                                         static_cast<double>(first.metaspace_used_bytes)) /
                                            (1 << 20))
                      : std::string("not published"));
  return leak;
}

}  // namespace

ClassLoadingWatch::ClassLoadingWatch(diff::LeakOptions trend, absl::Time agent_start,
                                     ClassLoadingWatchOptions options)
    : watch_({kClassLoadingSeries, options.min_class_growth, options.min_relative_growth,
              &LiveClasses, &ClassLoaderLeak},
             trend, agent_start) {}

std::optional<diff::Leak> ClassLoadingWatch::Observe(const ClassLoadingPoint& point) {
  return watch_.Observe(point);
}

std::optional<diff::Leak> ClassLoadingWatch::leak() const { return watch_.leak(); }

std::optional<ClassLoadingPoint> ClassLoadingWatch::last() const { return watch_.last(); }

std::optional<diff::Suspect> ClassLoadingWatch::suspect() const { return watch_.suspect(); }

}  // namespace heapwatch::daemon
