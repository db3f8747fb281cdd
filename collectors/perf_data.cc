#include "collectors/perf_data.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "collectors/absl_compat.h"
#include "collectors/procfs.h"

namespace heapwatch::collectors {
namespace {

constexpr uint32_t kMagic = 0xcafec0c0;
constexpr size_t kPrologueSize = 32;
constexpr size_t kEntryHeaderSize = 20;
constexpr size_t kMaxFileBytes = 64u << 20;

// Reads fixed-width integers in the region's byte order, bounds-checked by the caller.
class ByteReader {
 public:
  ByteReader(absl::string_view bytes, bool big_endian) : bytes_(bytes), big_endian_(big_endian) {}

  uint64_t Unsigned(size_t offset, size_t width) const {
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) {
      const uint64_t b = static_cast<uint8_t>(bytes_[offset + i]);
      v |= big_endian_ ? b << (8 * (width - 1 - i)) : b << (8 * i);
    }
    return v;
  }
  int32_t I4(size_t offset) const { return static_cast<int32_t>(Unsigned(offset, 4)); }
  int64_t I8(size_t offset) const { return static_cast<int64_t>(Unsigned(offset, 8)); }

 private:
  absl::string_view bytes_;
  bool big_endian_;
};

Status Corrupt(size_t offset, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("hsperfdata: ", what, " at offset ", offset));
}

}  // namespace

StatusOr<PerfData> PerfData::Parse(std::string_view bytes_in) {
  const absl::string_view bytes = Av(bytes_in);
  if (bytes.size() < kPrologueSize) return Corrupt(0, "region shorter than the 32-byte prologue");
  const uint32_t magic = static_cast<uint32_t>(ByteReader(bytes, true).Unsigned(0, 4));
  if (magic != kMagic) {
    return Corrupt(0, absl::StrCat("bad magic 0x", absl::Hex(magic), " (want 0xcafec0c0)"));
  }
  const uint8_t byte_order = static_cast<uint8_t>(bytes[4]);
  if (byte_order > 1) return Corrupt(4, absl::StrCat("bad byte order ", byte_order));
  const uint8_t major = static_cast<uint8_t>(bytes[5]);
  if (major != 2) {
    return absl::UnimplementedError(absl::StrCat("hsperfdata: format version ", major, ".",
                                                 static_cast<int>(bytes[6]),
                                                 " is not supported (only 2.x)"));
  }
  if (bytes[7] == 0) return absl::UnavailableError("hsperfdata: region not yet accessible");
  const ByteReader r(bytes, byte_order == 0);
  const int64_t used = r.I4(8);
  const int64_t entry_offset = r.I4(24);
  const int64_t num_entries = r.I4(28);
  if (used < static_cast<int64_t>(kPrologueSize) || used > static_cast<int64_t>(bytes.size())) {
    return Corrupt(8, absl::StrCat("used size ", used, " outside the region of ", bytes.size()));
  }
  if (entry_offset < static_cast<int64_t>(kPrologueSize) || entry_offset > used) {
    return Corrupt(24, absl::StrCat("entry offset ", entry_offset, " outside the used region"));
  }
  if (num_entries < 0) return Corrupt(28, absl::StrCat("negative entry count ", num_entries));

  PerfData out;
  size_t pos = static_cast<size_t>(entry_offset);
  const size_t end = static_cast<size_t>(used);
  for (int64_t i = 0; i < num_entries; ++i) {
    if (end - pos < kEntryHeaderSize) return Corrupt(pos, "entry header past the used region");
    const int64_t entry_length = r.I4(pos);
    const int64_t name_offset = r.I4(pos + 4);
    const int64_t vector_length = r.I4(pos + 8);
    const char data_type = bytes[pos + 12];
    const int64_t data_offset = r.I4(pos + 16);
    if (entry_length < static_cast<int64_t>(kEntryHeaderSize) ||
        entry_length > static_cast<int64_t>(end - pos)) {
      return Corrupt(pos, absl::StrCat("entry length ", entry_length));
    }
    const absl::string_view entry = bytes.substr(pos, static_cast<size_t>(entry_length));
    if (name_offset < static_cast<int64_t>(kEntryHeaderSize) || name_offset >= entry_length) {
      return Corrupt(pos, absl::StrCat("entry name offset ", name_offset));
    }
    const absl::string_view name_area = entry.substr(static_cast<size_t>(name_offset));
    const size_t name_len = name_area.find('\0');
    if (name_len == absl::string_view::npos || name_len == 0) {
      return Corrupt(pos, "entry name not NUL-terminated");
    }
    std::string name(name_area.substr(0, name_len));
    if (vector_length < 0 || data_offset < static_cast<int64_t>(kEntryHeaderSize) ||
        data_offset > entry_length) {
      return Corrupt(pos, absl::StrCat("entry '", name, "' data offset ", data_offset));
    }
    const absl::string_view data = entry.substr(static_cast<size_t>(data_offset));
    if (data_type == 'J' && vector_length == 0) {
      if (data.size() < 8) return Corrupt(pos, absl::StrCat("entry '", name, "' truncated jlong"));
      out.longs_[name] = r.I8(pos + static_cast<size_t>(data_offset));
    } else if (data_type == 'B' && vector_length > 0) {
      if (static_cast<int64_t>(data.size()) < vector_length) {
        return Corrupt(pos, absl::StrCat("entry '", name, "' truncated byte vector"));
      }
      absl::string_view value = data.substr(0, static_cast<size_t>(vector_length));
      value = value.substr(0, value.find('\0'));
      out.strings_[name] = std::string(value);
    }
    pos += static_cast<size_t>(entry_length);
  }
  return out;
}

StatusOr<PerfData> PerfData::ReadFile(const std::string& path) {
  HW_ASSIGN_OR_RETURN(std::string bytes, procfs::ReadSmallFile(path, kMaxFileBytes));
  return Parse(Sv(bytes));
}

std::optional<int64_t> PerfData::GetLong(std::string_view name_in) const {
  const absl::string_view name = Av(name_in);
  auto it = longs_.find(name);
  if (it == longs_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> PerfData::GetString(std::string_view name_in) const {
  const absl::string_view name = Av(name_in);
  auto it = strings_.find(name);
  if (it == strings_.end()) return std::nullopt;
  return it->second;
}

}  // namespace heapwatch::collectors
