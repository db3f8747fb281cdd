// Class names as HPROF writers spell them, turned into Java source form. Internal to
// collectors/dumps (shared by its readers).
#ifndef HEAPWATCH_COLLECTORS_DUMPS_CLASS_NAMES_H_
#define HEAPWATCH_COLLECTORS_DUMPS_CLASS_NAMES_H_

#include <string>
#include <string_view>

#include "analysis/heap_graph.h"

namespace heapwatch::dumps {

struct ClassName {
  std::string source_name;  // "java.lang.String", "int[]", "java.lang.Object[][]"
  analysis::ObjectKind kind = analysis::ObjectKind::kInstance;  // or kObjectArray / kPrimitiveArray
  analysis::FieldType element = analysis::FieldType::kObject;   // arrays: element type
};

// Accepts every spelling seen in dumps: internal names ("java/lang/String", HotSpot), descriptors
// of array classes ("[I", "[[Ljava/lang/Object;"), source names (Android: "java.lang.String[]",
// "int[]"), and HotSpot hidden classes ("pkg/Foo$$Lambda$14+0x0000000800c03000", shown by the JVM
// as "...$14/0x..."). The source name is made stable across JVM runs (common/stable_class_name.h:
// "pkg.Foo$$Lambda$14/0x0000000800c03000" -> "pkg.Foo$$Lambda").
ClassName ParseClassName(std::string_view raw);

}  // namespace heapwatch::dumps

#endif  // HEAPWATCH_COLLECTORS_DUMPS_CLASS_NAMES_H_
