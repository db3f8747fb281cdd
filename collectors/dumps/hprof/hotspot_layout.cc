#include "collectors/dumps/hprof/hotspot_layout.h"

#include <algorithm>
#include <climits>
#include <list>
#include <string_view>

#include "analysis/heap_graph.h"

namespace heapwatch::hprof {
namespace {

using analysis::AlignUp;
using analysis::FieldType;
using analysis::ObjectLayout;

// A field as the layout engine places it.
struct LField {
  uint32_t size = 0;
  bool oop = false;
  int contended_group = -1;  // -1: not contended; 0: default group (own padding); >0: named group
};

// Fields HotSpot injects (javaClasses.hpp, JDK 17): 'P' = intptr (machine word), 'O' = oop, 'J' =
// long, 'I' = int, 'S' = short, 'B' = byte, 'Z' = boolean. Indexed by LayoutKnob.
struct KnobInfo {
  std::string_view klass;
  // Injected fields as "<code><name>" separated by spaces; empty for @Contended knobs. A field
  // whose name the class already declares (a later JDK made it a Java field) is not injected twice.
  std::string_view injected;
};
constexpr KnobInfo kKnobs[kKnobCount] = {
    {"java.lang.Class",
     "Pklass Parray_klass Ioop_size Istatic_oop_field_count Oprotection_domain Osigners "
     "Osource_file"},
    {"java.lang.ClassLoader", "Ploader_data"},
    {"java.lang.String", "Bflags"},
    {"java.lang.invoke.ResolvedMethodName", "Ovmholder Pvmtarget"},
    {"java.lang.invoke.MemberName", "Pvmindex"},
    {"java.lang.invoke.MethodHandleNatives$CallSiteContext", "Pvmdependencies Jlast_cleanup"},
    {"java.lang.StackFrameInfo", "Sversion"},
    {"java.lang.Module", "Pmodule_entry"},
    {"java.lang.InternalError", "Zduring_unsafe_access"},
    {"java.lang.Thread",
     "Pjvmti_thread_state Ijvmti_VTMS_transition_disable_count Zjvmti_is_in_VTMS_transition "
     "Sjfr_epoch"},
    {"java.lang.invoke.CallSite", "Pvmdependencies Jlast_cleanup"},
    {"java.lang.Thread", ""},
    {"java.util.concurrent.ConcurrentHashMap$CounterCell", ""},
    {"java.util.concurrent.atomic.Striped64$Cell", ""},
    {"java.util.concurrent.Exchanger$Node", ""},
};

uint32_t InjectedSize(char code, const ObjectLayout& l) {
  switch (code) {
    case 'P':
      return l.word_size;
    case 'O':
      return l.reference_size;
    case 'J':
      return 8;
    case 'I':
      return 4;
    case 'S':
      return 2;
    default:
      return 1;
  }
}

bool IsContendedClass(const LayoutClass& c, const LayoutExtras& extras) {
  if (!c.boot) return false;
  for (LayoutKnob k : {kContendedCounterCell, kContendedStriped64Cell, kContendedExchangerNode}) {
    if (extras.on(k) && c.name == kKnobs[k].klass) return true;
  }
  return false;
}

// The instance fields of one class (declared + injected), with @Contended groups.
std::vector<LField> OwnFields(const LayoutClass& c, const ObjectLayout& l,
                              const LayoutExtras& extras) {
  std::vector<LField> out;
  out.reserve(c.fields.size() + 2);
  for (size_t i = 0; i < c.fields.size(); ++i) {
    FieldType t = c.fields[i];
    LField f{analysis::FieldTypeSize(t, l.reference_size), t == FieldType::kObject, -1};
    if (c.boot && extras.on(kContendedThread) && c.name == "java.lang.Thread" &&
        i < c.field_names.size() && c.field_names[i].starts_with("threadLocalRandom")) {
      f.contended_group = 1;  // @Contended("tlr")
    }
    out.push_back(f);
  }
  if (c.boot) {
    for (uint32_t k = 0; k < kKnobCount; ++k) {
      if (kKnobs[k].injected.empty() || !extras.on(static_cast<LayoutKnob>(k)) ||
          kKnobs[k].klass != c.name)
        continue;
      std::string_view spec = kKnobs[k].injected;
      while (!spec.empty()) {
        size_t sp = spec.find(' ');
        std::string_view item = spec.substr(0, sp);
        spec = sp == std::string_view::npos ? std::string_view() : spec.substr(sp + 1);
        std::string_view name = item.substr(1);
        if (std::find(c.field_names.begin(), c.field_names.end(), name) != c.field_names.end())
          continue;
        out.push_back({InjectedSize(item[0], l), item[0] == 'O', -1});
      }
    }
  }
  return out;
}

// Allocation order of the legacy layout: longs/doubles, ints/floats, shorts/chars, bytes/booleans,
// oops.
enum AllocType { kDouble = 0, kWord = 1, kShort = 2, kByte = 3, kOop = 4 };
AllocType TypeOf(const LField& f) {
  if (f.oop) return kOop;
  switch (f.size) {
    case 8:
      return kDouble;
    case 4:
      return kWord;
    case 2:
      return kShort;
    default:
      return kByte;
  }
}

bool PredefinedOffsets(std::string_view name) {
  static constexpr std::string_view kNames[] = {"java.lang.AssertionStatusDirectives",
                                                "java.lang.Class",
                                                "java.lang.ClassLoader",
                                                "java.lang.ref.Reference",
                                                "java.lang.ref.SoftReference",
                                                "java.lang.StackTraceElement",
                                                "java.lang.String",
                                                "java.lang.Throwable",
                                                "java.lang.Boolean",
                                                "java.lang.Character",
                                                "java.lang.Float",
                                                "java.lang.Double",
                                                "java.lang.Byte",
                                                "java.lang.Short",
                                                "java.lang.Integer",
                                                "java.lang.Long"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

// Legacy layout (JDK 6..14 classFileParser::layout_fields, FieldsAllocationStyle=1,
// CompactFields=true). `start` is where this class's fields begin (header, or the super's end
// aligned to the oop size). Returns the unaligned end ("next_nonstatic_padded_offset").
uint32_t LegacyLayout(const LayoutClass& c, const std::vector<LField>& fields, uint32_t start,
                      const ObjectLayout& l, const LayoutExtras& extras, bool contended_class) {
  const uint32_t oop = l.reference_size;
  uint32_t count[5] = {0, 0, 0, 0, 0};
  std::vector<const LField*> contended;
  for (const LField& f : fields) {
    if (f.contended_group >= 0) {
      contended.push_back(&f);
    } else {
      ++count[TypeOf(f)];
    }
  }
  bool compact = true;
  int style = 1;
  if (c.boot && PredefinedOffsets(c.name)) {
    style = 0;
    compact = false;
  }
  uint32_t next = start;
  if (contended_class) next += extras.contended_padding;
  uint32_t next_oop = 0;
  uint32_t next_double = next;
  if (style == 0) {
    next_oop = next;
    next_double = next_oop + count[kOop] * oop;
  }
  if (count[kDouble] > 0) {
    uint32_t offset = next_double;
    next_double = static_cast<uint32_t>(AlignUp(offset, 8));
    if (compact && offset != next_double) {
      uint32_t length = next_double - offset;
      if (count[kWord] > 0) {
        --count[kWord];
        length -= 4;
        offset += 4;
      }
      while (length >= 2 && count[kShort] > 0) {
        --count[kShort];
        length -= 2;
        offset += 2;
      }
      while (length > 0 && count[kByte] > 0) {
        --count[kByte];
        length -= 1;
        offset += 1;
      }
      if (length >= oop && count[kOop] > 0 && style != 0) {
        --count[kOop];
        length -= oop;
        offset += oop;
      }
    }
  }
  uint32_t next_word = next_double + count[kDouble] * 8;
  uint32_t next_short = next_word + count[kWord] * 4;
  uint32_t next_byte = next_short + count[kShort] * 2;
  uint32_t padded = next_byte + count[kByte];
  if (style == 1) {
    next_oop = padded;
    if (count[kOop] > 0) next_oop = static_cast<uint32_t>(AlignUp(next_oop, oop));
    padded = next_oop + count[kOop] * oop;
  }
  if (!contended.empty()) {
    padded += extras.contended_padding;
    std::vector<int> groups;
    for (const LField* f : contended) {
      if (std::find(groups.begin(), groups.end(), f->contended_group) == groups.end()) {
        groups.push_back(f->contended_group);
      }
    }
    for (int g : groups) {
      for (const LField* f : contended) {
        if (f->contended_group != g) continue;
        padded = static_cast<uint32_t>(AlignUp(padded, f->size)) + f->size;
        if (g == 0) padded += extras.contended_padding;
      }
      if (g != 0) padded += extras.contended_padding;
    }
  }
  if (contended_class) padded += extras.contended_padding;
  return padded;
}

// JDK 15+ layout (fieldLayoutBuilder.cpp). Blocks cover [0, INT_MAX): the header (reserved), the
// fields of the superclasses at their offsets, and empty blocks in between and at the end.
struct Block {
  uint32_t offset;
  uint32_t size;
  bool empty;
};

class NewLayout {
 public:
  // Reconstructs the layout of a superclass from the (offset, size) of all its fields.
  // With `contended_super` (the superclass or one of its ancestors has @Contended fields or is
  // @Contended), the holes become padding and a padding block of `padding` bytes follows the last
  // field (fill_holes).
  NewLayout(uint32_t header, const std::vector<std::pair<uint32_t, uint32_t>>& super_fields,
            bool contended_super, uint32_t padding) {
    blocks_.push_back({0, header, false});
    for (const auto& [off, size] : super_fields) {
      uint32_t end = blocks_.back().offset + blocks_.back().size;
      if (off > end) blocks_.push_back({end, off - end, !contended_super});
      blocks_.push_back({off, size, false});
    }
    uint32_t end = blocks_.back().offset + blocks_.back().size;
    if (contended_super && padding > 0) {
      blocks_.push_back({end, padding, false});
      end += padding;
    }
    blocks_.push_back({end, UINT32_MAX - end, true});
  }

  // FieldLayout::add: each field goes into the smallest empty block it fits (ties: the one nearest
  // the end), searching every block but the last; if none fits, or `append_only` (the start block
  // is the last block, as for @Contended classes and groups), it is appended at the end.
  void Add(const std::vector<uint32_t>& sizes, bool append_only,
           std::vector<std::pair<uint32_t, uint32_t>>* placed) {
    bool last_ok = false;
    uint32_t last_size = 0;
    for (uint32_t size : sizes) {
      size_t last = blocks_.size() - 1;
      size_t candidate = last;
      if (!append_only && !(size == last_size && !last_ok)) {
        last_size = size;
        last_ok = false;
        size_t best = SIZE_MAX;
        for (size_t i = last; i-- > 1;) {
          const Block& b = blocks_[i];
          if (b.empty && Fits(b, size) && (best == SIZE_MAX || b.size < blocks_[best].size))
            best = i;
        }
        if (best != SIZE_MAX) {
          candidate = best;
          last_ok = true;
        }
      }
      placed->push_back({Insert(candidate, size), size});
    }
  }

  uint32_t end() const { return blocks_.back().offset; }

  // Appends a padding block of `size` bytes at the end.
  void Pad(uint32_t size) {
    Block& last = blocks_.back();
    Block pad{last.offset, size, false};
    last.offset += size;
    last.size -= size;
    blocks_.insert(blocks_.end() - 1, pad);
  }

 private:
  static bool Fits(const Block& b, uint32_t size) {
    uint32_t adjust = b.offset % size == 0 ? 0 : size - b.offset % size;
    return b.size >= size + adjust;
  }

  // Places a field of `size` bytes (alignment = size) at the start of empty block `i`; returns its
  // offset.
  uint32_t Insert(size_t i, uint32_t size) {
    if (blocks_[i].offset % size != 0) {
      uint32_t adjust = size - blocks_[i].offset % size;
      Block pad{blocks_[i].offset, adjust, true};
      blocks_[i].offset += adjust;
      blocks_[i].size -= adjust;
      blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(i), pad);
      ++i;
    }
    Block field{blocks_[i].offset, size, false};
    blocks_[i].offset += size;
    blocks_[i].size -= size;
    blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(i), field);
    if (blocks_[i + 1].size == 0)
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i + 1));
    return field.offset;
  }

