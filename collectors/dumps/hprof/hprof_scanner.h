// One streaming pass over an HPROF file: record framing, heap dump selection and sub-record
// decoding, with bounds checks. Each pass of the reader is a Handler with inline callbacks (a
// template, so the per-object callbacks inline). Internal to the HPROF reader
// (collectors/dumps/hprof).
//
// Handler interface: see HandlerBase below, which every pass derives from. A pass declares
// kWantsStrings and kWantsObjectArrayElements and hides (redeclares) only the callbacks it uses;
// the others are HandlerBase's no-ops. Calls are resolved statically, so nothing is virtual.
//
// Dumps: a HEAP DUMP record is one dump; a run of HEAP DUMP SEGMENT records ends at HEAP DUMP END,
// at a HEAP DUMP record or at the end of the file. Dumps are numbered from 0 in file order.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_SCANNER_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_SCANNER_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "analysis/heap_graph.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/stream_reader.h"
#include "common/status.h"

namespace heapwatch::hprof {

// A CLASS DUMP sub-record as read (names are string ids).
struct RawClassDump {
  struct Constant {
    uint16_t index;
    analysis::FieldType type;
    uint64_t value;  // id for objects, raw bits of primitives (never stored beyond the pass)
  };
  struct Static {
    uint64_t name_id;
    analysis::FieldType type;
    uint64_t value;  // id for objects, 0 for primitives (values of primitives are not kept)
  };
  struct Field {
    uint64_t name_id;
    analysis::FieldType type;
  };
  uint64_t offset = 0;  // of the sub-record tag
  uint64_t id = 0;
  uint64_t super_id = 0;
  uint64_t loader_id = 0;
  uint64_t signers_id = 0;
  uint64_t protection_domain_id = 0;
  uint32_t instance_size = 0;
  std::vector<Constant> constants;
  std::vector<Static> statics;
  std::vector<Field> fields;
};

// Default (no-op) callbacks of a scanner Handler. Every callback returns a Status; a non-OK status
// stops the scan and is returned by it.
struct HandlerBase {
  // STRING and LOAD CLASS records are delivered only when the handler sets kWantsStrings; object
  // array elements only when it sets kWantsObjectArrayElements.
  Status OnRecord(uint8_t /*tag*/, uint64_t /*offset*/, uint32_t /*length*/) {
    return absl::OkStatus();
  }
  Status OnSubRecord(uint8_t /*tag*/, uint64_t /*offset*/) { return absl::OkStatus(); }
  Status OnString(uint64_t /*id*/, std::string_view /*utf8*/) { return absl::OkStatus(); }
  Status OnLoadClass(uint64_t /*class_id*/, uint64_t /*name_id*/) { return absl::OkStatus(); }
  Status OnDumpStart(uint32_t /*ordinal*/, uint64_t /*offset*/) { return absl::OkStatus(); }
  Status OnDumpEnd(uint32_t /*ordinal*/) { return absl::OkStatus(); }
  Status OnRoot(analysis::GcRootKind /*kind*/, uint64_t /*id*/, uint32_t /*thread_serial*/,
                int32_t /*frame*/) {
    return absl::OkStatus();
  }
  Status OnClassDump(const RawClassDump& /*c*/) { return absl::OkStatus(); }
  Status OnInstance(uint64_t /*id*/, uint64_t /*class_id*/, const uint8_t* /*data*/,
                    uint32_t /*length*/, uint64_t /*offset*/) {
    return absl::OkStatus();
  }
  Status OnObjectArrayBegin(uint64_t /*id*/, uint64_t /*class_id*/, uint32_t /*length*/,
                            uint64_t /*offset*/) {
    return absl::OkStatus();
  }
  Status OnObjectArrayElements(const uint8_t* /*data*/, uint32_t /*count*/) {
    return absl::OkStatus();
  }
  Status OnObjectArrayEnd() { return absl::OkStatus(); }
  Status OnPrimitiveArray(uint64_t /*id*/, analysis::FieldType /*type*/, uint32_t /*length*/,
                          uint64_t /*offset*/) {
    return absl::OkStatus();
  }
  Status OnHeapDumpInfo(uint32_t /*heap_type*/, uint64_t /*name_id*/) { return absl::OkStatus(); }

