#include "analysis/thread_names.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace heapwatch::analysis {
namespace {

bool Unsafe(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) ||       // C0, DEL, C1
         (cp >= 0x202A && cp <= 0x202E) ||                // bidi embeddings and overrides
         (cp >= 0x2066 && cp <= 0x2069) ||                // bidi isolates
         cp == 0x200E || cp == 0x200F || cp == 0x061C ||  // bidi marks
         cp == 0x2028 || cp == 0x2029;                    // line and paragraph separators
}

}  // namespace

std::string_view ThreadNamePrivacyName(ThreadNamePrivacy privacy) {
  switch (privacy) {
    case ThreadNamePrivacy::kMasked:
      return "masked";
    case ThreadNamePrivacy::kFull:
      return "full";
    case ThreadNamePrivacy::kOff:
      return "off";
  }
  return "masked";
}

StatusOr<ThreadNamePrivacy> ParseThreadNamePrivacy(std::string_view name) {
  for (ThreadNamePrivacy p :
       {ThreadNamePrivacy::kMasked, ThreadNamePrivacy::kFull, ThreadNamePrivacy::kOff}) {
    if (name == ThreadNamePrivacyName(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("thread names must be \"masked\", \"full\" or \"off\", not \"",
                   std::string(name.substr(0, 64)), "\""));
}

std::vector<std::pair<ObjectIndex, ObjectIndex>> ThreadNameObjects(const HeapGraph& graph) {
  std::vector<std::pair<ObjectIndex, ObjectIndex>> out;
  const ClassId thread_class = graph.FindClass("java.lang.Thread");
  if (!thread_class.valid()) return out;
  const CsrGraph& g = graph.graph();
  std::vector<ObjectIndex> threads;
  for (const GcRoot& root : graph.gc_roots()) {
    if (root.kind == GcRootKind::kThreadObject) threads.push_back(root.object);
  }
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  for (ObjectIndex t : threads) {
    if (graph.kind(t) != ObjectKind::kInstance) continue;
    const ClassId cls = graph.class_of(t);
    if (!cls.valid() || !graph.IsSubclassOf(cls, thread_class)) continue;
    for (uint64_t e = g.first_edge(t); e < g.first_edge(ObjectIndex(t.value + 1)); ++e) {
      const ReferenceSlot slot = graph.ResolveReference(t, e);
      if (slot.kind != ReferenceSlot::Kind::kField || slot.declaring_class != thread_class) {
        continue;
      }
      const ClassInfo& decl = graph.class_info(thread_class);
      if (slot.field < decl.instance_fields.size() &&
          decl.instance_fields[slot.field].name == "name") {
        out.push_back({t, g.targets[e]});
        break;
      }
    }
  }
  return out;
}

std::string ThreadNameForReport(std::string_view utf8, bool truncated, ThreadNamePrivacy privacy) {
  if (privacy == ThreadNamePrivacy::kOff) return "";
  std::string out;
  size_t chars = 0;
  bool in_digits = false;
  for (size_t i = 0; i < utf8.size();) {
    if (chars == kThreadNameMaxChars) {
      truncated = true;
      break;
    }
    uint32_t cp = 0;
    DecodeUtf8(utf8, &i, &cp);  // U+FFFD for an ill-formed sequence
    if (Unsafe(cp)) cp = 0xFFFD;
    const bool digit = cp >= '0' && cp <= '9';
    if (privacy == ThreadNamePrivacy::kMasked && digit) {
      if (!in_digits) {
        out.push_back('#');
        ++chars;
      }
      in_digits = true;
      continue;
    }
    in_digits = false;
    AppendUtf8(cp, &out);
    ++chars;
  }
  if (truncated) out += "...";
  return out;
}

}  // namespace heapwatch::analysis
