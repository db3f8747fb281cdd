// The size model of an HPROF dump: the shallow size of one instance of every class and of every
// class object, by the model ReadOptions asks for (docs/size-model.md): Android (perflib: the CLASS
// DUMP's instance size), NetBeans (field data + 2 ids), or HotSpot, whose object layout the dump
// does not record and which is therefore inferred: the layout generation (reference size, header,
// field packing, array base) and the layout knobs (injected fields, @Contended padding) that make
// the most sampled objects end exactly where the next object starts, and none overlap it.
// Internal to the HPROF reader; the layout engine is hotspot_layout.h.
#include "collectors/dumps/hprof/hprof_size_model.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collectors/dumps/hprof/hotspot_layout.h"

namespace heapwatch::hprof {
namespace {

using analysis::BulkHeapGraphBuilder;
using analysis::ClassId;
using analysis::ClassInfo;
using analysis::FieldInfo;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using analysis::SizeModel;

std::vector<LayoutClass> LayoutTable(std::span<const ClassInfo> classes,
                                     std::span<const uint8_t> boot) {
  std::vector<LayoutClass> out(classes.size());
  for (size_t c = 0; c < classes.size(); ++c) {
    const ClassInfo& info = classes[c];
    LayoutClass& l = out[c];
    l.name = info.name;
    l.super = info.super_class.valid() ? static_cast<int32_t>(info.super_class.value) : -1;
    for (const FieldInfo& f : info.instance_fields) {
      l.fields.push_back(f.type);
      l.field_names.push_back(f.name);
    }
    for (const FieldInfo& f : info.static_fields) {
      // HotSpot writes pseudo statics ("<resolved_references>", "<init_lock>") that are not in the
      // mirror.
      if (!f.name.starts_with("<")) l.statics.push_back(f.type);
    }
    l.boot = !info.synthetic && c < boot.size() && boot[c] != 0;
    l.is_array = info.instance_kind != ObjectKind::kInstance;
  }
  return out;
}

// Address evidence: for a sample of the objects of each class, the distance to the next object (and
// the array length). With a compacted heap (a heap dump is taken after a full GC, and the JVM
// allocates contiguously) the distance equals the object's size for most objects.
struct GapSamples {
  static constexpr uint32_t kPerClass = 256;
  std::vector<std::vector<analysis::AddressGap>> by_class;  // by ClassId
  uint64_t total = 0;
};

GapSamples CollectGaps(const BulkHeapGraphBuilder& builder) {
  GapSamples out;
  out.by_class = builder.SampleAddressGaps(GapSamples::kPerClass);
  for (const auto& samples : out.by_class) out.total += samples.size();
  return out;
}

struct Score {
  uint64_t exact = 0;
  uint64_t violations = 0;
  int64_t value() const {
    return static_cast<int64_t>(exact) - 4 * static_cast<int64_t>(violations);
  }
};

void ScoreClass(std::span<const ClassInfo> classes, const analysis::DumpInfo& info,
                const GapSamples& gaps, uint32_t c, uint32_t size, Score* score) {
  const ClassInfo& ci = classes[c];
  if (ci.synthetic && ci.instance_kind == ObjectKind::kInstance) return;
  for (const auto& [len, gap] : gaps.by_class[c]) {
    uint64_t s = ci.instance_kind == ObjectKind::kInstance
                     ? size
                     : analysis::ArrayShallowSize(info, ci.element_type, len);
    if (s > gap) ++score->violations;
    if (s == gap) ++score->exact;
  }
}

Score ScoreAll(std::span<const ClassInfo> classes, const analysis::ObjectLayout& layout,
               const GapSamples& gaps, const std::vector<uint32_t>& sizes) {
  analysis::DumpInfo info;
  info.size_model = SizeModel::kHotSpot;
  info.layout = layout;
  Score score;
  for (uint32_t c = 0; c < classes.size(); ++c)
    ScoreClass(classes, info, gaps, c, sizes[c], &score);
  return score;
}

// The knobs a JVM of that layout generation most likely has, used when the dump holds no evidence.
uint32_t DefaultKnobs(const analysis::ObjectLayout& l) {
  uint32_t k = (1u << kContendedThread) | (1u << kContendedCounterCell) |
               (1u << kContendedStriped64Cell) | (1u << kContendedExchangerNode) |
               (1u << kInjectedClassLoader) | (1u << kInjectedMemberName) | (1u << kInjectedClass);
  if (l.jdk15_field_layout) {
    k |= (1u << kInjectedString) | (1u << kInjectedResolvedMethodName) |
         (1u << kInjectedCallSiteContext) | (1u << kInjectedStackFrameInfo) |
         (1u << kInjectedModule) | (1u << kInjectedInternalError);
  }
  return k;
}

uint32_t AddressAlignment(const BulkHeapGraphBuilder& builder) {
  // The GCD of address differences (as Eclipse MAT's calculateAlignment), clamped to [8, 256].
  uint64_t g = 0;
  const uint32_t n = builder.object_count();
  for (uint32_t i = 1; i < n && (g == 0 || g > 8); ++i) {
    g = std::gcd(g, builder.object_id(ObjectIndex{i}) - builder.object_id(ObjectIndex{i - 1}));
  }
  if (g < 8) return 8;
  return static_cast<uint32_t>(std::min<uint64_t>(g, 256) & ~7ull);
}

}  // namespace

void ComputeSizes(const SizeModelInput& in, BulkHeapGraphBuilder& builder) {
  SizeModel model = in.requested;
  if (model == SizeModel::kAuto)
    model = in.hprof_minor == 3 ? SizeModel::kAndroid : SizeModel::kHotSpot;
  builder.info().size_model = model;
  const uint32_t id_size = in.id_size;
  std::span<const ClassInfo> classes = builder.classes();
  const ClassId java_lang_class = builder.java_lang_class();
  if (model == SizeModel::kAndroid || model == SizeModel::kNetBeans) {
    uint32_t class_base = 0;
    if (java_lang_class.valid()) {
      class_base = model == SizeModel::kAndroid
                       ? classes[java_lang_class.value].declared_instance_size
                       : in.field_bytes[java_lang_class.value] + 2 * id_size;
    }
    for (size_t c = 0; c < classes.size(); ++c) {
      const ClassInfo& info = classes[c];
      uint32_t instance_size = 0;
      uint32_t class_object_size = 0;
      if (info.instance_kind == ObjectKind::kInstance) {
        instance_size = model == SizeModel::kAndroid ? info.declared_instance_size
                                                     : in.field_bytes[c] + 2 * id_size;
      }
      if (model == SizeModel::kAndroid) {
        // perflib: java.lang.Class instance size + the static fields' sizes.
        uint32_t statics = 0;
        for (const FieldInfo& f : info.static_fields)
          statics += analysis::FieldTypeSize(f.type, id_size);
        class_object_size = class_base + statics;
      } else {
        class_object_size = 0;  // NetBeans' heap summary counts instances and arrays only
      }
      builder.SetShallowSizes(ClassId{static_cast<uint32_t>(c)}, instance_size, class_object_size);
    }
    builder.info().size_model_notes =
        model == SizeModel::kAndroid
            ? "Android (perflib): CLASS DUMP instance size; arrays length x element size"
            : "NetBeans: field data + 2 ids; arrays 2 ids + 8 + length x element size";
    return;
  }

  std::vector<LayoutClass> table = LayoutTable(classes, in.boot);
  GapSamples gaps = CollectGaps(builder);
  const uint32_t alignment = AddressAlignment(builder);
  // 1. The layout generation: references, header, field packing, array base.
  std::string candidate_notes;
  analysis::ObjectLayout best;
  std::vector<uint32_t> best_sizes;
  Score best_score;
  bool have = false;
  // Classes whose size depends on a knob do not vote here (the knobs are settled in step 2).
  for (analysis::ObjectLayout cand : CandidateLayouts(id_size)) {
    cand.alignment = alignment;
    LayoutExtras all_on, all_off;
    all_on.knobs = (1u << kKnobCount) - 1;
    all_off.knobs = 0;
    std::vector<uint32_t> sizes = HotSpotInstanceSizes(table, cand, all_off);
    std::vector<uint32_t> with_knobs = HotSpotInstanceSizes(table, cand, all_on);
    analysis::DumpInfo info;
    info.size_model = SizeModel::kHotSpot;
    info.layout = cand;
    Score score;
    for (uint32_t c = 0; c < classes.size(); ++c) {
      if (sizes[c] == with_knobs[c]) ScoreClass(classes, info, gaps, c, sizes[c], &score);
    }
    absl::StrAppendFormat(&candidate_notes, "%s%d/%d/%s%s: %d/%d",
                          candidate_notes.empty() ? "" : ", ", cand.reference_size,
                          cand.object_header, cand.jdk15_field_layout ? "jdk15" : "classic",
                          cand.unaligned_array_base ? "/jdk22" : "", score.exact, score.violations);
    // Ties (no object tells the two field layouts apart) go to the classic layout for 1.0.1 files
    // (JDK <= 8).
    if (!have || score.value() > best_score.value() ||
        (score.value() == best_score.value() && !cand.jdk15_field_layout && in.hprof_minor == 1)) {
      best = cand;
      best_score = score;
      have = true;
    }
  }
  // 2. The knobs, one at a time, by the evidence of the classes whose size they change.
  LayoutExtras extras;
  extras.knobs = DefaultKnobs(best);
  best_sizes = HotSpotInstanceSizes(table, best, extras);
  std::string knob_notes;
  {
    analysis::DumpInfo info;
    info.size_model = SizeModel::kHotSpot;
    info.layout = best;
    // Two rounds, so that knobs acting on the same class (java.lang.Thread) settle.
    std::vector<std::string> notes(kKnobCount);
    for (int round = 0; round < 2; ++round) {
      for (uint32_t k = 0; k < kKnobCount; ++k) {
        LayoutExtras flipped = extras;
        flipped.knobs ^= 1u << k;
        std::vector<uint32_t> other = HotSpotInstanceSizes(table, best, flipped);
        Score now, then;
        for (uint32_t c = 0; c < classes.size(); ++c) {
          if (other[c] == best_sizes[c]) continue;
          ScoreClass(classes, info, gaps, c, best_sizes[c], &now);
          ScoreClass(classes, info, gaps, c, other[c], &then);
        }
        bool flip = then.value() > now.value();
        if (flip) {
          extras = flipped;
          best_sizes = std::move(other);
        }
        const Score& current = flip ? then : now;
        const Score& other_score = flip ? now : then;
        const bool is_on = extras.on(static_cast<LayoutKnob>(k));
        const Score& on = is_on ? current : other_score;
        const Score& off = is_on ? other_score : current;
        notes[k].clear();
        if (now.exact + now.violations + then.exact + then.violations > 0) {
          notes[k] =
              absl::StrFormat("; %s %s (exact/overlapping objects: on %d/%d, off %d/%d)",
                              LayoutKnobName(static_cast<LayoutKnob>(k)), is_on ? "on" : "off",
                              on.exact, on.violations, off.exact, off.violations);
        }
      }
    }
    for (const std::string& n : notes) knob_notes += n;
  }
  // 3. Addresses are evidence only if objects are packed: most sizes match the distance to the next
  // object and (almost) none overlaps it.
  Score checked = ScoreAll(classes, best, gaps, best_sizes);
  best.inferred =
      gaps.total > 0 && checked.exact * 4 >= gaps.total && checked.violations * 100 <= gaps.total;
  if (!best.inferred) {
    // No usable addresses (e.g. the hprof agent's serial ids): a 32-bit VM for 4-byte ids, else
    // 64-bit without compressed oops, classic field layout.
    best = CandidateLayouts(id_size)[id_size == 4 ? 0 : 2];
    best.alignment = 8;
    extras.knobs = DefaultKnobs(best);
    best_sizes = HotSpotInstanceSizes(table, best, extras);
    knob_notes.clear();
    builder.Warn(std::string("object addresses do not reveal the VM's object layout; assuming ") +
                 (id_size == 4 ? "a 32-bit VM" : "a 64-bit VM without compressed oops"));
  }
  Score final_score = ScoreAll(classes, best, gaps, best_sizes);
  best.gap_exact = final_score.exact;
  best.gap_violations = final_score.violations;
  builder.info().layout = best;
  builder.info().size_model_notes = absl::StrFormat(
      "HotSpot: %d-byte references, %d-byte object header, %s field layout, %d-byte alignment, %s; "
      "address "
      "evidence: %d of %d sampled objects end exactly at the next object, %d overlap it%s",
      best.reference_size, best.object_header, best.jdk15_field_layout ? "JDK 15+" : "JDK 6-14",
      best.alignment,
      best.inferred ? "inferred from object addresses" : "assumed (addresses are not usable)",
      final_score.exact, gaps.total, final_score.violations, knob_notes);
  builder.info().size_model_notes +=
      "; candidates (references/header/layout: exact/overlapping): " + candidate_notes;
  std::vector<uint32_t> mirrors = HotSpotMirrorSizes(
      table, best, best_sizes,
      java_lang_class.valid() ? static_cast<int32_t>(java_lang_class.value) : -1);
  for (size_t c = 0; c < classes.size(); ++c) {
    builder.SetShallowSizes(ClassId{static_cast<uint32_t>(c)}, best_sizes[c], mirrors[c]);
  }
}

}  // namespace heapwatch::hprof
