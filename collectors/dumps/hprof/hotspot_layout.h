// HotSpot object layout: the shallow size of instances of every class of a dump, computed the way
// HotSpot lays out fields, and the inference of the layout parameters (compressed references,
// header size, field packing generation, alignment) from the dump's own object addresses. Internal
// to the HPROF reader (collectors/dumps/hprof); docs/size-model.md explains the model and its
// sources.
//
// Sources: OpenJDK classFileParser.cpp `layout_fields` (JDK 6..14, "legacy"),
// fieldLayoutBuilder.cpp (JDK 15+, JDK-8237767), javaClasses.hpp (injected fields), arrayOop.hpp
// (array headers); JOL's HotSpotLayouter (the legacy algorithm written out); Eclipse MAT's
// HprofParserHandlerImpl (alignment by address GCD, compressed-reference detection from address
// gaps).
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HOTSPOT_LAYOUT_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HOTSPOT_LAYOUT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"

namespace heapwatch::hprof {

// One class as the layout engine sees it.
struct LayoutClass {
  std::string_view name;  // source form, e.g. "java.lang.Thread"
  int32_t super = -1;     // index of the superclass in the same table, -1 for none
  std::vector<analysis::FieldType> fields;    // declared instance fields, dump order
  std::vector<std::string_view> field_names;  // their names, same order
  std::vector<analysis::FieldType> statics;   // declared static fields, dump order
  bool boot = false;                          // defined by the boot class loader (loader id 0)
  bool is_array = false;                      // array classes take no part in field layout
};

// HotSpot-internal layout facts that the dump does not record, each a "knob" that is on or off for
// a dump: fields the VM injects into JDK classes (javaClasses.hpp; the set changed between JDK
// releases) and
// @Contended padding of JDK classes (JDK 8+). Each knob applies to one boot class and its
// subclasses; the reader turns each one on or off by the address evidence of the affected objects
// (see docs/size-model.md).
enum LayoutKnob : uint32_t {
  kInjectedClass = 0,  // java.lang.Class: klass, array_klass, oop_size, static_oop_field_count, ...
  kInjectedClassLoader,         // java.lang.ClassLoader.loader_data (JDK 8+)
  kInjectedString,              // java.lang.String.flags (JDK 17+)
  kInjectedResolvedMethodName,  // java.lang.invoke.ResolvedMethodName: vmholder, vmtarget (JDK 11+)
  kInjectedMemberName,          // java.lang.invoke.MemberName.vmindex
  kInjectedCallSiteContext,     // MethodHandleNatives$CallSiteContext: vmdependencies, last_cleanup
  kInjectedStackFrameInfo,      // java.lang.StackFrameInfo.version
  kInjectedModule,              // java.lang.Module.module_entry (JDK 9+)
  kInjectedInternalError,       // java.lang.InternalError.during_unsafe_access
  kInjectedThread,              // java.lang.Thread: jvmti_thread_state, ... (JDK 21+)
  kInjectedCallSite,        // java.lang.invoke.CallSite: vmdependencies, last_cleanup (later JDKs)
  kContendedThread,         // java.lang.Thread threadLocalRandom* fields, @Contended("tlr")
  kContendedCounterCell,    // java.util.concurrent.ConcurrentHashMap$CounterCell, @Contended class
  kContendedStriped64Cell,  // java.util.concurrent.atomic.Striped64$Cell, @Contended class
  kContendedExchangerNode,  // java.util.concurrent.Exchanger$Node, @Contended class
  kKnobCount,
};
// The boot class a knob applies to.
std::string_view LayoutKnobClass(LayoutKnob knob);
// A short name for messages: "injected java.lang.ClassLoader", "contended java.lang.Thread".
std::string LayoutKnobName(LayoutKnob knob);

struct LayoutExtras {
  uint32_t knobs = 0;                // bit i = knob i on
  uint32_t contended_padding = 128;  // -XX:ContendedPaddingWidth
  bool on(LayoutKnob k) const { return (knobs >> k) & 1; }
};

// Shallow size in bytes of one instance of each class (0 for array classes and for classes whose
// super chain is broken or cyclic, which are also listed in `broken`).
std::vector<uint32_t> HotSpotInstanceSizes(std::span<const LayoutClass> classes,
                                           const analysis::ObjectLayout& layout,
                                           const LayoutExtras& extras,
                                           std::vector<uint32_t>* broken = nullptr);

// Shallow size in bytes of the class object (java.lang.Class mirror) of each class: the
// java.lang.Class instance size plus the static fields, which HotSpot (JDK 7+) stores in the
// mirror. `java_lang_class` is the index of java.lang.Class (-1 when absent).
std::vector<uint32_t> HotSpotMirrorSizes(std::span<const LayoutClass> classes,
                                         const analysis::ObjectLayout& layout,
                                         std::span<const uint32_t> instance_sizes,
                                         int32_t java_lang_class);

// The candidate layouts for a dump with `id_size`-byte identifiers, most common first.
std::vector<analysis::ObjectLayout> CandidateLayouts(uint32_t id_size);

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HOTSPOT_LAYOUT_H_