  // Primitive array contents: only for a handler that sets kWantsPrimitiveArrayData; it gets the
  // first min(length x element size, kPrimitiveArrayDataLimit) bytes of each PRIMITIVE ARRAY DUMP
  // (big-endian, as in the file) before OnPrimitiveArray; the rest is skipped.
  static constexpr bool kWantsPrimitiveArrayData = false;
  static constexpr uint32_t kPrimitiveArrayDataLimit = 0;
  Status OnPrimitiveArrayData(uint64_t /*id*/, analysis::FieldType /*type*/, uint32_t /*length*/,
                              const uint8_t* /*data*/, uint32_t /*bytes*/) {
    return absl::OkStatus();
  }
};

// Which dumps a pass looks into.
struct ScanOptions {
  int64_t dump = -1;  // the ordinal whose sub-records are delivered; -1 = every dump
  std::function<void(uint64_t consumed, uint64_t total)>
      progress;  // file bytes, called every ~16 MiB
};

namespace scanner_internal {

inline Status Truncated(std::string_view what, uint64_t record_offset, uint64_t need_at,
                        size_t need) {
  return absl::DataLossError(absl::StrFormat(
      "truncated dump: %s at byte %d needs %d bytes at byte %d but the file ends before", what,
      record_offset, need, need_at));
}

}  // namespace scanner_internal

template <class Handler>
class HprofScanner {
 public:
  HprofScanner(StreamReader& in, const HprofHeader& header, const ScanOptions& options,
               Handler& handler)
      : in_(in), h_(header), opt_(options), handler_(handler), id_(header.id_size) {}

  // Scans from the current position (just after the header) to the end of the file.
  Status Run() {
    uint32_t next_ordinal = 0;
    bool in_segments = false;
    uint32_t segment_ordinal = 0;
    uint64_t next_progress = 0;
    for (;;) {
      if (opt_.progress && in_.source_consumed() >= next_progress) {
        opt_.progress(in_.source_consumed(), in_.source_total());
        next_progress = in_.source_consumed() + (16u << 20);
      }
      uint64_t rec_off = in_.offset();
      HW_ASSIGN_OR_RETURN(bool more, in_.Ensure(1));
      if (!more) break;
      HW_ASSIGN_OR_RETURN(bool full, in_.Ensure(9));
      if (!full) return scanner_internal::Truncated("record header", rec_off, rec_off, 9);
      uint8_t tag = in_.U1();
      in_.U4();  // microseconds since the header's timestamp
      uint32_t length = in_.U4();
      uint64_t body = in_.offset();
      if (!in_.source_compressed() && body + length > total_bytes()) {
        return absl::DataLossError(absl::StrFormat(
            "truncated dump: %s record at byte %d has length %d but the file ends at byte %d",
            RecordTagName(tag), rec_off, length, total_bytes()));
      }
      HW_RETURN_IF_ERROR(handler_.OnRecord(tag, rec_off, length));
      switch (tag) {
        case kTagString:
          HW_RETURN_IF_ERROR(String(rec_off, length));
          break;
        case kTagLoadClass:
          HW_RETURN_IF_ERROR(LoadClass(rec_off, length));
          break;
        case kTagHeapDump:
          if (in_segments) {
            if (Selected(segment_ordinal)) HW_RETURN_IF_ERROR(handler_.OnDumpEnd(segment_ordinal));
            in_segments = false;
          }
          HW_RETURN_IF_ERROR(
              DumpBody(next_ordinal++, rec_off, length, /*start=*/true, /*end=*/true, tag));
          break;
        case kTagHeapDumpSegment: {
          bool start = !in_segments;
          if (start) {
            segment_ordinal = next_ordinal++;
            in_segments = true;
          }
          HW_RETURN_IF_ERROR(DumpBody(segment_ordinal, rec_off, length, start, /*end=*/false, tag));
          break;
        }
        case kTagHeapDumpEnd:
          if (in_segments) {
            in_segments = false;
            if (Selected(segment_ordinal)) HW_RETURN_IF_ERROR(handler_.OnDumpEnd(segment_ordinal));
          }
          HW_RETURN_IF_ERROR(SkipBody(rec_off, length, tag));
          break;
        default:
          HW_RETURN_IF_ERROR(SkipBody(rec_off, length, tag));
      }
    }
    if (in_segments && Selected(segment_ordinal))
      HW_RETURN_IF_ERROR(handler_.OnDumpEnd(segment_ordinal));
    dumps_ = next_ordinal;
    if (opt_.progress) opt_.progress(in_.source_total(), in_.source_total());
    return absl::OkStatus();
  }