  std::vector<Block> blocks_;
};

}  // namespace

std::string_view LayoutKnobClass(LayoutKnob knob) { return kKnobs[knob].klass; }

std::string LayoutKnobName(LayoutKnob knob) {
  return std::string(kKnobs[knob].injected.empty() ? "contended " : "injected ") +
         std::string(kKnobs[knob].klass);
}

std::vector<uint32_t> HotSpotInstanceSizes(std::span<const LayoutClass> classes,
                                           const ObjectLayout& l, const LayoutExtras& extras,
                                           std::vector<uint32_t>* broken) {
  const size_t n = classes.size();
  std::vector<uint32_t> sizes(n, 0);
  // Per class: 0 = not done, 1 = in progress, 2 = done, 3 = broken.
  std::vector<uint8_t> state(n, 0);
  std::vector<uint32_t> legacy_end(n, 0);  // unaligned end of the fields
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> placed(
      n);                                // JDK 15+: all fields incl. supers
  std::vector<uint8_t> contended(n, 0);  // the class or an ancestor has @Contended annotations
  std::vector<size_t> chain;
  for (size_t root = 0; root < n; ++root) {
    if (state[root] != 0) continue;
    // Collect the not-yet-done ancestors, then lay them out top-down.
    chain.clear();
    bool bad = false;
    for (int32_t k = static_cast<int32_t>(root); k >= 0; k = classes[k].super) {
      if (static_cast<size_t>(k) >= n || state[k] == 1) {
        bad = true;
        break;
      }
      if (state[k] == 2) break;
      if (state[k] == 3) {
        bad = true;
        break;
      }
      state[k] = 1;
      chain.push_back(static_cast<size_t>(k));
    }
    if (bad) {
      for (size_t k : chain) {
        state[k] = 3;
        if (broken != nullptr) broken->push_back(static_cast<uint32_t>(k));
      }
      continue;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      size_t c = *it;
      const LayoutClass& lc = classes[c];
      state[c] = 2;
      if (lc.is_array) continue;
      std::vector<LField> own = OwnFields(lc, l, extras);
      bool contended_class = IsContendedClass(lc, extras);
      int32_t s = lc.super;
      if (!l.jdk15_field_layout) {
        uint32_t start = s < 0 ? l.object_header
                               : static_cast<uint32_t>(AlignUp(legacy_end[s], l.reference_size));
        legacy_end[c] = LegacyLayout(lc, own, start, l, extras, contended_class);
        sizes[c] = static_cast<uint32_t>(AlignUp(AlignUp(legacy_end[c], l.word_size), l.alignment));
        continue;
      }
      const bool contended_super = s >= 0 && contended[s];
      NewLayout layout(l.object_header,
                       s < 0 ? std::vector<std::pair<uint32_t, uint32_t>>{} : placed[s],
                       contended_super, extras.contended_padding);
      // Fields of a subclass of a @Contended class are appended after the padding (start = last
      // block).
      const bool append_only = contended_class || (contended_super && !placed[s].empty());
      std::vector<std::pair<uint32_t, uint32_t>> mine =
          s < 0 ? std::vector<std::pair<uint32_t, uint32_t>>{} : placed[s];
      std::vector<std::pair<uint32_t, uint32_t>> added;
      bool tail_padding = false;
      if (contended_class) {
        layout.Pad(extras.contended_padding);
        tail_padding = true;
      }
      std::vector<uint32_t> prims, oops;
      std::vector<int> groups;
      for (const LField& f : own) {
        if (f.contended_group < 0) {
          (f.oop ? oops : prims).push_back(f.size);
        } else if (std::find(groups.begin(), groups.end(), f.contended_group) == groups.end()) {
          groups.push_back(f.contended_group);
        }
      }
      std::stable_sort(prims.begin(), prims.end(), std::greater<uint32_t>());
      layout.Add(prims, append_only, &added);
      layout.Add(oops, append_only, &added);
      // @Contended groups: each after a padding block, appended at the end; every field of the
      // default group (0) is a group of its own.
      for (int g : groups) {
        std::vector<uint32_t> gp, go;
        for (const LField& f : own) {
          if (f.contended_group == g) (f.oop ? go : gp).push_back(f.size);
        }
        std::stable_sort(gp.begin(), gp.end(), std::greater<uint32_t>());
        if (g == 0) {
          for (const std::vector<uint32_t>* list : {&gp, &go}) {
            for (uint32_t size : *list) {
              layout.Pad(extras.contended_padding);
              layout.Add({size}, true, &added);
            }
          }
        } else {
          layout.Pad(extras.contended_padding);
          layout.Add(gp, true, &added);
          layout.Add(go, true, &added);
        }
        tail_padding = true;
      }
      if (tail_padding) layout.Pad(extras.contended_padding);
      contended[c] = contended_super || contended_class || !groups.empty();
      mine.insert(mine.end(), added.begin(), added.end());
      std::sort(mine.begin(), mine.end());
      placed[c] = std::move(mine);
      sizes[c] = static_cast<uint32_t>(AlignUp(AlignUp(layout.end(), 8), l.alignment));
    }
  }
  return sizes;
}

