// A big-endian cursor over a ByteSource with a bounded, contiguous window. Internal to
// collectors/dumps (shared by its readers).
//
// The reader keeps at most `max_window` bytes in memory. Callers ask for the bytes they are about
// to decode with Ensure(n) (n <= max_window) and then read them with the unchecked accessors;
// bigger payloads (array elements) are consumed in pieces or skipped.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_STREAM_READER_H_
#define HEAPWATCH_COLLECTORS_DUMPS_STREAM_READER_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectors/dumps/byte_source.h"
#include "common/status.h"

namespace heapwatch::dumps {

class StreamReader {
 public:
  static constexpr size_t kDefaultWindow = 4 << 20;
  static constexpr size_t kMinWindow = 64 << 10;
  // The window for `source`: 4 MiB, or less for a small uncompressed stream (never below 64 KiB).
  static size_t WindowFor(const ByteSource& source) {
    if (source.compressed()) return kDefaultWindow;
    return std::max(kMinWindow, std::min<size_t>(kDefaultWindow, source.total() + 16));
  }
  explicit StreamReader(ByteSource* source, size_t max_window = kDefaultWindow)
      : source_(source), buf_(max_window), max_window_(max_window) {}

  // Offset of the next unread byte in the (uncompressed) stream.
  uint64_t offset() const { return base_ + pos_; }
  size_t available() const { return end_ - pos_; }
  size_t max_window() const { return max_window_; }

  // Makes at least `n` bytes available. Returns false (and OK status) if the stream ends before;
  // errors of the source are returned. REQUIRES: n <= max_window().
  [[gnu::always_inline]] StatusOr<bool> Ensure(size_t n) {
    if (end_ - pos_ >= n) return true;
    return Refill(n);
  }
  // True at the end of the stream (no byte left).
  StatusOr<bool> AtEnd() {
    HW_ASSIGN_OR_RETURN(bool more, Ensure(1));
    return !more;
  }

  // Unchecked reads: REQUIRES the bytes were Ensure()d.
  const uint8_t* data() const { return buf_.data() + pos_; }
  [[gnu::always_inline]] uint8_t U1() { return buf_[pos_++]; }
  [[gnu::always_inline]] uint16_t U2() {
    uint16_t v;
    std::memcpy(&v, buf_.data() + pos_, 2);
    pos_ += 2;
    return __builtin_bswap16(v);
  }
  [[gnu::always_inline]] uint32_t U4() {
    uint32_t v;
    std::memcpy(&v, buf_.data() + pos_, 4);
    pos_ += 4;
    return __builtin_bswap32(v);
  }
  [[gnu::always_inline]] uint64_t U8() {
    uint64_t v;
    std::memcpy(&v, buf_.data() + pos_, 8);
    pos_ += 8;
    return __builtin_bswap64(v);
  }
  [[gnu::always_inline]] uint64_t Id(uint32_t id_size) { return id_size == 4 ? U4() : U8(); }
  void Advance(size_t n) { pos_ += n; }

  // Skips `n` bytes; returns false if the stream ends first.
  StatusOr<bool> Skip(uint64_t n);

  // Starts over at offset 0.
  Status Rewind();

  uint64_t source_consumed() const { return source_->consumed(); }
  uint64_t source_total() const { return source_->total(); }
  // True when the stream is inflated (source_total() is then the compressed size, not the
  // stream's).
  bool source_compressed() const { return source_->compressed(); }

 private:
  StatusOr<bool> Refill(size_t n);

  ByteSource* source_;
  std::vector<uint8_t> buf_;
  size_t max_window_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t base_ = 0;  // stream offset of buf_[0]
  bool eof_ = false;
};

// Decodes big-endian ids from memory.
inline uint64_t LoadId(const uint8_t* p, uint32_t id_size) {
  if (id_size == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return __builtin_bswap32(v);
  }
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

}  // namespace heapwatch::dumps

#endif  // HEAPWATCH_COLLECTORS_DUMPS_STREAM_READER_H_