  uint32_t dumps() const { return dumps_; }

 private:
  bool Selected(uint32_t ordinal) const { return opt_.dump < 0 || opt_.dump == ordinal; }
  uint64_t total_bytes() const { return in_.source_total(); }

  Status SkipBody(uint64_t rec_off, uint32_t length, uint8_t tag) {
    HW_ASSIGN_OR_RETURN(bool ok, in_.Skip(length));
    if (!ok)
      return scanner_internal::Truncated(RecordTagName(tag) + " record", rec_off, in_.offset(),
                                         length);
    return absl::OkStatus();
  }

  Status String(uint64_t rec_off, uint32_t length) {
    if (!Handler::kWantsStrings) return SkipBody(rec_off, length, kTagString);
    if (length < id_) {
      return absl::DataLossError(absl::StrFormat(
          "corrupt dump: STRING IN UTF8 record at byte %d has length %d, shorter than an id",
          rec_off, length));
    }
    constexpr uint32_t kMaxString = 1u << 20;
    if (length - id_ > kMaxString || length > in_.max_window()) {
      // Symbols are at most 64 KiB in a JVM; keep the id with a placeholder rather than buffering
      // more.
      HW_ASSIGN_OR_RETURN(bool ok, in_.Ensure(id_));
      if (!ok)
        return scanner_internal::Truncated("STRING IN UTF8 record", rec_off, in_.offset(), id_);
      uint64_t id = in_.Id(id_);
      HW_RETURN_IF_ERROR(handler_.OnString(id, "<string longer than 1 MiB>"));
      return SkipBody(rec_off, length - id_, kTagString);
    }
    HW_ASSIGN_OR_RETURN(bool ok, in_.Ensure(length));
    if (!ok)
      return scanner_internal::Truncated("STRING IN UTF8 record", rec_off, in_.offset(), length);
    uint64_t id = in_.Id(id_);
    std::string_view s(reinterpret_cast<const char*>(in_.data()), length - id_);
    in_.Advance(length - id_);
    return handler_.OnString(id, s);
  }

  Status LoadClass(uint64_t rec_off, uint32_t length) {
    if (!Handler::kWantsStrings) return SkipBody(rec_off, length, kTagLoadClass);
    uint32_t need = 8 + 2 * id_;
    if (length < need) {
      return absl::DataLossError(
          absl::StrFormat("corrupt dump: LOAD CLASS record at byte %d has length %d, expected %d",
                          rec_off, length, need));
    }
    HW_ASSIGN_OR_RETURN(bool ok, in_.Ensure(need));
    if (!ok) return scanner_internal::Truncated("LOAD CLASS record", rec_off, in_.offset(), need);
    in_.U4();  // class serial number
    uint64_t class_id = in_.Id(id_);
    in_.U4();  // stack trace serial number
    uint64_t name_id = in_.Id(id_);
    HW_RETURN_IF_ERROR(handler_.OnLoadClass(class_id, name_id));
    return SkipBody(rec_off, length - need, kTagLoadClass);
  }

  // Reads one heap dump record body (HEAP DUMP or HEAP DUMP SEGMENT).
  Status DumpBody(uint32_t ordinal, uint64_t rec_off, uint32_t length, bool start, bool end,
                  uint8_t tag) {
    if (!Selected(ordinal)) return SkipBody(rec_off, length, tag);
    if (start) HW_RETURN_IF_ERROR(handler_.OnDumpStart(ordinal, rec_off));
    rec_tag_ = tag;
    rec_off_ = rec_off;
    end_ = in_.offset() + length;
    while (in_.offset() < end_) HW_RETURN_IF_ERROR(SubRecord());
    if (end) HW_RETURN_IF_ERROR(handler_.OnDumpEnd(ordinal));
    return absl::OkStatus();
  }

