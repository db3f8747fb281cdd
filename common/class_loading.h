// One reading of a JVM's class-loading and metaspace counters: the zero-pause signal of class
// loader leaks. Produced by collectors/class_loading.h from the hsperfdata file, stored by
// storage/snapshot_store.h (the class-loading series), exported and trended by the daemon.
// docs/class-loaders.md says what each counter is and how the trend is judged.
#ifndef HEAPWATCH_COMMON_CLASS_LOADING_H_
#define HEAPWATCH_COMMON_CLASS_LOADING_H_

#include <cstdint>

#include "absl/time/time.h"

namespace heapwatch {

struct ClassLoadingPoint {
  absl::Time time;  // when the daemon read the counters
  // Classes loaded since the JVM started, shared (CDS archive) ones included
  // (java.cls.loadedClasses + java.cls.sharedLoadedClasses).
  uint64_t loaded_classes = 0;
  // Classes unloaded since the JVM started (java.cls.unloadedClasses +
  // java.cls.sharedUnloadedClasses).
  uint64_t unloaded_classes = 0;
  // Metaspace in use and committed, bytes (sun.gc.metaspace.used / .capacity). HotSpot updates
  // them at garbage collections only: 0 until the first one.
  uint64_t metaspace_used_bytes = 0;
  uint64_t metaspace_capacity_bytes = 0;
  // The compressed class space part of it, bytes (sun.gc.compressedclassspace.used); 0 without
  // compressed class pointers.
  uint64_t class_space_used_bytes = 0;

  // Classes loaded now: loaded - unloaded (0 if the counters are inconsistent).
  uint64_t live_classes() const {
    return loaded_classes >= unloaded_classes ? loaded_classes - unloaded_classes : 0;
  }
  friend bool operator==(const ClassLoadingPoint&, const ClassLoadingPoint&) = default;
};

}  // namespace heapwatch

#endif  // HEAPWATCH_COMMON_CLASS_LOADING_H_
