// A small hand-built heap for report tests (tests/analysis/report_test.cc, tests/ctl): a leak of
// com.acme.Session held by a static ArrayList, garbage, a weakly held object. Built through the
// public HeapGraphBuilder.
#ifndef HEAPWATCH_TESTS_ANALYSIS_LEAK_HEAP_H_
#define HEAPWATCH_TESTS_ANALYSIS_LEAK_HEAP_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/heap_graph.h"
#include "common/status.h"

namespace heapwatch::analysis::testing {

inline ClassInfo Instance(std::string name, std::vector<std::string> reference_fields,
                          uint32_t size) {
  ClassInfo c;
  c.name = std::move(name);
  for (auto& f : reference_fields) c.instance_fields.push_back(FieldInfo{f, FieldType::kObject});
  c.instance_size = size;
  c.class_object_size = 8;
  return c;
}

// com.acme.Registry (class, sticky root) --static SESSIONS--> ArrayList --elementData--> Object[4]
// -> 4 Session, each Session --data--> byte[]. One Session is garbage. A WeakReference (JNI global
// root) --referent--> a fifth Session that nothing else holds.
inline StatusOr<HeapGraph> LeakHeap() {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  b.AddClass(Instance("java.lang.Class", {}, 96), 0x20);
  ClassInfo registry = Instance("com.acme.Registry", {}, 16);
  registry.static_fields.push_back(FieldInfo{"SESSIONS", FieldType::kObject});
  ClassId reg = b.AddClass(registry, 0x30);
  ClassId list = b.AddClass(Instance("java.util.ArrayList", {"elementData"}, 24), 0x40);
  ClassInfo objects;
  objects.name = "java.lang.Object[]";
  objects.instance_kind = ObjectKind::kObjectArray;
  ClassId arr = b.AddClass(objects, 0x50);
  ClassId session = b.AddClass(Instance("com.acme.Session", {"data"}, 24), 0x60);
  ClassInfo bytes;
  bytes.name = "byte[]";
  bytes.instance_kind = ObjectKind::kPrimitiveArray;
  bytes.element_type = FieldType::kByte;
  ClassId byte_array = b.AddClass(bytes, 0x70);
  ClassInfo reference = Instance("java.lang.ref.Reference", {"referent"}, 32);
  reference.is_reference = true;
  ClassId ref = b.AddClass(reference, 0x80);
  b.SetStaticReferences(reg, {0x1000});
  b.AddInstance(0x1000, list, {0x2000});
  b.AddObjectArray(0x2000, arr, {0x3000, 0x3010, 0x3020, 0x3030});
  for (uint64_t i = 0; i < 6; ++i) {
    b.AddInstance(0x3000 + 16 * i, session, {0x4000 + 16 * i});
    b.AddPrimitiveArray(0x4000 + 16 * i, byte_array, 1000);
  }
  // 0x3040: garbage; 0x3050: only weakly reachable.
  b.AddInstance(0x5000, ref, {0x3050});
  for (uint64_t c = 0x10; c <= 0x80; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  b.AddRoot(0x5000, GcRootKind::kJniGlobal);
  return std::move(b).Build();
}

}  // namespace heapwatch::analysis::testing

#endif  // HEAPWATCH_TESTS_ANALYSIS_LEAK_HEAP_H_