  // Ensures `n` more bytes of the current sub-record, inside the enclosing record.
  [[gnu::always_inline]] Status Need(size_t n, uint64_t sub_off, uint8_t sub) {
    if (in_.offset() + n <= end_ && in_.available() >= n) return absl::OkStatus();
    return NeedSlow(n, sub_off, sub);
  }
  Status NeedSlow(size_t n, uint64_t sub_off, uint8_t sub) {
    if (in_.offset() + n > end_) {
      return absl::DataLossError(
          absl::StrFormat("corrupt dump: %s sub-record at byte %d runs past the end of its %s "
                          "record (byte %d, record at %d)",
                          SubTagName(sub), sub_off, RecordTagName(rec_tag_), end_, rec_off_));
    }
    HW_ASSIGN_OR_RETURN(bool ok, in_.Ensure(n));
    if (!ok)
      return scanner_internal::Truncated(SubTagName(sub) + " sub-record", sub_off, in_.offset(), n);
    return absl::OkStatus();
  }

  Status SkipSub(uint64_t n, uint64_t sub_off, uint8_t sub) {
    if (in_.offset() + n > end_) return Need(n, sub_off, sub);  // reports the overrun
    HW_ASSIGN_OR_RETURN(bool ok, in_.Skip(n));
    if (!ok)
      return scanner_internal::Truncated(SubTagName(sub) + " sub-record", sub_off, in_.offset(), n);
    return absl::OkStatus();
  }

  StatusOr<analysis::FieldType> Type(uint8_t code, uint64_t sub_off, uint8_t sub) {
    if (!analysis::IsValidFieldType(code)) {
      return absl::DataLossError(
          absl::StrFormat("corrupt dump: %s sub-record at byte %d has invalid type %d",
                          SubTagName(sub), sub_off, code));
    }
    return static_cast<analysis::FieldType>(code);
  }

  uint32_t ValueSize(analysis::FieldType t) const { return analysis::FieldTypeSize(t, id_); }

  Status Root(analysis::GcRootKind kind, uint8_t sub, uint64_t sub_off, size_t extra,
              bool has_thread, bool has_frame) {
    HW_RETURN_IF_ERROR(Need(id_ + extra, sub_off, sub));
    uint64_t id = in_.Id(id_);
    uint32_t thread = 0;
    int32_t frame = -1;
    size_t used = 0;
    if (has_thread) {
      thread = in_.U4();
      used += 4;
    }
    if (has_frame) {
      frame = static_cast<int32_t>(in_.U4());
      used += 4;
    }
    in_.Advance(extra - used);
    return handler_.OnRoot(kind, id, thread, frame);
  }

