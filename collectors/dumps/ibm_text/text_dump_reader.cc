#include "collectors/dumps/ibm_text/text_dump_reader.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/heap_graph_builder.h"
#include "analysis/id_chunks.h"
#include "analysis/root_inference.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/class_names.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::dumps::ibm_text {
namespace {

using analysis::BulkHeapGraphBuilder;
using analysis::ClassId;
using analysis::ClassInfo;
using analysis::DumpInfo;
using analysis::FieldType;
using analysis::HeapGraph;
using analysis::kNoClass;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using analysis::ObjectOrder;

constexpr size_t kMaxToken = 64 * 1024;
constexpr uint64_t kMaxSize = uint64_t{1} << 40;
constexpr uint64_t kMaxObjects = 0xfffffffeull;

bool IsSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Splits the stream into whitespace-separated tokens and line ends without holding whole lines.
class Lexer {
 public:
  enum class Kind { kToken, kEndOfLine, kEndOfFile };
  explicit Lexer(StreamReader* in) : in_(in) {}

  StatusOr<Kind> Next(std::string* token) {
    for (;;) {
      HW_ASSIGN_OR_RETURN(bool more, in_->Ensure(1));
      if (!more) return Kind::kEndOfFile;
      const uint8_t c = *in_->data();
      if (c == '\n') {
        in_->Advance(1);
        ++line_;
        return Kind::kEndOfLine;
      }
      if (!IsSpace(c)) break;
      in_->Advance(1);
    }
    token_offset_ = in_->offset();
    token_line_ = line_;
    token->clear();
    for (;;) {
      HW_ASSIGN_OR_RETURN(bool more, in_->Ensure(1));
      if (!more) break;
      const uint8_t c = *in_->data();
      if (c == '\n' || IsSpace(c)) break;
      if (token->size() == kMaxToken) {
        return absl::DataLossError(absl::StrFormat(
            "line %d: a word longer than %d bytes at offset %d (not a text heap dump?)", line_,
            kMaxToken, token_offset_));
      }
      token->push_back(static_cast<char>(c));
      in_->Advance(1);
    }
    return Kind::kToken;
  }

  uint64_t line() const { return token_line_; }  // 1-based line of the last token
  uint64_t token_offset() const { return token_offset_; }

