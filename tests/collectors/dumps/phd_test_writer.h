// A Portable Heap Dump writer for tests: writes records the way OpenJ9's BinaryHeapDumpWriter
// (runtime/rasdump/heapdump.cpp) does (docs/dump-formats.md), with the record form and hash codes
// selectable so that tests reach every encoding. Addresses are given absolute; the writer encodes
// the gaps and picks the smallest field sizes.
#ifndef HEAPWATCH_TESTS_COLLECTORS_DUMPS_PHD_TEST_WRITER_H_
#define HEAPWATCH_TESTS_COLLECTORS_DUMPS_PHD_TEST_WRITER_H_

#include <array>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace heapwatch::dumps::phd::testing {

class PhdWriter {
 public:
  enum class Form { kAuto, kShort, kMedium, kLong };
  static constexpr uint32_t k64Bit = 1, kAllHashed = 2, kJ9 = 4;

  PhdWriter(int32_t version, uint32_t flags, const std::string& full_version = "test JVM",
            bool totals = false)
      : version_(version), flags_(flags) {
    shift_ = (version == 5 || (flags & kJ9)) ? 2 : 3;
    U2(18);
    out_ += "portable heap dump";
    U4(static_cast<uint32_t>(version));
    U4(flags);
    U1(1);  // START_OF_HEADER
    if (totals) {
      U1(1);
      U4(0);
      U4(0);
    }
    U1(3);  // HASHCODE_RANDOMS
    U4(0x1234);
    U4(0x5678);
    if (!full_version.empty()) {
      U1(4);
      U2(static_cast<uint16_t>(full_version.size()));
      out_ += full_version;
    }
    U1(2);  // END_OF_HEADER
    U1(2);  // START_OF_DUMP
  }

  // An instance of class `cls` with references `refs` (absolute addresses, no nulls).
  void Object(uint64_t address, uint64_t cls, const std::vector<uint64_t>& refs,
              Form form = Form::kAuto, bool hashed = false) {
    const int64_t gap = Gap(address);
    const int gap_code = SizeCode(gap);
    const int ref_code = RefCode(address, refs);
    int cache = -1;
    for (int i = 0; i < 4; ++i)
      if (cache_[i] == cls) cache = i;
    if (form == Form::kAuto) {
      form = gap_code <= 1 && refs.size() <= 3 && cache >= 0 && !hashed ? Form::kShort
             : gap_code <= 1 && refs.size() <= 7 && !hashed             ? Form::kMedium
                                                                        : Form::kLong;
    }
    if (form == Form::kShort) {
      if (cache < 0) std::abort();  // the test asked for a form the class cache cannot give
      U1(static_cast<uint8_t>(0x80 | cache << 5 | refs.size() << 3 | (gap_code == 1) << 2 |
                              ref_code));
      Int(gap, gap_code == 1 ? 2 : 1);
      AllHashed();
      Refs(address, refs, ref_code);
    } else if (form == Form::kMedium) {
      U1(static_cast<uint8_t>(0x40 | refs.size() << 3 | (gap_code == 1) << 2 | ref_code));
      Int(gap, gap_code == 1 ? 2 : 1);
      Word(cls);
      AllHashed();
      Refs(address, refs, ref_code);
      Cache(cls);
    } else {
      U1(4);
      U1(static_cast<uint8_t>(gap_code << 6 | ref_code << 4 | (hashed ? 2 : 0)));
      Int(gap, 1 << gap_code);
      Word(cls);
      Hash(hashed, 4);
      U4(static_cast<uint32_t>(refs.size()));
      Refs(address, refs, ref_code);
      Cache(cls);
    }
    last_ = address;
  }

  // An object array naming class `cls` (J9: the element class) with its non-null elements in index
  // order; `length` for a NEW_OBJECT_ARRAY record (8), else record 5. Version 6: `recorded_size`.
  void ObjectArray(uint64_t address, uint64_t cls, const std::vector<uint64_t>& elements,
                   std::optional<uint32_t> length, uint32_t recorded_size = 0,
                   bool hashed = false) {
    std::vector<uint64_t> reversed(elements.rbegin(), elements.rend());
    const int64_t gap = Gap(address);
    const int gap_code = SizeCode(gap);
    const int ref_code = RefCode(address, reversed);
    U1(length ? 8 : 5);
    U1(static_cast<uint8_t>(gap_code << 6 | ref_code << 4 | (hashed ? 2 : 0) | 1));
    Int(gap, 1 << gap_code);
    Word(cls);
    Hash(hashed, 4);
    U4(static_cast<uint32_t>(reversed.size()));
    Refs(address, reversed, ref_code);
    if (length) U4(*length);
    if (version_ >= 6) U4(recorded_size / 4);
    last_ = address;
  }

