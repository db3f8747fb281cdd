// ReadStringContents (collectors/dumps/string_contents.h): one pass of the HPROF scanner that keeps
// the `coder` byte of the requested String instances and the first bytes of their value arrays.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/hprof/hprof_scanner.h"
#include "collectors/dumps/stream_reader.h"
#include "collectors/dumps/string_contents.h"
#include "common/utf8.h"

namespace heapwatch::dumps {
namespace {

using analysis::ClassId;
using analysis::FieldType;
using analysis::HeapGraph;
using analysis::ObjectIndex;
using analysis::ObjectKind;

constexpr uint32_t kNoCoder = ~0u;

// One requested string: where its bytes and its coder come from.
struct Wanted {
  uint32_t object = 0;               // ObjectIndex::value of the request
  uint64_t array_id = 0;             // raw id of the char[]/byte[] holding the characters
  uint64_t string_id = 0;            // raw id of the String instance (0 for a bare array)
  uint32_t coder_offset = kNoCoder;  // offset of String.coder in the instance data
};

struct ArrayBytes {
  FieldType type = FieldType::kByte;
  uint32_t length = 0;
  std::string bytes;  // the first bytes, as in the file
  bool seen = false;
};

class StringPass : public hprof::HandlerBase {
 public:
  static constexpr bool kWantsStrings = false;
  static constexpr bool kWantsObjectArrayElements = false;
  static constexpr bool kWantsPrimitiveArrayData = true;
  static constexpr uint32_t kPrimitiveArrayDataLimit = 2 * kMaxStringContentChars;

  StringPass(absl::flat_hash_map<uint64_t, uint32_t> coder_offsets,
             absl::flat_hash_map<uint64_t, ArrayBytes>* arrays,
             absl::flat_hash_map<uint64_t, uint8_t>* coders)
      : coder_offsets_(std::move(coder_offsets)), arrays_(arrays), coders_(coders) {}

  Status OnInstance(uint64_t id, uint64_t, const uint8_t* data, uint32_t length, uint64_t) {
    auto it = coder_offsets_.find(id);
    if (it != coder_offsets_.end() && it->second < length) (*coders_)[id] = data[it->second];
    return absl::OkStatus();
  }
  Status OnPrimitiveArrayData(uint64_t id, FieldType type, uint32_t length, const uint8_t* data,
                              uint32_t bytes) {
    auto it = arrays_->find(id);
    if (it == arrays_->end() || it->second.seen) return absl::OkStatus();
    it->second.seen = true;
    it->second.type = type;
    it->second.length = length;
    it->second.bytes.assign(reinterpret_cast<const char*>(data), bytes);
    return absl::OkStatus();
  }

