// Reading the contents of a few java.lang.String objects of a heap dump: the heap graph
// (analysis/heap_graph.h) keeps no primitive values and no string contents, so a report that
// needs a handful of strings (the names of live threads, docs/leak-patterns.md "Thread names")
// reads them here, in one more streaming pass over the file, keeping only the strings asked for.
//
// What is decoded (sources: OpenJDK java.lang.String and StringUTF16, JEP 254 "Compact Strings";
// the HPROF format, heapDumper.cpp):
//   * a java.lang.String of JDK 9+: `value` byte[] and `coder` (0 = LATIN1, one byte per char;
//     1 = UTF16, two bytes per char in the JVM's native order, little-endian on x86-64 and
//     AArch64 Linux, which is what is assumed);
//   * a java.lang.String of JDK 8: `value` char[] (HPROF writes char arrays as big-endian u2);
//   * a bare char[] (JDK 8's Thread.name).
// UTF-16 is converted to UTF-8; unpaired surrogates become U+FFFD. Nothing is sanitised or masked
// here: the caller decides what may be shown (analysis/thread_names.h).
//
// Thread-safety: reentrant. Complexity: one streaming pass over the dump (like one pass of the
// reader, without building anything); memory O(requested strings x max_chars).
#ifndef HEAPWATCH_COLLECTORS_DUMPS_STRING_CONTENTS_H_
#define HEAPWATCH_COLLECTORS_DUMPS_STRING_CONTENTS_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "analysis/heap_graph.h"
#include "common/status.h"

namespace heapwatch::dumps {

struct StringContent {
  std::string utf8;        // at most max_chars UTF-16 code units of the string, as UTF-8
  bool truncated = false;  // the string is longer than what `utf8` holds
};

// Upper bound of StringContentOptions::max_chars (the pass reads at most twice as many bytes of
// each requested array).
inline constexpr uint32_t kMaxStringContentChars = 512;

// Reads the contents of `objects` (each a java.lang.String instance or a char[]/byte[] array of
// `graph`, which must have been read from the HPROF file at `path`, dump graph.info().dump_ordinal)
// and returns them keyed by ObjectIndex::value. Objects that are neither, strings whose value array
// is not in the dump, and every object of a dump that is not HPROF (IBM formats) are left out. At
// most `max_chars` (clamped to kMaxStringContentChars) UTF-16 code units per string.
// Errors: those of opening the file (NotFound, PermissionDenied, Internal); DataLoss for a
// truncated or corrupt file (the message names the offset). Never crashes on a bad file.
StatusOr<absl::flat_hash_map<uint32_t, StringContent>> ReadStringContents(
    const std::string& path, const analysis::HeapGraph& graph,
    std::span<const analysis::ObjectIndex> objects, uint32_t max_chars = 128);

// UTF-16 code units to UTF-8; unpaired surrogates become U+FFFD. O(units).
std::string Utf16ToUtf8(std::span<const uint16_t> units);

}  // namespace heapwatch::dumps

#endif  // HEAPWATCH_COLLECTORS_DUMPS_STRING_CONTENTS_H_
