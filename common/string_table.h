// One reading of a JVM's interned-string table summary: the zero-dump signal of interned-string
// growth. Produced by collectors/string_table.h (jcmd VM.stringtable), stored by
// storage/snapshot_store.h (the string-table series), exported and trended by the daemon
// (daemon/string_table_watch.h). docs/leak-patterns.md says how the trend is judged.
#ifndef HEAPWATCH_COMMON_STRING_TABLE_H_
#define HEAPWATCH_COMMON_STRING_TABLE_H_

#include <cstdint>

#include "absl/time/time.h"

namespace heapwatch {

struct StringTableStats {
  absl::Time time;               // when it was read (set by the caller; ParseStringTable: unset)
  uint64_t buckets = 0;          // hash buckets
  uint64_t bucket_bytes = 0;     // bytes of the bucket array
  uint64_t entries = 0;          // interned strings (table entries)
  uint64_t entry_bytes = 0;      // bytes of the entries (the table's nodes)
  uint64_t literals = 0;         // the java.lang.String objects the entries refer to
  uint64_t literal_bytes = 0;    // their bytes on the Java heap (String + its byte[])
  uint64_t footprint_bytes = 0;  // "Total footprint": buckets + entries + literals
  uint64_t max_bucket = 0;       // longest bucket chain
  // entry_bytes + literal_bytes: what the interned strings cost, without the bucket array (which
  // grows in steps when the table is resized).
  uint64_t strings_bytes() const { return entry_bytes + literal_bytes; }
  friend bool operator==(const StringTableStats&, const StringTableStats&) = default;
};

}  // namespace heapwatch

#endif  // HEAPWATCH_COMMON_STRING_TABLE_H_
