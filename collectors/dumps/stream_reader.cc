#include "collectors/dumps/stream_reader.h"

namespace heapwatch::dumps {

StatusOr<bool> StreamReader::Refill(size_t n) {
  HW_CHECK(n <= max_window_);
  // Move the unread tail to the front, then read until `n` bytes are there or the stream ends.
  size_t have = end_ - pos_;
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, have);
    base_ += pos_;
    pos_ = 0;
    end_ = have;
  }
  while (end_ < n && !eof_) {
    HW_ASSIGN_OR_RETURN(size_t got, source_->Read(buf_.data() + end_, buf_.size() - end_));
    if (got == 0) {
      eof_ = true;
      break;
    }
    end_ += got;
  }
  return end_ >= n;
}

StatusOr<bool> StreamReader::Skip(uint64_t n) {
  size_t have = end_ - pos_;
  if (n > have && n - have >= (1u << 20)) {
    // A big payload (a primitive array): drop the window and let the source skip the rest (a seek
    // for files).
    n -= have;
    base_ += end_;
    pos_ = end_ = 0;
    HW_ASSIGN_OR_RETURN(uint64_t skipped, source_->SkipForward(n));
    base_ += skipped;
    if (skipped < n) {
      eof_ = true;
      return false;
    }
    return true;
  }
  while (n > 0) {
    size_t have = end_ - pos_;
    if (have == 0) {
      HW_ASSIGN_OR_RETURN(bool more, Refill(1));
      if (!more) return false;
      continue;
    }
    size_t step = static_cast<size_t>(std::min<uint64_t>(have, n));
    pos_ += step;
    n -= step;
  }
  return true;
}

Status StreamReader::Rewind() {
  HW_RETURN_IF_ERROR(source_->Rewind());
  pos_ = end_ = 0;
  base_ = 0;
  eof_ = false;
  return absl::OkStatus();
}

}  // namespace heapwatch::dumps
