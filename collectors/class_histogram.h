// Class histograms ("simple dumps") from HotSpot's GC.class_histogram diagnostic command.
//
// Text format (HotSpot src/hotspot/share/memory/heapInspection.cpp, KlassInfoHisto::print_histo_on,
// print_elements and KlassInfoEntry::print_on; identical in JDK 9 to 25, checked on captured JDK 17
// and JDK 25 output in tests/collectors/data/):
//
//    num     #instances         #bytes  class name (module)
//   -------------------------------------------------------
//      1:          7769         347096  [B (java.base@17.0.15)
//      2:          1234          29616  HwTestApp$Leaf
//   ...
//   Total         26945        1197784
//
// Row: "%4d: " then "%13ld  %13lu  %s" and, only for classes of a named module, the module as
// " (name@version)" or " (name)". JDK 8 prints the same rows without the module column, under the
// header " num     #instances         #bytes  class name". The `jcmd` tool prints "<pid>:" on a
// line of its own first; that line is accepted and skipped so that captured jcmd output parses.
//
// Class names: HotSpot prints the JVM's external name, which for arrays is the descriptor ("[B",
// "[[I", "[Ljava.lang.String;") on every JDK checked (17 and 25). heapwatch stores the source form
// defined in common/histogram.h: "[B" -> "byte[]", "[[I" -> "int[][]", "[Ljava.lang.String;" ->
// "java.lang.String[]". Other names are kept verbatim, including '$' of nested classes and the
// "/0x..." suffix of hidden classes (lambdas), which differs between runs of the same program: the
// parser then makes it stable (common/stable_class_name.h StableClassName: "Foo$$Lambda$14/0x..."
// -> "Foo$$Lambda") and sums the rows that get the same name and module.
#ifndef HEAPWATCH_COLLECTORS_CLASS_HISTOGRAM_H_
#define HEAPWATCH_COLLECTORS_CLASS_HISTOGRAM_H_

#include <string>
#include <string_view>

#include "collectors/attach.h"
#include "collectors/local_jvm.h"
#include "common/histogram.h"
#include "common/status.h"

namespace heapwatch::collectors {

// Parses the output of GC.class_histogram (the attach reply's output, or what `jcmd` printed).
// Checks: the header and dashed separator come first (after an optional "<pid>:" line); rows are
// numbered 1, 2, 3, ... with decimal counts; the "Total" line is present, nothing but blank lines
// follows it, and its totals equal the sums over the rows. The last row and the Total line must end
// with a newline: a reply cut inside a line may have lost digits.
// Errors: InvalidArgument for empty input, text that is not a class histogram (its first line is
// quoted, e.g. "java.lang.IllegalArgumentException: Unknown diagnostic command" or "Exception in
// thread ..."), a malformed row (the line number and text are quoted), or numbers out of range;
// DataLoss for a histogram that ends before its "Total" line (truncated reply) or whose totals do
// not match the rows. Rows are then renamed with StableClassName and rows of equal (name,
// module) summed, in descending bytes order. Complexity: O(text size) time; one string per row.
// Thread-safety: pure function.
StatusOr<ClassHistogram> ParseClassHistogram(std::string_view text);

// The source-form name of a class as printed by HotSpot: array descriptors become element type +
// "[]" per dimension ("[B" -> "byte[]", "[[Ljava.lang.Object;" -> "java.lang.Object[][]"); any
// other name, and a malformed descriptor, is returned unchanged. Thread-safety: pure function.
std::string NormalizeClassName(std::string_view jvm_name);

// The Java feature release of a "java.vm.version" / "java.version" string: "17.0.15+6-Debian-1deb12u1"
// -> 17, "25.0.3+9-LTS" -> 25, "1.8.0_392-b08" and "25.0-b70" (JDK 8's VM version) -> 8, "9" -> 9;
// 0 when it cannot be read. Thread-safety: pure function.
int JavaFeatureVersion(std::string_view version);

// The diagnostic command line of a class histogram: "GC.class_histogram" (live objects, full GC
// first) or with "-all" (every object, no GC), plus "-parallel=N" when the JVM supports it (JDK 16
// and later, JDK-8215624) and parallel_threads > 0: the heap walk then uses N threads instead of
// JDK 17's default of max(1, 3/8 of the CPUs), which shortened the pause by up to 30% for Parallel GC
// in bench/collection (docs/collection-cost.md). Thread-safety: pure function.
std::string ClassHistogramCommand(bool all_objects, int java_feature_version, int parallel_threads);

// Takes a class histogram of a local JVM: runs "GC.class_histogram" (live objects only; the JVM
// runs a full GC first) or, with `all_objects`, "GC.class_histogram -all" (every object on the
// heap, no GC) through ExecuteJcmd, and parses it. Errors: those of ExecuteJcmd and
// ParseClassHistogram. Blocking: see ExecuteJcmd; the full GC pauses the JVM. Thread-safety:
// thread-safe.
StatusOr<ClassHistogram> CollectClassHistogram(const LocalJvm& jvm, bool all_objects,
                                               const AttachOptions& options);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_CLASS_HISTOGRAM_H_
