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
#include "analysis/root_inference.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/class_names.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::dumps::ibm_text {
namespace {

using analysis::ClassId;
using analysis::ClassInfo;
using analysis::DumpInfo;
using analysis::FieldType;
using analysis::HeapGraph;
using analysis::HeapGraphBuilder;
using analysis::kNoClass;
using analysis::ObjectKind;

constexpr size_t kMaxToken = 64 * 1024;
constexpr uint64_t kMaxSize = uint64_t{1} << 40;
constexpr uint64_t kMaxObjects = 0xfffffffeull;
constexpr size_t kMaxWarnings = 40;

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
  std::string type;               // as written
  std::vector<uint64_t> values;   // the listed references, 0 = null
};

struct ClassRecord {
  uint64_t address = 0;
  uint64_t size = 0;
  std::string raw_name;
  ClassId id;
  bool listed_set = false;
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
    pass_ = 1;
    HW_RETURN_IF_ERROR(Scan());
    HW_RETURN_IF_ERROR(AfterFirstPass());
    Progress();
    HW_RETURN_IF_ERROR(in_.Rewind());
    pass_ = 2;
    HW_RETURN_IF_ERROR(Scan());
    Progress();
    DumpInfo& out = builder_->info();
    out.duplicate_objects = dropped_duplicates_;
    if (dropped_duplicates_ > 0) {
      Warn(absl::StrFormat("%d records repeat the address of an earlier record and were dropped",
                           dropped_duplicates_));
    }
    if (zero_addresses_ > 0) {
      Warn(absl::StrFormat("%d records at address 0 were dropped", zero_addresses_));
    }
    out.warnings = warnings_;
    HW_ASSIGN_OR_RETURN(HeapGraph graph, std::move(*builder_).Build());
    return analysis::AddInferredRoots(std::move(graph));
  }

 private:
  void Progress() {
    if (options_.progress) options_.progress(pass_ * source_->total(), 2 * source_->total());
  }
  void Warn(std::string line) {
    if (warnings_.size() < kMaxWarnings) warnings_.push_back(std::move(line));
  }
  Status Malformed(const Lexer& lex, std::string_view what) const {
    return absl::DataLossError(absl::StrFormat("line %d (offset %d): %s", lex.line(),
                                               lex.token_offset(), what));
  }

  // One pass over the lines; records go to OnRecord.
  Status Scan() {
    Lexer lex(&in_);
    std::string tok, next;
    Record rec;
    bool open = false;   // `rec` holds a record whose references may continue
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
    if (pass_ != 1) return;
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
    if (pass_ == 1) {
      if (objects_ + classes_.size() + 1 >= kMaxObjects) {
        return absl::ResourceExhaustedError(
            "text heap dump with 2^32 - 2 objects or more: more than a HeapGraph holds");
      }
      references_ += r.values.size();
      for (uint64_t v : r.values) nulls_ += v == 0;
      if (r.address == 0) {
        ++zero_addresses_;
        return absl::OkStatus();
      }
      addresses_.push_back(r.address);
      if (r.is_class) {
        classes_.push_back({r.address, r.size, r.type, kNoClass});
        ++class_records_;
      } else {
        ++objects_;
        const ClassName name = ParseClassName(r.type);
        if (name.kind == ObjectKind::kObjectArray) ++object_arrays_;
        if (name.kind == ObjectKind::kPrimitiveArray) ++primitive_arrays_;
        first_size_.try_emplace(r.type, r.size);
      }
      return absl::OkStatus();
    }
    // Pass 2.
    if (r.address == 0) return absl::OkStatus();
    if (r.is_class) {
      ClassRecord& c = classes_[class_by_address_.at(r.address)];
      if (c.listed_set) {  // a repeated class record
        ++dropped_duplicates_;
        return absl::OkStatus();
      }
      c.listed_set = true;
      builder_->SetListedClassReferences(c.id, r.values);
      return absl::OkStatus();
    }
    // Class records (class objects) win over objects; the first object record wins otherwise.
    if (class_by_address_.contains(r.address) ||
        (duplicates_.contains(r.address) && !seen_duplicates_.insert(r.address).second)) {
      ++dropped_duplicates_;
      return absl::OkStatus();
    }
    const ClassId cls = ClassOf(r.type);
    const ClassInfo& ci = builder_classes_[cls.value];
    // Object arrays: the values listed are the length we know (nulls included when the dump lists
    // them). Primitive arrays: no length in this format; the references some list are their class
    // block's.
    const uint32_t length = static_cast<uint32_t>(
        std::min<uint64_t>(r.values.size(), std::numeric_limits<uint32_t>::max()));
    builder_->AddListedObject(r.address, cls, r.values,
                              ci.instance_kind == ObjectKind::kObjectArray ? length : 0);
    builder_->SetShallowSize(r.address, r.size);
    return absl::OkStatus();
  }

  // The classes: one per CLS record (its class object) and one per type without a CLS record.
  Status AfterFirstPass() {
    if (!has_version_ && objects_ == 0 && classes_.empty()) {
      return absl::InvalidArgumentError("not a text heap dump: no records");
    }
    std::sort(addresses_.begin(), addresses_.end());
    for (size_t i = 1; i < addresses_.size(); ++i) {
      if (addresses_[i] == addresses_[i - 1]) duplicates_.insert(addresses_[i]);
    }
    std::vector<uint64_t>().swap(addresses_);
    DumpInfo info;
    info.format = "IBM text heap dump";
    info.id_size = wide_addresses_ ? 8 : 4;
    info.dump_count = 1;
    info.size_model = analysis::SizeModel::kIbm;
    info.layout.reference_size = info.id_size;
    info.size_model_notes = absl::StrCat(
        "IBM text heap dump: every object's size as its record gives it (a class's instance size is "
        "that of its first instance). JVM: ",
        has_version_ ? version_ : "unknown (no // Version: line)");
    builder_ = std::make_unique<HeapGraphBuilder>(
        info, analysis::HeapGraphOptions{.instance_class_edges = options_.instance_class_edges});
    uint64_t shared_names = 0;
    for (uint32_t i = 0; i < classes_.size(); ++i) {
      ClassRecord& c = classes_[i];
      if (class_by_address_.contains(c.address)) continue;  // a repeated class record
      const ClassName name = ParseClassName(c.raw_name);
      ClassInfo ci;
      ci.name = name.source_name;
      ci.instance_kind = name.kind;
      ci.element_type = name.element;
      auto first = first_size_.find(c.raw_name);
      ci.instance_size = name.kind == ObjectKind::kInstance && first != first_size_.end()
                             ? static_cast<uint32_t>(std::min<uint64_t>(first->second, UINT32_MAX))
                             : 0;
      ci.class_object_size = static_cast<uint32_t>(std::min<uint64_t>(c.size, UINT32_MAX));
      ci.listed_references = true;
      c.id = AddClass(std::move(ci), c.address);
      class_by_address_.emplace(c.address, i);
      if (!class_by_name_.try_emplace(c.raw_name, c.id).second) ++shared_names;
    }
    if (shared_names > 0) {
      Warn(absl::StrFormat("%d class records repeat the name of an earlier one (other class "
                           "loaders); objects of such a name are counted under the first",
                           shared_names));
    }
    // The trailer lines, when present, must agree with the records.
    if (has_eof_ && !eof_.empty() && eof_[0] != objects_ + class_records_) {
      Warn(absl::StrFormat("the // EOF line counts %d records, the file has %d", eof_[0],
                           objects_ + class_records_));
    }
    // J9 counts null references without listing them (Java 7 and later) or lists them too (Java
    // 6): the non-null ones must agree either way.
    if (has_eof_ && eof_.size() >= 3 &&
        (eof_[1] < eof_[2] || eof_[1] - eof_[2] != references_ - nulls_)) {
      Warn(absl::StrFormat("the // EOF line counts %d non-null references, the file lists %d",
                           eof_[1] >= eof_[2] ? eof_[1] - eof_[2] : 0, references_ - nulls_));
    }
    if (breakdown_.size() >= 4 &&
        (breakdown_[0] != class_records_ || breakdown_[2] != object_arrays_ ||
         breakdown_[3] != primitive_arrays_ ||
         breakdown_[1] != objects_ - object_arrays_ - primitive_arrays_)) {
      Warn("the // Breakdown line disagrees with the records");
    }
    if (has_version_ && !has_eof_) {
      Warn("no // EOF line at the end: the dump may be truncated");
    }
    return absl::OkStatus();
  }

  ClassId AddClass(ClassInfo info, uint64_t class_object_id) {
    builder_classes_.push_back(info);
    return builder_->AddClass(std::move(info), class_object_id);
  }

  ClassId ClassOf(const std::string& raw) {
    auto it = class_by_name_.find(raw);
    if (it != class_by_name_.end()) return it->second;
    const ClassName name = ParseClassName(raw);
    ClassInfo ci;
    ci.name = name.source_name;
    ci.instance_kind = name.kind;
    ci.element_type = name.element;
    auto first = first_size_.find(raw);
    ci.instance_size = name.kind == ObjectKind::kInstance && first != first_size_.end()
                           ? static_cast<uint32_t>(std::min<uint64_t>(first->second, UINT32_MAX))
                           : 0;
    ci.synthetic = true;
    ci.listed_references = true;
    const ClassId id = AddClass(std::move(ci), 0);
    class_by_name_.emplace(raw, id);
    return id;
  }

  ByteSource* source_;
  ReadOptions options_;
  StreamReader in_;
  int pass_ = 1;
  std::vector<std::string> warnings_;
  // Pass 1.
  std::string version_;
  bool has_version_ = false;
  bool has_eof_ = false;
  std::vector<uint64_t> eof_, breakdown_;
  bool wide_addresses_ = false;
  uint64_t objects_ = 0, class_records_ = 0, object_arrays_ = 0, primitive_arrays_ = 0;
  uint64_t references_ = 0, nulls_ = 0, zero_addresses_ = 0;
  std::vector<uint64_t> addresses_;
  absl::flat_hash_set<uint64_t> duplicates_;
  std::vector<ClassRecord> classes_;
  absl::flat_hash_map<std::string, uint64_t> first_size_;  // type -> size of its first object
  // Pass 2.
  std::unique_ptr<HeapGraphBuilder> builder_;
  std::vector<ClassInfo> builder_classes_;  // by ClassId, as added
  absl::flat_hash_map<uint64_t, uint32_t> class_by_address_;
  absl::flat_hash_map<std::string, ClassId> class_by_name_;
  absl::flat_hash_set<uint64_t> seen_duplicates_;
  uint64_t dropped_duplicates_ = 0;
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

StatusOr<HeapGraph> ReadTextDumpGraphFromBuffer(std::string_view data,
                                                const ReadOptions& options) {
  std::unique_ptr<ByteSource> source = OpenMemorySource(data);
  TextDumpReader reader(source.get(), options);
  return reader.Read();
}

}  // namespace heapwatch::dumps::ibm_text
