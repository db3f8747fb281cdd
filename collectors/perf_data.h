// Reader for HotSpot's PerfData instrumentation memory: the "hsperfdata" file that every HotSpot
// JVM (unless started with -XX:-UsePerfData or -XX:+PerfDisableSharedMem) maps at
// /tmp/hsperfdata_<user>/<pid> and that `jps` and `jstat` read. heapwatch reads it to find JVMs and
// to label them (main class, version, start time) without attaching.
//
// Source: OpenJDK src/hotspot/share/runtime/perfMemory.hpp (PerfDataPrologue) and perfData.hpp
// (PerfDataEntry), and the reader in jdk.internal.jvmstat
// (sun/jvmstat/perfdata/monitor/v2_0/PerfDataBuffer.java). Layout of format version 2.0:
//
//   prologue (32 bytes):
//     u4 magic            0xcafec0c0, always big-endian
//     u1 byte_order       0 = big-endian, 1 = little-endian (for every multi-byte field below)
//     u1 major_version    2
//     u1 minor_version    0
//     u1 accessible       1 once the JVM has finished initialising the region
//     i4 used             bytes of the region in use
//     i4 overflow
//     i8 mod_time_stamp
//     i4 entry_offset     offset of the first entry
//     i4 num_entries
//   entry (20-byte header, then name and data), entries follow each other:
//     i4 entry_length     total length of this entry including padding
//     i4 name_offset      from the start of the entry; NUL-terminated ASCII name
//     i4 vector_length    0 for a scalar, element count for a vector
//     u1 data_type        'J' jlong, 'B' jbyte (strings are 'B' vectors), others ignored here
//     u1 flags, u1 data_units, u1 data_variability
//     i4 data_offset      from the start of the entry
//
// The JVM updates the region while it runs; a reader may see a new entry half written. Parse()
// checks every offset against the buffer and `used`, never reads outside the buffer and stops at
// num_entries.
#ifndef HEAPWATCH_COLLECTORS_PERF_DATA_H_
#define HEAPWATCH_COLLECTORS_PERF_DATA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "common/status.h"

namespace heapwatch::collectors {

// The counters of one PerfData snapshot that heapwatch can use: jlong scalars and byte-vector
// strings. Thread-safety: immutable after Parse(); const methods may be called from any thread.
class PerfData {
 public:
  // Parses a copy of the region. Errors: DataLoss when the prologue or an entry is malformed or
  // points outside the buffer (the message names the offset), Unimplemented for another major
  // version than 2, Unavailable when the JVM has not yet marked the region accessible (it is still
  // starting). Complexity: O(bytes.size()) time, O(number of counters) memory.
  static StatusOr<PerfData> Parse(std::string_view bytes);

  // Reads the file at `path` (at most 64 MiB) and parses it. Errors: those of Parse, and
  // Unavailable (file gone), PermissionDenied, ResourceExhausted from reading.
  static StatusOr<PerfData> ReadFile(const std::string& path);

  // A 'J' scalar counter, e.g. "sun.rt.createVmBeginTime" (milliseconds since the Unix epoch).
  std::optional<int64_t> GetLong(std::string_view name) const;
  // A 'B' vector counter read as a string up to its first NUL, e.g. "sun.rt.javaCommand",
  // "java.property.java.vm.version", "sun.rt.jvmCapabilities".
  std::optional<std::string> GetString(std::string_view name) const;

  // Number of counters read (both kinds).
  size_t size() const { return longs_.size() + strings_.size(); }

 private:
  absl::flat_hash_map<std::string, int64_t> longs_;
  absl::flat_hash_map<std::string, std::string> strings_;
};

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_PERF_DATA_H_