  Status SubRecord() {
    using analysis::GcRootKind;
    uint64_t sub_off = in_.offset();
    HW_ASSIGN_OR_RETURN(bool ok, in_.Ensure(1));
    if (!ok) return scanner_internal::Truncated("heap dump sub-record", sub_off, sub_off, 1);
    uint8_t sub = in_.U1();
    HW_RETURN_IF_ERROR(handler_.OnSubRecord(sub, sub_off));
    switch (sub) {
      case kSubRootUnknown:
        return Root(GcRootKind::kUnknown, sub, sub_off, 0, false, false);
      case kSubRootJniGlobal:
        return Root(GcRootKind::kJniGlobal, sub, sub_off, id_, false,
                    false);  // + JNI global ref id
      case kSubRootJniLocal:
        return Root(GcRootKind::kJniLocal, sub, sub_off, 8, true, true);
      case kSubRootJavaFrame:
        return Root(GcRootKind::kJavaFrame, sub, sub_off, 8, true, true);
      case kSubRootNativeStack:
        return Root(GcRootKind::kNativeStack, sub, sub_off, 4, true, false);
      case kSubRootStickyClass:
        return Root(GcRootKind::kStickyClass, sub, sub_off, 0, false, false);
      case kSubRootThreadBlock:
        return Root(GcRootKind::kThreadBlock, sub, sub_off, 4, true, false);
      case kSubRootMonitorUsed:
        return Root(GcRootKind::kMonitorUsed, sub, sub_off, 0, false, false);
      case kSubRootThreadObject:
        return Root(GcRootKind::kThreadObject, sub, sub_off, 8, true,
                    false);  // + stack trace serial
      case kSubRootInternedString:
        return Root(GcRootKind::kInternedString, sub, sub_off, 0, false, false);
      case kSubRootFinalizing:
        return Root(GcRootKind::kFinalizing, sub, sub_off, 0, false, false);
      case kSubRootDebugger:
        return Root(GcRootKind::kDebugger, sub, sub_off, 0, false, false);
      case kSubRootReferenceCleanup:
        return Root(GcRootKind::kReferenceCleanup, sub, sub_off, 0, false, false);
      case kSubRootVmInternal:
        return Root(GcRootKind::kVmInternal, sub, sub_off, 0, false, false);
      case kSubRootJniMonitor:
        return Root(GcRootKind::kJniMonitor, sub, sub_off, 8, true, true);
      case kSubUnreachable:
        return Root(GcRootKind::kUnreachable, sub, sub_off, 0, false, false);
      case kSubHeapDumpInfo: {
        HW_RETURN_IF_ERROR(Need(4 + id_, sub_off, sub));
        uint32_t heap = in_.U4();
        uint64_t name = in_.Id(id_);
        return handler_.OnHeapDumpInfo(heap, name);
      }
      case kSubClassDump:
        return ClassDump(sub_off);
      case kSubInstanceDump: {
        HW_RETURN_IF_ERROR(Need(2 * id_ + 8, sub_off, sub));
        uint64_t id = in_.Id(id_);
        in_.U4();  // stack trace serial
        uint64_t class_id = in_.Id(id_);
        uint32_t len = in_.U4();
        if (len > in_.max_window()) {
          return absl::DataLossError(absl::StrFormat(
              "corrupt dump: INSTANCE DUMP at byte %d declares %d bytes of field data (limit %d)",
              sub_off, len, in_.max_window()));
        }
        HW_RETURN_IF_ERROR(Need(len, sub_off, sub));
        const uint8_t* data = in_.data();
        in_.Advance(len);
        return handler_.OnInstance(id, class_id, data, len, sub_off);
      }
      case kSubObjectArrayDump: {
        HW_RETURN_IF_ERROR(Need(2 * id_ + 8, sub_off, sub));
        uint64_t id = in_.Id(id_);
        in_.U4();
        uint32_t count = in_.U4();
        uint64_t class_id = in_.Id(id_);
        uint64_t bytes = uint64_t{count} * id_;
        if (in_.offset() + bytes > end_)
          return Need(bytes, sub_off, sub);  // overrun: never allocate
        HW_RETURN_IF_ERROR(handler_.OnObjectArrayBegin(id, class_id, count, sub_off));
        if (Handler::kWantsObjectArrayElements) {
          uint32_t left = count;
          const uint32_t chunk = static_cast<uint32_t>(in_.max_window() / 2 / id_);
          while (left > 0) {
            uint32_t k = std::min(left, chunk);
            HW_RETURN_IF_ERROR(Need(size_t{k} * id_, sub_off, sub));
            HW_RETURN_IF_ERROR(handler_.OnObjectArrayElements(in_.data(), k));
            in_.Advance(size_t{k} * id_);
            left -= k;
          }
        } else {
          HW_RETURN_IF_ERROR(SkipSub(bytes, sub_off, sub));
        }
        return handler_.OnObjectArrayEnd();
      }
      case kSubPrimitiveArrayDump:
      case kSubPrimitiveArrayNoData: {
        HW_RETURN_IF_ERROR(Need(id_ + 9, sub_off, sub));
        uint64_t id = in_.Id(id_);
        in_.U4();
        uint32_t count = in_.U4();
        uint8_t code = in_.U1();
        HW_ASSIGN_OR_RETURN(analysis::FieldType type, Type(code, sub_off, sub));
        if (type == analysis::FieldType::kObject) {
          return absl::DataLossError(absl::StrFormat(
              "corrupt dump: PRIMITIVE ARRAY DUMP at byte %d has element type object", sub_off));
        }
        if (sub == kSubPrimitiveArrayDump) {
          uint64_t bytes = uint64_t{count} * ValueSize(type);
          if constexpr (Handler::kWantsPrimitiveArrayData) {
            const uint32_t head =
                static_cast<uint32_t>(std::min<uint64_t>(bytes, Handler::kPrimitiveArrayDataLimit));
            HW_RETURN_IF_ERROR(Need(head, sub_off, sub));
            HW_RETURN_IF_ERROR(handler_.OnPrimitiveArrayData(id, type, count, in_.data(), head));
            in_.Advance(head);
            bytes -= head;
          }
          HW_RETURN_IF_ERROR(SkipSub(bytes, sub_off, sub));
        }
        return handler_.OnPrimitiveArray(id, type, count, sub_off);
      }
      default:
        return absl::DataLossError(
            absl::StrFormat("corrupt dump: unknown heap dump sub-record tag 0x%02x at byte %d in "
                            "the %s record at byte %d",
                            sub, sub_off, RecordTagName(rec_tag_), rec_off_));
    }
  }

