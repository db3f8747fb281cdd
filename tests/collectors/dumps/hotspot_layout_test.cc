// The HotSpot field layout engine on small class hierarchies. Expected JDK 17 sizes are those
// GC.class_histogram printed for tests/collectors/dumps/data/HprofDumpApp.java's classes on this
// machine's JDK 17 (compressed and uncompressed references); the classic (JDK 6..14) expectations
// follow the rules of classFileParser.cpp layout_fields, spelled out next to each case. The
// real-JVM test (jvm_dump_test.cc) checks the engine against whole histograms.
#include "collectors/dumps/hprof/hotspot_layout.h"

#include "gtest/gtest.h"

namespace heapwatch::hprof {
namespace {

using analysis::FieldType;
using analysis::ObjectLayout;
constexpr FieldType B = FieldType::kByte, Z = FieldType::kBoolean, C = FieldType::kChar,
                    S = FieldType::kShort, I = FieldType::kInt, F = FieldType::kFloat,
                    J = FieldType::kLong, D = FieldType::kDouble, O = FieldType::kObject;

ObjectLayout Layout(uint32_t ref, uint32_t header, bool jdk15) {
  for (ObjectLayout l : CandidateLayouts(8)) {
    if (l.reference_size == ref && l.object_header == header && l.jdk15_field_layout == jdk15 &&
        !l.unaligned_array_base) {
      return l;
    }
  }
  ADD_FAILURE() << "no such candidate";
  return {};
}

// The HprofDumpApp classes: Object(0) and the test classes with their supers.
struct Table {
  std::vector<LayoutClass> classes;
  int Add(std::string_view name, int super, std::vector<FieldType> fields, bool boot = false) {
    LayoutClass c;
    c.name = name;
    c.super = super;
    c.fields = std::move(fields);
    c.field_names.assign(c.fields.size(), "f");
    c.boot = boot;
    classes.push_back(std::move(c));
    return static_cast<int>(classes.size() - 1);
  }
};

TEST(HotSpotLayoutTest, Jdk17SizesFromGcClassHistogram) {
  Table t;
  int object = t.Add("java.lang.Object", -1, {}, true);
  int one_byte = t.Add("OneByte", object, {B});
  int byte_long = t.Add("ByteAndLong", object, {B, J});
  int int_ref = t.Add("IntAndRef", object, {I, O});
  int mixed = t.Add("Mixed", object, {Z, B, C, S, I, F, J, D, O});
  int parent = t.Add("Parent", object, {B});
  int child = t.Add("Child", parent, {B});
  int grand = t.Add("GrandChild", child, {J, I});
  int long_parent = t.Add("LongParent", object, {J});
  int int_child = t.Add("IntChild", long_parent, {I});
  int ref_parent = t.Add("RefParent", object, {O});
  int short_child = t.Add("ShortChild", ref_parent, {S, B});
  int empty = t.Add("Empty", object, {});
  int node = t.Add("Node", object, {O, I});
  LayoutExtras extras;
  // Compressed references (GC.class_histogram of HprofDumpApp on JDK 17, default flags).
  auto coops = HotSpotInstanceSizes(t.classes, Layout(4, 12, true), extras);
  EXPECT_EQ(coops[object], 16u);
  EXPECT_EQ(coops[one_byte], 16u);
  EXPECT_EQ(coops[byte_long], 24u);
  EXPECT_EQ(coops[int_ref], 24u);
  EXPECT_EQ(coops[mixed], 48u);
  EXPECT_EQ(coops[parent], 16u);
  EXPECT_EQ(coops[child], 16u);  // JDK 15+ puts Child's byte right after Parent's
  EXPECT_EQ(coops[grand], 32u);
  EXPECT_EQ(coops[int_child], 24u);
  EXPECT_EQ(coops[short_child], 24u);
  EXPECT_EQ(coops[empty], 16u);
  EXPECT_EQ(coops[node], 24u);
  // -XX:-UseCompressedOops (JDK 17 keeps compressed class pointers: 12-byte header, 8-byte
  // references).
  auto wide = HotSpotInstanceSizes(t.classes, Layout(8, 12, true), extras);
  EXPECT_EQ(wide[mixed], 56u);
  EXPECT_EQ(wide[child], 16u);
  EXPECT_EQ(wide[grand], 32u);
  EXPECT_EQ(wide[node], 24u);
  EXPECT_EQ(wide[int_ref], 24u);
}

TEST(HotSpotLayoutTest, ClassicLayoutRules) {
  Table t;
  int object = t.Add("java.lang.Object", -1, {}, true);
  int parent = t.Add("Parent", object, {B});
  int child = t.Add("Child", parent, {B});
  int byte_long = t.Add("ByteAndLong", object, {B, J});
  int int_long = t.Add("IntAndLong", object, {I, J});
  LayoutExtras extras;
  auto coops = HotSpotInstanceSizes(t.classes, Layout(4, 12, false), extras);
  // Parent: byte at 12 -> 13 -> 16. Child starts at Parent's end rounded to the oop size (16): 17
  // -> 24.
  EXPECT_EQ(coops[parent], 16u);
  EXPECT_EQ(coops[child], 24u);
  // The 4-byte gap after the 12-byte header takes an int before the long: 12 int, 16 long -> 24.
  EXPECT_EQ(coops[int_long], 24u);
  // ... or the byte: 12 byte, 16 long -> 24.
  EXPECT_EQ(coops[byte_long], 24u);
  auto wide = HotSpotInstanceSizes(t.classes, Layout(8, 16, false), extras);
  EXPECT_EQ(wide[object], 16u);
  EXPECT_EQ(wide[parent], 24u);  // 16 + 1 -> 24
  EXPECT_EQ(wide[child], 32u);   // starts at 24 (Parent's 17 rounded to 8): 25 -> 32
  EXPECT_EQ(wide[int_long], 32u);
}

TEST(HotSpotLayoutTest, ContendedThreadAndItsSubclasses) {
  // java.lang.Thread of JDK 17: 14 regular fields ending at 92, then @Contended("tlr") long+int+int
  // after 128 bytes of padding, and 128 bytes of tail padding: 368 (GC.class_histogram). A subclass
  // starts after another 128 bytes: Reference$ReferenceHandler (no fields) 368,
  // Finalizer$FinalizerThread (a boolean) 376.
  Table t;
  int object = t.Add("java.lang.Object", -1, {}, true);
  const std::vector<std::pair<FieldType, std::string_view>> declared = {
      {O, "name"},
      {I, "priority"},
      {J, "eetop"},
      {J, "stackSize"},
      {Z, "daemon"},
      {Z, "interrupted"},
      {Z, "stillborn"},
      {O, "target"},
      {O, "group"},
      {O, "contextClassLoader"},
      {J, "tid"},
      {I, "threadStatus"},
      {O, "inheritedAccessControlContext"},
      {O, "threadLocals"},
      {O, "inheritableThreadLocals"},
      {O, "parkBlocker"},
      {O, "blocker"},
      {O, "blockerLock"},
      {O, "uncaughtExceptionHandler"},
      {J, "threadLocalRandomSeed"},
      {I, "threadLocalRandomProbe"},
      {I, "threadLocalRandomSecondarySeed"}};
  std::vector<FieldType> fields;
  for (const auto& [type, name] : declared) fields.push_back(type);
  int thread = t.Add("java.lang.Thread", object, fields, true);
  t.classes[thread].field_names.clear();
  for (const auto& [type, name] : declared) t.classes[thread].field_names.push_back(name);
  int handler = t.Add("java.lang.ref.Reference$ReferenceHandler", thread, {}, true);
  int finalizer = t.Add("java.lang.ref.Finalizer$FinalizerThread", thread, {Z}, true);
  LayoutExtras extras;
  extras.knobs = 1u << kContendedThread;
  auto sizes = HotSpotInstanceSizes(t.classes, Layout(4, 12, true), extras);
  EXPECT_EQ(sizes[thread], 368u);
  EXPECT_EQ(sizes[handler], 368u);
  EXPECT_EQ(sizes[finalizer], 376u);
  extras.knobs = 0;
  auto plain = HotSpotInstanceSizes(t.classes, Layout(4, 12, true), extras);
  EXPECT_LT(plain[thread], sizes[thread]);
}

TEST(HotSpotLayoutTest, BrokenSuperChainsAreReported) {
  Table t;
  int a = t.Add("A", 1, {I});
  int b = t.Add("B", 0, {I});  // A <-> B cycle
  std::vector<uint32_t> broken;
  auto sizes = HotSpotInstanceSizes(t.classes, Layout(4, 12, true), LayoutExtras{}, &broken);
  EXPECT_EQ(sizes[a], 0u);
  EXPECT_EQ(sizes[b], 0u);
  EXPECT_EQ(broken.size(), 2u);
}

}  // namespace
}  // namespace heapwatch::hprof
