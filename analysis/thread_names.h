// Thread names in reports, with privacy (docs/leak-patterns.md "Thread names and privacy").
//
// A thread's name is a string content (java.lang.Thread.name -> String -> byte[]/char[]), which
// the heap graph does not keep. The pipeline (pipeline/analyze_dump.h) asks ThreadNameObjects for
// the objects holding the names of the live threads, reads just those from the dump
// (collectors/dumps/string_contents.h) and turns each into what a report may show with
// ThreadNameForReport:
//   kMasked (the default): every run of ASCII digits becomes '#' ("pool-3-thread-7" ->
//     "pool-#-thread-#"), so the pool's naming pattern is shown, not per-instance numbers, ids or
//     ports that names often carry;
//   kFull: the name as it is;
//   kOff: no names at all (nothing is read from the dump).
// Either way the name is made safe to print: control characters (C0, DEL, C1), bidirectional
// overrides and isolates and line/paragraph separators become U+FFFD, invalid UTF-8 too, and it is
// cut at kThreadNameMaxChars code points ("..." appended). Markup ("<b>") is kept as text: every
// renderer escapes what it prints (the web pages escape HTML).
//
// Thread-safety: reentrant.
#ifndef HEAPWATCH_ANALYSIS_THREAD_NAMES_H_
#define HEAPWATCH_ANALYSIS_THREAD_NAMES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/heap_graph.h"
#include "common/status.h"

namespace heapwatch::analysis {

enum class ThreadNamePrivacy : uint8_t { kMasked = 0, kFull = 1, kOff = 2 };
// "masked", "full", "off".
std::string_view ThreadNamePrivacyName(ThreadNamePrivacy privacy);
// Parses the names above. Errors: InvalidArgument naming the accepted values.
StatusOr<ThreadNamePrivacy> ParseThreadNamePrivacy(std::string_view name);

// Longest name shown, in Unicode code points (before "..." is appended).
inline constexpr size_t kThreadNameMaxChars = 64;

// Names shown in reports, keyed by the thread object's ObjectIndex::value.
using ThreadNames = absl::flat_hash_map<uint32_t, std::string>;

// The live threads (THREAD_OBJECT GC roots that are instances of java.lang.Thread or a subclass)
// with the object their `name` field references (a java.lang.String, or a char[] on JDK 8), in
// ascending thread order; threads whose name is null are left out. O(objects of the roots).
std::vector<std::pair<ObjectIndex, ObjectIndex>> ThreadNameObjects(const HeapGraph& graph);

// What a report shows for a thread named `utf8` (`truncated`: the name read was cut) under
// `privacy` (kOff gives ""): sanitised and bounded as the file comment says. O(length).
std::string ThreadNameForReport(std::string_view utf8, bool truncated, ThreadNamePrivacy privacy);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_THREAD_NAMES_H_