  Status ClassDump(uint64_t sub_off) {
    constexpr uint8_t sub = kSubClassDump;
    RawClassDump& c = class_;
    c.constants.clear();
    c.statics.clear();
    c.fields.clear();
    c.offset = sub_off;
    HW_RETURN_IF_ERROR(Need(7 * id_ + 8 + 2, sub_off, sub));
    c.id = in_.Id(id_);
    in_.U4();  // stack trace serial
    c.super_id = in_.Id(id_);
    c.loader_id = in_.Id(id_);
    c.signers_id = in_.Id(id_);
    c.protection_domain_id = in_.Id(id_);
    in_.Id(id_);  // reserved
    in_.Id(id_);  // reserved
    c.instance_size = in_.U4();
    uint16_t ncp = in_.U2();
    for (uint16_t i = 0; i < ncp; ++i) {
      HW_RETURN_IF_ERROR(Need(3, sub_off, sub));
      uint16_t index = in_.U2();
      HW_ASSIGN_OR_RETURN(analysis::FieldType t, Type(in_.U1(), sub_off, sub));
      uint32_t vs = ValueSize(t);
      HW_RETURN_IF_ERROR(Need(vs, sub_off, sub));
      uint64_t v = t == analysis::FieldType::kObject ? in_.Id(id_) : (in_.Advance(vs), 0);
      c.constants.push_back({index, t, v});
    }
    HW_RETURN_IF_ERROR(Need(2, sub_off, sub));
    uint16_t nstatic = in_.U2();
    for (uint16_t i = 0; i < nstatic; ++i) {
      HW_RETURN_IF_ERROR(Need(id_ + 1, sub_off, sub));
      uint64_t name = in_.Id(id_);
      HW_ASSIGN_OR_RETURN(analysis::FieldType t, Type(in_.U1(), sub_off, sub));
      uint32_t vs = ValueSize(t);
      HW_RETURN_IF_ERROR(Need(vs, sub_off, sub));
      uint64_t v = t == analysis::FieldType::kObject ? in_.Id(id_) : (in_.Advance(vs), 0);
      c.statics.push_back({name, t, v});
    }
    HW_RETURN_IF_ERROR(Need(2, sub_off, sub));
    uint16_t nfields = in_.U2();
    for (uint16_t i = 0; i < nfields; ++i) {
      HW_RETURN_IF_ERROR(Need(id_ + 1, sub_off, sub));
      uint64_t name = in_.Id(id_);
      HW_ASSIGN_OR_RETURN(analysis::FieldType t, Type(in_.U1(), sub_off, sub));
      c.fields.push_back({name, t});
    }
    return handler_.OnClassDump(c);
  }

  StreamReader& in_;
  const HprofHeader& h_;
  const ScanOptions& opt_;
  Handler& handler_;
  const uint32_t id_;
  uint32_t dumps_ = 0;
  uint8_t rec_tag_ = 0;
  uint64_t rec_off_ = 0;
  uint64_t end_ = 0;
  RawClassDump class_;
};

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_SCANNER_H_
