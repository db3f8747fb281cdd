// The IBM Portable Heap Dump (PHD) record decoder: header and one record at a time. Internal to
// collectors/dumps (phd_reader.cc builds the graph from the records).
//
// Grammar, endianness and sources: docs/dump-formats.md ("Portable Heap Dump"). In short: a
// big-endian stream; a header (u2-length "portable heap dump", i4 version 4..6, i4 flags: 1 =
// 64-bit, 2 = every object carries a hash code, 4 = written by J9; then tagged header records up to
// END_OF_HEADER) and START_OF_DUMP, then object, array and class records until END_OF_DUMP.
// Addresses are deltas from the previous record's address and references deltas from the record's
// own address, both signed and counted in 4-byte (J9 and version 5 and later) or 8-byte (older)
// units. Facts follow OpenJ9's writer (runtime/rasdump/heapdump.cpp, BinaryHeapDumpWriter) and
// reader (jcl openj9.dtfj com/ibm/dtfj/phd/parser/HeapdumpReader.java).
//
// Bounds: every value is read through StreamReader::Ensure, so a length or count in the file never
// makes the decoder read past the stream or allocate ahead of the bytes it has read (a record's
// references are appended as they are decoded; their number is checked to be >= 0). Array lengths
// above 2^32 - 1 and unknown tags are errors.
//
// Thread-safety: a scanner is used by one thread.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_PHD_PHD_FORMAT_H_
#define HEAPWATCH_COLLECTORS_DUMPS_PHD_PHD_FORMAT_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/dumps/stream_reader.h"
#include "common/status.h"

namespace heapwatch::dumps::phd {

// "portable heap dump" preceded by its u2 length (0x00 0x12): the first 20 bytes of every PHD.
inline constexpr std::string_view kPhdMagic{"\x00\x12portable heap dump", 20};

struct PhdHeader {
  int32_t version = 0;  // 4, 5 or 6
  uint32_t flags = 0;
  bool is_64bit = false;            // flags & 1
  bool all_objects_hashed = false;  // flags & 2
  bool j9 = false;                  // flags & 4
  uint32_t address_shift = 3;       // addresses and references in 2^shift-byte units
  std::string full_version;         // FULL_VERSION header record ("" when absent)
  // TOTALS header record (0 when absent): objects and references the writer counted.
  uint64_t total_objects = 0;
  uint64_t total_references = 0;
};

// The primitive array element types of PHD records (3-bit codes). DO NOT CHANGE: file format.
// 0 boolean, 1 char, 2 float, 3 double, 4 byte, 5 short, 6 int, 7 long.
std::string_view PhdPrimitiveDescriptor(uint32_t type);  // "[Z", "[C", ... "[J"
uint32_t PhdPrimitiveSize(uint32_t type);                // bytes per element

struct PhdRecord {
  enum class Kind : uint8_t { kObject, kObjectArray, kPrimitiveArray, kClass };
  Kind kind = Kind::kObject;
  uint64_t offset = 0;          // stream offset of the record's tag (for messages)
  uint64_t address = 0;         // the object's (or class object's) address
  uint64_t class_address = 0;   // object: its class; object array: the class the record names
                                // (the element class in J9 dumps); class and primitive array: 0
  uint32_t primitive_type = 0;  // primitive arrays: 0..7 (PhdPrimitiveDescriptor)
  uint64_t length = 0;          // arrays: element count
  // Version 6 arrays: the size the VM reports (j9gc_get_object_total_footprint_in_bytes); -1
  // absent.
  int64_t recorded_size = -1;
  // Classes.
  int32_t instance_size = 0;  // the class record's instance size in bytes (J9: header included)
  uint64_t super_address = 0;
  std::string class_name;  // as written: "java/lang/String", "[Ljava/lang/String;", "[[B"
  // References (absolute addresses) in file order; object arrays in index order (the writer lists
  // them backwards); J9's copy of the class address as first reference is dropped.
  std::vector<uint64_t> references;
};

class PhdScanner {
 public:
  // Reads and checks the header from the start of `in`.
  // Errors: InvalidArgument (not a PHD), Unimplemented (a version other than 4, 5, 6), DataLoss
  // (truncated or unknown header record; the message names the offset).
  static StatusOr<PhdScanner> Open(StreamReader* in);

  const PhdHeader& header() const { return header_; }

  // Decodes the next record into `record` (its vectors are reused). Returns false after
  // END_OF_DUMP. Errors: DataLoss naming the offset (truncated stream, unknown tag, negative count,
  // array length beyond 2^32 - 1).
  StatusOr<bool> Next(PhdRecord* record);

  // Stream offset of the next byte.
  uint64_t offset() const { return in_->offset(); }

 private:
  explicit PhdScanner(StreamReader* in) : in_(in) {}
  StatusOr<int64_t> ReadSigned(uint32_t bytes);     // 1, 2, 4, 8; sign-extended
  StatusOr<uint64_t> ReadUnsigned(uint32_t bytes);  // 1, 2, 4, 8
  StatusOr<uint64_t> ReadWord();                    // 4 or 8 bytes, unsigned
  StatusOr<uint64_t> RelativeAddress(uint32_t size_code);
  Status SkipHashCode(bool flag_set);
  Status ReadReferences(PhdRecord* record, int64_t count, uint32_t size_code, uint64_t class_addr);
  Status Truncated(std::string_view what) const;

  StreamReader* in_;
  PhdHeader header_;
  uint64_t last_address_ = 0;
  std::array<uint64_t, 4> class_cache_{};
  uint32_t class_cache_next_ = 0;
  bool pre78432_ = false;  // FULL_VERSION ends in "0917": primitive arrays with int gap and length
  bool done_ = false;
};

}  // namespace heapwatch::dumps::phd

#endif  // HEAPWATCH_COLLECTORS_DUMPS_PHD_PHD_FORMAT_H_
