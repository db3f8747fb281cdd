#include "collectors/dumps/phd/phd_format.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::dumps::phd {
namespace {

// Body tags (HeapdumpWriter.java). DO NOT CHANGE: file format.
constexpr uint8_t kStartOfHeader = 1;
constexpr uint8_t kStartOfDump = 2;
constexpr uint8_t kEndOfDump = 3;
constexpr uint8_t kLongObjectRecord = 4;
constexpr uint8_t kObjectArrayRecord = 5;
constexpr uint8_t kClassRecord = 6;
constexpr uint8_t kPrimitiveArrayRecord = 7;
constexpr uint8_t kNewObjectArrayRecord = 8;
// Header record tags.
constexpr uint8_t kTotals = 1;
constexpr uint8_t kEndOfHeader = 2;
constexpr uint8_t kHashcodeRandoms = 3;
constexpr uint8_t kFullVersion = 4;

constexpr std::string_view kDescriptors[8] = {"[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J"};
constexpr uint32_t kElementSizes[8] = {1, 2, 4, 8, 1, 2, 4, 8};

}  // namespace

std::string_view PhdPrimitiveDescriptor(uint32_t type) { return kDescriptors[type & 7]; }
uint32_t PhdPrimitiveSize(uint32_t type) { return kElementSizes[type & 7]; }

StatusOr<PhdScanner> PhdScanner::Open(StreamReader* in) {
  PhdScanner s(in);
  auto need = [&](size_t n, std::string_view what) -> Status {
    HW_ASSIGN_OR_RETURN(bool ok, in->Ensure(n));
    if (ok) return absl::OkStatus();
    return absl::DataLossError(
        absl::StrFormat("PHD header truncated: the file ends at offset %d inside the %s",
                        in->offset() + in->available(), what));
  };
  HW_ASSIGN_OR_RETURN(bool any, in->Ensure(2));
  if (!any) return absl::InvalidArgumentError("empty or 1-byte file: not a Portable Heap Dump");
  const uint16_t len = in->U2();
  HW_ASSIGN_OR_RETURN(bool whole, in->Ensure(len));
  if (!whole ||
      std::string_view(reinterpret_cast<const char*>(in->data()), len) != kPhdMagic.substr(2)) {
    return absl::InvalidArgumentError(
        "not a Portable Heap Dump: the file does not start with \"portable heap dump\"");
  }
  in->Advance(len);
  HW_RETURN_IF_ERROR(need(8, "version and flags"));
  PhdHeader& h = s.header_;
  h.version = static_cast<int32_t>(in->U4());
  h.flags = in->U4();
  if (h.version < 4 || h.version > 6) {
    return absl::UnimplementedError(absl::StrFormat(
        "Portable Heap Dump version %d is not supported (supported: 4, 5, 6)", h.version));
  }
  h.is_64bit = (h.flags & 1) != 0;
  h.all_objects_hashed = (h.flags & 2) != 0;
  h.j9 = (h.flags & 4) != 0;
  // 4-byte units for version 5 and for J9 dumps, 8-byte units otherwise (HeapdumpReader).
  h.address_shift = (h.version == 5 || h.j9) ? 2 : 3;
  HW_RETURN_IF_ERROR(need(1, "header"));
  const uint64_t header_offset = in->offset();
  if (in->U1() != kStartOfHeader) {
    return absl::DataLossError(
        absl::StrFormat("PHD header corrupt: no START_OF_HEADER tag at offset %d", header_offset));
  }
  for (;;) {
    HW_RETURN_IF_ERROR(need(1, "header records"));
    const uint64_t at = in->offset();
    const uint8_t tag = in->U1();
    if (tag == kEndOfHeader) break;
    switch (tag) {
      case kTotals:
        HW_RETURN_IF_ERROR(need(8, "TOTALS header record"));
        h.total_objects = in->U4();
        h.total_references = in->U4();
        break;
      case kHashcodeRandoms:
        HW_RETURN_IF_ERROR(need(8, "HASHCODE_RANDOMS header record"));
        in->Advance(8);
        break;
      case kFullVersion: {
        HW_RETURN_IF_ERROR(need(2, "FULL_VERSION header record"));
        const uint16_t n = in->U2();
        HW_RETURN_IF_ERROR(need(n, "FULL_VERSION header record"));
        h.full_version.assign(reinterpret_cast<const char*>(in->data()), n);
        in->Advance(n);
        break;
      }
      default:
        return absl::DataLossError(absl::StrFormat(
            "PHD header corrupt: unknown header record tag %d at offset %d", tag, at));
    }
  }
  HW_RETURN_IF_ERROR(need(1, "START_OF_DUMP tag"));
  const uint64_t dump_offset = in->offset();
  if (in->U1() != kStartOfDump) {
    return absl::DataLossError(
        absl::StrFormat("PHD header corrupt: no START_OF_DUMP tag at offset %d", dump_offset));
  }
  s.pre78432_ = h.full_version.ends_with("0917");
  return s;
}