 private:
  StreamReader* in_;
  uint64_t line_ = 1;
  uint64_t token_line_ = 1;
  uint64_t token_offset_ = 0;
};

bool IsHexAddress(std::string_view t) {
  if (t.size() < 3 || t.size() > 18 || t[0] != '0' || (t[1] != 'x' && t[1] != 'X')) return false;
  for (char c : t.substr(2)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

uint64_t ParseHex(std::string_view t) {
  uint64_t v = 0;
  for (char c : t.substr(2)) {
    const int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

// "[123]" -> 123; false when malformed.
bool ParseSize(std::string_view t, uint64_t* size) {
  if (t.size() < 3 || t.front() != '[' || t.back() != ']' || t.size() > 16) return false;
  uint64_t v = 0;
  for (char c : t.substr(1, t.size() - 2)) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *size = v;
  return true;
}

// The decimal numbers of a comment line, in order.
std::vector<uint64_t> Numbers(std::string_view line) {
  std::vector<uint64_t> out;
  uint64_t v = 0;
  int digits = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    const char c = i < line.size() ? line[i] : ' ';
    if (c >= '0' && c <= '9' && digits < 19) {
      v = v * 10 + static_cast<uint64_t>(c - '0');
      ++digits;
    } else if (digits > 0) {
      out.push_back(v);
      v = 0;
      digits = 0;
    }
  }
  return out;
}

struct Record {
  bool is_class = false;
  uint64_t address = 0;
  uint64_t size = 0;
  std::string type;              // as written
  std::vector<uint64_t> values;  // the listed references, 0 = null
};

struct ClassRecord {
  uint64_t address = 0;
  uint64_t size = 0;
  std::string raw_name;
  std::vector<uint64_t> references;  // until the class is added
  ClassId id;
};

class TextDumpReader {
 public:
  TextDumpReader(ByteSource* source, const ReadOptions& options)
      : source_(source), options_(options), in_(source, StreamReader::WindowFor(*source)) {}

  StatusOr<HeapGraph> Read() {
    if (options_.dump_ordinal != -1 && options_.dump_ordinal != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a text heap dump holds one heap dump: --dump %d does not exist", options_.dump_ordinal));
    }
    if (options_.size_model != analysis::SizeModel::kAuto &&
        options_.size_model != analysis::SizeModel::kIbm) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "size model \"%s\" does not apply to a text heap dump: its records give the sizes (use "
          "auto or ibm)",
          analysis::SizeModelName(options_.size_model)));
    }
    pass_ = Pass::kIndex;
    HW_RETURN_IF_ERROR(Scan());
    HW_RETURN_IF_ERROR(AddClasses());
    Progress();
    HW_RETURN_IF_ERROR(
        builder_->IndexObjects(std::move(object_ids_), ascending_, std::move(class_ids_)));
    if (builder_->info().duplicate_objects > 0) {
      builder_->Warn(absl::StrFormat(
          "%d records repeat the address of an earlier record (the first one is used)",
          builder_->info().duplicate_objects));
    }
    analysis::ObjectLimits limits;
    limits.max_reference_slots = references_ + 4 * classes_.size() +
                                 (options_.instance_class_edges ? builder_->object_count() : 0);
    two_rounds_ = !ascending_ || builder_->info().duplicate_objects > 0;
    if (!two_rounds_) {
      limits.expected_object_references = references_;
      builder_->BeginObjects(ObjectOrder::kIndexOrder, limits);
      pass_ = Pass::kLast;
      HW_RETURN_IF_ERROR(Rescan());
    } else {
      builder_->BeginObjects(ObjectOrder::kTwoRounds, limits);
      pass_ = Pass::kFirstRound;
      HW_RETURN_IF_ERROR(Rescan());
      HW_RETURN_IF_ERROR(builder_->EndFirstRound());
      pass_ = Pass::kLast;
      HW_RETURN_IF_ERROR(Rescan());
    }
    HW_RETURN_IF_ERROR(builder_->FinishObjects());
    // Sizes: a class's instances take its first instance's size, its class object the CLS
    // record's; every other size the records give is kept for its object.
    for (const auto& [c, sizes] : class_sizes_) {
      builder_->SetShallowSizes(c, sizes.first, sizes.second);
    }
    for (const auto& [v, bytes] : object_sizes_) builder_->SetObjectShallowSize(v, bytes);
    std::vector<std::pair<ObjectIndex, uint64_t>>().swap(object_sizes_);
    if (primitive_references_ > 0) {
      builder_->Warn(absl::StrFormat(
          "%d references listed by primitive arrays (their class blocks) were dropped",
          primitive_references_));
    }
    HW_ASSIGN_OR_RETURN(HeapGraph graph, std::move(*builder_).Build());
    return analysis::AddInferredRoots(std::move(graph));
  }

 private:
  // kIndex: ids, classes and counts; kFirstRound: round 1 of ObjectOrder::kTwoRounds; kLast: the
  // pass that gives the references (round 2, or the only object pass of kIndexOrder).
  enum class Pass { kIndex, kFirstRound, kLast };

  void Progress() {
    ++passes_done_;
    if (options_.progress) {
      const uint64_t passes = two_rounds_ ? 3 : 2;
      options_.progress(std::min(passes_done_, passes) * source_->total(),
                        passes * source_->total());
    }
  }
  Status Rescan() {
    HW_RETURN_IF_ERROR(in_.Rewind());
    placed_.clear();
    HW_RETURN_IF_ERROR(Scan());
    Progress();
    return absl::OkStatus();
  }
  Status Malformed(const Lexer& lex, std::string_view what) const {
    return absl::DataLossError(
        absl::StrFormat("line %d (offset %d): %s", lex.line(), lex.token_offset(), what));
  }

  // One pass over the lines; records go to OnRecord.
  Status Scan() {
    Lexer lex(&in_);
    std::string tok, next;
    Record rec;
    bool open = false;  // `rec` holds a record whose references may continue
    bool first_line = true;
    auto flush = [&]() -> Status {
      if (!open) return absl::OkStatus();
      open = false;
      return OnRecord(rec);
    };
    // The rest of the line as references of the open record.
    auto references = [&]() -> Status {
      for (;;) {
        HW_ASSIGN_OR_RETURN(Lexer::Kind k, lex.Next(&tok));
        if (k != Lexer::Kind::kToken) return absl::OkStatus();
        if (!IsHexAddress(tok)) {
          return Malformed(lex, absl::StrFormat("\"%s\" is not a hexadecimal address",
                                                absl::CEscape(tok.substr(0, 40))));
        }
        note_address(tok);
        rec.values.push_back(ParseHex(tok));
      }
    };
    for (;;) {
      HW_ASSIGN_OR_RETURN(Lexer::Kind k, lex.Next(&tok));
      if (k == Lexer::Kind::kEndOfFile) break;
      if (k == Lexer::Kind::kEndOfLine) continue;
      if (tok.starts_with("//")) {
        std::vector<std::string> words{tok};
        size_t bytes = tok.size();
        for (;;) {
          HW_ASSIGN_OR_RETURN(Lexer::Kind w, lex.Next(&next));
          if (w != Lexer::Kind::kToken) break;
          if (bytes < kMaxToken) words.push_back(next);
          bytes += next.size();
        }
        HW_RETURN_IF_ERROR(flush());
        OnComment(absl::StrJoin(words, " "));
        first_line = false;
        continue;
      }
      if (!IsHexAddress(tok)) {
        return Malformed(lex, absl::StrFormat("unexpected \"%s\" (a record starts with an address)",
                                              absl::CEscape(tok.substr(0, 40))));
      }
      const std::string first = tok;
      HW_ASSIGN_OR_RETURN(Lexer::Kind k2, lex.Next(&next));
      uint64_t size = 0;
      if (k2 == Lexer::Kind::kToken && ParseSize(next, &size)) {
        // A record: address [size] [OBJ|CLS] type references...
        HW_RETURN_IF_ERROR(flush());
        if (size > kMaxSize) {
          return Malformed(lex, absl::StrFormat("object size %d is beyond 2^40 bytes", size));
        }
        rec.is_class = false;
        rec.address = ParseHex(first);
        note_address(first);
        rec.size = size;
        rec.values.clear();
        HW_ASSIGN_OR_RETURN(Lexer::Kind k3, lex.Next(&tok));
        if (k3 == Lexer::Kind::kToken && (tok == "OBJ" || tok == "CLS")) {
          rec.is_class = tok == "CLS";
          HW_ASSIGN_OR_RETURN(k3, lex.Next(&tok));
        }
        if (k3 != Lexer::Kind::kToken) return Malformed(lex, "a record without a type");
        rec.type = tok;
        open = true;
        first_line = false;
        HW_RETURN_IF_ERROR(references());
        continue;
      }
      if (first_line) {
        return Malformed(lex, "the first line is neither a \"//\" comment nor a record");
      }
      // A continuation line: more references of the open record.
      if (!open) return Malformed(lex, "references before any record");
      note_address(first);
      rec.values.push_back(ParseHex(first));
      if (k2 == Lexer::Kind::kToken) {
        if (!IsHexAddress(next)) {
          return Malformed(lex, absl::StrFormat("\"%s\" is not a hexadecimal address",
                                                absl::CEscape(next.substr(0, 40))));
        }
        note_address(next);
        rec.values.push_back(ParseHex(next));
        HW_RETURN_IF_ERROR(references());
      }
    }
    return flush();
  }

  void note_address(std::string_view token) {
    if (token.size() > 10) wide_addresses_ = true;  // more than 8 hex digits
  }

  void OnComment(const std::string& line) {
    if (pass_ != Pass::kIndex) return;
    if (line.starts_with("// Version:")) {
      version_ = line.substr(std::min<size_t>(line.size(), 12));
      has_version_ = true;
    } else if (line.starts_with("// Breakdown")) {
      breakdown_ = Numbers(line);
    } else if (line.starts_with("// EOF")) {
      eof_ = Numbers(line);
      has_eof_ = true;
    }
  }

  Status OnRecord(Record& r) {
    if (pass_ == Pass::kIndex) return IndexRecord(r);
    if (r.address == 0) return absl::OkStatus();
    if (r.is_class) {
      auto it = class_by_address_.find(r.address);
      // kIndexOrder places class objects itself; both rounds of kTwoRounds give the first CLS
      // record of each address (repeats are dropped).
      if (!two_rounds_ || it == class_by_address_.end() || !placed_.insert(r.address).second) {
        return absl::OkStatus();
      }
      return Check(builder_->AddClassObject(classes_[it->second].id), r);
    }
    if (class_by_address_.contains(r.address)) return absl::OkStatus();  // the class object wins
    const ClassId cls = class_by_name_.at(r.type);
    const ObjectKind kind = kinds_[cls.value];
    ObjectIndex v;
    switch (kind) {
      case ObjectKind::kInstance:
        HW_RETURN_IF_ERROR(Check(builder_->AddInstance(r.address, cls, r.values, &v), r));
        break;
      case ObjectKind::kObjectArray: {
        // The values listed are the length we know (nulls included when the dump lists them).
        const uint32_t length = static_cast<uint32_t>(
            std::min<uint64_t>(r.values.size(), std::numeric_limits<uint32_t>::max()));
        HW_RETURN_IF_ERROR(Check(builder_->BeginObjectArray(r.address, cls, length, &v), r));
        HW_RETURN_IF_ERROR(Check(
            builder_->AddArrayElements(std::span<const uint64_t>(r.values.data(), length)), r));
        HW_RETURN_IF_ERROR(Check(builder_->EndObjectArray(), r));
        break;
      }
      default:
        // No length in this format; the values some list are their class block's.
        HW_RETURN_IF_ERROR(Check(builder_->AddPrimitiveArray(r.address, cls, 0, &v), r));
        if (pass_ == Pass::kLast) primitive_references_ += r.values.size();
        break;
    }
    if (pass_ == Pass::kLast && v.valid() &&
        (kind != ObjectKind::kInstance || r.size != first_size_.at(r.type))) {
      object_sizes_.push_back({v, r.size});
    }
    return absl::OkStatus();
  }

  Status Check(Status s, const Record& r) const {
    if (s.ok()) return s;
    return absl::Status(s.code(), absl::StrFormat("record of 0x%x: %s", r.address, s.message()));
  }

  // Pass 1: ids, class records (with their references), the first size of each type, counts.
  Status IndexRecord(Record& r) {
    if (objects_ + classes_.size() + 1 >= kMaxObjects) {
      return absl::ResourceExhaustedError(
          "text heap dump with 2^32 - 2 objects or more: more than a HeapGraph holds");
    }
    references_ += r.values.size();
    for (uint64_t v : r.values) nulls_ += v == 0;
    if (r.is_class) {
      ++class_records_;
    } else {
      ++objects_;
      const ClassName name = ParseClassName(r.type);
      if (name.kind == ObjectKind::kObjectArray) ++object_arrays_;
      if (name.kind == ObjectKind::kPrimitiveArray) ++primitive_arrays_;
      first_size_.try_emplace(r.type, r.size);
    }
    if (r.address == 0) {
      ++zero_addresses_;
      return absl::OkStatus();
    }
    if (r.is_class) {
      if (class_by_address_.contains(r.address)) {
        ++repeated_classes_;
        return absl::OkStatus();
      }
      class_by_address_.emplace(r.address, static_cast<uint32_t>(classes_.size()));
      classes_.push_back({r.address, r.size, r.type, std::move(r.values), kNoClass});
      r.values = {};
      class_ids_.push_back(r.address);
    } else {
      object_addresses_.push_back(r.address);
    }
    return absl::OkStatus();
  }

  // The classes: one per CLS record (its class object) and one per type without a CLS record;
  // the dump's facts; the trailer's checks.
  Status AddClasses() {
    if (!has_version_ && objects_ == 0 && class_records_ == 0) {
      return absl::InvalidArgumentError("not a text heap dump: no records");
    }
    DumpInfo info;
    info.format = "IBM text heap dump";
    info.id_size = wide_addresses_ ? 8 : 4;
    info.dump_count = 1;
    info.size_model = analysis::SizeModel::kIbm;
    info.layout.reference_size = info.id_size;
    info.size_model_notes = absl::StrCat(
        "IBM text heap dump: every object's size as its record gives it (a class's instance size "
        "is "
        "that of its first instance). JVM: ",
        has_version_ ? version_ : "unknown (no // Version: line)");
    builder_ = std::make_unique<BulkHeapGraphBuilder>(
        std::move(info),
        analysis::HeapGraphOptions{.instance_class_edges = options_.instance_class_edges});
    // Objects at a class record's address are dropped (the class object wins); ascending?
    uint64_t last = 0;
    for (uint64_t a : object_addresses_) {
      if (class_by_address_.contains(a)) {
        ++shadowed_;
        continue;
      }
      if (object_ids_.size() > 0 && a <= last) ascending_ = false;
      last = a;
      object_ids_.push_back(a);
    }
    std::vector<uint64_t>().swap(object_addresses_);
    uint64_t shared_names = 0;
    for (ClassRecord& c : classes_) {
      const ClassName name = ParseClassName(c.raw_name);
      ClassInfo ci = NewClass(name, c.raw_name);
      ci.synthetic = false;
      ci.class_object_id = c.address;
      // A CLS record's references (the class object's fields and statics, or class blocks) carry no
      // names: they become the class object's unnamed static slots "static <reference[i]>".
      analysis::ClassObjectRefs refs;
      refs.static_refs = std::move(c.references);
      c.references = {};
      for (size_t k = 0; k < refs.static_refs.size(); ++k) {
        ci.static_fields.push_back({absl::StrCat("<reference[", k, "]>"), FieldType::kObject});
      }
      const uint32_t instance_size = ci.instance_size;
      c.id = builder_->AddClass(std::move(ci), std::move(refs));
      kinds_.push_back(name.kind);
      class_sizes_.push_back(
          {c.id, {instance_size, static_cast<uint32_t>(std::min<uint64_t>(c.size, UINT32_MAX))}});
      if (!class_by_name_.try_emplace(c.raw_name, c.id).second) ++shared_names;
    }
    // Types that no CLS record names.
    for (const auto& [type, size] : first_size_) {
      if (class_by_name_.contains(type)) continue;
      ClassInfo ci = NewClass(ParseClassName(type), type);
      const uint32_t instance_size = ci.instance_size;
      const ObjectKind kind = ci.instance_kind;
      const ClassId id = builder_->AddClass(std::move(ci));
      kinds_.push_back(kind);
      class_sizes_.push_back({id, {instance_size, 0}});
      class_by_name_.emplace(type, id);
    }
    if (shared_names > 0) {
      builder_->Warn(absl::StrFormat(
          "%d class records repeat the name of an earlier one (other class loaders); objects of "
          "such a name are counted under the first",
          shared_names));
    }
    if (repeated_classes_ > 0) {
      builder_->Warn(absl::StrFormat("%d class records repeat an address (the first one is used)",
                                     repeated_classes_));
    }
    if (shadowed_ > 0) {
      builder_->Warn(absl::StrFormat(
          "%d object records at a class record's address were dropped (the class object is kept)",
          shadowed_));
    }
    if (zero_addresses_ > 0) {
      builder_->Warn(absl::StrFormat("%d records at address 0 were dropped", zero_addresses_));
    }
    // The trailer lines, when present, must agree with the records.
    if (has_eof_ && !eof_.empty() && eof_[0] != objects_ + class_records_) {
      builder_->Warn(absl::StrFormat("the // EOF line counts %d records, the file has %d", eof_[0],
                                     objects_ + class_records_));
    }
    // J9 counts null references without listing them (Java 7 and later) or lists them too (Java
    // 6): the non-null ones must agree either way.
    if (has_eof_ && eof_.size() >= 3 &&
        (eof_[1] < eof_[2] || eof_[1] - eof_[2] != references_ - nulls_)) {
      builder_->Warn(
          absl::StrFormat("the // EOF line counts %d non-null references, the file lists %d",
                          eof_[1] >= eof_[2] ? eof_[1] - eof_[2] : 0, references_ - nulls_));
    }
    if (breakdown_.size() >= 4 &&
        (breakdown_[0] != class_records_ || breakdown_[2] != object_arrays_ ||
         breakdown_[3] != primitive_arrays_ ||
         breakdown_[1] != objects_ - object_arrays_ - primitive_arrays_)) {
      builder_->Warn("the // Breakdown line disagrees with the records");
    }
    if (has_version_ && !has_eof_) {
      builder_->Warn("no // EOF line at the end: the dump may be truncated");
    }
    return builder_->FinishClasses();
  }

  // A class of `name`'s kind: instances list unnamed references; instances take the size of the
  // first object of the name.
  ClassInfo NewClass(const ClassName& name, const std::string& raw) const {
    ClassInfo ci;
    ci.name = name.source_name;
    ci.instance_kind = name.kind;
    ci.element_type = name.element;
    ci.synthetic = true;
    ci.unnamed_references = name.kind == ObjectKind::kInstance;
    auto first = first_size_.find(raw);
    if (name.kind == ObjectKind::kInstance && first != first_size_.end()) {
      ci.instance_size = static_cast<uint32_t>(std::min<uint64_t>(first->second, UINT32_MAX));
    }
    return ci;
  }

  ByteSource* source_;
  ReadOptions options_;
  StreamReader in_;
  Pass pass_ = Pass::kIndex;
  bool two_rounds_ = false;
  uint64_t passes_done_ = 0;
  // Pass 1.
  std::string version_;
  bool has_version_ = false;
  bool has_eof_ = false;
  std::vector<uint64_t> eof_, breakdown_;
  bool wide_addresses_ = false;
  uint64_t objects_ = 0, class_records_ = 0, object_arrays_ = 0, primitive_arrays_ = 0;
  uint64_t references_ = 0, nulls_ = 0, zero_addresses_ = 0, repeated_classes_ = 0;
  uint64_t shadowed_ = 0;
  std::vector<uint64_t> object_addresses_;
  analysis::IdChunks object_ids_, class_ids_;
  bool ascending_ = true;
  std::vector<ClassRecord> classes_;
  absl::flat_hash_map<uint64_t, uint32_t> class_by_address_;
  absl::flat_hash_map<std::string, uint64_t> first_size_;  // type -> size of its first object
  // Classes.
  std::unique_ptr<BulkHeapGraphBuilder> builder_;
  absl::flat_hash_map<std::string, ClassId> class_by_name_;
  std::vector<ObjectKind> kinds_;  // by ClassId
  std::vector<std::pair<ClassId, std::pair<uint32_t, uint32_t>>> class_sizes_;
  // Object passes.
  absl::flat_hash_set<uint64_t> placed_;  // class objects given in round 1
  std::vector<std::pair<ObjectIndex, uint64_t>> object_sizes_;
  uint64_t primitive_references_ = 0;
};

StatusOr<HeapGraph> WithPath(std::string_view path, StatusOr<HeapGraph> result) {
  if (result.ok() || path.empty()) return result;
  return absl::Status(result.status().code(),
                      absl::StrCat(std::string(path), ": ", result.status().message()));
}

}  // namespace

