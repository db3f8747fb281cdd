// Class-loading and metaspace counters of a HotSpot JVM from its hsperfdata file (zero pause: the
// same mapped file as collectors/gc_counters.h, read without attaching).
//
// Counters (names checked with `jcmd PID PerfCounter.print` on JDK 17.0.15; published since JDK 8):
//   java.cls.loadedClasses         classes loaded, CDS-shared ones not included
//   java.cls.sharedLoadedClasses   classes loaded from the CDS archive
//   java.cls.unloadedClasses       classes unloaded (their loader became unreachable and a GC ran)
//   java.cls.sharedUnloadedClasses shared classes unloaded
//   sun.gc.metaspace.used / .capacity / .maxCapacity                 bytes
//   sun.gc.compressedclassspace.used / .capacity / .maxCapacity      bytes
// Sources: OpenJDK src/hotspot/share/classfile/classLoader.cpp and services/classLoadingService.cpp
// (java.cls.*), memory/metaspaceCounters.cpp (sun.gc.metaspace.*, updated at GCs by
// MetaspaceCounters::update_performance_counters; 0 before the first GC).
#ifndef HEAPWATCH_COLLECTORS_CLASS_LOADING_H_
#define HEAPWATCH_COLLECTORS_CLASS_LOADING_H_

#include <string>

#include "absl/time/time.h"
#include "collectors/perf_data.h"
#include "common/class_loading.h"
#include "common/status.h"

namespace heapwatch::collectors {

// Reads the counters above out of a parsed hsperfdata region; `time` becomes the point's time.
// Missing metaspace counters read as 0. Errors: FailedPrecondition when java.cls.loadedClasses is
// missing (a JVM that publishes no class-loading counters), InvalidArgument when a counter is
// negative. Complexity: O(1). Thread-safety: pure function.
StatusOr<ClassLoadingPoint> ReadClassLoading(const PerfData& perf, absl::Time time);

// Reads the hsperfdata file at `path` and its counters. Errors: those of PerfData::ReadFile and
// ReadClassLoading. Cost: one read of the file (32 KiB by default). Thread-safety: thread-safe.
StatusOr<ClassLoadingPoint> ReadClassLoadingFile(const std::string& path, absl::Time time);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_CLASS_LOADING_H_
