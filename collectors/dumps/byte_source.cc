#include "collectors/dumps/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"

namespace heapwatch::dumps {
namespace {

Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = absl::StrFormat("%s: %s", what, std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// Owns a file descriptor.
class FileSource final : public ByteSource {
 public:
  FileSource(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  ~FileSource() override { ::close(fd_); }

  StatusOr<size_t> Read(uint8_t* dst, size_t n) override {
    for (;;) {
      ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) {
        consumed_ += static_cast<uint64_t>(got);
        return static_cast<size_t>(got);
      }
      if (errno != EINTR) return ErrnoStatus(errno, "read " + path_);
    }
  }
  Status Rewind() override {
    if (::lseek(fd_, 0, SEEK_SET) != 0) return ErrnoStatus(errno, "lseek " + path_);
    consumed_ = 0;
    return absl::OkStatus();
  }
  StatusOr<uint64_t> SkipForward(uint64_t n) override {
    uint64_t k = std::min<uint64_t>(n, size_ > consumed_ ? size_ - consumed_ : 0);
    if (k > 0 && ::lseek(fd_, static_cast<off_t>(k), SEEK_CUR) < 0)
      return ErrnoStatus(errno, "lseek " + path_);
    consumed_ += k;
    return k;
  }
  uint64_t consumed() const override { return consumed_; }
  uint64_t total() const override { return size_; }

 private:
  int fd_;
  uint64_t size_;
  std::string path_;
  uint64_t consumed_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view data) : data_(data) {}
  StatusOr<size_t> Read(uint8_t* dst, size_t n) override {
    size_t k = std::min(n, data_.size() - pos_);
    std::memcpy(dst, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  Status Rewind() override {
    pos_ = 0;
    return absl::OkStatus();
  }
  uint64_t consumed() const override { return pos_; }
  uint64_t total() const override { return data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Inflates a gzip stream of one or more members (RFC 1952) with zlib.
class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(std::unique_ptr<ByteSource> raw) : raw_(std::move(raw)), in_(kInputBuffer) {
    std::memset(&zs_, 0, sizeof(zs_));
    init_ok_ = inflateInit2(&zs_, 15 + 16) == Z_OK;  // 15-bit window, gzip header
  }
  ~GzipSource() override {
    if (init_ok_) inflateEnd(&zs_);
  }

  StatusOr<size_t> Read(uint8_t* dst, size_t n) override {
    if (!init_ok_) return absl::InternalError("zlib inflateInit2 failed");
    if (n == 0 || done_) return 0;
    zs_.next_out = dst;
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0) {
        HW_ASSIGN_OR_RETURN(size_t got, raw_->Read(in_.data(), in_.size()));
        if (got == 0) {
          if (member_started_) {
            return absl::DataLossError(absl::StrFormat(
                "gzip stream truncated: compressed file ends at byte %d inside a gzip member",
                raw_->consumed()));
          }
          done_ = true;
          break;
        }
        zs_.next_in = in_.data();
        zs_.avail_in = static_cast<uInt>(got);
      }
      if (!member_started_) {
        // Between members: ignore trailing zero padding; anything else must be a new gzip member.
        while (zs_.avail_in > 0 && *zs_.next_in == 0 && saw_member_) {
          ++zs_.next_in;
          --zs_.avail_in;
        }
        if (zs_.avail_in == 0) continue;
        member_started_ = true;
        saw_member_ = true;
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_started_ = false;
        if (inflateReset(&zs_) != Z_OK) return absl::InternalError("zlib inflateReset failed");
        continue;
      }
      if (rc == Z_BUF_ERROR) continue;  // needs more input
      if (rc != Z_OK) {
        uint64_t at = raw_->consumed() - zs_.avail_in;
        return absl::DataLossError(
            absl::StrFormat("gzip stream corrupt near compressed byte %d: %s", at,
                            zs_.msg != nullptr ? zs_.msg : "inflate error"));
      }
    }
    size_t produced = n - zs_.avail_out;
    if (produced > 0) done_ = false;
    return produced;
  }

  Status Rewind() override {
    HW_RETURN_IF_ERROR(raw_->Rewind());
    if (!init_ok_) return absl::InternalError("zlib inflateInit2 failed");
    if (inflateReset(&zs_) != Z_OK) return absl::InternalError("zlib inflateReset failed");
    zs_.avail_in = 0;
    zs_.next_in = nullptr;
    member_started_ = false;
    saw_member_ = false;
    done_ = false;
    return absl::OkStatus();
  }
  uint64_t consumed() const override { return raw_->consumed(); }
  uint64_t total() const override { return raw_->total(); }
  bool compressed() const override { return true; }

 private:
  static constexpr size_t kInputBuffer = 256 * 1024;
  std::unique_ptr<ByteSource> raw_;
  std::vector<uint8_t> in_;
  z_stream zs_;
  bool init_ok_ = false;
  bool member_started_ = false;
  bool saw_member_ = false;
  bool done_ = false;
};

// Wraps `raw` in a GzipSource when its first two bytes are the gzip magic.
StatusOr<std::unique_ptr<ByteSource>> MaybeInflate(std::unique_ptr<ByteSource> raw) {
  uint8_t magic[2] = {0, 0};
  size_t have = 0;
  while (have < 2) {
    HW_ASSIGN_OR_RETURN(size_t got, raw->Read(magic + have, 2 - have));
    if (got == 0) break;
    have += got;
  }
  HW_RETURN_IF_ERROR(raw->Rewind());
  if (have == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    return std::unique_ptr<ByteSource>(std::make_unique<GzipSource>(std::move(raw)));
  }
  return raw;
}

}  // namespace

StatusOr<uint64_t> ByteSource::SkipForward(uint64_t n) {
  std::vector<uint8_t> scratch(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
  uint64_t done = 0;
  while (done < n) {
    HW_ASSIGN_OR_RETURN(
        size_t got,
        Read(scratch.data(), static_cast<size_t>(std::min<uint64_t>(n - done, scratch.size()))));
    if (got == 0) break;
    done += got;
  }
  return done;
}

StatusOr<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "fstat " + path);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(path + " is a directory, not a heap dump");
  }
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  auto raw = std::make_unique<FileSource>(fd, static_cast<uint64_t>(st.st_size), path);
  return MaybeInflate(std::move(raw));
}

std::unique_ptr<ByteSource> OpenMemorySource(std::string_view data) {
  auto raw = std::make_unique<MemorySource>(data);
  auto wrapped = MaybeInflate(std::move(raw));
  HW_CHECK(wrapped.ok());  // a memory source cannot fail to read or rewind
  return std::move(wrapped).value();
}

}  // namespace heapwatch::dumps
