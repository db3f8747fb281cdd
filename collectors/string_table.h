// The JVM's interned-string table (String.intern(), string literals) from HotSpot's
// VM.stringtable diagnostic command: its summary statistics, the cheap signal of interned-string
// growth (a heap dump does not mark interned strings).
//
// Text format (no -verbose; HotSpot src/hotspot/share/utilities/tableStatistics.cpp
// TableStatistics::print and src/hotspot/share/classfile/stringTable.cpp print_table_statistics;
// the same lines in JDK 17 and 25, checked on captured output in tests/collectors/data/):
//
//   StringTable statistics:
//   Number of buckets       :     65536 =    524288 bytes, each 8
//   Number of entries       :      3871 =     61936 bytes, each 16
//   Number of literals      :      3871 =    251808 bytes, avg  65.000
//   Total footprint         :           =    838032 bytes
//   Average bucket size     :     0.059
//   Variance of bucket size :     0.059
//   Std. dev. of bucket size:     0.242
//   Maximum bucket size     :         3
//
// JDK 25 with a CDS archive then prints a "Shared String Table statistics:" block (the archived,
// read-only strings; not counted here). The `jcmd` tool prints "<pid>:" on a line of its own
// first; that line is accepted and skipped. When the table is being resized the JVM prints
// "statistics unavailable at this moment" instead of the numbers.
//
// Cost: the command runs as a VM operation (VM_DumpHashtable, stringTable.cpp / vmOperations.hpp)
// at a safepoint; the daemon takes its pause from the JVM's own safepoint time around it
// (collectors/gc_counters.h SafepointTimeBetween). Measured figures: docs/leak-patterns.md.
#ifndef HEAPWATCH_COLLECTORS_STRING_TABLE_H_
#define HEAPWATCH_COLLECTORS_STRING_TABLE_H_

#include <cstdint>
#include <string_view>

#include "absl/time/time.h"
#include "collectors/attach.h"
#include "collectors/local_jvm.h"
#include "common/status.h"
#include "common/string_table.h"

namespace heapwatch::collectors {

// One reading of the string table's summary (common/string_table.h, where the storage module can
// use it too).
using StringTableStats = ::heapwatch::StringTableStats;

// Largest VM.stringtable reply parsed, in bytes (the summary is about 600 bytes).
inline constexpr size_t kMaxStringTableReplyBytes = 64 << 10;

// Parses the output of `VM.stringtable` (summary form, no -verbose).
// Checks: an optional "<pid>:" line, then "StringTable statistics:"; every following non-blank
// line up to the end or to the next "... statistics:" header has the form "<label> : <value>";
// the lines "Number of buckets", "Number of entries", "Number of literals" ("N = B bytes, ...")
// and "Total footprint" ("= B bytes") are present exactly once with decimal numbers, and the
// footprint equals the sum of the three byte counts. Other labels (averages, maximum) are
// read when known and otherwise ignored, at most 64 lines in all.
// Errors: InvalidArgument for empty input, input over kMaxStringTableReplyBytes, text that is not
// the string table's statistics (its first line is quoted, e.g.
// "java.lang.IllegalArgumentException: Unknown diagnostic command"), a malformed line (its number
// and text are quoted, escaped, at most 80 bytes), a missing or repeated line, or numbers out of
// range; Unavailable when the JVM said "statistics unavailable at this moment" (retry later);
// DataLoss when the footprint does not equal the sum of its parts. Complexity: O(text size).
// Thread-safety: pure function.
StatusOr<StringTableStats> ParseStringTable(std::string_view text);

// Runs "VM.stringtable" through ExecuteJcmd and parses it; `time` of the result is absl::Now()
// after the reply. The JVM pauses for a safepoint while the table is walked (about 1 ms for 2,000
// strings and 2 ms for 70,000 on a loaded 2-core machine, docs/leak-patterns.md).
// Errors: those of ExecuteJcmd and ParseStringTable. Blocking: see ExecuteJcmd.
// Thread-safety: thread-safe.
StatusOr<StringTableStats> CollectStringTable(const LocalJvm& jvm, const AttachOptions& options);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_STRING_TABLE_H_