bool LooksLikeTextDump(std::string_view prefix) {
  if (prefix.starts_with("// Version: ")) return true;
  // A first record line "0x<hex> [<digits>]".
  size_t i = 0;
  while (i < prefix.size() && IsSpace(static_cast<uint8_t>(prefix[i]))) ++i;
  const size_t end = prefix.find_first_of(" \t", i);
  if (end == std::string_view::npos || !IsHexAddress(prefix.substr(i, end - i))) return false;
  size_t j = end;
  while (j < prefix.size() && IsSpace(static_cast<uint8_t>(prefix[j]))) ++j;
  const size_t end2 = prefix.find_first_of(" \t\r\n", j);
  uint64_t size = 0;
  return end2 != std::string_view::npos && ParseSize(prefix.substr(j, end2 - j), &size);
}

StatusOr<HeapGraph> ReadTextDumpGraph(const std::string& path, const ReadOptions& options) {
  auto source = OpenFileSource(path);
  if (!source.ok()) return WithPath(path, source.status());
  TextDumpReader reader(source->get(), options);
  return WithPath(path, reader.Read());
}

StatusOr<HeapGraph> ReadTextDumpGraphFromBuffer(std::string_view data, const ReadOptions& options) {
  std::unique_ptr<ByteSource> source = OpenMemorySource(data);
  TextDumpReader reader(source.get(), options);
  return reader.Read();
}

}  // namespace heapwatch::dumps::ibm_text
