#include "collectors/class_loading.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace heapwatch::collectors {
namespace {

// The counter `name` as a non-negative value; 0 when absent.
Status Get(const PerfData& perf, std::string_view name, uint64_t* out) {
  const std::optional<int64_t> v = perf.GetLong(name);
  if (!v) {
    *out = 0;
    return absl::OkStatus();
  }
  if (*v < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("hsperfdata: ", std::string(name), " is negative"));
  *out = static_cast<uint64_t>(*v);
  return absl::OkStatus();
}

}  // namespace

StatusOr<ClassLoadingPoint> ReadClassLoading(const PerfData& perf, absl::Time time) {
  if (!perf.GetLong("java.cls.loadedClasses")) {
    return absl::FailedPreconditionError("hsperfdata: no java.cls.loadedClasses counter");
  }
  ClassLoadingPoint p;
  p.time = time;
  uint64_t loaded = 0, shared_loaded = 0, unloaded = 0, shared_unloaded = 0;
  HW_RETURN_IF_ERROR(Get(perf, "java.cls.loadedClasses", &loaded));
  HW_RETURN_IF_ERROR(Get(perf, "java.cls.sharedLoadedClasses", &shared_loaded));
  HW_RETURN_IF_ERROR(Get(perf, "java.cls.unloadedClasses", &unloaded));
  HW_RETURN_IF_ERROR(Get(perf, "java.cls.sharedUnloadedClasses", &shared_unloaded));
  HW_RETURN_IF_ERROR(Get(perf, "sun.gc.metaspace.used", &p.metaspace_used_bytes));
  HW_RETURN_IF_ERROR(Get(perf, "sun.gc.metaspace.capacity", &p.metaspace_capacity_bytes));
  HW_RETURN_IF_ERROR(Get(perf, "sun.gc.compressedclassspace.used", &p.class_space_used_bytes));
  p.loaded_classes = loaded + shared_loaded;
  p.unloaded_classes = unloaded + shared_unloaded;
  return p;
}

StatusOr<ClassLoadingPoint> ReadClassLoadingFile(const std::string& path, absl::Time time) {
  HW_ASSIGN_OR_RETURN(PerfData perf, PerfData::ReadFile(path));
  return ReadClassLoading(perf, time);
}

}  // namespace heapwatch::collectors