Status PhdScanner::Truncated(std::string_view what) const {
  return absl::DataLossError(absl::StrFormat("PHD truncated: the file ends at offset %d inside %s",
                                             in_->offset() + in_->available(), what));
}

StatusOr<int64_t> PhdScanner::ReadSigned(uint32_t bytes) {
  HW_ASSIGN_OR_RETURN(bool ok, in_->Ensure(bytes));
  if (!ok) return Truncated("a record");
  switch (bytes) {
    case 1:
      return static_cast<int8_t>(in_->U1());
    case 2:
      return static_cast<int16_t>(in_->U2());
    case 4:
      return static_cast<int32_t>(in_->U4());
    default:
      return static_cast<int64_t>(in_->U8());
  }
}

StatusOr<uint64_t> PhdScanner::ReadUnsigned(uint32_t bytes) {
  HW_ASSIGN_OR_RETURN(bool ok, in_->Ensure(bytes));
  if (!ok) return Truncated("a record");
  switch (bytes) {
    case 1:
      return in_->U1();
    case 2:
      return in_->U2();
    case 4:
      return in_->U4();
    default:
      return in_->U8();
  }
}

StatusOr<uint64_t> PhdScanner::ReadWord() { return ReadUnsigned(header_.is_64bit ? 8 : 4); }

StatusOr<uint64_t> PhdScanner::RelativeAddress(uint32_t size_code) {
  HW_ASSIGN_OR_RETURN(int64_t gap, ReadSigned(1u << (size_code & 3)));
  uint64_t address = last_address_ + (static_cast<uint64_t>(gap) << header_.address_shift);
  if (!header_.is_64bit) address &= 0xffffffffu;
  return address;
}

Status PhdScanner::SkipHashCode(bool flag_set) {
  // J9 dumps whose every object is hashed carry a 16-bit hash code in every record; otherwise a
  // 32-bit one when the record's flag says so (HeapdumpReader.getHashCode).
  uint32_t bytes = header_.j9 && header_.all_objects_hashed ? 2 : (flag_set ? 4 : 0);
  if (bytes == 0) return absl::OkStatus();
  HW_ASSIGN_OR_RETURN(bool ok, in_->Ensure(bytes));
  if (!ok) return Truncated("a hash code");
  in_->Advance(bytes);
  return absl::OkStatus();
}

Status PhdScanner::ReadReferences(PhdRecord* record, int64_t count, uint32_t size_code,
                                  uint64_t class_addr) {
  if (count < 0) {
    return absl::DataLossError(
        absl::StrFormat("PHD corrupt: record at offset %d has a negative reference count %d",
                        record->offset, count));
  }
  const uint32_t bytes = 1u << (size_code & 3);
  for (int64_t i = 0; i < count; ++i) {
    HW_ASSIGN_OR_RETURN(bool ok, in_->Ensure(bytes));
    if (!ok) {
      return absl::DataLossError(absl::StrFormat(
          "PHD truncated: the file ends at offset %d in reference %d of %d of the record at "
          "offset %d",
          in_->offset() + in_->available(), i, count, record->offset));
    }
    HW_ASSIGN_OR_RETURN(int64_t gap, ReadSigned(bytes));
    uint64_t ref = record->address + (static_cast<uint64_t>(gap) << header_.address_shift);
    if (!header_.is_64bit) ref &= 0xffffffffu;
    // J9 writes the class address as the first reference of some records (DTFJ drops it too).
    if (header_.j9 && i == 0 && record->kind != PhdRecord::Kind::kClass && ref == class_addr) {
      continue;
    }
    record->references.push_back(ref);
  }
  return absl::OkStatus();
}