 private:
  absl::flat_hash_map<uint64_t, uint32_t> coder_offsets_;
  absl::flat_hash_map<uint64_t, ArrayBytes>* arrays_;
  absl::flat_hash_map<uint64_t, uint8_t>* coders_;
};

// The object the instance field `name` of `v` references (kNoObject when null or absent).
ObjectIndex FieldTarget(const HeapGraph& graph, ObjectIndex v, std::string_view name) {
  const analysis::CsrGraph& g = graph.graph();
  for (uint64_t e = g.first_edge(v); e < g.first_edge(ObjectIndex(v.value + 1)); ++e) {
    const analysis::ReferenceSlot slot = graph.ResolveReference(v, e);
    if (slot.kind != analysis::ReferenceSlot::Kind::kField || !slot.declaring_class.valid()) {
      continue;
    }
    const analysis::ClassInfo& decl = graph.class_info(slot.declaring_class);
    if (slot.field < decl.instance_fields.size() && decl.instance_fields[slot.field].name == name) {
      return g.targets[e];
    }
  }
  return analysis::kNoObject;
}

// Offset of java.lang.String.coder (a byte) in the instance data of `cls` (fields of the class
// itself first, then of its superclasses: HPROF INSTANCE DUMP order), kNoCoder when absent.
uint32_t CoderOffset(const HeapGraph& graph, ClassId cls) {
  uint32_t offset = 0;
  for (int depth = 0; cls.valid() && depth < 256; ++depth) {
    const analysis::ClassInfo& info = graph.class_info(cls);
    for (const analysis::FieldInfo& f : info.instance_fields) {
      if (info.name == "java.lang.String" && f.name == "coder" && f.type == FieldType::kByte) {
        return offset;
      }
      offset += analysis::FieldTypeSize(f.type, graph.info().id_size);
    }
    cls = info.super_class;
  }
  return kNoCoder;
}

}  // namespace

std::string Utf16ToUtf8(std::span<const uint16_t> units) {
  std::string out;
  out.reserve(units.size());
  const auto put = [&out](uint32_t cp) { AppendUtf8(cp, &out); };  // common/utf8.h

  for (size_t i = 0; i < units.size(); ++i) {
    const uint32_t u = units[i];
    if (u >= 0xD800 && u <= 0xDBFF && i + 1 < units.size() && units[i + 1] >= 0xDC00 &&
        units[i + 1] <= 0xDFFF) {
      put(0x10000 + ((u - 0xD800) << 10) + (units[i + 1] - 0xDC00));
      ++i;
    } else if (u >= 0xD800 && u <= 0xDFFF) {
      put(0xFFFD);
    } else {
      put(u);
    }
  }
  return out;
}

StatusOr<absl::flat_hash_map<uint32_t, StringContent>> ReadStringContents(
    const std::string& path, const HeapGraph& graph, std::span<const ObjectIndex> objects,
    uint32_t max_chars) {
  absl::flat_hash_map<uint32_t, StringContent> result;
  max_chars = std::min(max_chars, kMaxStringContentChars);
  if (objects.empty() || !absl::StartsWith(graph.info().format, "JAVA PROFILE")) return result;

  std::vector<Wanted> wanted;
  absl::flat_hash_map<uint64_t, uint32_t> coder_offsets;
  absl::flat_hash_map<uint64_t, ArrayBytes> arrays;
  for (ObjectIndex v : objects) {
    if (!v.valid() || v.value >= graph.object_count()) continue;
    Wanted w;
    w.object = v.value;
    ObjectIndex array = v;
    if (graph.kind(v) == ObjectKind::kInstance) {
      const ClassId cls = graph.class_of(v);
      if (!cls.valid() || graph.class_info(cls).name != "java.lang.String") continue;
      array = FieldTarget(graph, v, "value");
      if (!array.valid()) continue;
      w.string_id = graph.object_id(v);
      w.coder_offset = CoderOffset(graph, cls);
      if (w.coder_offset != kNoCoder) coder_offsets[w.string_id] = w.coder_offset;
    }
    if (graph.kind(array) != ObjectKind::kPrimitiveArray) continue;
    w.array_id = graph.object_id(array);
    arrays.try_emplace(w.array_id);
    wanted.push_back(w);
  }
  if (wanted.empty()) return result;

  absl::flat_hash_map<uint64_t, uint8_t> coders;
  {
    HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenFileSource(path));
    StreamReader in(source.get(), StreamReader::WindowFor(*source));
    StatusOr<hprof::HprofHeader> header = hprof::ReadHprofHeader(in);
    if (!header.ok()) {
      return absl::Status(header.status().code(),
                          absl::StrCat(path, ": ", header.status().message()));
    }
    hprof::ScanOptions scan;
    scan.dump = graph.info().dump_ordinal;
    StringPass pass(std::move(coder_offsets), &arrays, &coders);
    hprof::HprofScanner<StringPass> scanner(in, *header, scan, pass);
    Status s = scanner.Run();
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }

  for (const Wanted& w : wanted) {
    const ArrayBytes& a = arrays[w.array_id];
    if (!a.seen) continue;
    std::vector<uint16_t> units;
    const std::string& b = a.bytes;
    uint64_t total_chars = 0;
    if (a.type == FieldType::kChar) {  // big-endian u2 (HPROF)
      total_chars = a.length;
      for (size_t i = 0; i + 1 < b.size() && units.size() < max_chars; i += 2) {
        units.push_back(static_cast<uint16_t>((uint8_t(b[i]) << 8) | uint8_t(b[i + 1])));
      }
    } else if (a.type == FieldType::kByte) {
      uint8_t coder = 0;  // no coder field: a byte[] is read as LATIN1
      if (w.string_id != 0) {
        auto it = coders.find(w.string_id);
        if (w.coder_offset != kNoCoder && it == coders.end()) continue;  // instance not seen
        if (it != coders.end()) coder = it->second;
      }
      if (coder == 0) {
        total_chars = a.length;
        for (size_t i = 0; i < b.size() && units.size() < max_chars; ++i) {
          units.push_back(uint8_t(b[i]));
        }
      } else if (coder == 1) {  // UTF16 in native (little-endian) order
        total_chars = a.length / 2;
        for (size_t i = 0; i + 1 < b.size() && units.size() < max_chars; i += 2) {
          units.push_back(static_cast<uint16_t>(uint8_t(b[i]) | (uint8_t(b[i + 1]) << 8)));
        }
      } else {
        continue;  // not a coder value a JVM writes
      }
    } else {
      continue;
    }
    // Do not end inside a surrogate pair.
    if (units.size() < total_chars && !units.empty() && units.back() >= 0xD800 &&
        units.back() <= 0xDBFF) {
      units.pop_back();
    }
    StringContent content;
    content.utf8 = Utf16ToUtf8(units);
    content.truncated = units.size() < total_chars;
    result[w.object] = std::move(content);
  }
  return result;
}

}  // namespace heapwatch::dumps