  // A primitive array of PHD type `type` (0 boolean .. 7 long). `long_record` writes record 7 with
  // a hash code.
  void PrimitiveArray(uint64_t address, uint32_t type, uint32_t length, bool long_record = false,
                      uint32_t recorded_size = 0) {
    const int64_t gap = Gap(address);
    if (!long_record) {
      int code = std::max(SizeCode(gap), SizeCode(length));
      if (length > 0x7fff && code < 2) code = 2;
      U1(static_cast<uint8_t>(0x20 | type << 2 | code));
      Int(gap, 1 << code);
      Int(length, 1 << code);
      AllHashed();
    } else {
      const bool small = SizeCode(gap) == 0 && length < 0x80;
      U1(7);
      U1(static_cast<uint8_t>(type << 5 | (small ? 0 : 0x10) | 2));
      Int(gap, small ? 1 : WordSize());
      Int(length, small ? 1 : WordSize());
      Hash(true, 4);
    }
    if (version_ >= 6) U4(recorded_size / 4);
    last_ = address;
  }

  // A class record: `name` as J9 writes it ("java/lang/String", "[C", "[Ljava/lang/String;").
  void Class(uint64_t address, const std::string& name, int32_t instance_size, uint64_t super,
             const std::vector<uint64_t>& refs, bool hashed = false) {
    const int64_t gap = Gap(address);
    const int gap_code = SizeCode(gap);
    const int ref_code = RefCode(address, refs);
    U1(6);
    U1(static_cast<uint8_t>(gap_code << 6 | ref_code << 4 | (hashed ? 8 : 0)));
    Int(gap, 1 << gap_code);
    U4(static_cast<uint32_t>(instance_size));
    Hash(hashed, 4);
    Word(super);
    U2(static_cast<uint16_t>(name.size()));
    out_ += name;
    U4(static_cast<uint32_t>(refs.size()));
    Refs(address, refs, ref_code);
    last_ = address;
  }

  // Raw bytes (for hostile inputs).
  void Raw(const std::string& bytes) { out_ += bytes; }

  std::string Finish() {
    U1(3);  // END_OF_DUMP
    return out_;
  }
  const std::string& bytes() const { return out_; }

 private:
  uint32_t WordSize() const { return (flags_ & k64Bit) ? 8 : 4; }
  int64_t Gap(uint64_t address) const { return static_cast<int64_t>(address - last_) >> shift_; }
  static int SizeCode(int64_t v) {
    if (v >= -128 && v <= 127) return 0;
    if (v >= -32768 && v <= 32767) return 1;
    if (v >= INT32_MIN && v <= INT32_MAX) return 2;
    return 3;
  }
  int RefCode(uint64_t address, const std::vector<uint64_t>& refs) const {
    int code = 0;
    for (uint64_t r : refs)
      code = std::max(code, SizeCode(static_cast<int64_t>(r - address) >> shift_));
    return code;
  }
  void Refs(uint64_t address, const std::vector<uint64_t>& refs, int code) {
    for (uint64_t r : refs) Int(static_cast<int64_t>(r - address) >> shift_, 1 << code);
  }
  void AllHashed() {
    if ((flags_ & kJ9) && (flags_ & kAllHashed)) U2(0x2a);
  }
  void Hash(bool flag, int bytes) {
    if ((flags_ & kJ9) && (flags_ & kAllHashed)) {
      U2(0x2a);
    } else if (flag) {
      Int(0x12345678, bytes);
    }
  }
  void Cache(uint64_t cls) {
    cache_[cache_next_] = cls;
    cache_next_ = (cache_next_ + 1) % 4;
  }
  void Word(uint64_t v) { Int(static_cast<int64_t>(v), WordSize()); }
  void Int(int64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i)
      out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  }
  void U1(uint8_t v) { Int(v, 1); }
  void U2(uint16_t v) { Int(v, 2); }
  void U4(uint32_t v) { Int(v, 4); }

  int32_t version_;
  uint32_t flags_;
  uint32_t shift_;
  uint64_t last_ = 0;
  std::array<uint64_t, 4> cache_{};
  int cache_next_ = 0;
  std::string out_;
};

}  // namespace heapwatch::dumps::phd::testing

#endif  // HEAPWATCH_TESTS_COLLECTORS_DUMPS_PHD_TEST_WRITER_H_