StatusOr<bool> PhdScanner::Next(PhdRecord* r) {
  if (done_) return false;
  HW_ASSIGN_OR_RETURN(bool more, in_->Ensure(1));
  if (!more) {
    return absl::DataLossError(absl::StrFormat(
        "PHD truncated: the file ends at offset %d without the END_OF_DUMP record", in_->offset()));
  }
  r->offset = in_->offset();
  r->references.clear();
  r->class_address = 0;
  r->length = 0;
  r->recorded_size = -1;
  r->primitive_type = 0;
  const uint8_t tag = in_->U1();
  auto check_length = [&](int64_t length, std::string_view what) -> Status {
    if (length < 0 || static_cast<uint64_t>(length) > std::numeric_limits<uint32_t>::max()) {
      return absl::DataLossError(
          absl::StrFormat("PHD corrupt: %s at offset %d has length %d (not in 0..2^32-1)", what,
                          r->offset, length));
    }
    return absl::OkStatus();
  };
  auto recorded_size = [&]() -> Status {
    if (header_.version < 6) return absl::OkStatus();
    // Version 6 arrays: the VM's footprint in 4-byte units, unsigned.
    HW_ASSIGN_OR_RETURN(uint64_t words, ReadUnsigned(4));
    r->recorded_size = static_cast<int64_t>(words * 4);
    return absl::OkStatus();
  };

  if (tag & 0x80) {  // short object record: class from the cache, at most 3 references
    r->kind = PhdRecord::Kind::kObject;
    const uint32_t t = tag & 0x7f;
    r->class_address = class_cache_[t >> 5];
    HW_ASSIGN_OR_RETURN(r->address, RelativeAddress((t >> 2) & 1));
    HW_RETURN_IF_ERROR(SkipHashCode(false));
    HW_RETURN_IF_ERROR(ReadReferences(r, (t >> 3) & 3, t & 3, r->class_address));
  } else if (tag & 0x40) {  // medium object record: at most 7 references
    r->kind = PhdRecord::Kind::kObject;
    const uint32_t t = tag & 0x3f;
    HW_ASSIGN_OR_RETURN(r->address, RelativeAddress((t >> 2) & 1));
    HW_ASSIGN_OR_RETURN(r->class_address, ReadWord());
    class_cache_[class_cache_next_] = r->class_address;
    class_cache_next_ = (class_cache_next_ + 1) % 4;
    HW_RETURN_IF_ERROR(SkipHashCode(false));
    HW_RETURN_IF_ERROR(ReadReferences(r, t >> 3, t & 3, r->class_address));
  } else if (tag & 0x20) {  // short primitive array record
    r->kind = PhdRecord::Kind::kPrimitiveArray;
    r->primitive_type = (tag >> 2) & 7;
    const uint32_t size = tag & 3;
    int64_t length = 0;
    if (pre78432_ && size == 3) {
      // Before IBM defect 78432 this encoding meant an int gap and an int length.
      HW_ASSIGN_OR_RETURN(int64_t gap, ReadSigned(4));
      r->address = last_address_ + (static_cast<uint64_t>(gap) << header_.address_shift);
      if (!header_.is_64bit) r->address &= 0xffffffffu;
      HW_ASSIGN_OR_RETURN(length, ReadSigned(4));
    } else {
      HW_ASSIGN_OR_RETURN(r->address, RelativeAddress(size));
      if (size <= 1) {
        HW_ASSIGN_OR_RETURN(uint64_t u, ReadUnsigned(1u << size));
        length = static_cast<int64_t>(u);
      } else {
        HW_ASSIGN_OR_RETURN(length, ReadSigned(1u << size));
      }
    }
    HW_RETURN_IF_ERROR(check_length(length, "primitive array record"));
    r->length = static_cast<uint64_t>(length);
    HW_RETURN_IF_ERROR(SkipHashCode(false));
    HW_RETURN_IF_ERROR(recorded_size());
  } else {
    switch (tag) {
      case kEndOfDump:
        done_ = true;
        return false;
      case kLongObjectRecord: {
        r->kind = PhdRecord::Kind::kObject;
        HW_ASSIGN_OR_RETURN(uint64_t flags, ReadUnsigned(1));
        HW_ASSIGN_OR_RETURN(r->address, RelativeAddress((flags >> 6) & 3));
        HW_ASSIGN_OR_RETURN(r->class_address, ReadWord());
        class_cache_[class_cache_next_] = r->class_address;
        class_cache_next_ = (class_cache_next_ + 1) % 4;
        HW_RETURN_IF_ERROR(SkipHashCode(flags & 2));
        HW_ASSIGN_OR_RETURN(int64_t count, ReadSigned(4));
        HW_RETURN_IF_ERROR(ReadReferences(r, count, (flags >> 4) & 3, r->class_address));
        break;
      }
      case kObjectArrayRecord:
      case kNewObjectArrayRecord: {
        r->kind = PhdRecord::Kind::kObjectArray;
        HW_ASSIGN_OR_RETURN(uint64_t flags, ReadUnsigned(1));
        HW_ASSIGN_OR_RETURN(r->address, RelativeAddress((flags >> 6) & 3));
        HW_ASSIGN_OR_RETURN(r->class_address, ReadWord());
        HW_RETURN_IF_ERROR(SkipHashCode(flags & 2));
        HW_ASSIGN_OR_RETURN(int64_t count, ReadSigned(4));
        HW_RETURN_IF_ERROR(ReadReferences(r, count, (flags >> 4) & 3, r->class_address));
        // The VM writes the elements from the last to the first.
        std::reverse(r->references.begin(), r->references.end());
        int64_t length = count;
        if (tag == kNewObjectArrayRecord) {
          HW_ASSIGN_OR_RETURN(length, ReadSigned(4));  // the true length (nulls are not listed)
        }
        HW_RETURN_IF_ERROR(check_length(length, "object array record"));
        r->length = static_cast<uint64_t>(length);
        HW_RETURN_IF_ERROR(recorded_size());
        break;
      }
      case kClassRecord: {
        r->kind = PhdRecord::Kind::kClass;
        HW_ASSIGN_OR_RETURN(uint64_t flags, ReadUnsigned(1));
        HW_ASSIGN_OR_RETURN(r->address, RelativeAddress((flags >> 6) & 3));
        HW_ASSIGN_OR_RETURN(int64_t instance_size, ReadSigned(4));
        r->instance_size = static_cast<int32_t>(instance_size);
        HW_RETURN_IF_ERROR(SkipHashCode(flags & 8));
        HW_ASSIGN_OR_RETURN(r->super_address, ReadWord());
        HW_ASSIGN_OR_RETURN(uint64_t name_length, ReadUnsigned(2));
        HW_ASSIGN_OR_RETURN(bool ok, in_->Ensure(name_length));
        if (!ok) return Truncated("a class name");
        r->class_name.assign(reinterpret_cast<const char*>(in_->data()), name_length);
        in_->Advance(name_length);
        HW_ASSIGN_OR_RETURN(int64_t count, ReadSigned(4));
        HW_RETURN_IF_ERROR(ReadReferences(r, count, (flags >> 4) & 3, 0));
        break;
      }
      case kPrimitiveArrayRecord: {  // long primitive array record (hashed arrays)
        r->kind = PhdRecord::Kind::kPrimitiveArray;
        HW_ASSIGN_OR_RETURN(uint64_t flags, ReadUnsigned(1));
        r->primitive_type = static_cast<uint32_t>(flags >> 5);
        int64_t gap = 0;
        int64_t length = 0;
        if ((flags & 0x10) == 0) {
          HW_ASSIGN_OR_RETURN(gap, ReadSigned(1));
          HW_ASSIGN_OR_RETURN(uint64_t u, ReadUnsigned(1));
          length = static_cast<int64_t>(u);
        } else {
          HW_ASSIGN_OR_RETURN(gap, ReadSigned(header_.is_64bit ? 8 : 4));
          HW_ASSIGN_OR_RETURN(uint64_t u, ReadWord());
          if (u > std::numeric_limits<uint32_t>::max()) {
            return absl::DataLossError(absl::StrFormat(
                "PHD corrupt: primitive array record at offset %d has length %d (beyond 2^32-1)",
                r->offset, u));
          }
          length = static_cast<int64_t>(u);
        }
        r->address = last_address_ + (static_cast<uint64_t>(gap) << header_.address_shift);
        if (!header_.is_64bit) r->address &= 0xffffffffu;
        HW_RETURN_IF_ERROR(check_length(length, "primitive array record"));
        r->length = static_cast<uint64_t>(length);
        HW_RETURN_IF_ERROR(SkipHashCode(flags & 2));
        HW_RETURN_IF_ERROR(recorded_size());
        break;
      }
      default:
        return absl::DataLossError(
            absl::StrFormat("PHD corrupt: unknown record tag 0x%02x at offset %d", tag, r->offset));
    }
  }
  last_address_ = r->address;
  return true;
}

}  // namespace heapwatch::dumps::phd
