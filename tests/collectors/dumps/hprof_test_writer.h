// A tiny HPROF writer for the reader's tests: builds synthetic dumps record by record (big-endian,
// as the format requires), so every record and sub-record kind, both id sizes, segments, several
// dumps and malformed variants can be produced without a JVM.
#ifndef HEAPWATCH_TESTS_COLLECTORS_HPROF_HPROF_TEST_WRITER_H_
#define HEAPWATCH_TESTS_COLLECTORS_HPROF_HPROF_TEST_WRITER_H_

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace heapwatch::hprof::testing {

class HprofWriter {
 public:
  explicit HprofWriter(uint32_t id_size = 8, std::string version = "JAVA PROFILE 1.0.2",
                       uint64_t timestamp_ms = 1700000000000ull)
      : id_(id_size) {
    out_ += version;
    out_.push_back('\0');
    U4(&out_, id_size);
    U4(&out_, static_cast<uint32_t>(timestamp_ms >> 32));
    U4(&out_, static_cast<uint32_t>(timestamp_ms));
  }

  uint32_t id_size() const { return id_; }

  // Top-level records.
  HprofWriter& String(uint64_t id, const std::string& text) {
    std::string body;
    Id(&body, id);
    body += text;
    return Record(0x01, body);
  }
  HprofWriter& LoadClass(uint32_t serial, uint64_t class_id, uint64_t name_id) {
    std::string body;
    U4(&body, serial);
    Id(&body, class_id);
    U4(&body, 0);
    Id(&body, name_id);
    return Record(0x02, body);
  }
  // A class name string and its LOAD CLASS record in one go (name id = class id + 1, a test
  // convention).
  HprofWriter& NamedClass(uint64_t class_id, const std::string& internal_name) {
    String(class_id + 1, internal_name);
    return LoadClass(static_cast<uint32_t>(class_id & 0xffff), class_id, class_id + 1);
  }
  HprofWriter& Record(uint8_t tag, const std::string& body) {
    out_.push_back(static_cast<char>(tag));
    U4(&out_, 0);
    U4(&out_, static_cast<uint32_t>(body.size()));
    out_ += body;
    return *this;
  }

  // Heap dump bodies: collect sub-records, then emit them as one HEAP DUMP or HEAP DUMP SEGMENT
  // record.
  HprofWriter& Sub(const std::string& bytes) {
    seg_ += bytes;
    return *this;
  }
  HprofWriter& FlushHeapDump() { return Flush(0x0C); }
  HprofWriter& FlushSegment() { return Flush(0x1C); }
  HprofWriter& HeapDumpEnd() { return Record(0x2C, ""); }

  // Sub-record builders (append with Sub()).
  std::string Root(uint8_t tag, uint64_t id, uint32_t thread = 0, uint32_t frame = 0) const {
    std::string s(1, static_cast<char>(tag));
    Id(&s, id);
    switch (tag) {
      case 0x01:  // JNI global: + global ref id
        Id(&s, id + 0x1000);
        break;
      case 0x02:
      case 0x03:
      case 0x08:
      case 0x8E:  // thread + frame/stack serial
        U4(&s, thread);
        U4(&s, frame);
        break;
      case 0x04:
      case 0x06:
        U4(&s, thread);
        break;
      default:
        break;
    }
    return s;
  }
  struct Field {
    uint64_t name_id;
    uint8_t type;
  };
  struct Static {
    uint64_t name_id;
    uint8_t type;
    uint64_t value;  // id for objects, low bytes for primitives
  };
  struct Constant {
    uint16_t index;
    uint8_t type;
    uint64_t value;
  };
  std::string ClassDump(uint64_t id, uint64_t super_id, uint64_t loader_id, uint32_t instance_size,
                        const std::vector<Field>& fields, const std::vector<Static>& statics = {},
                        const std::vector<Constant>& constants = {}, uint64_t signers = 0,
                        uint64_t protection_domain = 0) const {
    std::string s(1, '\x20');
    Id(&s, id);
    U4(&s, 0);
    Id(&s, super_id);
    Id(&s, loader_id);
    Id(&s, signers);
    Id(&s, protection_domain);
    Id(&s, 0);
    Id(&s, 0);
    U4(&s, instance_size);
    U2(&s, static_cast<uint16_t>(constants.size()));
    for (const Constant& c : constants) {
      U2(&s, c.index);
      s.push_back(static_cast<char>(c.type));
      Value(&s, c.type, c.value);
    }
    U2(&s, static_cast<uint16_t>(statics.size()));
    for (const Static& st : statics) {
      Id(&s, st.name_id);
      s.push_back(static_cast<char>(st.type));
      Value(&s, st.type, st.value);
    }
    U2(&s, static_cast<uint16_t>(fields.size()));
    for (const Field& f : fields) {
      Id(&s, f.name_id);
      s.push_back(static_cast<char>(f.type));
    }
    return s;
  }
  // `data` is the raw field data (use Ids()/Bytes() helpers to build it).
  std::string Instance(uint64_t id, uint64_t class_id, const std::string& data) const {
    std::string s(1, '\x21');
    Id(&s, id);
    U4(&s, 0);
    Id(&s, class_id);
    U4(&s, static_cast<uint32_t>(data.size()));
    s += data;
    return s;
  }
  std::string ObjectArray(uint64_t id, uint64_t class_id,
                          const std::vector<uint64_t>& elements) const {
    std::string s(1, '\x22');
    Id(&s, id);
    U4(&s, 0);
    U4(&s, static_cast<uint32_t>(elements.size()));
    Id(&s, class_id);
    for (uint64_t e : elements) Id(&s, e);
    return s;
  }
  std::string PrimitiveArray(uint64_t id, uint8_t type, uint32_t length,
                             bool nodata = false) const {
    std::string s(1, nodata ? '\xC3' : '\x23');
    Id(&s, id);
    U4(&s, 0);
    U4(&s, length);
    s.push_back(static_cast<char>(type));
    if (!nodata) s.append(static_cast<size_t>(length) * TypeSize(type), '\x5a');
    return s;
  }
  std::string HeapDumpInfo(uint32_t heap_type, uint64_t name_id) const {
    std::string s(1, '\xFE');
    U4(&s, heap_type);
    Id(&s, name_id);
    return s;
  }

  // Field data helpers.
  std::string Ids(const std::vector<uint64_t>& ids) const {
    std::string s;
    for (uint64_t v : ids) Id(&s, v);
    return s;
  }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

  uint32_t TypeSize(uint8_t type) const {
    switch (type) {
      case 2:
        return id_;
      case 4:
      case 8:
        return 1;
      case 5:
      case 9:
        return 2;
      case 6:
      case 10:
        return 4;
      default:
        return 8;
    }
  }

  static void U2(std::string* s, uint16_t v) {
    s->push_back(static_cast<char>(v >> 8));
    s->push_back(static_cast<char>(v));
  }
  static void U4(std::string* s, uint32_t v) {
    for (int i = 3; i >= 0; --i) s->push_back(static_cast<char>(v >> (8 * i)));
  }
  void Id(std::string* s, uint64_t v) const {
    for (int i = static_cast<int>(id_) - 1; i >= 0; --i)
      s->push_back(static_cast<char>(v >> (8 * i)));
  }
  void Value(std::string* s, uint8_t type, uint64_t v) const {
    uint32_t n = TypeSize(type);
    for (int i = static_cast<int>(n) - 1; i >= 0; --i)
      s->push_back(static_cast<char>(v >> (8 * i)));
  }

 private:
  HprofWriter& Flush(uint8_t tag) {
    Record(tag, seg_);
    seg_.clear();
    return *this;
  }

  uint32_t id_;
  std::string out_;
  std::string seg_;
};

// Gzip of `data` written as `members` concatenated gzip members (as `jcmd GC.heap_dump -gz` does).
inline std::string Gzip(const std::string& data, int members = 1) {
  std::string out;
  size_t chunk = (data.size() + members - 1) / std::max(members, 1);
  for (size_t pos = 0; pos < data.size() || (pos == 0 && data.empty()); pos += chunk) {
    std::string part = data.substr(pos, chunk);
    z_stream zs{};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("zlib");
    std::string buf(deflateBound(&zs, part.size()) + 64, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(part.data());
    zs.avail_in = static_cast<uInt>(part.size());
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
    buf.resize(zs.total_out);
    deflateEnd(&zs);
    out += buf;
    if (chunk == 0) break;
  }
  return out;
}

}  // namespace heapwatch::hprof::testing

#endif  // HEAPWATCH_TESTS_COLLECTORS_HPROF_HPROF_TEST_WRITER_H_