std::vector<uint32_t> HotSpotMirrorSizes(std::span<const LayoutClass> classes,
                                         const ObjectLayout& l,
                                         std::span<const uint32_t> instance_sizes,
                                         int32_t java_lang_class) {
  std::vector<uint32_t> out(classes.size(), 0);
  uint32_t base = java_lang_class >= 0 ? instance_sizes[java_lang_class] : l.object_header;
  for (size_t c = 0; c < classes.size(); ++c) {
    // Static fields live in the mirror after the java.lang.Class fields: oops first, then by size.
    uint64_t end = base;
    uint32_t oops = 0;
    uint32_t by_size[9] = {0};
    for (FieldType t : classes[c].statics) {
      if (t == FieldType::kObject) {
        ++oops;
      } else {
        ++by_size[analysis::FieldTypeSize(t, l.reference_size)];
      }
    }
    end += uint64_t{oops} * l.reference_size;
    if (by_size[8] > 0) end = AlignUp(end, 8);
    end += by_size[8] * 8ull + by_size[4] * 4ull + by_size[2] * 2ull + by_size[1];
    out[c] = static_cast<uint32_t>(AlignUp(AlignUp(end, l.word_size), l.alignment));
  }
  return out;
}

std::vector<ObjectLayout> CandidateLayouts(uint32_t id_size) {
  std::vector<ObjectLayout> out;
  auto make = [](uint32_t ref, uint32_t header, uint32_t word, bool jdk15, bool unaligned) {
    ObjectLayout l;
    l.reference_size = ref;
    l.object_header = header;
    l.array_length_offset = header;
    l.word_size = word;
    l.alignment = 8;
    l.jdk15_field_layout = jdk15;
    l.unaligned_array_base = unaligned;
    return l;
  };
  if (id_size == 4) {
    out.push_back(make(4, 8, 4, false, false));  // 32-bit VM, JDK <= 14
    out.push_back(make(4, 8, 4, true, false));   // 32-bit VM, JDK 15+
    return out;
  }
  out.push_back(make(4, 12, 8, true, false));   // compressed oops + class pointers, JDK 15..21
  out.push_back(make(4, 12, 8, false, false));  // compressed oops + class pointers, JDK 6u23..14
  out.push_back(make(8, 16, 8, false, false));  // no compressed oops, JDK <= 14
  out.push_back(
      make(8, 12, 8, true, false));  // -XX:-UseCompressedOops, compressed class pointers, JDK 15+
  out.push_back(make(8, 16, 8, true, false));  // no compressed oops nor class pointers, JDK 15+
  out.push_back(make(4, 12, 8, true, true));   // compressed, JDK 22+ (unaligned array base)
  out.push_back(make(8, 12, 8, true, true));   // -XX:-UseCompressedOops, JDK 22+
  return out;
}

}  // namespace heapwatch::hprof
