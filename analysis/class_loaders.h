// Class loaders of a heap dump: how many classes each loader object defines, and which class names
// several loaders define. The dump-side signal of a class-loader leak: after an application server
// redeploys a web application N times while something (a thread it started, a JDBC driver in
// DriverManager, a shutdown hook) still references the old loader, the dump holds N + 1 loaders of
// the same class (e.g. org.apache.catalina.loader.ParallelWebappClassLoader), each defining the
// application's classes again. The daemon's class-count trend (docs/class-loaders.md) says that it
// happens; this says which loaders and classes.
//
// Source: the HPROF CLASS DUMP record's class loader object id (OpenJDK heapDumper.cpp,
// DumperSupport::dump_class_and_array_classes), kept as ClassInfo::class_loader by the readers.
// Classes of the boot loader (no loader object) are counted apart. Array classes are left out
// (HotSpot gives them their element's loader, so they would repeat their element class); so are
// synthetic classes (no CLASS DUMP record), and names whose loaders are mostly the JDK's
// DelegatingClassLoader (one per generated reflection accessor, whose stable names are all
// "jdk.internal.reflect.GeneratedMethodAccessor": found in a real Tomcat dump, 38 such loaders
// ranked above the 5 pinned web application loaders). Class names are the stable names the readers
// give (common/stable_class_name.h), so the lambdas of one class count once per loader.
//
// Secrets: class names, counts and object ids only.
#ifndef HEAPWATCH_ANALYSIS_CLASS_LOADERS_H_
#define HEAPWATCH_ANALYSIS_CLASS_LOADERS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"

namespace heapwatch::analysis {

// One class loader object of the dump.
struct ClassLoaderRow {
  ObjectIndex loader;        // the loader object
  uint64_t loader_id = 0;    // its raw id (address)
  std::string loader_class;  // e.g. "org.apache.catalina.loader.ParallelWebappClassLoader"
  uint32_t classes = 0;      // classes it defines (non-array, with a CLASS DUMP record)
  uint64_t instances = 0;    // objects in the dump whose class it defines (reachable or not)
};

// Classes that several loaders of one loader class define: "7 instances of
// ParallelWebappClassLoader define 312 classes, e.g. com.example.App".
struct DuplicateClassGroup {
  std::string loader_class;  // the class of the defining loaders (the most common one when mixed)
  uint32_t loaders = 0;      // how many loader objects define each of these classes
  uint32_t class_names = 0;  // how many class names are defined that often by such loaders
  // Up to ClassLoaderOptions::examples names of the group, application classes first (names not
  // starting with "java.", "javax.", "jdk.", "sun.", "com.sun."), then by name.
  std::vector<std::string> examples;
};

struct ClassLoaderOptions {
  size_t max_loaders = 20;  // rows of ClassLoaderSummary::loaders (the biggest by classes)
  size_t max_groups = 10;   // rows of ClassLoaderSummary::duplicates
  size_t examples = 3;      // DuplicateClassGroup::examples
};

struct ClassLoaderSummary {
  uint32_t loader_objects = 0;  // distinct loader objects that define at least one class
  uint32_t boot_classes = 0;  // classes without a loader object (boot loader, or loader not dumped)
  uint32_t duplicated_class_names = 0;  // names defined by 2 or more loader objects (see above)
  // Loaders by classes descending, then instances descending, then loader id; at most
  // max_loaders rows.
  std::vector<ClassLoaderRow> loaders;
  // Groups by extra copies ((loaders - 1) x class_names) descending, then loaders descending,
  // then loader class; only names defined by 2 or more loaders; at most max_groups rows.
  std::vector<DuplicateClassGroup> duplicates;
};

// Groups the dump's classes by their class loader object and finds the class names that several
// loaders define (see the file comment). A name that loaders of different classes define counts in
// the group of the loader class most of them have (ties: the smaller name). Complexity: O(n + C
// log C) time for n objects and C classes (one pass over the objects for the instance counts), O(C)
// memory. Thread-safety: reads `graph` only. Never fails.
ClassLoaderSummary SummarizeClassLoaders(const HeapGraph& graph,
                                         const ClassLoaderOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_CLASS_LOADERS_H_
